package main

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/telemetry"
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
		got := assign(hotels, reps)
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
		if again := assign(shuffled, reps); !maps.Equal(again, got) {
			t.Errorf("%d replicas: the assignment depends on the order of the names", n)
		}
		// One more replica takes its share, and a few others move as the
		// shares shrink; most hotels stay where they are.
		more := assign(hotels, append(slices.Clone(reps), "replica-new"))
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
	if got := assign(hotels, nil); len(got) != 0 {
		t.Errorf("no replica: %v", got)
	}
}

// replica is one daemon of many hotels sharing a PostgreSQL state with
// others. Its clock stands still: its keepers balance when the test calls
// balance, not on ticks of their own.
func (fx *fleetFixture) replica(ctx context.Context) *fleet {
	fx.t.Helper()
	f := fx.newReplica(ctx)
	f.keeper.clock = newFakeClock()
	if err := f.reload(); err != nil {
		fx.t.Fatal(err)
	}
	f.balance()
	return f
}

// newReplica returns the fleet of the fixture's files, not started.
func (fx *fleetFixture) newReplica(ctx context.Context) *fleet {
	fx.t.Helper()
	ef := envFlag{path: fx.mainFile()}
	src, cfg, _, log, err := loadEnv(ctx, &ef, io.Discard)
	if err != nil {
		fx.t.Fatal(err)
	}
	hc, err := config.LoadHotels(ctx, src.Env)
	if err != nil {
		fx.t.Fatal(err)
	}
	tel := telemetry.NewFleet(log, hc.ReadyNames(), telemetry.Options{CycleMax: 20 * time.Minute, WatchdogEvery: -1, Notify: func(string) error { return nil }})
	f := newFleet(ctx, src, cfg, hc, log, tel, bridge.Options{Registry: fx.registry})
	fx.t.Cleanup(func() { _ = f.stopAll() })
	return f
}

// balance has every keeper of f balance its database once, and waits for
// it; a round a reload asked for is run before, not after.
func (f *fleet) balance() {
	for _, k := range f.keeper.all() {
		select {
		case <-k.wake: // this round does it
		default:
		}
		reply := make(chan struct{})
		select {
		case k.now <- reply:
		case <-k.done:
			continue
		}
		select {
		case <-reply:
		case <-k.done:
		}
	}
}

// balanceUntil balances f, letting the hotels it stops close between
// rounds, until it runs the hotels want; it fails the test after twenty
// rounds.
func balanceUntil(t *testing.T, f *fleet, want []string) {
	t.Helper()
	for range 20 {
		waitHandovers(f)
		if got := f.running(); slices.Equal(got, want) {
			return
		}
	}
	t.Fatalf("after twenty rounds the replica runs %v, want %v", f.running(), want)
}

// cycle runs one cycle of every hotel running in f.
func cycleEach(t *testing.T, f *fleet) {
	t.Helper()
	f.mu.Lock()
	hs := maps.Clone(f.hotels)
	f.mu.Unlock()
	for name, rh := range hs {
		<-rh.wired
		if _, err := rh.w.Engine().RunCycle(context.Background()); err != nil {
			t.Errorf("hotel %s: cycle: %v", name, err)
		}
	}
}

// waitHandovers waits for the hotels f stops to end their cycles, close
// and give their leases back, and balances f.
func waitHandovers(f *fleet) {
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
	fx.mainVars["TICKETBRIDGE_STATE"] = db
	hotels := []string{"alpha", "bravo", "charlie", "delta"}
	ids := map[string]string{}
	for _, h := range hotels {
		fx.writeHotel(h, nil)
		ids[h] = fx.ticket(h, "towels for "+h)
	}
	ctx := t.Context()
	a := fx.replica(ctx)
	balanceUntil(t, a, hotels) // a replica alone runs every hotel
	cycleEach(t, a)
	b := fx.replica(ctx)
	if got := b.running(); len(got) != 0 {
		t.Fatalf("b started %v while a holds every lease", got)
	}
	if ok, body := b.tel.Readiness(time.Now()); !ok || !strings.Contains(body, "synced by replica "+a.keeper.replica) {
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
	ra, rb := a.running(), b.running()
	if len(ra) != 2 || len(rb) != 2 || slices.ContainsFunc(ra, func(h string) bool { return slices.Contains(rb, h) }) {
		t.Fatalf("after b joined: a runs %v, b runs %v; want two each, apart", ra, rb)
	}

	// Each hotel's new guest message crosses once, by whichever replica
	// holds it.
	for _, h := range hotels {
		if _, err := fx.ts.Server.AddMessage(ids[h], refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, Body: "also a bathrobe for " + h}); err != nil {
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
	pgExecTest(t, db, `UPDATE ticketbridge_leases SET expires_at = now() - interval '1 second' WHERE replica = $1`, b.keeper.replica)
	pgExecTest(t, db, `UPDATE ticketbridge_replicas SET expires_at = now() - interval '1 second' WHERE replica = $1`, b.keeper.replica)
	balanceUntil(t, a, hotels) // after b's leases lapsed a takes every hotel
	// b's engines, still open, can commit nothing: the fences moved on.
	b.mu.Lock()
	stale := maps.Clone(b.hotels)
	b.mu.Unlock()
	for name, rh := range stale {
		err := rh.w.Store().Update(func(tx *state.Tx) error { return tx.PutTicket(state.Ticket{ID: "stale-write"}) })
		if !errorsIsLeaseLost(err) {
			t.Errorf("hotel %s: b's write after the takeover: %v, want the lease lost", name, err)
		}
	}
	// b comes back: its renewal finds no lease, and it stops them.
	b.balance()
	if got := b.running(); len(got) != 0 {
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
	if err := a.stopAll(); err != nil {
		t.Fatal(err)
	}
	balanceUntil(t, b, hotels) // after a left b takes every hotel
}

// alphaOnADatabase starts a replica of one hotel, alpha, whose state is
// in the test database (with the requests given), and returns the
// fixture, the database, the replica and alpha running under its lease.
func alphaOnADatabase(t *testing.T, requests ...string) (*fleetFixture, string, *fleet, *runningHotel) {
	t.Helper()
	db := statetest.PostgresURL(t)
	fx := newFleetFixture(t)
	fx.mainVars["TICKETBRIDGE_STATE"] = db
	fx.writeHotel("alpha", nil)
	for _, r := range requests {
		fx.ticket("alpha", r)
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
	rh.lease.stopTimer() // the timer has not fired yet
	rh.lease.end()
	if rh.life.Err() != nil {
		t.Fatal("the hotel ended before it tried anything")
	}
	if _, _, err := rh.w.Helpdesk().Changes(rh.life, ""); err == nil || !strings.Contains(err.Error(), "lease") {
		t.Errorf("a helpdesk call after the lease's view ended: %v, want refused", err)
	}
	if cause := context.Cause(rh.life); !errors.Is(cause, errLeaseEnded) {
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
	rh.lease.stopTimer() // the timer has not fired yet
	rh.lease.end()
	const probe = "guard-probe"
	if _, err := rh.w.API().GetTicket(t.Context(), probe); !errors.Is(err, errLeaseEnded) {
		t.Errorf("an API request after the lease's view ended: %v, want refused with the lease's end", err)
	}
	for _, r := range fx.ts.Server.Requests() {
		if strings.Contains(r.Path, probe) {
			t.Errorf("the refused request reached the API: %s %s", r.Method, r.Path)
		}
	}
	if cause := context.Cause(rh.life); !errors.Is(cause, errLeaseEnded) {
		t.Fatalf("the hotel's context after a refused request: cause %v, want it ended by the lease", cause)
	}
	<-rh.done
}

// TestReplicaLeavesAnUnusedDatabase: once a reload leaves no hotel on a
// database, the replica hands its hotels over, then quits that
// database's replicas and closes its connections.
func TestReplicaLeavesAnUnusedDatabase(t *testing.T) {
	fx, db, a, rh := alphaOnADatabase(t)
	if n := len(a.keeper.all()); n != 1 {
		t.Fatalf("the replica holds leases in %d databases, want the one", n)
	}
	if err := os.Remove(filepath.Join(fx.hotelsDir, "alpha.env")); err != nil {
		t.Fatal(err)
	}
	if err := a.reload(); err != nil {
		t.Fatal(err)
	}
	<-rh.closed // handed over: stopped after its cycle in flight, its wiring closed, its lease given back
	a.balance()
	a.keeper.retiring.Wait()
	if n := len(a.keeper.all()); n != 0 {
		t.Errorf("the replica keeps %d databases no hotel names, want none", n)
	}
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var replicas, leases int
	if err := conn.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM ticketbridge_replicas WHERE replica = $1), (SELECT count(*) FROM ticketbridge_leases WHERE replica = $1 AND expires_at > now())`, a.keeper.replica).Scan(&replicas, &leases); err != nil {
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
	l := rh.lease.get()
	l.Until = rh.lease.clock.Now().Add(-time.Millisecond)
	rh.lease.extend(l) // the view ended: as a pause past the time to live
	<-rh.life.Done()
	<-rh.done
	// The hotel's context without its cancellation: the moment after the
	// view ended and before the hotel was stopped, as a replica resumed
	// after a pause lives it.
	ctx := context.WithoutCancel(rh.life)
	if _, err := rh.w.API().ListTickets(ctx, guestapi.ListOptions{}); err == nil || !strings.Contains(err.Error(), "lease") {
		t.Errorf("an API request after the lease's view ended: %v, want refused", err)
	}
	if _, _, err := rh.w.Helpdesk().Changes(ctx, ""); err == nil || !strings.Contains(err.Error(), "lease") {
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
	for _, f := range fx.folders(hotel) {
		b, err := os.ReadFile(filepath.Join(fx.filesDir(hotel), "tickets", f, "ticket.json"))
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

// TestSingleHotelStandsBy: two daemons of one hotel on one database; the
// second stands by while the first syncs, takes over as soon as the first
// stops, and syncs what the first left.
func TestSingleHotelStandsBy(t *testing.T) {
	db := statetest.PostgresURL(t) // before newBridge clears the environment
	b := newBridge(t)
	b.vars["TICKETBRIDGE_STATE"] = db
	b.vars["TICKETBRIDGE_LOG_LEVEL"] = "info"
	b.vars["TICKETBRIDGE_SCHEDULE"] = "@every 1000h" // the first cycle only
	env := b.envFile()
	a := b.ticket("towels")

	type daemon struct {
		logs   *lineWatch
		cancel context.CancelFunc
		done   chan struct{} // closed when run returned, err set
		err    error
	}
	start := func() *daemon {
		d := &daemon{logs: &lineWatch{want: "", lines: make(chan string, 1024)}, done: make(chan struct{})}
		var ctx context.Context
		ctx, d.cancel = context.WithCancel(context.Background())
		go func() { d.err = run(ctx, []string{"run", "--env-file", env}, io.Discard, d.logs); close(d.done) }()
		t.Cleanup(func() { d.cancel(); <-d.done })
		return d
	}
	waitLine := func(who string, d *daemon, want string) {
		t.Helper()
		for {
			select {
			case line := <-d.logs.lines:
				if strings.Contains(line, want) {
					return
				}
			case <-d.done:
				t.Fatalf("%s ended before %q: %v", who, want, d.err)
			case <-time.After(time.Minute):
				t.Fatalf("%s wrote no %q within a minute", who, want)
			}
		}
	}
	da := start()
	waitLine("a", da, "cycle ok")
	if n := countFolders(b.vars["TICKETBRIDGE_FILES_DIR"], a); n != 1 {
		t.Fatalf("after a's first cycle: %d folders of the request, want 1", n)
	}
	db2 := start()
	waitLine("b", db2, "standing by")
	guestWrites(t, b.ts, a, "and a bathrobe")
	b2 := b.ticket("a lamp")
	da.cancel()
	if <-da.done; da.err != nil {
		t.Fatalf("a stopped with %v", da.err)
	}
	waitLine("b", db2, "holds the lease")
	waitLine("b", db2, "cycle ok")
	if n := countFolders(b.vars["TICKETBRIDGE_FILES_DIR"], b2); n != 1 {
		t.Errorf("b did not sync the request made while it stood by: %d folders", n)
	}
	if n := countFolders(b.vars["TICKETBRIDGE_FILES_DIR"], a); n != 1 {
		t.Errorf("after b's cycle: %d folders of the first request, want 1", n)
	}
	tj := readTicketJSON(t, filepath.Join(b.vars["TICKETBRIDGE_FILES_DIR"], "tickets", folderOf(b.vars["TICKETBRIDGE_FILES_DIR"], a), "ticket.json"))
	n := 0
	for _, m := range tj.Thread {
		if strings.Contains(m.Body, "and a bathrobe") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the guest message written while b stood by is in the folder %d times, want once", n)
	}
}

// A daemon of many hotels runs the collector at half the default target
// unless the environment chooses.
func TestFleetGC(t *testing.T) {
	for _, c := range []struct {
		gogc, limit string
		want        int
		ok          bool
	}{
		{"", "", fleetGCPercent, true},
		{"100", "", 0, false},
		{"", "512MiB", 0, false},
	} {
		t.Setenv("GOGC", c.gogc)
		t.Setenv("GOMEMLIMIT", c.limit)
		if got, ok := fleetGC(); got != c.want || ok != c.ok {
			t.Errorf("GOGC=%q GOMEMLIMIT=%q: fleetGC = %d, %t; want %d, %t", c.gogc, c.limit, got, ok, c.want, c.ok)
		}
	}
}
