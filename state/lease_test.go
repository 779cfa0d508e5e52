package state

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"
)

// leaseTTL is the time to live of the leases openLeases gives.
const leaseTTL = 5 * time.Second

func openLeases(t *testing.T, loc, replica string) *Leases {
	t.Helper()
	l, err := OpenLeases(context.Background(), loc, replica, leaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func mustAcquire(t *testing.T, l *Leases, hotel string) Lease {
	t.Helper()
	le, ok, err := l.Acquire(context.Background(), hotel)
	if err != nil || !ok {
		t.Fatalf("%s: Acquire(%s) = %t, %v; want the lease", l.Replica(), hotel, ok, err)
	}
	return le
}

// expire ends every lease of hotel in the database, as the time to live
// passing would.
func expire(t *testing.T, loc, hotel string) {
	t.Helper()
	pgExec(t, loc, `UPDATE `+pgLeaseTable+` SET expires_at = now() - interval '1 second' WHERE hotel = $1`, hotel)
}

// One replica holds a hotel at a time; another takes it only once the
// lease expired, and from then on the first one's Store commits nothing
// and its renewal finds no lease.
func TestLeaseFencesTheFormerHolder(t *testing.T) {
	loc := postgresBackend(t).location(t)
	a, b := openLeases(t, loc, "replica-a"), openLeases(t, loc, "replica-b")
	la := mustAcquire(t, a, "h1")
	if _, ok, err := b.Acquire(context.Background(), "h1"); ok || err != nil {
		t.Fatalf("b took a live lease of a: %t, %v", ok, err)
	}
	sa := openAt(t, loc, Options{Hotel: "h1", Fence: la.Fence})
	update(t, sa, func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "by-a"}) })

	expire(t, loc, "h1")
	if r, err := a.Renew(context.Background(), []Lease{la}); err != nil || !slices.Equal(r.Lost, []string{"h1"}) {
		t.Fatalf("a renewed an expired lease: %+v, %v", r, err)
	}
	lb := mustAcquire(t, b, "h1")
	if lb.Fence <= la.Fence {
		t.Fatalf("fence went from %d to %d, want it raised", la.Fence, lb.Fence)
	}
	err := sa.Update(t.Context(), func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "late-a"}) })
	if !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a's Update after the takeover: %v, want ErrLeaseLost", err)
	}
	if strings.Contains(err.Error(), pgPassword(loc)) {
		t.Errorf("the error holds the password: %v", err)
	}
	sb := openAt(t, loc, Options{Hotel: "h1", Fence: lb.Fence})
	update(t, sb, func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "by-b"}) })
	view(t, sb, func(tx *Tx) error {
		for id, want := range map[string]bool{"by-a": true, "late-a": false, "by-b": true} {
			if _, ok, err := tx.Ticket(id); ok != want || err != nil {
				t.Errorf("ticket %s stored %t (%v), want %t", id, ok, err, want)
			}
		}
		return nil
	})
	// A Store without a fence (the commands beside a running daemon)
	// writes as before.
	s0 := openAt(t, loc, Options{Hotel: "h1"})
	update(t, s0, func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "by-cli"}) })
}

// A takeover while the former holder's Update is under way (its snapshot
// taken, its commit not sent) fails that Update: nothing of it is kept.
func TestLeaseTakeoverDuringAnUpdate(t *testing.T) {
	loc := postgresBackend(t).location(t)
	a, b := openLeases(t, loc, "replica-a"), openLeases(t, loc, "replica-b")
	la := mustAcquire(t, a, "h1")
	sa := openAt(t, loc, Options{Hotel: "h1", Fence: la.Fence})
	update(t, sa, func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "t0"}) })
	err := sa.Update(t.Context(), func(tx *Tx) error {
		if _, _, err := tx.Ticket("t0"); err != nil { // begins: the snapshot is taken
			return err
		}
		expire(t, loc, "h1")
		mustAcquire(t, b, "h1")
		return tx.PutTicket(Ticket{ID: "during"})
	})
	if !errors.Is(err, ErrLeaseLost) && !errors.Is(err, ErrConflict) {
		t.Fatalf("Update across a takeover: %v, want ErrLeaseLost or ErrConflict", err)
	}
	view(t, sa, func(tx *Tx) error {
		if _, ok, _ := tx.Ticket("during"); ok {
			t.Error("the Update across the takeover was kept")
		}
		return nil
	})
}

// sentBetween says whether until is the view of a lease of leaseTTL
// counted from a moment between before and after, on the local clock.
func sentBetween(until, before, after time.Time) bool {
	return !until.Before(before.Add(leaseTTL)) && !until.After(after.Add(leaseTTL))
}

// Heartbeats list the live replicas and the leases; Leave frees a
// replica's hotels at once; a replica renews only its own live leases and
// keeps its view of them on its own clock, counted from when it asked.
// The test talks to PostgreSQL, which a testing/synctest bubble's clock
// does not wait for: the views are checked against the local clock read
// before and after each call.
func TestLeaseHeartbeatRenewLeave(t *testing.T) {
	loc := postgresBackend(t).location(t)
	a, b := openLeases(t, loc, "replica-a"), openLeases(t, loc, "replica-b")
	before := time.Now()
	la1 := mustAcquire(t, a, "h1")
	after := time.Now()
	la2 := mustAcquire(t, a, "h2")
	if !sentBetween(la1.Until, before, after) || !la1.Valid(before.Add(leaseTTL-time.Second)) || la1.Valid(after.Add(leaseTTL)) {
		t.Errorf("view of a fresh lease taken between %v and %v: until %v", before, after, la1.Until)
	}
	if _, _, err := b.Heartbeat(context.Background()); err != nil {
		t.Fatal(err)
	}
	reps, holders, err := a.Heartbeat(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(reps, []string{"replica-a", "replica-b"}) {
		t.Errorf("replicas %v", reps)
	}
	if len(holders) != 0 {
		t.Errorf("a's heartbeat read back its own live leases: %+v", holders)
	}
	if _, holders, err = b.Heartbeat(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(holders) != 2 || holders[0].Replica != "replica-a" || !holders[0].Live || holders[1].Hotel != "h2" {
		t.Errorf("b's heartbeat: holders %+v, want a's h1 and h2", holders)
	}
	expire(t, loc, "h2")
	if _, holders, err = a.Heartbeat(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(holders) != 1 || holders[0].Hotel != "h2" || holders[0].Live {
		t.Errorf("a's heartbeat after h2 expired: holders %+v, want h2, not live", holders)
	}
	before = time.Now()
	r, err := a.Renew(context.Background(), []Lease{la1, la2})
	after = time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Lost, []string{"h2"}) || !sentBetween(r.Until, before, after) || !r.Until.After(la1.Until) {
		t.Errorf("renewal between %v and %v: %+v, want h2 lost and h1 until %s after the renewal was sent, later than %v", before, after, r, leaseTTL, la1.Until)
	}
	if r, err := a.Renew(context.Background(), []Lease{la1}); err != nil || len(r.Lost) != 0 {
		t.Errorf("a's second renewal of h1: %+v, %v; want it kept", r, err)
	}
	// b renews nothing of a's.
	if r, err := b.Renew(context.Background(), []Lease{la1}); err != nil || !slices.Equal(r.Lost, []string{"h1"}) {
		t.Errorf("b renewed a's lease: %+v, %v", r, err)
	}
	if err := a.Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
	reps, _, err = b.Heartbeat(context.Background())
	if err != nil || !slices.Equal(reps, []string{"replica-b"}) {
		t.Errorf("after a left: %v, %v", reps, err)
	}
	mustAcquire(t, b, "h1") // at once, not after the time to live
	if err := b.Release(context.Background(), mustAcquire(t, b, "h2")); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, a, "h2")
}

// Quit removes a replica from the live ones only when it holds no live
// lease in the database, and releases nothing.
func TestLeaseQuit(t *testing.T) {
	loc := postgresBackend(t).location(t)
	a, b := openLeases(t, loc, "replica-a"), openLeases(t, loc, "replica-b")
	la := mustAcquire(t, a, "h1")
	if _, _, err := b.Heartbeat(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Heartbeat(context.Background()); err != nil {
		t.Fatal(err)
	}
	live := func() []string {
		t.Helper()
		reps, _, err := b.Heartbeat(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return reps
	}
	if err := a.Quit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := live(); !slices.Equal(got, []string{"replica-a", "replica-b"}) {
		t.Errorf("after a quit holding a lease: replicas %v, want a still live", got)
	}
	if _, ok, err := b.Acquire(context.Background(), "h1"); err != nil || ok {
		t.Errorf("b took h1 after a quit holding it: %v, %v", ok, err)
	}
	if err := a.Release(context.Background(), la); err != nil {
		t.Fatal(err)
	}
	if err := a.Quit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := live(); !slices.Equal(got, []string{"replica-b"}) {
		t.Errorf("after a quit holding nothing: replicas %v, want b alone", got)
	}
}

func TestOpenLeasesRefusesBadInput(t *testing.T) {
	for _, c := range []struct {
		url, replica string
		ttl          time.Duration
		want         string
	}{
		{"/var/lib/state.db", "r", 5 * time.Second, "PostgreSQL"},
		{"postgres://u:secret@127.0.0.1:1/db", "", 5 * time.Second, "replica id"},
		{"postgres://u:secret@127.0.0.1:1/db", "r", time.Millisecond, "time to live"},
	} {
		_, err := OpenLeases(context.Background(), c.url, c.replica, c.ttl)
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("OpenLeases(%q, %q, %s) = %v, want ErrInvalid naming %q", c.url, c.replica, c.ttl, err, c.want)
		}
	}
}

// Owner reads a hotel's lease without joining the replicas.
func TestLeaseHolder(t *testing.T) {
	loc := postgresBackend(t).location(t)
	a, b := openLeases(t, loc, "replica-a"), openLeases(t, loc, "replica-b")
	if _, ok, err := b.Owner(context.Background(), "h1"); err != nil || ok {
		t.Fatalf("Owner of a hotel never held = %t, %v; want none", ok, err)
	}
	la := mustAcquire(t, a, "h1")
	h, ok, err := b.Owner(context.Background(), "h1")
	if err != nil || !ok || h.Replica != "replica-a" || !h.Live || h.Fence != la.Fence {
		t.Errorf("Owner of a held hotel = %+v, %t, %v; want replica-a's live lease", h, ok, err)
	}
	if err := a.Release(context.Background(), la); err != nil {
		t.Fatal(err)
	}
	if h, _, _ := b.Owner(context.Background(), "h1"); h.Live {
		t.Errorf("Owner after the release = %+v; want it not live", h)
	}
	reps, _, err := a.Heartbeat(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(reps, "replica-b") {
		t.Errorf("replicas %v: reading the holder joined them", reps)
	}
}

// Take takes many hotels in one statement: the free, the expired and its
// own, each with a raised fence the hotel's Store commits under, and
// none another replica holds live.
func TestLeaseTakeMany(t *testing.T) {
	loc := postgresBackend(t).location(t)
	a, b := openLeases(t, loc, "replica-a"), openLeases(t, loc, "replica-b")
	la := mustAcquire(t, a, "h1")
	mustAcquire(t, a, "h4")
	expire(t, loc, "h4")

	taken, err := b.Take(t.Context(), []string{"h3", "h1", "h2", "h2", "h4", "h3"})
	if err != nil {
		t.Fatal(err)
	}
	hotels := func(ls []Lease) (hs []string) {
		for _, l := range ls {
			hs = append(hs, l.Hotel)
		}
		return hs
	}
	if got := hotels(taken); !slices.Equal(got, []string{"h3", "h2", "h4"}) {
		t.Fatalf("b took %v, want h3, h2, h4 (in the order asked, each once, not a's live h1)", got)
	}
	for _, l := range taken {
		if l.Hotel == "h4" && l.Fence <= 1 {
			t.Errorf("h4 taken after a's lease expired at fence %d, want it raised past a's", l.Fence)
		}
		// The fence taken is the one the hotel's Store commits under, and
		// the one before it (when there was one) is refused.
		s := openAt(t, loc, Options{Hotel: l.Hotel, Fence: l.Fence})
		update(t, s, func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "by-b"}) })
		if l.Fence == 1 {
			continue
		}
		old := openAt(t, loc, Options{Hotel: l.Hotel, Fence: l.Fence - 1})
		if err := old.Update(t.Context(), func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "stale"}) }); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("%s: a commit under fence %d after the take of %d: %v, want ErrLeaseLost", l.Hotel, l.Fence-1, l.Fence, err)
		}
	}

	// Taking its own again raises the fences; a's h1 is still a's.
	again, err := b.Take(t.Context(), []string{"h1", "h2", "h3", "h4"})
	if err != nil {
		t.Fatal(err)
	}
	if got := hotels(again); !slices.Equal(got, []string{"h2", "h3", "h4"}) {
		t.Fatalf("b took %v again, want h2, h3, h4", got)
	}
	for i, l := range again {
		if before := taken[slices.IndexFunc(taken, func(x Lease) bool { return x.Hotel == l.Hotel })]; l.Fence != before.Fence+1 {
			t.Errorf("take %d of %s: fence %d, want %d", i, l.Hotel, l.Fence, before.Fence+1)
		}
	}
	if r, err := a.Renew(t.Context(), []Lease{la}); err != nil || len(r.Lost) != 0 {
		t.Errorf("a's live h1 after b's takes: renewal %+v, %v; want it kept", r, err)
	}

	// Nothing to take costs no round trip; a bad name fails the take
	// before anything is sent.
	if got, err := b.Take(t.Context(), nil); got != nil || err != nil {
		t.Errorf("Take(nil) = %v, %v", got, err)
	}
	_, err = b.Take(t.Context(), []string{"h5", "Bad/Name"})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Bad/Name") {
		t.Errorf("a bad name: %v, want ErrInvalid naming it", err)
	}
	mustAcquire(t, a, "h5") // the bad take took nothing
}

// Replicas taking overlapping sets of hotels at once, each set in its
// own order, neither fail nor share a hotel: each hotel is taken by one.
func TestLeaseTakesAtOnceDoNotDeadlock(t *testing.T) {
	loc := postgresBackend(t).location(t)
	reps := []*Leases{openLeases(t, loc, "replica-a"), openLeases(t, loc, "replica-b"), openLeases(t, loc, "replica-c")}
	var hotels []string
	for i := range 60 {
		hotels = append(hotels, fmt.Sprintf("h%02d", i))
	}
	for round := range 5 {
		got := make([][]Lease, len(reps))
		errs := make([]error, len(reps))
		var wg gosync.WaitGroup
		for i, l := range reps {
			order := slices.Clone(hotels)
			if i%2 == 1 {
				slices.Reverse(order)
			}
			wg.Go(func() { got[i], errs[i] = l.Take(context.Background(), order) })
		}
		wg.Wait()
		holder := map[string]string{}
		for i, ls := range got {
			if errs[i] != nil {
				t.Fatalf("round %d: %s: %v", round, reps[i].Replica(), errs[i])
			}
			for _, l := range ls {
				if h, ok := holder[l.Hotel]; ok {
					t.Fatalf("round %d: %s taken by %s and %s", round, l.Hotel, h, reps[i].Replica())
				}
				holder[l.Hotel] = reps[i].Replica()
			}
		}
		if len(holder) != len(hotels) {
			t.Fatalf("round %d: %d hotels taken, want %d", round, len(holder), len(hotels))
		}
		pgExec(t, loc, `UPDATE `+pgLeaseTable+` SET expires_at = now() - interval '1 second'`)
	}
}

// A renewal does not wait for a connection of the stores' pool: the
// leases have connections of their own, so that hotels whose
// transactions hold every connection of the pool cannot make a replica
// lose its leases.
func TestLeasesHaveConnectionsOfTheirOwn(t *testing.T) {
	u, err := url.Parse(postgresBackend(t).location(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("pool_max_conns", "1")
	u.RawQuery = q.Encode()
	loc := u.String()
	l := openLeases(t, loc, "replica-a")
	le := mustAcquire(t, l, "h1")
	s := openAt(t, loc, Options{Hotel: "h1", Fence: le.Fence})
	inside, release := make(chan struct{}), make(chan struct{})
	updated := make(chan error, 1)
	go func() {
		updated <- s.Update(context.Background(), func(tx *Tx) error {
			if _, _, err := tx.Ticket("t0"); err != nil { // begins: the pool's one connection is held
				return err
			}
			close(inside)
			<-release
			return tx.PutTicket(Ticket{ID: "t0"})
		})
	}()
	<-inside
	r, err := l.Renew(t.Context(), []Lease{le})
	if err != nil || len(r.Lost) != 0 {
		t.Errorf("renewal while the stores' pool is held: %+v, %v; want the lease renewed", r, err)
	}
	if _, _, err := l.Heartbeat(t.Context()); err != nil {
		t.Errorf("heartbeat while the stores' pool is held: %v", err)
	}
	close(release)
	if err := <-updated; err != nil {
		t.Fatal(err)
	}
}

// BenchmarkLeaseTick is one tick of a replica that holds the leases of
// 2,000 hotels: its heartbeat and its renewal, a round trip each. It runs
// on PostgreSQL when TICKETBRIDGE_TEST_POSTGRES holds a URL.
func BenchmarkLeaseTick(b *testing.B) {
	base := os.Getenv(postgresEnv)
	if base == "" {
		b.Skip(postgresSkip)
	}
	l, err := OpenLeases(b.Context(), pgSchemaURL(b, base), "replica-a", time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	hotels := make([]string, 2000)
	for i := range hotels {
		hotels[i] = fmt.Sprintf("hotel-%04d", i)
	}
	leases, err := l.Take(b.Context(), hotels)
	if err != nil || len(leases) != len(hotels) {
		b.Fatalf("took %d leases of %d: %v", len(leases), len(hotels), err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := l.Heartbeat(b.Context()); err != nil {
			b.Fatal(err)
		}
		r, err := l.Renew(b.Context(), leases)
		if err != nil || len(r.Lost) != 0 {
			b.Fatalf("renewal: %d lost, %v", len(r.Lost), err)
		}
	}
}
