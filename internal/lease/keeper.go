package main

// This file keeps the leases of a replica of many hotels: one keeper per
// database, renewing on a goroutine of its own, on a clock that tests
// replace (see leases.go for what the leases share and promise).

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	gosync "sync"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
)

// clock is the time the leases are kept by: the real one, or a test's
// that moves only when the test advances it.
type clock interface {
	Now() time.Time
	// NewTicker returns a channel that receives every d (dropping ticks
	// a slow reader missed, as time.Ticker does) and the ticker's stop.
	NewTicker(d time.Duration) (<-chan time.Time, func())
	// AfterFunc calls f in a goroutine of its own once d passed.
	AfterFunc(d time.Duration, f func()) clockTimer
}

// clockTimer is a timer of a clock, as *time.Timer is.
type clockTimer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// realClock is the clock of the time package.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

func (realClock) AfterFunc(d time.Duration, f func()) clockTimer { return time.AfterFunc(d, f) }

// leaseDB is a database's leases as a replica uses them: *state.Leases,
// or a test's.
type leaseDB interface {
	Heartbeat(ctx context.Context) (replicas []string, holders []state.Holder, err error)
	Acquire(ctx context.Context, hotel string) (state.Lease, bool, error)
	Renew(ctx context.Context, leases []state.Lease) ([]state.Lease, error)
	Release(ctx context.Context, l state.Lease) error
	Leave(ctx context.Context) error
	Quit(ctx context.Context) error
	Close() error
}

// openLeases joins the replicas of the database at url; leases live life.
type openLeases func(ctx context.Context, url, replica string, life time.Duration) (leaseDB, error)

// openStateLeases is openLeases on PostgreSQL.
func openStateLeases(ctx context.Context, url, replica string, life time.Duration) (leaseDB, error) {
	l, err := state.OpenLeases(ctx, url, replica, life)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// leaseKeeper holds the fleet's leases: one dbKeeper per database the
// hotels name, each renewing on a goroutine of its own, so that a
// database that does not answer (or answers slowly) holds up the
// renewals of no other.
type leaseKeeper struct {
	replica string
	ttl     time.Duration
	log     *slog.Logger
	clock   clock
	open    openLeases

	mu  gosync.Mutex
	dbs map[string]*dbKeeper // by state URL
	// retiring counts the keepers of databases no hotel names any more
	// that are leaving them; leave waits for them.
	retiring gosync.WaitGroup
}

func newLeaseKeeper(ttl time.Duration, log *slog.Logger) *leaseKeeper {
	return &leaseKeeper{replica: newReplicaID(), ttl: ttl, log: log, clock: realClock{}, open: openStateLeases, dbs: map[string]*dbKeeper{}}
}

// keeper returns the keeper of the database at url, started on first
// use for f.
func (lk *leaseKeeper) keeper(f *fleet, url string) *dbKeeper {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if k, ok := lk.dbs[url]; ok {
		return k
	}
	k := &dbKeeper{lk: lk, f: f, url: url, wake: make(chan struct{}, 1), now: make(chan chan struct{}),
		quit: make(chan struct{}), done: make(chan struct{}), held: map[string]*hotelLease{}}
	lk.dbs[url] = k
	k.wake <- struct{}{} // the first round at once
	go k.run(f.life)
	return k
}

// all returns the keepers of the databases in use.
func (lk *leaseKeeper) all() []*dbKeeper {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	return slices.Collect(maps.Values(lk.dbs))
}

// wake has every keeper balance now rather than at its next tick.
func (lk *leaseKeeper) wake() {
	for _, k := range lk.all() {
		select {
		case k.wake <- struct{}{}:
		default: // a round is due already
		}
	}
}

// leave stops the keepers, releases every lease and leaves the replicas
// of each database, after the databases being retired.
func (lk *leaseKeeper) leave(ctx context.Context) {
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

// dbKeeper keeps this replica's leases in one database. Its goroutine
// opens the database, then every tick heartbeats, renews the leases it
// holds, and balances the database's hotels with the fleet: hands over
// those that belong to another replica now and takes those that belong
// here and are free. It never waits for a hotel: the fleet starts the
// hotels it takes in goroutines of their own, and stops them without
// waiting; a stopped hotel gives its lease back once its wiring closed.
type dbKeeper struct {
	lk   *leaseKeeper
	f    *fleet
	url  string
	wake chan struct{}      // a round now (buffered: one is enough)
	now  chan chan struct{} // a round now, the channel closed after it
	quit chan struct{}
	done chan struct{}

	mu   gosync.Mutex
	db   leaseDB                // nil until opened
	held map[string]*hotelLease // the leases renewed: running or stopping here
	// releasing counts the releases in flight; a retiring keeper closes
	// the database after them.
	releasing gosync.WaitGroup
}

func (k *dbKeeper) database() leaseDB {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.db
}

// holds reports whether k renews any lease.
func (k *dbKeeper) holds() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.held) > 0
}

// run balances at once, then at every tick (or when woken), until quit,
// ctx ending, or the database no longer being in use.
func (k *dbKeeper) run(ctx context.Context) {
	defer close(k.done)
	tick, stop := k.lk.clock.NewTicker(leaseTick(k.lk.ttl))
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
func (k *dbKeeper) round(ctx context.Context) (retire bool) {
	if ctx.Err() != nil {
		return false
	}
	c, ttl := k.lk.clock, k.lk.ttl
	begin := c.Now()
	opLog := k.f.log.With(slog.String("op", "lease"))
	db := k.database()
	if db == nil {
		var err error
		if db, err = k.lk.open(ctx, k.url, k.lk.replica, leaseLife(ttl)); err != nil {
			return k.f.dbFailed(k, err)
		}
		k.mu.Lock()
		k.db = db
		k.mu.Unlock()
	}
	replicas, holders, err := db.Heartbeat(ctx)
	if err != nil {
		// The hotels running here go on while their leases' views last.
		opLog.Warn("lease heartbeat failed; the hotels running here go on while their leases last", slog.Any("error", err))
		return false
	}
	// Renew what runs here, and what is stopping.
	k.mu.Lock()
	mine := maps.Clone(k.held)
	k.mu.Unlock()
	leases := make([]state.Lease, 0, len(mine))
	for _, hl := range mine {
		leases = append(leases, hl.get())
	}
	kept, err := db.Renew(ctx, leases)
	if err != nil {
		opLog.Warn("renew leases", slog.Any("error", err))
		return false
	}
	renewed := map[string]state.Lease{}
	for _, l := range kept {
		renewed[l.Hotel] = l
	}
	var lost []*hotelLease
	k.mu.Lock()
	for name, hl := range mine {
		if l, ok := renewed[name]; ok {
			hl.extend(l)
			continue
		}
		if k.held[name] != hl {
			continue // released meanwhile
		}
		delete(k.held, name)
		hl.end()
		hl.stopTimer()
		lost = append(lost, hl)
	}
	k.mu.Unlock()
	take, elsewhere, retire := k.f.planDB(k, replicas, holders, lost)
	if retire || elsewhere == nil {
		return retire
	}
	holder := map[string]state.Holder{}
	for _, h := range holders {
		holder[h.Hotel] = h
	}
	for _, name := range take {
		// Hotels are taken during the first half of a tick only, so that
		// taking many does not hold up the renewals; the rest wait for
		// the next ticks.
		if c.Now().Sub(begin) > leaseTick(ttl)/2 {
			elsewhere[name] = "waiting for this replica's next tick"
			continue
		}
		l, ok, err := db.Acquire(ctx, name)
		if err != nil || !ok {
			if err != nil {
				opLog.Warn("take the hotel's lease", slog.Any("error", err), slog.Any("hotel", name))
			}
			elsewhere[name] = elsewhereReason(holder[name], false)
			continue
		}
		opLog.Info("hotel taken: this replica holds its lease", slog.Any("hotel", name), slog.Any("fence", l.Fence), slog.Any("replicas", len(replicas)))
		hl := newHotelLease(k, c, l)
		k.mu.Lock()
		k.held[name] = hl
		k.mu.Unlock()
		if !k.f.startLeased(name, hl) {
			k.release(hl) // a reload removed it meanwhile
		}
	}
	k.f.settle(k, elsewhere)
	return false
}

// release gives a lease back, if k still holds it.
func (k *dbKeeper) release(hl *hotelLease) {
	hl.stopTimer()
	l := hl.get()
	k.mu.Lock()
	if k.held[l.Hotel] != hl {
		k.mu.Unlock()
		return // lost, or released already
	}
	delete(k.held, l.Hotel)
	db := k.db
	k.releasing.Add(1)
	k.mu.Unlock()
	defer k.releasing.Done()
	ctx, cancel := context.WithTimeout(context.Background(), k.lk.ttl)
	defer cancel()
	if err := db.Release(ctx, l); err != nil {
		k.f.log.Warn("release the hotel's lease", slog.Any("error", err), slog.Any("hotel", l.Hotel), slog.String("op", "lease"))
	}
}

// retire quits and closes the database no hotel in use names any more (a
// reload moved the hotels elsewhere, or removed them), so that a replica
// does not keep its connections until it stops. The fleet took k out of
// its keepers already.
func (k *dbKeeper) retire() {
	defer k.lk.retiring.Done()
	k.releasing.Wait()
	db := k.database()
	if db == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaseTick(k.lk.ttl))
	defer cancel()
	if err := db.Quit(ctx); err != nil {
		k.lk.log.Warn("leave the replicas of a database no hotel names any more", slog.Any("error", err), slog.String("op", "lease"), slog.String("state", state.Redacted(k.url)))
	} else {
		k.lk.log.Info("left the replicas of a database no hotel names any more", slog.String("op", "lease"), slog.String("state", state.Redacted(k.url)))
	}
	_ = db.Close()
}
