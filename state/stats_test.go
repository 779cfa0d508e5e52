package state

import (
	"testing"
)

// TestStatsOnCommit: the summary is read again only after the store
// committed: on PostgreSQL a call with nothing committed makes no round
// trip, and the caller may change what it gets without changing the next.
func TestStatsOnCommit(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, _ := b.openTest(t, Options{Hotel: "stats"})
		put := func(id, status string) {
			t.Helper()
			update(t, s, func(tx *Tx) error { return tx.PutTicket(Ticket{ID: id, UpstreamStatus: status}) })
		}
		put("t-1", "new")
		first, err := s.StatsOnCommit(t.Context())
		if err != nil || first.Tickets != 1 || first.ByStatus["new"] != 1 {
			t.Fatalf("first: %+v, %v; want 1 new ticket", first, err)
		}
		first.ByStatus["new"] = 99
		trips := s.RoundTrips()
		again, err := s.StatsOnCommit(t.Context())
		if err != nil || again.Tickets != 1 || again.ByStatus["new"] != 1 {
			t.Fatalf("nothing committed: %+v, %v; want the first summary, unchanged by its caller", again, err)
		}
		if n := s.RoundTrips() - trips; n != 0 {
			t.Errorf("nothing committed: %d round trips, want none", n)
		}
		put("t-2", "done")
		after, err := s.StatsOnCommit(t.Context())
		if err != nil || after.Tickets != 2 || after.ByStatus["done"] != 1 {
			t.Fatalf("after a commit: %+v, %v; want 2 tickets, 1 done", after, err)
		}
	})
}
