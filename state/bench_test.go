package state

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// uuidish returns a UUID-shaped id for n; its leading digits are scrambled
// so that ids sort in no particular order, as random UUIDs do.
func uuidish(kind byte, n int) string {
	return fmt.Sprintf("%08x-0000-4000-8%03x-%012x", uint32(n)*2654435761, kind, n)
}

// BenchmarkCycleUpdate writes a busy cycle's worth of records in one Update:
// 1,000 tickets, each rewritten, with 10 new mirrored messages each. The
// messages accumulate across iterations, as they do across cycles. It
// reports the file's bytes per 1,000 stored messages.
func BenchmarkCycleUpdate(b *testing.B) {
	const tickets, perTicket = 1000, 10
	path := filepath.Join(b.TempDir(), "state.db")
	s, err := Open(b.Context(), path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	now := time.Now().UTC()
	msgs := 0
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		err := s.Update(b.Context(), func(tx *Tx) error {
			for n := range tickets {
				id := uuidish('t', n)
				t := Ticket{
					ID: id, Department: "housekeeping", Ref: fmt.Sprintf("RT#%d", n),
					UpstreamStatus: "in_progress", UpstreamUpdatedAt: now, NextDue: now.Add(time.Minute),
					DueReason: "active", LastActivity: now,
				}
				if err := tx.PutTicket(t); err != nil {
					return err
				}
				for m := range perTicket {
					msg := uuidish('m', (i*tickets+n)*perTicket+m)
					if err := tx.PutMirrored(id, msg, fmt.Sprintf("%d", 100000+m), now, MessageInfo{}); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		msgs += tickets * perTicket
	}
	b.StopTimer()
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	var used int64
	_ = s.View(b.Context(), func(tx *Tx) error { used = tx.kv.(boltTx).tx.Size(); return nil })
	b.ReportMetric(float64(fi.Size())/float64(msgs)*1000, "file-bytes/1000msgs")
	b.ReportMetric(float64(used)/float64(msgs)*1000, "used-bytes/1000msgs")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(msgs), "ns/msg")
}

// BenchmarkSmallUpdate is the floor of an Update: one ticket, one commit,
// two fsyncs.
func BenchmarkSmallUpdate(b *testing.B) {
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "state.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	for b.Loop() {
		if err := s.Update(b.Context(), func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "t1", UpstreamStatus: "new"}) }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkKnown asks whether a message is known, on a ticket with 5,000
// messages among 1,000 tickets.
func BenchmarkKnown(b *testing.B) {
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "state.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	err = s.Update(b.Context(), func(tx *Tx) error {
		for n := range 1000 {
			id := uuidish('t', n)
			if err := tx.PutTicket(Ticket{ID: id}); err != nil {
				return err
			}
			count := 5
			if n == 500 {
				count = 5000
			}
			for m := range count {
				if err := tx.PutMirrored(id, uuidish('m', n*10000+m), "h", time.Time{}, MessageInfo{}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	id := uuidish('t', 500)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		err := s.View(b.Context(), func(tx *Tx) error {
			ok, err := tx.Known(id, uuidish('m', 500*10000+i%5000))
			if !ok {
				return fmt.Errorf("message %d not known", i%5000)
			}
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStats summarises a state of 10,000 tickets, on bbolt and, when
// TICKETBRIDGE_TEST_POSTGRES holds a URL, on PostgreSQL, where it is the
// scans' cost: every ticket and journal entry read in one statement each.
func BenchmarkStats(b *testing.B) {
	for _, be := range []string{"bbolt", "postgres"} {
		b.Run(be, func(b *testing.B) {
			s := openBench(b, be)
			err := s.Update(b.Context(), func(tx *Tx) error {
				for n := range 10000 {
					if err := tx.PutTicket(Ticket{ID: uuidish('t', n), UpstreamStatus: "new", Ref: "r"}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Stats(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCycleTransactions replays the state transactions of one sync
// cycle of a hotel with 100 tracked tickets, as the engine makes them
// (package sync: discover, refresh, collect, send, mark sent, the cycle
// record), and reports what a cycle costs each backend: commits and
// fsyncs on bbolt (each commit is two fdatasyncs), round trips to the
// server on PostgreSQL (counted on the wire). A quiet cycle finds nothing
// to do; a busy one has 10 due tickets with a new guest message each and 2
// agent replies to carry upstream. PostgreSQL runs when
// TICKETBRIDGE_TEST_POSTGRES holds a URL.
func BenchmarkCycleTransactions(b *testing.B) {
	const tracked = 100
	for _, be := range []string{"bbolt", "postgres"} {
		for _, load := range []struct {
			name        string
			due, events int
		}{{"quiet", 0, 0}, {"busy", 10, 2}} {
			b.Run(be+"/"+load.name, func(b *testing.B) {
				s := openBench(b, be)
				now := time.Now().UTC()
				if err := s.Update(b.Context(), func(tx *Tx) error {
					for n := range tracked {
						id := uuidish('t', n)
						if err := tx.PutTicket(Ticket{ID: id, Ref: fmt.Sprint(n), UpstreamStatus: "open", NextDue: now.Add(time.Hour)}); err != nil {
							return err
						}
						for m := range 5 {
							if err := tx.PutMirrored(id, uuidish('m', n*100+m), "h", now, MessageInfo{}); err != nil {
								return err
							}
						}
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				commits0, rt0 := s.counters()
				b.ResetTimer()
				cycles := 0
				for i := 0; b.Loop(); i++ {
					if err := replayCycle(b.Context(), s, i, load.due, load.events, now); err != nil {
						b.Fatal(err)
					}
					cycles++
				}
				b.StopTimer()
				commits, rt := s.counters()
				perCycle := func(n int64) float64 { return float64(n) / float64(cycles) }
				b.ReportMetric(perCycle(commits-commits0), "commits/cycle")
				if be == "bbolt" {
					b.ReportMetric(2*perCycle(commits-commits0), "fsyncs/cycle")
				} else {
					b.ReportMetric(perCycle(rt-rt0), "roundtrips/cycle")
				}
			})
		}
	}
}

// counters returns the commits of the store and, on PostgreSQL, the round
// trips of its connection pool.
func (s *Store) counters() (commits, roundTrips int64) {
	switch be := s.be.(type) {
	case *boltBackend:
		return be.commits.Load(), 0
	case *pgBackend:
		return be.commits.Load(), be.pool.Load().roundTrips.Load()
	}
	return 0, 0
}

// replayCycle makes the transactions of one engine cycle (see
// BenchmarkCycleTransactions); i makes the cycle's ids new.
func replayCycle(ctx context.Context, s *Store, i, due, events int, now time.Time) error {
	// discover: the tracked tickets and the engine's meta keys.
	if err := s.View(ctx, func(tx *Tx) error {
		if err := tx.ForEachTicket(func(Ticket) error { return nil }); err != nil {
			return err
		}
		if _, _, err := tx.Meta("import_since"); err != nil {
			return err
		}
		_, _, err := tx.Meta("last_sweep")
		return err
	}); err != nil {
		return err
	}
	// refresh: what is due and pending, then each due ticket's known
	// messages, then the results in one Update.
	var dueTickets []Ticket
	if err := s.View(ctx, func(tx *Tx) error {
		if err := tx.ForEachTicket(func(t Ticket) error {
			if len(dueTickets) < due {
				dueTickets = append(dueTickets, t)
			}
			return nil
		}); err != nil {
			return err
		}
		_, err := tx.PendingJournal()
		return err
	}); err != nil {
		return err
	}
	for _, t := range dueTickets {
		if err := s.View(ctx, func(tx *Tx) error {
			if _, err := tx.Mirrored(t.ID); err != nil {
				return err
			}
			_, err := tx.OwnMessages(t.ID)
			return err
		}); err != nil {
			return err
		}
	}
	if len(dueTickets) > 0 {
		if err := s.Update(ctx, func(tx *Tx) error {
			for n, t := range dueTickets {
				t.LastActivity = now
				if err := tx.PutTicket(t); err != nil {
					return err
				}
				if err := tx.PutMirrored(t.ID, uuidish('g', i*1000+n), "h", now, MessageInfo{}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	// collect: the cursor, then the events' entries and tickets, then the
	// journal and the cursor in one Update.
	if err := s.View(ctx, func(tx *Tx) error { _, err := tx.Cursor("files"); return err }); err != nil {
		return err
	}
	var entries []Entry
	for n := range events {
		id := uuidish('t', n)
		entries = append(entries, reply(fmt.Sprintf("ev-%d-%d", i, n), id, "agent reply"))
	}
	if events > 0 {
		if err := s.View(ctx, func(tx *Tx) error {
			for _, en := range entries {
				if _, _, err := tx.JournalEntry(en.EventID); err != nil {
					return err
				}
				if _, _, err := tx.Ticket(en.TicketID); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
		if err := s.Update(ctx, func(tx *Tx) error {
			for _, en := range entries {
				if _, err := tx.PutJournal(en); err != nil {
					return err
				}
			}
			return tx.SetCursor("files", fmt.Sprint(i))
		}); err != nil {
			return err
		}
	}
	// send: the pending entries and their tickets, then the outcomes.
	var pending []Entry
	if err := s.View(ctx, func(tx *Tx) error {
		var err error
		if pending, err = tx.PendingJournal(); err != nil {
			return err
		}
		for _, p := range pending {
			if _, _, err := tx.Ticket(p.TicketID); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if len(pending) > 0 {
		if err := s.Update(ctx, func(tx *Tx) error {
			for n, p := range pending {
				p.State, p.SentAt, p.UpstreamMessageID = Sent, now, uuidish('u', i*1000+n)
				if _, err := tx.PutJournal(p); err != nil {
					return err
				}
				if err := tx.MarkOwn(p.TicketID, p.UpstreamMessageID, p.EventID, now, MessageInfo{}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	// mark sent: the unmarked entries, then their marks.
	var unmarked []Entry
	if err := s.View(ctx, func(tx *Tx) error { var err error; unmarked, err = tx.UnmarkedJournal(); return err }); err != nil {
		return err
	}
	if len(unmarked) > 0 {
		if err := s.Update(ctx, func(tx *Tx) error {
			for _, u := range unmarked {
				u.MarkedAt = now
				if _, err := tx.PutJournal(u); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	// The cycle's record.
	return s.Update(ctx, func(tx *Tx) error {
		return tx.PutCycle(Cycle{Start: now, End: now, Outcome: "ok", Success: true, Report: []byte(`{"tickets":100}`)})
	})
}

// BenchmarkRewriteTickets is the Update that carries a hotel's full reads
// to state with its ten-minute cycle record: every one of 100 tickets
// rewritten, in one commit. On PostgreSQL (TICKETBRIDGE_TEST_POSTGRES)
// its B/op and allocs/op are mostly the encoding of the commit's
// parameters.
func BenchmarkRewriteTickets(b *testing.B) {
	const tracked = 100
	for _, be := range []string{"bbolt", "postgres"} {
		b.Run(be, func(b *testing.B) {
			s := openBench(b, be)
			now := time.Now().UTC()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				err := s.Update(b.Context(), func(tx *Tx) error {
					for n := range tracked {
						t := Ticket{ID: uuidish('t', n), Ref: fmt.Sprint(n), UpstreamStatus: "open", Department: "housekeeping",
							UpstreamUpdatedAt: now, NextDue: now.Add(time.Duration(i) * time.Second), DueReason: "full read", QuietStreak: i}
						if err := tx.PutTicket(t); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// openBench opens a new store on backend ("bbolt", or "postgres", which
// is skipped unless TICKETBRIDGE_TEST_POSTGRES holds a URL), closed when
// the benchmark ends.
func openBench(b *testing.B, backend string) *Store {
	b.Helper()
	loc := filepath.Join(b.TempDir(), "state.db")
	if backend == "postgres" {
		base := os.Getenv(postgresEnv)
		if base == "" {
			b.Skip(postgresSkip)
		}
		loc = pgSchemaURL(b, base)
	}
	s, err := Open(b.Context(), loc, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}
