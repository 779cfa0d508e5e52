package lease

// This file keeps the leases of a replica: one keeper per database,
// renewing on a goroutine of its own, on a clock that tests replace (see
// lease.go for what the leases share and promise, single.go for the lease
// of one hotel a command holds on its own).

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	gosync "sync"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
)

// Clock is the time the leases are kept by: the system's, or a test's
// that moves only when the test advances it.
type Clock interface {
	Now() time.Time
	// NewTicker returns a channel that receives every d (dropping ticks
	// a slow reader missed, as time.Ticker does) and the ticker's stop.
	NewTicker(d time.Duration) (<-chan time.Time, func())
	// AfterFunc calls f in a goroutine of its own once d passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a timer of a Clock, as *time.Timer is.
type Timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// SystemClock is the clock of the time package.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTicker is time.NewTicker.
func (SystemClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// AfterFunc is time.AfterFunc.
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// DB is a database's leases as a replica uses them: *state.Leases, or a
// test's.
type DB interface {
	// Heartbeat keeps the replica alive and returns the live replicas and
	// the leases of every hotel but those this replica holds live.
	Heartbeat(ctx context.Context) (replicas []string, holders []state.Owner, err error)
	// Take takes those of hotels that are free, expired or this
	// replica's, in one round trip, and returns their leases.
	Take(ctx context.Context, hotels []string) ([]state.Lease, error)
	// Renew extends leases in one round trip and names those lost.
	Renew(ctx context.Context, leases []state.Lease) (state.Renewal, error)
	Release(ctx context.Context, l state.Lease) error
	Leave(ctx context.Context) error
	Quit(ctx context.Context) error
	Close() error
}

// Opener joins the replicas of the database at url; leases live life.
type Opener func(ctx context.Context, url, replica string, life time.Duration) (DB, error)

// OpenState is an Opener on PostgreSQL.
func OpenState(ctx context.Context, url, replica string, life time.Duration) (DB, error) {
	l, err := state.OpenLeases(ctx, url, replica, life)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Balancer balances the hotels of a keeper's database with what runs
// them (the fleet). A keeper calls it on its own goroutine, once per
// round; its methods must not wait for a hotel or a database, so that the
// renewals of every database go on in time.
type Balancer interface {
	// Failed reports that k's database could not be opened; it returns
	// whether the database is no longer in use, and k is to retire (see
	// Keepers.Retire).
	Failed(k *Keeper, err error) (retire bool)
	// Plan balances the hotels of k's database after k's heartbeat and
	// renewal: lost are the leases k no longer holds (taken over by
	// another replica; their views ended). It returns the hotels k is to
	// take, with what /readyz says of those synced elsewhere; elsewhere
	// is nil when nothing is to be taken any more (the fleet is
	// stopping), and retire is true when no hotel names the database.
	Plan(k *Keeper, replicas []string, holders []state.Owner, lost []*Owned) (take []string, elsewhere map[string]string, retire bool)
	// Start starts hotel name under hl, the lease k just took, without
	// waiting for it; it returns false when the hotel is no longer to
	// run here, and k gives the lease back.
	Start(name string, hl *Owned) bool
	// Settle records what /readyz says of the hotels of k's database
	// synced elsewhere.
	Settle(k *Keeper, elsewhere map[string]string)
}

// Options are what Keepers keep leases with.
type Options struct {
	// TTL is the leases' time to live (TICKETBRIDGE_LEASE_TTL).
	TTL    time.Duration
	Logger *slog.Logger
	// Clock is the time; nil is SystemClock.
	Clock Clock
	// Open joins a database's replicas; nil is OpenState.
	Open Opener
	// Replica names this process among the replicas; empty is a new
	// NewReplicaID.
	Replica string
	// Visitor keeps the lease of a command acting for a hotel from
	// outside the daemon (Take): it renews without heartbeats, so that
	// the replicas of a fleet do not count it among them.
	Visitor bool
}

// Keepers hold the leases of a replica of many hotels: one Keeper per
// database the hotels name, each renewing on a goroutine of its own, so
// that a database that does not answer (or answers slowly) holds up the
// renewals of no other.
type Keepers struct {
	replica string
	ttl     time.Duration
	log     *slog.Logger
	clock   Clock
	open    Opener
	bal     Balancer
	visitor bool

	mu  gosync.Mutex
	dbs map[string]*Keeper // by state URL
	// retiring counts the keepers of databases no hotel names any more
	// that are leaving them; Leave waits for them.
	retiring gosync.WaitGroup
}

// NewKeepers returns the keepers of a replica, balancing with b; none
// runs before Keeper is asked for its database.
func NewKeepers(opts Options, b Balancer) *Keepers {
	lk := &Keepers{replica: opts.Replica, ttl: opts.TTL, log: opts.Logger, clock: opts.Clock, open: opts.Open, bal: b, visitor: opts.Visitor, dbs: map[string]*Keeper{}}
	if lk.replica == "" {
		lk.replica = NewReplicaID()
	}
	if lk.clock == nil {
		lk.clock = SystemClock{}
	}
	if lk.open == nil {
		lk.open = OpenState
	}
	if lk.log == nil {
		lk.log = slog.New(slog.DiscardHandler)
	}
	return lk
}

// Replica returns this process's name among the replicas.
func (lk *Keepers) Replica() string { return lk.replica }

// TTL returns the leases' time to live.
func (lk *Keepers) TTL() time.Duration { return lk.ttl }

// Clock returns the clock the leases are kept by.
func (lk *Keepers) Clock() Clock { return lk.clock }

// Keeper returns the keeper of the database at url, started on first use
// on a goroutine of its own that runs until ctx ends or Leave.
func (lk *Keepers) Keeper(ctx context.Context, url string) *Keeper { return lk.keeper(ctx, url, nil) }

// keeper is Keeper; a keeper started here keeps db, when not nil: the
// database opened already.
func (lk *Keepers) keeper(ctx context.Context, url string, db DB) *Keeper {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if k, ok := lk.dbs[url]; ok {
		return k
	}
	k := &Keeper{lk: lk, url: url, wake: make(chan struct{}, 1), now: make(chan chan struct{}),
		quit: make(chan struct{}), done: make(chan struct{}), db: db, owned: map[string]*Owned{}}
	lk.dbs[url] = k
	k.wake <- struct{}{} // the first round at once
	go k.run(ctx)
	return k
}

// All returns the keepers of the databases in use.
func (lk *Keepers) All() []*Keeper {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	return slices.Collect(maps.Values(lk.dbs))
}

// Wake has every keeper balance now rather than at its next tick.
func (lk *Keepers) Wake() {
	for _, k := range lk.All() {
		select {
		case k.wake <- struct{}{}:
		default: // a round is due already
		}
	}
}

// Retire takes k out of the keepers when it holds no lease, and reports
// whether it did: k then quits its database after its releases in
// flight. The Balancer calls it when no hotel names k's database.
func (lk *Keepers) Retire(k *Keeper) bool {
	if k.Holds() {
		return false
	}
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if lk.dbs[k.url] != k {
		return false // leaving
	}
	delete(lk.dbs, k.url)
	lk.retiring.Add(1)
	return true
}

// WaitRetired waits for the keepers retiring to have left their
// databases.
func (lk *Keepers) WaitRetired() { lk.retiring.Wait() }

// Leave stops the keepers, releases every lease and leaves the replicas
// of each database, after the databases being retired.
func (lk *Keepers) Leave(ctx context.Context) {
	lk.mu.Lock()
	ks := slices.Collect(maps.Values(lk.dbs))
	clear(lk.dbs)
	lk.mu.Unlock()
	for _, k := range ks {
		close(k.quit)
	}
	for _, k := range ks {
		<-k.done
	}
	lk.retiring.Wait()
	for _, k := range ks {
		db := k.database()
		if db == nil {
			continue
		}
		if err := db.Leave(ctx); err != nil {
			lk.log.Warn("leave the replicas of a database", slog.Any("error", err), slog.String("op", "lease"), slog.String("state", state.Redacted(k.url)))
		}
		_ = db.Close()
	}
}

// Keeper keeps this replica's leases in one database. Its goroutine opens
// the database, then every tick heartbeats, renews the leases it holds,
// and balances the database's hotels with the Balancer: hands over those
// that belong to another replica now and takes those that belong here
// and are free. It never waits for a hotel: the Balancer starts the
// hotels it takes in goroutines of their own, and stops them without
// waiting; a stopped hotel gives its lease back (Release) once its wiring
// closed.
type Keeper struct {
	lk   *Keepers
	url  string
	wake chan struct{}      // a round now (buffered: one is enough)
	now  chan chan struct{} // a round now, the channel closed after it
	quit chan struct{}
	done chan struct{}

	mu    gosync.Mutex
	db    DB                // nil until opened
	owned map[string]*Owned // the leases renewed: running or stopping here
	// releasing counts the releases in flight; a retiring keeper closes
	// the database after them.
	releasing gosync.WaitGroup

	// renewing and leases are the round's own (run's goroutine only):
	// the leases it renews, kept from one tick to the next so that a
	// replica of thousands of hotels does not make them anew each tick.
	renewing []*Owned
	leases   []state.Lease
}

// URL returns the state URL of k's database.
func (k *Keeper) URL() string { return k.url }

// Keepers returns the keepers k is one of.
func (k *Keeper) Keepers() *Keepers { return k.lk }

func (k *Keeper) database() DB {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.db
}

// Holds reports whether k renews any lease.
func (k *Keeper) Holds() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.owned) > 0
}

// Balance has k balance its database now, and waits for the round; a
// round asked for before (a wake) is run by this one. It returns at once
// when k no longer runs.
func (k *Keeper) Balance() {
	select {
	case <-k.wake: // this round does it
	default:
	}
	reply := make(chan struct{})
	select {
	case k.now <- reply:
	case <-k.done:
		return
	}
	select {
	case <-reply:
	case <-k.done:
	}
}

// run balances at once, then at every tick (or when woken), until quit,
// ctx ending, or the database no longer being in use.
func (k *Keeper) run(ctx context.Context) {
	defer close(k.done)
	tick, stop := k.lk.clock.NewTicker(Tick(k.lk.ttl))
	defer stop()
	for {
		var reply chan struct{}
		select {
		case <-tick:
		case <-k.wake:
		case reply = <-k.now:
		case <-k.quit:
			return
		case <-ctx.Done():
			return
		}
		if k.round(ctx) {
			k.retire() // done tells who asked for the round
			return
		}
		if reply != nil {
			close(reply)
		}
	}
}

// round is one balance of the database; it reports whether the database
// is no longer in use, and k is to retire.
func (k *Keeper) round(ctx context.Context) (retire bool) {
	if ctx.Err() != nil {
		return false
	}
	c, ttl, bal := k.lk.clock, k.lk.ttl, k.lk.bal
	begin := c.Now()
	opLog := k.lk.log.With(slog.String("op", "lease"))
	db := k.database()
	if db == nil {
		var err error
		if db, err = k.lk.open(ctx, k.url, k.lk.replica, Life(ttl)); err != nil {
			return bal.Failed(k, err)
		}
		k.mu.Lock()
		k.db = db
		k.mu.Unlock()
	}
	var replicas []string
	var holders []state.Owner
	if !k.lk.visitor {
		var err error
		if replicas, holders, err = db.Heartbeat(ctx); err != nil {
			// The hotels running here go on while their leases' views last.
			opLog.Warn("lease heartbeat failed; the hotels running here go on while their leases last", slog.Any("error", err))
			return false
		}
	}
	lost, ok := k.renew(ctx, db)
	if !ok {
		return false
	}
	take, elsewhere, retire := bal.Plan(k, replicas, holders, lost)
	if retire || elsewhere == nil {
		return retire
	}
	k.take(ctx, take, replicas, elsewhere, begin)
	bal.Settle(k, elsewhere)
	return false
}

// renew renews the leases of what runs here, and of what is stopping, in
// one round trip; it returns those lost, which k no longer holds, and
// false when the renewal failed.
func (k *Keeper) renew(ctx context.Context, db DB) (lost []*Owned, ok bool) {
	k.mu.Lock()
	for _, hl := range k.owned {
		k.renewing = append(k.renewing, hl)
		k.leases = append(k.leases, hl.Get())
	}
	k.mu.Unlock()
	defer func() {
		clear(k.renewing) // no Owned kept alive past its hotel
		k.renewing, k.leases = k.renewing[:0], k.leases[:0]
	}()
	r, err := db.Renew(ctx, k.leases)
	if err != nil {
		k.lk.log.Warn("renew leases", slog.Any("error", err), slog.String("op", "lease"))
		return nil, false
	}
	var gone map[string]bool
	if len(r.Lost) > 0 {
		gone = make(map[string]bool, len(r.Lost))
		for _, h := range r.Lost {
			gone[h] = true
		}
	}
	// again are the leases released meanwhile that the renewal did not
	// find lost: it may have extended them after their release (it waits
	// for the release's row lock, then finds the row still live by its
	// own clock), and the next replica would wait a lease's life for
	// them. They are given back once more; a lease no longer held, or
	// taken anew with a higher fence, is not touched.
	var again []state.Lease
	k.mu.Lock()
	for i, hl := range k.renewing {
		name := k.leases[i].Hotel
		if k.owned[name] != hl {
			// Released meanwhile: its view's timer stays stopped.
			if !gone[name] {
				again = append(again, k.leases[i])
			}
			continue
		}
		if !gone[name] {
			hl.extend(r.Until)
			continue
		}
		delete(k.owned, name)
		hl.End()
		hl.StopTimer()
		lost = append(lost, hl)
	}
	k.mu.Unlock()
	for _, l := range again {
		if err := db.Release(ctx, l); err != nil {
			k.lk.log.Warn("release the hotel's lease", slog.Any("error", err), slog.Any("hotel", l.Hotel), slog.String("op", "lease"))
		}
	}
	return lost, true
}

// take takes up to TakeBatch of the hotels the Balancer planned for k,
// in one statement, and starts each one taken; those it could not take
// are elsewhere, and the rest wait for the next rounds. A round takes
// only while it is in the first half of its tick, so that taking never
// holds up the next renewal: a round whose heartbeat and renewal were
// slow leaves its hotels to the next.
func (k *Keeper) take(ctx context.Context, hotels, replicas []string, elsewhere map[string]string, begin time.Time) {
	if len(hotels) == 0 {
		return
	}
	c, bal, db := k.lk.clock, k.lk.bal, k.database()
	opLog := k.lk.log.With(slog.String("op", "lease"))
	later := hotels[min(len(hotels), TakeBatch):]
	if c.Now().Sub(begin) > Tick(k.lk.ttl)/2 {
		later = hotels
	}
	for _, name := range later {
		elsewhere[name] = "waiting for this replica's next tick"
	}
	hotels = hotels[:len(hotels)-len(later)]
	if len(hotels) == 0 {
		return
	}
	taken, err := db.Take(ctx, hotels)
	if err != nil {
		opLog.Warn("take the hotels' leases", slog.Any("error", err), slog.Int("hotels", len(hotels)))
	}
	// Those not taken were taken by another replica since the heartbeat,
	// which showed them free.
	for _, name := range hotels {
		elsewhere[name] = ElsewhereReason(state.Owner{}, false)
	}
	for _, l := range taken {
		delete(elsewhere, l.Hotel)
		opLog.Info("hotel taken: this replica holds its lease", slog.Any("hotel", l.Hotel), slog.Any("fence", l.Fence), slog.Any("replicas", len(replicas)))
		hl := k.hold(l)
		if !bal.Start(l.Hotel, hl) {
			k.Release(hl) // a reload removed it meanwhile
		}
	}
}

// hold makes l, a lease k took (or a command took: see Take), one that
// k renews.
func (k *Keeper) hold(l state.Lease) *Owned {
	hl := newOwned(k, k.lk.clock, l)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.owned[l.Hotel] = hl
	return hl
}

// Release gives a lease back, if k still holds it.
func (k *Keeper) Release(hl *Owned) {
	hl.StopTimer()
	l := hl.Get()
	k.mu.Lock()
	if k.owned[l.Hotel] != hl {
		k.mu.Unlock()
		return // lost, or released already
	}
	delete(k.owned, l.Hotel)
	db := k.db
	k.releasing.Add(1)
	k.mu.Unlock()
	defer k.releasing.Done()
	ctx, cancel := context.WithTimeout(context.Background(), k.lk.ttl)
	defer cancel()
	if err := db.Release(ctx, l); err != nil {
		k.lk.log.Warn("release the hotel's lease", slog.Any("error", err), slog.Any("hotel", l.Hotel), slog.String("op", "lease"))
	}
}

// retire quits and closes the database no hotel in use names any more (a
// reload moved the hotels elsewhere, or removed them), so that a replica
// does not keep its connections until it stops. Retire took k out of its
// keepers already.
func (k *Keeper) retire() {
	defer k.lk.retiring.Done()
	k.releasing.Wait()
	db := k.database()
	if db == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), Tick(k.lk.ttl))
	defer cancel()
	if err := db.Quit(ctx); err != nil {
		k.lk.log.Warn("leave the replicas of a database no hotel names any more", slog.Any("error", err), slog.String("op", "lease"), slog.String("state", state.Redacted(k.url)))
	} else {
		k.lk.log.Info("left the replicas of a database no hotel names any more", slog.String("op", "lease"), slog.String("state", state.Redacted(k.url)))
	}
	_ = db.Close()
}
