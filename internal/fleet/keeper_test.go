package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/lease"
	"github.com/ticketbridge/ticketbridge/internal/lease/leasetest"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// These tests keep the leases on a clock the test advances, in databases
// held in memory: they show that each database's keeper renews at every
// tick whatever else the fleet is waiting for.

// fakeLeases is the leases of one database held in memory, with this
// replica the only one.
type fakeLeases struct {
	clock   *leasetest.Clock
	life    time.Duration
	replica string

	mu    gosync.Mutex
	fence int64
	held  map[string]int64 // hotel -> fence
	takes int              // the calls of Take: round trips
	// renewals receives each renewal: when (on the clock), and of which
	// hotels.
	renewals chan fakeRenewal
	// afterRenew, when set, runs once after the next renewal reached the
	// database and before its answer reaches the keeper.
	afterRenew func()
	// others are the live leases of other replicas (hotel -> replica),
	// which Take leaves alone; releases counts the calls of Release.
	others   map[string]string
	releases int
}

type fakeRenewal struct {
	at     time.Time
	hotels []string
	held   []string // the hotels whose leases this replica held then
}

// Heartbeat returns the other replicas' leases only: this replica's own
// live leases are not among those a heartbeat reads.
func (db *fakeLeases) Heartbeat(context.Context) ([]string, []state.Owner, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	replicas := []string{db.replica}
	var holders []state.Owner
	for hotel, r := range db.others {
		replicas = append(replicas, r)
		holders = append(holders, state.Owner{Hotel: hotel, Replica: r, Live: true})
	}
	slices.Sort(replicas)
	return slices.Compact(replicas), holders, nil
}

func (db *fakeLeases) Take(_ context.Context, hotels []string) ([]state.Lease, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.takes++
	var out []state.Lease
	for _, hotel := range hotels {
		if _, theirs := db.others[hotel]; theirs {
			continue
		}
		db.fence++
		db.held[hotel] = db.fence
		out = append(out, state.Lease{Hotel: hotel, Fence: db.fence, Until: db.clock.Now().Add(db.life)})
	}
	return out, nil
}

func (db *fakeLeases) Renew(_ context.Context, leases []state.Lease) (state.Renewal, error) {
	db.mu.Lock()
	after := db.afterRenew
	db.afterRenew = nil
	defer func() {
		if after != nil {
			after()
		}
	}()
	defer db.mu.Unlock()
	r := fakeRenewal{at: db.clock.Now()}
	var lost []string
	for _, l := range leases {
		if db.held[l.Hotel] == l.Fence {
			r.hotels = append(r.hotels, l.Hotel)
		} else {
			lost = append(lost, l.Hotel)
		}
	}
	slices.Sort(r.hotels)
	r.held = slices.Sorted(maps.Keys(db.held))
	db.renewals <- r
	return state.Renewal{Until: r.at.Add(db.life), Lost: lost}, nil
}

func (db *fakeLeases) Release(_ context.Context, l state.Lease) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.releases++
	if db.held[l.Hotel] == l.Fence {
		delete(db.held, l.Hotel)
	}
	return nil
}

func (db *fakeLeases) Leave(context.Context) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	clear(db.held)
	return nil
}

func (db *fakeLeases) Quit(context.Context) error { return nil }
func (db *fakeLeases) Close() error               { return nil }

// keeperWorld is a replica whose leased hotels keep their leases in
// databases held in memory, on a clock the test advances. The state URLs
// name the databases: one whose host is hang.invalid never opens. A
// leased hotel's wiring lasts until the test ends, as on a database or a
// helpdesk that does not answer; a hotel with a state file is wired for
// real.
type keeperWorld struct {
	t     *testing.T
	fx    *fleetFixture
	clock *leasetest.Clock
	f     *Fleet

	mu  gosync.Mutex
	dbs map[string]*fakeLeases
	// wiring receives the name of each leased hotel whose wiring began;
	// opened a token for each database opened.
	wiring chan string
	opened chan struct{}
	// setup, when set, sees the replica before it loads the hotels.
	setup func(*Fleet)
}

const (
	okDB   = "postgres://ok.invalid/ticketbridge"
	hangDB = "postgres://hang.invalid/ticketbridge"
)

func newKeeperWorld(t *testing.T) *keeperWorld {
	t.Helper()
	w := &keeperWorld{t: t, fx: newFleetFixture(t), clock: leasetest.NewClock(), dbs: map[string]*fakeLeases{}, wiring: make(chan string, 1024), opened: make(chan struct{}, 16)}
	return w
}

// start builds the replica of the hotels written so far and loads them.
func (w *keeperWorld) start() {
	w.t.Helper()
	open := func(ctx context.Context, url, replica string, life time.Duration) (lease.DB, error) {
		if strings.Contains(url, "hang.invalid") {
			<-ctx.Done() // a database that never answers
			return nil, ctx.Err()
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		db, ok := w.dbs[url]
		if !ok {
			db = &fakeLeases{clock: w.clock, life: life, replica: replica, held: map[string]int64{}, renewals: make(chan fakeRenewal, 1<<14)}
			w.dbs[url] = db
			w.opened <- struct{}{}
		}
		return db, nil
	}
	f := w.fx.newReplica(w.t.Context(), func(o *Options) { o.Clock, o.OpenLeases = w.clock, open })
	realWire := f.wire
	f.wire = func(ctx context.Context, env envconfig.Lookuper, cfg config.Daemon, sc sync.Config, log *slog.Logger, opts bridge.Options) (*bridge.Bridge, error) {
		if !cfg.State.IsDB() {
			return realWire(ctx, env, cfg, sc, log, opts)
		}
		w.wiring <- cfg.Hotel
		<-ctx.Done()
		return nil, ctx.Err()
	}
	w.f = f
	if w.setup != nil {
		w.setup(f)
	}
	if err := f.Reload(); err != nil {
		w.t.Fatal(err)
	}
}

// leased writes the file of a hotel whose state is in the database at url.
func (w *keeperWorld) leased(name, url string) {
	w.fx.WriteHotel(name, map[string]string{"TICKETBRIDGE_STATE": url})
}

// db returns the database at url once its keeper opened it (its first
// round, which the reload asked for). A minute without fails the test.
func (w *keeperWorld) db(url string) *fakeLeases {
	w.t.Helper()
	timeout := time.After(time.Minute) // a hang's report, not a timing
	for {
		w.mu.Lock()
		db := w.dbs[url]
		w.mu.Unlock()
		if db != nil {
			return db
		}
		select {
		case <-w.opened:
		case <-timeout:
			w.t.Fatalf("the keeper of %s did not open it", url)
		}
	}
}

// renewedAt waits for db's renewal at the clock's time now, and returns
// the hotels it renewed. A minute without one fails the test: the
// keeper's round that tick should have made is not coming.
func (w *keeperWorld) renewedAt(db *fakeLeases, now time.Time) []string {
	w.t.Helper()
	return w.renewalAt(db, now).hotels
}

// renewalAt waits for the first renewal of db at now, skipping those
// before; a minute without fails the test.
func (w *keeperWorld) renewalAt(db *fakeLeases, now time.Time) fakeRenewal {
	w.t.Helper()
	timeout := time.After(time.Minute) // a hang's report, not a timing
	for {
		select {
		case r := <-db.renewals:
			if r.at.Equal(now) {
				return r
			}
		case <-timeout:
			w.t.Fatalf("no renewal at the tick of %s", now.Format(time.TimeOnly))
			return fakeRenewal{}
		}
	}
}

// ticks advances the clock n ticks; at each the keeper of db must renew
// the leases of hotels, and every one of running (see runningNow) must
// stay valid. It takes nothing the fleet holds.
func (w *keeperWorld) ticks(n int, db *fakeLeases, hotels []string, running map[string]*runningHotel) {
	w.t.Helper()
	tick := lease.Tick(w.f.hcfg.LeaseTTL)
	for i := range n {
		w.clock.Advance(tick)
		got := w.renewedAt(db, w.clock.Now())
		if !slices.Equal(got, hotels) {
			w.t.Fatalf("tick %d: renewed %d leases (%v), want %d", i+1, len(got), firstFew(got), len(hotels))
		}
		for _, h := range hotels {
			if rh := running[h]; rh == nil || !rh.lease.Valid() || !rh.alive() {
				w.t.Fatalf("tick %d: hotel %s no longer runs under a valid lease", i+1, h)
			}
		}
	}
}

// started waits until each hotel of names began its wiring: it then runs
// under its lease (the keeper took the lease before). A minute without
// fails the test.
func (w *keeperWorld) started(names ...string) {
	w.t.Helper()
	timeout := time.After(time.Minute) // a hang's report, not a timing
	left := map[string]bool{}
	for _, n := range names {
		left[n] = true
	}
	for len(left) > 0 {
		select {
		case n := <-w.wiring:
			delete(left, n)
		case <-timeout:
			w.t.Fatalf("hotels %v did not begin their wiring", slices.Sorted(maps.Keys(left)))
		}
	}
}

// runningNow returns the hotels of hotels running now.
func (w *keeperWorld) runningNow(hotels []string) map[string]*runningHotel {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	running := map[string]*runningHotel{}
	for _, h := range hotels {
		running[h] = w.f.hotels[h]
	}
	return running
}

func firstFew(hs []string) []string {
	if len(hs) > 5 {
		return append(slices.Clone(hs[:5]), "...")
	}
	return hs
}

// TestKeeperRenewsWhileADatabaseHangs: one database never answers its
// open; the keeper of another renews its leases at every tick.
func TestKeeperRenewsWhileADatabaseHangs(t *testing.T) {
	w := newKeeperWorld(t)
	w.leased("alpha", hangDB)
	w.leased("bravo", okDB)
	w.start()
	db := w.db(okDB)
	w.started("bravo")
	w.ticks(20, db, []string{"bravo"}, w.runningNow([]string{"bravo"}))
	if got := w.f.Running(); !slices.Equal(got, []string{"bravo"}) {
		t.Errorf("the replica runs %v, want bravo alone (alpha's database never opened)", got)
	}
}

// TestKeeperRenewsWhileAReloadWaits: a reload restarts a hotel whose
// state is a file while its cycle runs for ten minutes: the reload
// returns at once, the hotel's next run waits for the cycle and the
// close, and meanwhile the leases are renewed at every tick.
func TestKeeperRenewsWhileAReloadWaits(t *testing.T) {
	w := newKeeperWorld(t)
	w.fx.WriteHotel("gamma", nil)
	w.leased("bravo", okDB)
	inCycle, release := make(chan struct{}, 1), make(chan struct{})
	w.setup = func(f *Fleet) {
		f.afterCycle = func(h string, _ sync.Report, _ error) {
			if h != "gamma" {
				return
			}
			select {
			case inCycle <- struct{}{}:
			default:
			}
			<-release // a cycle of ten minutes
		}
	}
	w.start()
	var once gosync.Once
	end := func() { once.Do(func() { close(release) }) }
	t.Cleanup(end) // before the replica stops, on failure too
	db := w.db(okDB)
	<-inCycle
	w.started("bravo")
	running := w.runningNow([]string{"bravo", "gamma"})
	gamma := running["gamma"]
	w.fx.WriteHotel("gamma", map[string]string{"TICKETBRIDGE_LOG_LEVEL": "warn"}) // as a SIGHUP after an edit
	if err := w.f.Reload(); err != nil {                                          // returns while gamma's cycle runs
		t.Fatal(err)
	}
	<-gamma.sctx.Done() // the reload stopped gamma
	w.f.mu.Lock()
	again := w.f.hotels["gamma"]
	w.f.mu.Unlock()
	if again == nil || again == gamma {
		t.Fatalf("gamma was not restarted by the reload")
	}
	w.ticks(20, db, []string{"bravo"}, running)
	select {
	case <-again.wired:
		t.Fatal("gamma's next run was wired while its previous cycle ran")
	default:
	}
	end()
	<-again.wired // once the previous run closed
}

// TestKeeperLeavesAReleasedLeaseStopped: a lease released while its
// renewal is on the way, which the renewal still extended in the
// database, stays released: the renewal's answer does not arm its view's
// timer again, which would stop the hotel (long gone) a lease's life
// later, and the keeper gives it back once more, so that the next
// replica need not wait for it to lapse.
func TestKeeperLeavesAReleasedLeaseStopped(t *testing.T) {
	w := newKeeperWorld(t)
	w.leased("bravo", okDB)
	w.start()
	db := w.db(okDB)
	w.started("bravo")
	hl := w.runningNow([]string{"bravo"})["bravo"].lease
	if n := w.clock.Armed(); n != 1 {
		t.Fatalf("%d timers armed, want the view's of bravo's lease alone", n)
	}
	fence := hl.Get().Fence
	db.mu.Lock()
	db.afterRenew = func() {
		hl.Keeper().Release(hl)
		db.mu.Lock()
		db.held["bravo"] = fence // the renewal extended it after the release
		db.mu.Unlock()
	}
	db.mu.Unlock()
	hl.Keeper().Balance()
	if n := w.clock.Armed(); n != 0 {
		t.Errorf("%d timers armed after bravo's lease was released, want none: its renewal armed the view's timer again", n)
	}
	db.mu.Lock()
	_, held := db.held["bravo"]
	db.mu.Unlock()
	if held {
		t.Error("bravo's lease, released and then extended by the renewal on its way, is still held: the next replica waits for it to lapse")
	}
}

// TestKeeperRenewsWhileManyHotelsStart: 200 hotels are taken, up to
// lease.TakeBatch a round in one round trip each, and their wirings do
// not end; the leases taken are renewed at every tick meanwhile. A round
// may come between ticks (the reload wakes the keeper, which may have
// begun its first round already), so each renewal is checked against
// the leases held when it ran, and against the hotels seen starting
// before the tick.
func TestKeeperRenewsWhileManyHotelsStart(t *testing.T) {
	w := newKeeperWorld(t)
	var hotels []string
	for i := range 200 {
		name := fmt.Sprintf("hotel-%03d", i)
		hotels = append(hotels, name)
		w.leased(name, okDB)
	}
	w.start()
	db := w.db(okDB)
	var started []string
	for round := 0; len(started) < len(hotels); round++ {
		if round > 0 {
			w.clock.Advance(lease.Tick(w.f.hcfg.LeaseTTL))
			r := w.renewalAt(db, w.clock.Now())
			if !slices.Equal(r.hotels, r.held) {
				t.Fatalf("round %d: renewed %d leases (%v) of the %d held", round, len(r.hotels), firstFew(r.hotels), len(r.held))
			}
			for _, h := range started {
				if _, ok := slices.BinarySearch(r.hotels, h); !ok {
					t.Fatalf("round %d: hotel %s, taken before the tick, not renewed (%d of %d renewed)", round, h, len(r.hotels), len(started))
				}
			}
		}
		timeout := time.After(time.Minute) // a hang's report, not a timing
		for len(started) < min((round+1)*lease.TakeBatch, len(hotels)) {
			select {
			case n := <-w.wiring: // every hotel taken is starting
				started = append(started, n)
			case <-timeout:
				t.Fatalf("round %d: %d hotels of %d began their wiring: the keeper waits for the others'", round, len(started), len(hotels))
			}
		}
		slices.Sort(started)
	}
	db.mu.Lock()
	takes := db.takes
	db.mu.Unlock()
	if want := (len(hotels) + lease.TakeBatch - 1) / lease.TakeBatch; takes != want {
		t.Errorf("%d hotels taken in %d round trips, want %d", len(hotels), takes, want)
	}
	select {
	case n := <-w.wiring:
		t.Fatalf("hotel %s began its wiring twice", n)
	default:
	}
	w.ticks(20, db, hotels, w.runningNow(hotels))
}
