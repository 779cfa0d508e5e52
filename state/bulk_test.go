package state

import (
	"fmt"
	"maps"
	"testing"
	"time"
)

// fillTickets stores n tickets, each with mirrored and own messages and
// journal entries in numbers that differ from ticket to ticket.
func fillTickets(t *testing.T, s *Store, n int) {
	t.Helper()
	update(t, s, func(tx *Tx) error {
		for i := range n {
			id := fmt.Sprintf("t%03d", i)
			if err := tx.PutTicket(Ticket{ID: id}); err != nil {
				return err
			}
			for j := range i % 4 {
				if err := tx.PutMirrored(id, fmt.Sprintf("m%d", j), fmt.Sprintf("h%d", j), t0, MessageInfo{}); err != nil {
					return err
				}
			}
			for j := range i % 3 {
				if err := tx.MarkOwn(id, fmt.Sprintf("o%d", j), fmt.Sprintf("e-%s-%d", id, j), t0, MessageInfo{}); err != nil {
					return err
				}
			}
			for j := range i % 5 {
				if _, err := tx.PutJournal(reply(fmt.Sprintf("j-%s-%d", id, j), id, "hello")); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// MessageCounts and RecentJournal answer what Mirrored, OwnMessages and
// JournalForTicket answer ticket by ticket.
func TestBulkReadsAgreeWithPerTicketReads(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, _ := b.openTest(t, Options{})
		fillTickets(t, s, 13)
		view(t, s, func(tx *Tx) error {
			mirrored, own, err := tx.MessageCounts()
			if err != nil {
				t.Fatal(err)
			}
			recent, err := tx.RecentJournal(2)
			if err != nil {
				t.Fatal(err)
			}
			wantM, wantO, wantJ := map[string]int{}, map[string]int{}, map[string][]Entry{}
			err = tx.ForEachTicket(func(tk Ticket) error {
				m, err := tx.Mirrored(tk.ID)
				if err != nil {
					return err
				}
				o, err := tx.OwnMessages(tk.ID)
				if err != nil {
					return err
				}
				js, err := tx.JournalForTicket(tk.ID)
				if err != nil {
					return err
				}
				if len(m) > 0 {
					wantM[tk.ID] = len(m)
				}
				if len(o) > 0 {
					wantO[tk.ID] = len(o)
				}
				if len(js) > 2 {
					js = js[len(js)-2:]
				}
				if len(js) > 0 {
					wantJ[tk.ID] = js
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(mirrored, wantM) || !maps.Equal(own, wantO) {
				t.Errorf("MessageCounts = %v, %v; want %v, %v", mirrored, own, wantM, wantO)
			}
			if len(recent) != len(wantJ) {
				t.Errorf("RecentJournal has %d tickets, want %d", len(recent), len(wantJ))
			}
			for id, want := range wantJ {
				got := recent[id]
				if len(got) != len(want) {
					t.Errorf("ticket %s: %d recent entries, want %d", id, len(got), len(want))
					continue
				}
				for i := range want {
					if got[i].EventID != want[i].EventID || got[i].Seq != want[i].Seq {
						t.Errorf("ticket %s entry %d: %s (seq %d), want %s (seq %d)", id, i, got[i].EventID, got[i].Seq, want[i].EventID, want[i].Seq)
					}
				}
			}
			if _, err := tx.RecentJournal(0); err == nil {
				t.Error("RecentJournal(0) took no entries as a number")
			}
			return nil
		})
	})
}

// On PostgreSQL the bulk reads cost the same round trips for 5 tickets and
// for 60.
func TestBulkReadsRoundTripsDoNotGrow(t *testing.T) {
	b := postgresBackend(t)
	trips := func(n int) int64 {
		s, _ := b.openTest(t, Options{Now: func() time.Time { return t0 }})
		fillTickets(t, s, n)
		before := s.pg.pool.Load().roundTrips.Load()
		view(t, s, func(tx *Tx) error {
			if _, _, err := tx.MessageCounts(); err != nil {
				return err
			}
			_, err := tx.RecentJournal(3)
			return err
		})
		return s.pg.pool.Load().roundTrips.Load() - before
	}
	few, many := trips(5), trips(60)
	if few != many || many > 6 {
		t.Errorf("round trips: %d for 5 tickets, %d for 60; want the same, a few", few, many)
	}
}
