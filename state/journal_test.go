package state

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

func eventIDs(es []Entry) []string {
	var ids []string
	for _, e := range es {
		ids = append(ids, e.EventID)
	}
	return ids
}

func TestJournalRoundTrip(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		clk := testutil.NewClock(t0)
		s, _ := b.openTest(t, Options{Now: clk.Now})
		update(t, s, func(tx *Tx) error {
			for _, id := range []string{"t1", "t10"} {
				if err := tx.PutTicket(Ticket{ID: id}); err != nil {
					return err
				}
			}
			return nil
		})

		in := Entry{
			EventID:        "rt:txn:4711",
			TicketID:       "t1",
			Ref:            "RT#12",
			IdempotencyKey: "5b0e4c54-8d0e-5b7b-9a6e-1f1f2c3d4e5f",
			Kind:           KindNote,
			Payload:        Payload{Body: "Called the guest.\nWill bring towels.", AuthorName: "Ana B."},
			Attempts:       1,
			LastError:      "POST /tickets/t1/messages: HTTP 500",
			NextAttempt:    t0.Add(30 * time.Second).In(time.FixedZone("X", 3600)),
		}
		var stored Entry
		update(t, s, func(tx *Tx) (err error) { stored, err = tx.PutJournal(in); return err })

		want := in
		want.State = Pending
		want.PayloadHash = in.Payload.Hash()
		want.NextAttempt = in.NextAttempt.UTC()
		want.CreatedAt, want.UpdatedAt = t0, t0
		want.Seq = 1
		if !reflect.DeepEqual(stored, want) {
			t.Fatalf("PutJournal returned\n %+v\nwant %+v", stored, want)
		}
		view(t, s, func(tx *Tx) error {
			got, ok, err := tx.JournalEntry(in.EventID)
			if err != nil || !ok || !reflect.DeepEqual(got, want) {
				t.Errorf("JournalEntry = %+v, %t, %v\nwant %+v", got, ok, err, want)
			}
			if _, ok, err := tx.JournalEntry("unknown"); ok || err != nil {
				t.Errorf("JournalEntry(unknown) = %t, %v", ok, err)
			}
			return nil
		})

		// A status entry and a reply on other tickets, journaled later.
		clk.Set(t0.Add(time.Minute))
		update(t, s, func(tx *Tx) error {
			st := Entry{EventID: "rt:txn:4712", TicketID: "t10", IdempotencyKey: "k2", Kind: KindStatus, Payload: Payload{Status: "done"}}
			if _, err := tx.PutJournal(st); err != nil {
				return err
			}
			_, err := tx.PutJournal(reply("rt:txn:4713", "t1", "On our way."))
			return err
		})

		view(t, s, func(tx *Tx) error {
			p, err := tx.PendingJournal()
			if err != nil {
				return err
			}
			if got, want := eventIDs(p), []string{"rt:txn:4711", "rt:txn:4712", "rt:txn:4713"}; !reflect.DeepEqual(got, want) {
				t.Errorf("PendingJournal = %v, want %v", got, want)
			}
			byTicket, err := tx.JournalForTicket("t1")
			if err != nil {
				return err
			}
			if got, want := eventIDs(byTicket), []string{"rt:txn:4711", "rt:txn:4713"}; !reflect.DeepEqual(got, want) {
				t.Errorf("JournalForTicket(t1) = %v, want %v", got, want)
			}
			if p[1].Payload.Status != "done" || p[2].Payload.Body != "On our way." || !p[2].Payload.Visible {
				t.Errorf("payloads read back wrong: %+v / %+v", p[1].Payload, p[2].Payload)
			}
			return nil
		})
	})
}

func TestJournalLifecycle(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		clk := testutil.NewClock(t0)
		s, _ := b.openTest(t, Options{Now: clk.Now})
		update(t, s, func(tx *Tx) error {
			if err := tx.PutTicket(Ticket{ID: "t1"}); err != nil {
				return err
			}
			for _, id := range []string{"e1", "e2", "e3"} {
				if _, err := tx.PutJournal(reply(id, "t1", "body of "+id)); err != nil {
					return err
				}
			}
			return nil
		})
		lists := func() (pending, unmarked, failed, all []string) {
			t.Helper()
			view(t, s, func(tx *Tx) error {
				p, err1 := tx.PendingJournal()
				u, err2 := tx.UnmarkedJournal()
				f, err3 := tx.FailedJournal()
				a, err4 := tx.JournalForTicket("t1")
				pending, unmarked, failed, all = eventIDs(p), eventIDs(u), eventIDs(f), eventIDs(a)
				return errors.Join(err1, err2, err3, err4)
			})
			return
		}
		check := func(step string, wantP, wantU, wantF []string) {
			t.Helper()
			p, u, f, a := lists()
			if !reflect.DeepEqual(p, wantP) || !reflect.DeepEqual(u, wantU) || !reflect.DeepEqual(f, wantF) {
				t.Errorf("%s: pending %v unmarked %v failed %v; want %v %v %v", step, p, u, f, wantP, wantU, wantF)
			}
			if want := []string{"e1", "e2", "e3"}; !reflect.DeepEqual(a, want) {
				t.Errorf("%s: JournalForTicket = %v, want %v", step, a, want)
			}
		}
		var none []string
		check("journaled", []string{"e1", "e2", "e3"}, none, none)

		change := func(id string, fn func(e *Entry)) {
			t.Helper()
			update(t, s, func(tx *Tx) error {
				e, _, err := tx.JournalEntry(id)
				if err != nil {
					return err
				}
				fn(&e)
				_, err = tx.PutJournal(e)
				return err
			})
		}
		change("e2", func(e *Entry) { e.State, e.SentAt, e.UpstreamMessageID = Sent, t0, "m2" })
		check("e2 sent", []string{"e1", "e3"}, []string{"e2"}, none)
		change("e2", func(e *Entry) { e.MarkedAt = t0 })
		check("e2 marked", []string{"e1", "e3"}, none, none)
		change("e1", func(e *Entry) { e.State, e.LastError = Failed, "HTTP 404 not_found" })
		check("e1 failed", []string{"e3"}, none, []string{"e1"})
		change("e1", func(e *Entry) { e.State = Pending }) // an operator's retry
		check("e1 retried", []string{"e1", "e3"}, none, none)
		change("e1", func(e *Entry) { e.State = Failed })

		// Sent entries keep their state and upstream message id.
		for _, c := range []struct {
			fn   func(e *Entry)
			want string
		}{
			{func(e *Entry) { e.State = Pending }, "state changed from sent to pending"},
			{func(e *Entry) { e.UpstreamMessageID = "m3" }, `upstream_message_id changed from "m2" to "m3"`},
			{func(e *Entry) { e.Payload.Body = "edited" }, "payload_hash changed"},
			{func(e *Entry) { e.Payload.Body, e.PayloadHash = "edited", "" }, "payload_hash changed"},
			{func(e *Entry) { e.IdempotencyKey = "other" }, `idempotency_key changed from "key-e2" to "other"`},
			{func(e *Entry) { e.TicketID = "t2" }, "ticket_id changed"},
			{func(e *Entry) { e.Ref = "x" }, "ref changed"},
			{func(e *Entry) { e.Kind, e.Payload.Visible = KindNote, false }, "kind changed"},
			{func(e *Entry) { e.Seq = 99 }, "seq changed from 2 to 99"},
		} {
			err := s.Update(t.Context(), func(tx *Tx) error {
				e, _, err := tx.JournalEntry("e2")
				if err != nil {
					return err
				}
				c.fn(&e)
				_, err = tx.PutJournal(e)
				return err
			})
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("changing a sent entry: err = %v, want ErrInvalid containing %q", err, c.want)
			}
		}

		// Prune: e2 (sent and marked) goes once old enough, e1 (failed) too;
		// e3 (pending) stays.
		var n int
		update(t, s, func(tx *Tx) (err error) { n, err = tx.PruneJournal(t0); return err })
		if n != 0 {
			t.Errorf("PruneJournal(t0) removed %d, want 0", n)
		}
		clk.Set(t0.Add(48 * time.Hour))
		update(t, s, func(tx *Tx) (err error) { n, err = tx.PruneJournal(t0.Add(time.Hour)); return err })
		if n != 2 {
			t.Errorf("PruneJournal removed %d, want 2", n)
		}
		p, u, f, a := lists()
		if !reflect.DeepEqual(p, []string{"e3"}) || u != nil || f != nil || !reflect.DeepEqual(a, []string{"e3"}) {
			t.Errorf("after prune: pending %v unmarked %v failed %v all %v", p, u, f, a)
		}
		st, err := s.Stats(t.Context())
		if err != nil || st.JournalPending != 1 || st.JournalSent != 0 || st.JournalFailed != 0 {
			t.Errorf("Stats after prune = %+v, %v", st, err)
		}

		// DeleteJournal removes an entry and its index keys.
		update(t, s, func(tx *Tx) error { return tx.DeleteJournal("e3") })
		if p, _, _, a := lists(); p != nil || a != nil {
			t.Errorf("after DeleteJournal: pending %v all %v", p, a)
		}
		update(t, s, func(tx *Tx) error { return tx.DeleteJournal("e3") })
	})
}

func TestJournalValidation(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, _ := b.openTest(t, Options{})
		update(t, s, func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "t1"}) })
		status := func(fn func(e *Entry)) Entry {
			e := Entry{EventID: "e1", TicketID: "t1", IdempotencyKey: "k", Kind: KindStatus, Payload: Payload{Status: "done"}}
			fn(&e)
			return e
		}
		rep := func(fn func(e *Entry)) Entry {
			e := reply("e1", "t1", "hi")
			fn(&e)
			return e
		}
		for _, c := range []struct {
			e    Entry
			want string
		}{
			{rep(func(e *Entry) { e.EventID = "" }), `put journal entry "": invalid record: event_id is empty`},
			{rep(func(e *Entry) { e.TicketID = "" }), "ticket_id is empty"},
			{rep(func(e *Entry) { e.TicketID = "t2" }), `ticket "t2" is not in state`},
			{rep(func(e *Entry) { e.IdempotencyKey = "" }), "idempotency_key is empty"},
			{rep(func(e *Entry) { e.Kind = "comment" }), `kind "comment" is not one of reply, note, status`},
			{rep(func(e *Entry) { e.Payload.Visible = false }), "payload.visible is false on a reply entry (want true)"},
			{rep(func(e *Entry) { e.Kind = KindNote }), "payload.visible is true on a note entry (want false)"},
			{rep(func(e *Entry) { e.Payload.Status = "done" }), `payload.status "done" set on a reply entry`},
			{rep(func(e *Entry) { e.State = "lost" }), `state "lost" is not one of pending, sent, failed, abandoned`},
			{rep(func(e *Entry) { e.State = Sent }), "sent_at is zero on a sent entry"},
			{rep(func(e *Entry) { e.Attempts = -1 }), "attempts -1 is negative"},
			{rep(func(e *Entry) { e.PayloadHash = "abc" }), `payload_hash "abc" does not match the payload`},
			{status(func(e *Entry) { e.Payload.Status = "" }), "payload.status is empty on a status entry"},
			{status(func(e *Entry) { e.Payload.Body = "x" }), "payload carries a body"},
		} {
			err := s.Update(t.Context(), func(tx *Tx) error { _, err := tx.PutJournal(c.e); return err })
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("PutJournal(%+v):\n err = %v\nwant ErrInvalid containing %q", c.e, err, c.want)
			}
		}
		if st, _ := s.Stats(t.Context()); st.JournalPending+st.JournalSent+st.JournalFailed != 0 {
			t.Errorf("refused entries were stored: %+v", st)
		}
		// The right hash is accepted.
		e := rep(func(e *Entry) { e.PayloadHash = e.Payload.Hash() })
		update(t, s, func(tx *Tx) error { _, err := tx.PutJournal(e); return err })
	})
}

func TestPayloadHash(t *testing.T) {
	base := Payload{Body: "ab", AuthorName: "c", Visible: true}
	seen := map[string]Payload{}
	for _, p := range []Payload{
		base,
		{Body: "a", AuthorName: "bc", Visible: true},
		{Body: "ab", AuthorName: "c"},
		{Body: "ab", AuthorName: "c", Visible: true, Status: "x"},
		{Status: "done"},
		{Status: "cancelled"},
		{},
	} {
		h := p.Hash()
		if len(h) != 64 {
			t.Errorf("Hash(%+v) = %q, want 64 hex digits", p, h)
		}
		if q, dup := seen[h]; dup {
			t.Errorf("Hash(%+v) == Hash(%+v)", p, q)
		}
		seen[h] = p
	}
	if base.Hash() != (Payload{Body: "ab", AuthorName: "c", Visible: true}).Hash() {
		t.Errorf("Hash is not deterministic")
	}
}

// An abandoned entry is in no list of work (pending, failed, unmarked),
// is counted apart, survives pruning, and a retry may put it back.
func TestJournalAbandoned(t *testing.T) {
	clk := testutil.NewClock(t0)
	s, _ := openTest(t, Options{Now: clk.Now})
	update(t, s, func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "t1"}) })
	e := reply("e1", "t1", "hi")
	e.State, e.LastError = Abandoned, `abandoned by ops: "state":"abandoned" in a reason`
	update(t, s, func(tx *Tx) error { _, err := tx.PutJournal(e); return err })
	view := func() (p, f, u, all []Entry) {
		t.Helper()
		if err := s.View(t.Context(), func(tx *Tx) (err error) {
			if p, err = tx.PendingJournal(); err != nil {
				return err
			}
			if f, err = tx.FailedJournal(); err != nil {
				return err
			}
			if u, err = tx.UnmarkedJournal(); err != nil {
				return err
			}
			all, err = tx.JournalForTicket("t1")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return
	}
	if p, f, u, all := view(); len(p)+len(f)+len(u) != 0 || len(all) != 1 || all[0].State != Abandoned {
		t.Fatalf("abandoned entry listed as pending %v failed %v unmarked %v; all %v", p, f, u, all)
	}
	st, err := s.Stats(t.Context())
	if err != nil || st.JournalAbandoned != 1 || st.JournalSent != 0 || st.JournalPending != 0 || st.JournalFailed != 0 {
		t.Errorf("Stats = %+v, %v; want one abandoned entry only", st, err)
	}
	clk.Set(clk.Now().Add(1000 * time.Hour))
	var n int
	update(t, s, func(tx *Tx) (err error) { n, err = tx.PruneJournal(clk.Now()); return err })
	if n != 0 {
		t.Errorf("PruneJournal removed %d entries; an abandoned one is kept", n)
	}
	e.State, e.LastError = Pending, ""
	update(t, s, func(tx *Tx) error { _, err := tx.PutJournal(e); return err })
	if p, _, _, _ := view(); len(p) != 1 {
		t.Errorf("a retried abandoned entry is not pending: %v", p)
	}
}
