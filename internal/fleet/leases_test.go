package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/internal/lease"
	"github.com/ticketbridge/ticketbridge/internal/lease/leasetest"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/state/statetest"
)

// assign spreads hotels evenly, the same way for everyone, and moves
// little when a replica joins.
func TestAssignSpreadsEvenly(t *testing.T) {
	var hotels []string
	for i := range 200 {
		hotels = append(hotels, fmt.Sprintf("hotel-%03d", i))
	}
	for _, n := range []int{1, 2, 3, 7, 13} {
		var reps []string
		for i := range n {
			reps = append(reps, fmt.Sprintf("replica-%d", i))
		}
		got := lease.Assign(hotels, reps)
		load := map[string]int{}
		for _, r := range got {
			load[r]++
		}
		limit := (len(hotels) + n - 1) / n
		for _, r := range reps {
			if load[r] > limit || load[r] < len(hotels)/n {
				t.Errorf("%d replicas: %s has %d hotels, want about %d", n, r, load[r], len(hotels)/n)
			}
		}
		if len(got) != len(hotels) {
			t.Errorf("%d replicas: %d hotels assigned of %d", n, len(got), len(hotels))
		}
		shuffled := slices.Clone(hotels)
		slices.Reverse(shuffled)
		if again := lease.Assign(shuffled, reps); !maps.Equal(again, got) {
			t.Errorf("%d replicas: the assignment depends on the order of the names", n)
		}
		// One more replica takes its share, and a few others move as the
		// shares shrink; most hotels stay where they are.
		more := lease.Assign(hotels, append(slices.Clone(reps), "replica-new"))
		moved := 0
		for h, r := range more {
			if r != got[h] {
				moved++
			}
		}
		if share := len(hotels) / (n + 1); moved > 3*share {
			t.Errorf("%d replicas + 1: %d hotels moved, want about %d", n, moved, share)
		}
	}
	if got := lease.Assign(hotels, nil); len(got) != 0 {
		t.Errorf("no replica: %v", got)
	}
}

// Assign's answer is pinned: replicas of different versions share the
// hotels by it during a rolling upgrade, so a change to its hash or its
// order would have two replicas each think a hotel is the other's.
func TestAssignIsStable(t *testing.T) {
	var hotels []string
	for i := range 12 {
		hotels = append(hotels, fmt.Sprintf("hotel-%02d", i))
	}
	got := lease.Assign(hotels, []string{"replica-a", "replica-b", "replica-c"})
	want := map[string]string{
		"hotel-00": "replica-a", "hotel-01": "replica-a", "hotel-02": "replica-b", "hotel-03": "replica-c",
		"hotel-04": "replica-a", "hotel-05": "replica-a", "hotel-06": "replica-b", "hotel-07": "replica-c",
		"hotel-08": "replica-b", "hotel-09": "replica-c", "hotel-10": "replica-c", "hotel-11": "replica-b",
	}
	if !maps.Equal(got, want) {
		t.Errorf("Assign changed its answer:\n got %v\nwant %v", got, want)
	}
}

// BenchmarkAssign is a keeper's share-out of 2,000 hotels over 4 replicas,
// which it computes every tick.
func BenchmarkAssign(b *testing.B) {
	var hotels []string
	for i := range 2000 {
		hotels = append(hotels, fmt.Sprintf("hotel-%04d", i))
	}
	reps := []string{"replica-a", "replica-b", "replica-c", "replica-d"}
	b.ReportAllocs()
	for b.Loop() {
		lease.Assign(hotels, reps)
	}
}

// replica is one daemon of many hotels sharing a PostgreSQL state with
// others. Its clock stands still: its keepers balance when the test calls
// balance, not on ticks of their own.
func (fx *fleetFixture) replica(ctx context.Context) *Fleet {
	fx.t.Helper()
	f := fx.newReplica(ctx, func(o *Options) { o.Clock = leasetest.NewClock() })
	if err := f.Reload(); err != nil {
		fx.t.Fatal(err)
	}
	f.balance()
	return f
}

// newReplica returns the fleet of the fixture's files, not started, its
// options changed by set.
func (fx *fleetFixture) newReplica(ctx context.Context, set ...func(*Options)) *Fleet {
	fx.t.Helper()
	opts := fx.options(ctx, false)
	for _, s := range set {
		s(&opts)
	}
	f := New(ctx, opts)
	fx.t.Cleanup(func() { _ = f.Stop() })
	return f
}

// balance has every keeper of f balance its database once, and waits for
// it; a round a reload asked for is run before, not after.
func (f *Fleet) balance() {
	for _, k := range f.keeper.All() {
		k.Balance()
	}
}

// balanceUntil balances f, letting the hotels it stops close between
// rounds, until it runs the hotels want; it fails the test after twenty
// rounds.
func balanceUntil(t *testing.T, f *Fleet, want []string) {
	t.Helper()
	for range 20 {
		waitHandovers(f)
		if got := f.Running(); slices.Equal(got, want) {
			return
		}
	}
	t.Fatalf("after twenty rounds the replica runs %v, want %v", f.Running(), want)
}

// cycle runs one cycle of every hotel running in f.
func cycleEach(t *testing.T, f *Fleet) {
	t.Helper()
	f.mu.Lock()
	hs := maps.Clone(f.hotels)
	f.mu.Unlock()
	for name, rh := range hs {
		<-rh.wired
		if _, err := rh.bridge().Engine().RunCycle(context.Background()); err != nil {
			t.Errorf("hotel %s: cycle: %v", name, err)
		}
	}
}

// waitHandovers waits for the hotels f stops to end their cycles, close
// and give their leases back, and balances f.
func waitHandovers(f *Fleet) {
	f.mu.Lock()
	hs := maps.Clone(f.handing)
	f.mu.Unlock()
	for _, rh := range hs {
		<-rh.closed
	}
	f.balance()
}

// TestReplicasShareHotels: two replicas on one database split the hotels
// evenly, each hotel synced by one of them; when one leaves the other
// takes everything, and a replica whose leases were taken over while it
// was cut off stops its hotels and writes nothing for them.
func TestReplicasShareHotels(t *testing.T) {
	db := statetest.PostgresURL(t)
	fx := newFleetFixture(t)
	fx.MainVars["TICKETBRIDGE_STATE"] = db
	hotels := []string{"alpha", "bravo", "charlie", "delta"}
	ids := map[string]string{}
	for _, h := range hotels {
		fx.WriteHotel(h, nil)
		ids[h] = fx.Ticket(h, "towels for "+h)
	}
	ctx := t.Context()
	a := fx.replica(ctx)
	balanceUntil(t, a, hotels) // a replica alone runs every hotel
	cycleEach(t, a)
	b := fx.replica(ctx)
	if got := b.Running(); len(got) != 0 {
		t.Fatalf("b started %v while a holds every lease", got)
	}
	if ok, body := b.tel.Readiness(time.Now()); !ok || !strings.Contains(body, "synced by replica "+a.keeper.Replica()) {
		t.Errorf("b's /readyz while a holds every hotel: %t\n%s", ok, body)
	}
	// A hotel b failed to start is not failing on b while a syncs it.
	b.tel.DropHotel("alpha", "could not start here")
	b.balance()
	if ok, body := b.tel.Readiness(time.Now()); !ok {
		t.Errorf("b's /readyz after it failed to start a hotel a syncs: not ready\n%s", body)
	}
	a.balance() // a sees b and hands over b's share
	waitHandovers(a)
	b.balance()
	ra, rb := a.Running(), b.Running()
	if len(ra) != 2 || len(rb) != 2 || slices.ContainsFunc(ra, func(h string) bool { return slices.Contains(rb, h) }) {
		t.Fatalf("after b joined: a runs %v, b runs %v; want two each, apart", ra, rb)
	}

	// Each hotel's new guest message crosses once, by whichever replica
	// holds it.
	for _, h := range hotels {
		if _, err := fx.TS.Server.AddMessage(ids[h], refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, Body: "also a bathrobe for " + h}); err != nil {
			t.Fatal(err)
		}
	}
	cycleEach(t, a)
	cycleEach(t, b)
	for _, h := range hotels {
		if n := strings.Count(fx.threads(h), "also a bathrobe for "+h); n != 1 {
			t.Errorf("hotel %s: the guest message is in its helpdesk %d times, want once", h, n)
		}
	}

	// b is cut off: the database lets its leases and its heartbeat lapse
	// (as the time to live passing), and a takes every hotel.
	pgExecTest(t, db, `UPDATE ticketbridge_leases SET expires_at = now() - interval '1 second' WHERE replica = $1`, b.keeper.Replica())
	pgExecTest(t, db, `UPDATE ticketbridge_replicas SET expires_at = now() - interval '1 second' WHERE replica = $1`, b.keeper.Replica())
	balanceUntil(t, a, hotels) // after b's leases lapsed a takes every hotel
	// b's engines, still open, can commit nothing: the fences moved on.
	b.mu.Lock()
	stale := maps.Clone(b.hotels)
	b.mu.Unlock()
	for name, rh := range stale {
		err := rh.bridge().Store().Update(t.Context(), func(tx *state.Tx) error { return tx.PutTicket(state.Ticket{ID: "stale-write"}) })
		if !errorsIsLeaseLost(err) {
			t.Errorf("hotel %s: b's write after the takeover: %v, want the lease lost", name, err)
		}
	}
	// b comes back: its renewal finds no lease, and it stops them.
	b.balance()
	if got := b.Running(); len(got) != 0 {
		t.Errorf("b still runs %v after its leases were taken over", got)
	}
	for _, rh := range stale {
		if rh.life.Err() == nil {
			t.Errorf("hotel %s of b still runs", rh.conf.Name())
			continue
		}
		<-rh.done // its cycle in flight, if any, was cancelled
	}

	// a leaves cleanly: b takes every hotel at its next balance, without
	// waiting for the time to live.
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	balanceUntil(t, b, hotels) // after a left b takes every hotel
}

// alphaOnADatabase starts a replica of one hotel, alpha, whose state is
// in the test database (with the requests given), and returns the
// fixture, the database, the replica and alpha running under its lease.
func alphaOnADatabase(t *testing.T, requests ...string) (*fleetFixture, string, *Fleet, *runningHotel) {
	t.Helper()
	db := statetest.PostgresURL(t)
	fx := newFleetFixture(t)
	fx.MainVars["TICKETBRIDGE_STATE"] = db
	fx.WriteHotel("alpha", nil)
	for _, r := range requests {
		fx.Ticket("alpha", r)
	}
	a := fx.replica(t.Context())
	a.mu.Lock()
	rh := a.hotels["alpha"]
	a.mu.Unlock()
	if rh == nil || rh.lease == nil {
		t.Fatal("alpha does not run under a lease")
	}
	<-rh.wired
	return fx, db, a, rh
}

// TestLeaseGuardEndsTheHotel: a request a hotel tries after its lease's
// view ended, before the view's timer stopped the hotel (a replica resumed
// after a pause), is refused and ends the hotel itself, so that its cycle
// sees its own end rather than a failing request to record.
func TestLeaseGuardEndsTheHotel(t *testing.T) {
	_, _, _, rh := alphaOnADatabase(t)
	rh.lease.StopTimer() // the timer has not fired yet
	rh.lease.End()
	if rh.life.Err() != nil {
		t.Fatal("the hotel ended before it tried anything")
	}
	if _, _, err := rh.bridge().Helpdesk().Changes(rh.life, ""); err == nil || !strings.Contains(err.Error(), "lease") {
		t.Errorf("a helpdesk call after the lease's view ended: %v, want refused", err)
	}
	if cause := context.Cause(rh.life); !errors.Is(cause, lease.ErrEnded) {
		t.Fatalf("the hotel's context after a refused call: cause %v, want it ended by the lease", cause)
	}
	<-rh.done
}

// TestLeaseGuardRefusesAPIRequests: an API request a hotel tries after
// its lease's view ended goes through the hotel's chain (package
// internal/httpx) and is refused there: it never reaches the API, its
// error is the lease's end, and the hotel ends with it.
func TestLeaseGuardRefusesAPIRequests(t *testing.T) {
	fx, _, _, rh := alphaOnADatabase(t)
	rh.lease.StopTimer() // the timer has not fired yet
	rh.lease.End()
	const probe = "guard-probe"
	if _, err := rh.bridge().API().GetTicket(t.Context(), probe); !errors.Is(err, lease.ErrEnded) {
		t.Errorf("an API request after the lease's view ended: %v, want refused with the lease's end", err)
	}
	for _, r := range fx.TS.Server.Requests() {
		if strings.Contains(r.Path, probe) {
			t.Errorf("the refused request reached the API: %s %s", r.Method, r.Path)
		}
	}
	if cause := context.Cause(rh.life); !errors.Is(cause, lease.ErrEnded) {
		t.Fatalf("the hotel's context after a refused request: cause %v, want it ended by the lease", cause)
	}
	<-rh.done
}

// TestReplicaLeavesAnUnusedDatabase: once a reload leaves no hotel on a
// database, the replica hands its hotels over, then quits that
// database's replicas and closes its connections.
func TestReplicaLeavesAnUnusedDatabase(t *testing.T) {
	fx, db, a, rh := alphaOnADatabase(t)
	if n := len(a.keeper.All()); n != 1 {
		t.Fatalf("the replica holds leases in %d databases, want the one", n)
	}
	if err := os.Remove(filepath.Join(fx.HotelsDir, "alpha.env")); err != nil {
		t.Fatal(err)
	}
	if err := a.Reload(); err != nil {
		t.Fatal(err)
	}
	<-rh.closed // handed over: stopped after its cycle in flight, its wiring closed, its lease given back
	a.balance()
	a.keeper.WaitRetired()
	if n := len(a.keeper.All()); n != 0 {
		t.Errorf("the replica keeps %d databases no hotel names, want none", n)
	}
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var replicas, leases int
	if err := conn.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM ticketbridge_replicas WHERE replica = $1), (SELECT count(*) FROM ticketbridge_leases WHERE replica = $1 AND expires_at > now())`, a.keeper.Replica()).Scan(&replicas, &leases); err != nil {
		t.Fatal(err)
	}
	if replicas != 0 || leases != 0 {
		t.Errorf("the replica is still in the database: %d heartbeat rows, %d live leases", replicas, leases)
	}
}

// TestLeaseViewEndStopsTheHotel: the end of a lease's view stops its hotel
// at once, and its API and helpdesk requests are refused from that
// moment, before any renewal could tell.
func TestLeaseViewEndStopsTheHotel(t *testing.T) {
	_, _, a, rh := alphaOnADatabase(t, "a lamp")
	// The view ended: as a pause past the time to live. The renewal's
	// next tick finds the hotel gone.
	a.clock.(*leasetest.Clock).Advance(a.keeper.TTL())
	<-rh.life.Done()
	<-rh.done
	// The hotel's context without its cancellation: the moment after the
	// view ended and before the hotel was stopped, as a replica resumed
	// after a pause lives it.
	ctx := context.WithoutCancel(rh.life)
	if _, err := rh.bridge().API().ListTickets(ctx, guestapi.ListOptions{}); err == nil || !strings.Contains(err.Error(), "lease") {
		t.Errorf("an API request after the lease's view ended: %v, want refused", err)
	}
	if _, _, err := rh.bridge().Helpdesk().Changes(ctx, ""); err == nil || !strings.Contains(err.Error(), "lease") {
		t.Errorf("a helpdesk call after the lease's view ended: %v, want refused", err)
	}
	// After the lapse the replica runs alpha again, under a new lease.
	balanceUntil(t, a, []string{"alpha"})
}

// threads returns the ticket.json files of a hotel's files helpdesk, one
// after the other.
func (fx *fleetFixture) threads(hotel string) string {
	fx.t.Helper()
	var s strings.Builder
	for _, f := range fx.Folders(hotel) {
		b, err := os.ReadFile(filepath.Join(fx.FilesDir(hotel), "tickets", f, "ticket.json"))
		if err != nil {
			fx.t.Fatal(err)
		}
		s.Write(b)
	}
	return s.String()
}

// pgExecTest runs one statement on the test database.
func pgExecTest(t *testing.T, db, sql string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func errorsIsLeaseLost(err error) bool {
	return errors.Is(err, state.ErrLeaseLost) || errors.Is(err, state.ErrConflict)
}
