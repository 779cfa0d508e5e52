package state

import (
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
	s, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	now := time.Now().UTC()
	msgs := 0
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		err := s.Update(func(tx *Tx) error {
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
					if err := tx.PutMirrored(id, msg, fmt.Sprintf("%d", 100000+m), now); err != nil {
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
	_ = s.View(func(tx *Tx) error { used = tx.kv.(boltTx).tx.Size(); return nil })
	b.ReportMetric(float64(fi.Size())/float64(msgs)*1000, "file-bytes/1000msgs")
	b.ReportMetric(float64(used)/float64(msgs)*1000, "used-bytes/1000msgs")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(msgs), "ns/msg")
}

// BenchmarkSmallUpdate is the floor of an Update: one ticket, one commit,
// two fsyncs.
func BenchmarkSmallUpdate(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "state.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	for b.Loop() {
		if err := s.Update(func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "t1", UpstreamStatus: "new"}) }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkKnown asks whether a message is known, on a ticket with 5,000
// messages among 1,000 tickets.
func BenchmarkKnown(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "state.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	err = s.Update(func(tx *Tx) error {
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
				if err := tx.PutMirrored(id, uuidish('m', n*10000+m), "h", time.Time{}); err != nil {
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
		err := s.View(func(tx *Tx) error {
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

// BenchmarkStats summarises a state of 10,000 tickets.
func BenchmarkStats(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "state.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	err = s.Update(func(tx *Tx) error {
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
	for b.Loop() {
		if _, err := s.Stats(); err != nil {
			b.Fatal(err)
		}
	}
}
