package state

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unsafe"
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

// TestTicketPackRoundTrip: a ticket packed for the cache unpacks to the
// very struct its record decoded to (times included, compared with ==,
// so that location and monotonic reading count), for a ticket of every
// field set, one of none, times before 1970 and at the nanosecond.
func TestTicketPackRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 30, 1, 123456789, time.UTC)
	full := Ticket{ID: "t-ü-long-id", Department: "hk", Ref: "RT#42", UpstreamStatus: "in_progress",
		HelpdeskStatus: "open", HelpdeskStatusAt: at, HelpdeskEventAt: at.Add(time.Nanosecond),
		UpstreamUpdatedAt: at.Add(-time.Hour), AgreedStatus: "open", AgreedAt: time.Date(1969, 7, 20, 20, 17, 40, 1, time.UTC),
		ReconciledAt: at, LastReconcile: "in_sync", ReconcileSoon: true, NextDue: at.Add(10 * time.Minute),
		DueReason: "quiet", QuietStreak: 300, LastActivity: at, ClosedAt: at, Retired: true,
		LastError: strings.Repeat("é", 200), Attempts: 1 << 40, Missing: 3, Deleted: at.Add(time.Second), CreatedAt: at, UpdatedAt: at,
		GuestWroteAt: at.Add(-2 * time.Minute), AnsweredAt: at.Add(-time.Minute)}
	carried := full
	carried.ID = "t-carried"
	carried.Carried = Fields{At: at, Department: "fo", Title: "Kettle, room 12", Due: at.Add(26 * time.Hour),
		Rated: true, Rating: 4.5, Comment: "VIP\nguest", Priority: "high", Unsure: 0b101}
	zeroRated := carried
	zeroRated.ID, zeroRated.Carried.Rating, zeroRated.Carried.Due = "t-zero", 0, time.Time{}
	unrated := carried
	unrated.ID, unrated.Carried.Rated, unrated.Carried.Rating = "t-unrated", false, 0
	paused := carried
	paused.ID, paused.Paused, paused.PausedBy = "t-paused", at.Add(-3*time.Hour), "cli:mara"
	pausedBare := Ticket{ID: "t-paused-bare", Paused: at}
	unlinked := paused
	unlinked.ID, unlinked.Unlinked, unlinked.UnlinkedBy, unlinked.UnlinkNoted = "t-unlinked", at.Add(-time.Hour), "page:ines", true
	unlinkedBare := Ticket{ID: "t-unlinked-bare", Unlinked: at}
	connecting := unlinked
	connecting.ID, connecting.ConnectRef = "t-connecting", "RT#77"
	connectingBare := Ticket{ID: "t-connecting-bare", ConnectRef: "folder é", Commands: 3}
	for _, in := range []Ticket{full, {ID: "x"}, carried, zeroRated, unrated, paused, pausedBare, unlinked, unlinkedBare, connecting, connectingBare} {
		data, err := encode(ticketVersion, in)
		if err != nil {
			t.Fatal(err)
		}
		want, err := decodeTicket(in.ID, data)
		if err != nil {
			t.Fatal(err)
		}
		packed, ok := packTicket(want)
		if !ok {
			t.Fatalf("%s: not packed", in.ID)
		}
		if got := unpackTicket(packed, len(in.ID)); got != want {
			t.Errorf("unpacked\n %+v\nwant\n %+v", got, want)
		}
	}
	local := full
	local.NextDue = at.In(time.FixedZone("CET", 3600))
	if _, ok := packTicket(local); ok {
		t.Error("a time outside UTC was packed: it would come back in UTC")
	}
}

// TestTicketCacheHitAllocatesNothing: serving an unchanged record from
// the cache allocates nothing, and the cached ticket costs a fraction of
// the decoded struct's memory.
func TestTicketCacheHitAllocatesNothing(t *testing.T) {
	c := newTicketCache()
	at := time.Date(2026, 11, 28, 12, 30, 1, 0, time.UTC)
	data, err := encode(ticketVersion, Ticket{ID: "t-1", Department: "hk", Ref: "7", UpstreamStatus: "new",
		NextDue: at, DueReason: "quiet", UpstreamUpdatedAt: at, LastActivity: at, CreatedAt: at, UpdatedAt: at,
		Carried: Fields{At: at, Department: "hk", Title: "Towels", Due: at, Rated: true, Rating: 3, Comment: "c"}})
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("t-1")
	first, err := c.decode(key, data)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		got, err := c.decode(key, data)
		if err != nil || got != first {
			t.Fatalf("hit: %+v, %v; want %+v", got, err, first)
		}
	})
	if allocs != 0 {
		t.Errorf("a cache hit allocates %.0f times, want 0", allocs)
	}
	if n, size := len(c.m["t-1"].packed), int(unsafe.Sizeof(Ticket{})); n*3 > size {
		t.Errorf("packed ticket is %d bytes, the struct %d: want under a third", n, size)
	}
}
