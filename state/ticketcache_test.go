package state

import (
	"errors"
	"testing"
)

// TestTicketCacheNeverServesAnOldRecord: tickets decoded once are served
// from the cache only while their bytes are unchanged: after a write, a
// write that rolled back (read inside it), a delete, and on PostgreSQL a
// write by another replica's store.
func TestTicketCacheNeverServesAnOldRecord(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, loc := b.openTest(t, Options{Hotel: "cache"})
		status := func(s *Store) string {
			t.Helper()
			var got string
			view(t, s, func(tx *Tx) error {
				tk, ok, err := tx.Ticket("t-1")
				if err != nil || !ok {
					t.Fatalf("Ticket: ok %v, %v", ok, err)
				}
				var scanned string
				if err := tx.ForEachTicket(func(t Ticket) error { scanned = t.UpstreamStatus; return nil }); err != nil {
					return err
				}
				if scanned != tk.UpstreamStatus {
					t.Errorf("scan read %q, Ticket %q", scanned, tk.UpstreamStatus)
				}
				got = tk.UpstreamStatus
				return nil
			})
			return got
		}
		put := func(s *Store, st string) {
			update(t, s, func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "t-1", UpstreamStatus: st}) })
		}
		put(s, "new")
		if got := status(s); got != "new" {
			t.Fatalf("status %q, want new", got)
		}
		put(s, "in_progress")
		if got := status(s); got != "in_progress" {
			t.Errorf("after a write: status %q, want in_progress", got)
		}

		rollback := errors.New("roll back")
		err := s.Update(t.Context(), func(tx *Tx) error {
			if err := tx.PutTicket(Ticket{ID: "t-1", UpstreamStatus: "closed"}); err != nil {
				return err
			}
			if tk, _, err := tx.Ticket("t-1"); err != nil || tk.UpstreamStatus != "closed" {
				t.Errorf("inside the write: %q, %v", tk.UpstreamStatus, err)
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatalf("Update: %v", err)
		}
		if got := status(s); got != "in_progress" {
			t.Errorf("after a write rolled back: status %q, want in_progress", got)
		}

		if b.name == "postgres" {
			other := openAt(t, loc, Options{Hotel: "cache"})
			put(other, "done")
			if got := status(s); got != "done" {
				t.Errorf("after another store's write: status %q, want done", got)
			}
		}

		update(t, s, func(tx *Tx) error { return tx.DeleteTicket("t-1") })
		view(t, s, func(tx *Tx) error {
			if _, ok, err := tx.Ticket("t-1"); ok || err != nil {
				t.Errorf("after delete: ok %v, %v", ok, err)
			}
			return nil
		})
	})
}
