package main

// This file shares the hotels of a PostgreSQL state among replicas: any
// number of `ticketbridge run` processes with the same hotels directory
// and the same database. Each hotel is synced by the one replica that
// holds its lease (see state.Leases); the hotels are spread evenly over
// the live replicas and move when replicas join or leave.

import (
	"cmp"
	"context"
	"errors"
	"hash/fnv"
	"log/slog"
	"maps"
	"os"
	"slices"
	gosync "sync"
	"time"

	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/state"
)

// The time to live splits as follows: a lease lives leaseLife of it in the
// database from its last renewal, and replicas renew every leaseTick of it.
// A free hotel is taken by the replica it belongs to at its next tick; one
// free for leaseOrphan ticks (its replica died too, or has not seen the
// change yet) by any replica. A killed replica's hotels are thus free at
// most leaseLife after its last renewal, and taken at most 1+leaseOrphan
// ticks later: 5/8 + 3/10 of the time to live, within it.
const (
	leaseLifeNum, leaseLifeDen = 5, 8 // leaseLife = ttl * 5/8
	leaseTickDen               = 10   // leaseTick = ttl / 10
	leaseOrphan                = 2    // ticks a free hotel waits for its replica
)

// leaseLife and leaseTick return the parts of ttl.
func leaseLife(ttl time.Duration) time.Duration { return ttl * leaseLifeNum / leaseLifeDen }
func leaseTick(ttl time.Duration) time.Duration { return ttl / leaseTickDen }

// newReplicaID names this process among the replicas: the host, for the
// person reading the lease table, and a random part, unique per start.
func newReplicaID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "replica"
	}
	if len(host) > 40 {
		host = host[:40]
	}
	return host + "-" + uuid.NewString()[:8]
}

// hotelLease is a running hotel's lease: while its view lasts the hotel
// may act; when the view ends without a renewal, the hotel stops at once.
type hotelLease struct {
	// keeper renews the lease; nil for the lease of a daemon of one hotel.
	keeper *dbKeeper
	clock  clock
	mu     gosync.Mutex
	lease  state.Lease
	timer  clockTimer
}

func newHotelLease(k *dbKeeper, c clock, l state.Lease) *hotelLease {
	return &hotelLease{keeper: k, clock: c, lease: l}
}

// valid reports whether the hotel may still act.
func (hl *hotelLease) valid() bool {
	hl.mu.Lock()
	defer hl.mu.Unlock()
	return hl.lease.Valid(hl.clock.Now())
}

func (hl *hotelLease) get() state.Lease {
	hl.mu.Lock()
	defer hl.mu.Unlock()
	return hl.lease
}

// extend moves the view's end to l's, and the timer with it.
func (hl *hotelLease) extend(l state.Lease) {
	hl.mu.Lock()
	defer hl.mu.Unlock()
	hl.lease = l
	if hl.timer != nil {
		hl.timer.Reset(l.Until.Sub(hl.clock.Now()))
	}
}

// end ends the view at once: the hotel's requests are refused from now.
func (hl *hotelLease) end() {
	hl.mu.Lock()
	defer hl.mu.Unlock()
	hl.lease.Until = time.Time{}
}

// expireWith arms the timer that calls lost when the view ends.
func (hl *hotelLease) expireWith(lost func()) {
	hl.mu.Lock()
	defer hl.mu.Unlock()
	hl.timer = hl.clock.AfterFunc(hl.lease.Until.Sub(hl.clock.Now()), lost)
}

func (hl *hotelLease) stopTimer() {
	hl.mu.Lock()
	defer hl.mu.Unlock()
	if hl.timer != nil {
		hl.timer.Stop()
	}
}

// errLeaseEnded is the error of a request a hotel tries after its lease
// ended.
var errLeaseEnded = errors.New("this replica's lease of the hotel ended: another replica may sync it now")

// leaseGuard returns the guard of the clients of a hotel held under hl
// (see httpx.Chain.Guard and adapters.Deps.Guard): once the lease's view
// ended it ends the
// hotel's context with cause and refuses with it, so that a replica that
// was paused or cut off sends nothing more for the hotel, to the API or
// the helpdesk, even in the moment before the view's timer stops the
// hotel; and the cycle sees its own end, not a failing request to record.
func leaseGuard(hl *hotelLease, end context.CancelCauseFunc, cause error) func() error {
	return func() error {
		if hl.valid() {
			return nil
		}
		end(cause)
		return cause
	}
}

// assign spreads hotels over replicas evenly: their loads differ by one at
// most. Each hotel goes to the first replica with room in an order drawn
// from a hash of the hotel and the replica (rendezvous hashing with
// bounded loads): first with room up to the lower share, then the hotels
// left over go one to a replica. Every replica computes the same answer
// from the same names, and a replica joining or leaving moves few hotels
// besides its own share (measured: at most three times it).
func assign(hotels, replicas []string) map[string]string {
	out := make(map[string]string, len(hotels))
	if len(replicas) == 0 {
		return out
	}
	hs := slices.Sorted(slices.Values(hotels))
	floor := len(hs) / len(replicas)
	load := map[string]int{}
	type rank struct {
		replica string
		score   uint64
	}
	order := func(h string) []rank {
		ranks := make([]rank, len(replicas))
		for i, r := range replicas {
			f := fnv.New64a()
			_, _ = f.Write([]byte(h + "\x00" + r))
			ranks[i] = rank{r, f.Sum64()}
		}
		slices.SortFunc(ranks, func(a, b rank) int {
			if c := cmp.Compare(b.score, a.score); c != 0 {
				return c
			}
			return cmp.Compare(a.replica, b.replica)
		})
		return ranks
	}
	// Once every replica has the lower share, the rest get one each.
	for _, limit := range []int{floor, floor + 1} {
		for _, h := range hs {
			if _, done := out[h]; done {
				continue
			}
			for _, r := range order(h) {
				if load[r.replica] < limit {
					out[h] = r.replica
					load[r.replica]++
					break
				}
			}
		}
	}
	return out
}

// orphan reports whether a hotel's lease has been free long enough for
// any replica to take it: the replica it belongs to did not, in
// leaseOrphan ticks (it died as well, or is about to be seen dead). A
// hotel no replica ever held waits for its own. The hotel moves to its
// replica later by a handover.
func orphan(h state.Holder, ttl time.Duration) bool {
	return h.Hotel != "" && !h.Live && h.Free >= leaseOrphan*leaseTick(ttl)
}

// elsewhereReason says, for /readyz and the log, where a hotel is synced
// when not here.
func elsewhereReason(h state.Holder, ok bool) string {
	if ok && h.Live {
		return "synced by replica " + h.Replica
	}
	return "waiting for a replica to take its lease"
}

// startBackoff is how long a replica leaves a hotel it could not start to
// the others.
const startBackoff = time.Minute

// namesOn returns the leased hotels of k's database: those of the
// directory, and those running here under a lease of it. Hold f.mu.
func (f *fleet) namesOn(k *dbKeeper) []string {
	var names []string
	for name, h := range f.leased {
		if h.cfg.State == k.url {
			names = append(names, name)
		}
	}
	for name, rh := range f.hotels {
		if rh.lease != nil && rh.lease.keeper == k {
			if _, ok := f.leased[name]; !ok {
				names = append(names, name)
			}
		}
	}
	return names
}

// dbFailed reports that k's database could not be opened; it reports
// whether the database is no longer in use, and k is to retire.
func (f *fleet) dbFailed(k *dbKeeper, err error) (retire bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	names := f.namesOn(k)
	if len(names) == 0 {
		return f.retireLocked(k)
	}
	f.log.Error("hotels not started", slog.Any("error", err), slog.Any("hotels", names), slog.String("op", "lease"))
	for _, n := range names {
		if _, ok := f.hotels[n]; !ok {
			f.tel.dropHotel(n, err.Error())
		}
	}
	return false
}

// retireLocked takes k out of the keepers when no hotel names its
// database and it holds no lease. Hold f.mu.
func (f *fleet) retireLocked(k *dbKeeper) bool {
	if k.holds() {
		return false
	}
	lk := f.keeper
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if lk.dbs[k.url] != k {
		return false // leaving
	}
	delete(lk.dbs, k.url)
	lk.retiring.Add(1)
	return true
}

// planDB balances the hotels of k's database after k's heartbeat and
// renewal, without waiting for anything: it stops the hotels whose
// leases were lost, clears away those that ended, hands over the hotels
// that belong to another replica now (they stop after their cycle in
// flight, and give their leases back once their wiring closed), and
// returns the hotels k is to take, with what /readyz says of those
// synced elsewhere. elsewhere is nil when the fleet is stopping; retire
// is true when no hotel names the database any more.
func (f *fleet) planDB(k *dbKeeper, replicas []string, holders []state.Holder, lost []*hotelLease) (take []string, elsewhere map[string]string, retire bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	opLog := f.log.With(slog.String("op", "lease"))
	for _, hl := range lost {
		name := hl.get().Hotel
		opLog.Warn("hotel stopped: its lease was taken over by another replica", slog.Any("hotel", name))
		if rh, ok := f.hotels[name]; ok && rh.lease == hl {
			rh.kill()
			delete(f.hotels, name)
			f.tel.dropHotel(name, "")
			f.closeLater(name, rh)
		} else if rh, ok := f.handing[name]; ok && rh.lease == hl {
			rh.kill()
		}
	}
	if f.stopping || f.life.Err() != nil {
		return nil, nil, false
	}
	// A leased hotel that ended: killed when its lease's view ended (it
	// may start again once this replica holds the lease anew), or failed
	// to start (this replica leaves it to the others for a while; it stays
	// among the hotels the replicas share out, so that they agree).
	for name, rh := range f.hotels {
		if rh.lease == nil || rh.lease.keeper != k || rh.alive() {
			continue
		}
		delete(f.hotels, name)
		f.closeLater(name, rh)
		if rh.life.Err() == nil {
			f.backoff[name] = k.lk.clock.Now().Add(startBackoff)
		}
	}
	names := f.namesOn(k)
	if len(names) == 0 {
		return nil, nil, f.retireLocked(k)
	}
	me := k.lk.replica
	owner := assign(names, replicas)
	holder := map[string]state.Holder{}
	for _, h := range holders {
		holder[h.Hotel] = h
		if _, here := f.hotels[h.Hotel]; !here && h.Live && h.Replica != me {
			// Another replica syncs it: a reason this replica could not
			// start it is no longer what /readyz should say here.
			f.tel.clearBroken(h.Hotel)
		}
	}
	elsewhere = map[string]string{}
	for _, name := range names {
		rh, here := f.hotels[name]
		_, wanted := f.leased[name]
		switch {
		case here && (owner[name] != me || !wanted):
			// Another replica's now (or the file is gone): stop after the
			// cycle in flight; its lease is renewed until its wiring
			// closed, then given back.
			opLog.Info("hotel handed over to another replica", slog.Any("hotel", name), slog.Any("to", owner[name]))
			f.handOver(name, rh)
			elsewhere[name] = "handed over to replica " + owner[name]
		case here:
		case !wanted:
		case owner[name] != me && !orphan(holder[name], k.lk.ttl):
			h, ok := holder[name]
			elsewhere[name] = elsewhereReason(h, ok)
		default:
			if _, busy := f.handing[name]; busy {
				elsewhere[name] = "handing over"
				continue
			}
			if until, ok := f.backoff[name]; ok && k.lk.clock.Now().Before(until) {
				elsewhere[name] = "could not start on this replica; left to the others until " + until.Format(time.TimeOnly)
				continue
			}
			if h, ok := holder[name]; ok && h.Live && h.Replica != me {
				elsewhere[name] = elsewhereReason(h, ok)
				continue // its holder hands it over at its next tick
			}
			take = append(take, name)
		}
	}
	return take, elsewhere, false
}

// startLeased starts a hotel k took the lease of, in a goroutine of its
// own that wires it; it reports false when the hotel is no longer to run
// here (a reload removed it, or the fleet is stopping).
func (f *fleet) startLeased(name string, hl *hotelLease) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, ok := f.leased[name]
	_, here := f.hotels[name]
	_, busy := f.handing[name]
	if !ok || here || busy || f.stopping || f.life.Err() != nil || h.cfg.State != hl.keeper.url {
		return false
	}
	rh := f.newRunning(h, hl)
	f.hotels[name] = rh
	go f.run(rh)
	return true
}

// settle records what /readyz says of the hotels of k's database synced
// elsewhere. A database that did not answer keeps what was said of its
// hotels.
func (f *fleet) settle(k *dbKeeper, elsewhere map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.elsewhere[k.url] = elsewhere
	inUse := map[string]bool{}
	for _, k := range f.keeper.all() {
		inUse[k.url] = true
	}
	all := map[string]string{}
	for url, m := range f.elsewhere {
		if !inUse[url] {
			delete(f.elsewhere, url)
			continue
		}
		maps.Copy(all, m)
	}
	f.tel.hotelsElsewhere(all)
}

// handOver stops a leased hotel after its cycle in flight; its keeper
// renews its lease until then, and it gives the lease back after. Hold
// f.mu.
func (f *fleet) handOver(name string, rh *runningHotel) {
	rh.stop()
	delete(f.hotels, name)
	f.tel.dropHotel(name, "")
	f.closeLater(name, rh)
}

// closeLater closes a stopped hotel's wiring once its goroutine ended,
// then gives its lease back, so that the next holder finds the
// helpdesk's listener and folder let go; until then the hotel is
// stopping (handing), and not started again here. rh.closed is closed
// after. stopAll waits for it. Hold f.mu.
func (f *fleet) closeLater(name string, rh *runningHotel) {
	f.handing[name] = rh
	f.closing.Go(func() {
		<-rh.done
		if rh.page != nil {
			// Off the status page before its state closes.
			f.tel.hidePage(name, rh.page.hotel)
		}
		if rh.lease != nil {
			rh.lease.stopTimer()
		}
		if rh.w != nil {
			if err := rh.w.Close(); err != nil {
				f.log.Warn("close hotel", slog.Any("error", err), slog.Any("hotel", name), slog.String("op", "stop"))
			}
		}
		if rh.lease != nil {
			rh.lease.keeper.release(rh.lease)
		}
		f.mu.Lock()
		if f.handing[name] == rh {
			delete(f.handing, name)
		}
		f.mu.Unlock()
		close(rh.closed)
	})
}

// A daemon of one hotel whose state is in PostgreSQL holds the hotel's
// lease as a replica of a fleet does: a second daemon of the same hotel
// stands by until the first stops or dies, and a daemon that loses the
// lease stops, to stand by again when its service manager restarts it.

// errLeaseLost ends a daemon of one hotel whose lease ended.
var errLeaseLost = errors.New("this daemon's lease of the hotel ended (another daemon took it over, or the state database was out of reach past TICKETBRIDGE_LEASE_TTL); it stopped syncing, and stands by once started again")

// singleLease is the lease of a daemon of one hotel.
type singleLease struct {
	replica string
	ttl     time.Duration
	log     *slog.Logger
	clock   clock
	url     string
	db      leaseDB
	hotel   string
	hl      *hotelLease
	// kept is closed when keep returned; close waits for it, so that no
	// heartbeat follows the leave.
	kept    chan struct{}
	keeping bool
}

// standBy takes the lease of hotel in the database at url, waiting as long
// as another daemon holds it (checking every tick); it returns ctx's error
// when ctx ends first.
func standBy(ctx context.Context, url, hotel string, ttl time.Duration, log *slog.Logger) (*singleLease, error) {
	sl := &singleLease{replica: newReplicaID(), ttl: ttl, log: log, clock: realClock{}, url: url, hotel: hotel, kept: make(chan struct{})}
	db, err := openStateLeases(ctx, url, sl.replica, leaseLife(ttl))
	if err != nil {
		return nil, err
	}
	sl.db = db
	tick, stop := sl.clock.NewTicker(leaseTick(ttl))
	defer stop()
	said := ""
	for {
		_, holders, err := db.Heartbeat(ctx)
		if err == nil {
			var l state.Lease
			var ok bool
			l, ok, err = db.Acquire(ctx, hotel)
			if err == nil && ok {
				sl.hl = newHotelLease(nil, sl.clock, l)
				if said != "" {
					log.Info("this daemon holds the lease of hotel "+hotel+" now", slog.String("op", "lease"), slog.Any("fence", l.Fence))
				}
				return sl, nil
			}
			for _, h := range holders {
				if h.Hotel == hotel && h.Live && said != h.Replica {
					said = h.Replica
					log.Info("standing by: replica "+h.Replica+" syncs hotel "+hotel+"; this daemon takes over when it stops or dies", slog.String("op", "lease"), slog.String("replica", sl.replica))
				}
			}
		}
		if err != nil {
			log.Warn("take the hotel's lease", slog.Any("error", err), slog.String("op", "lease"))
		}
		select {
		case <-ctx.Done():
			sl.leave(context.Background())
			return nil, ctx.Err()
		case <-tick: // the next look at the lease
		}
	}
}

// keep renews the lease every tick until ctx ends, and calls lost once
// when the lease is gone or its view ended without a renewal. Run it in a
// goroutine of its own after setting keeping; end ctx before close.
func (sl *singleLease) keep(ctx context.Context, lost func()) {
	defer close(sl.kept)
	var once gosync.Once
	end := func() { once.Do(lost) }
	sl.hl.expireWith(end)
	tick, stop := sl.clock.NewTicker(leaseTick(sl.ttl))
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		if _, _, err := sl.db.Heartbeat(ctx); err != nil {
			sl.log.Warn("lease heartbeat failed", slog.Any("error", err), slog.String("op", "lease"))
			continue // the view's timer ends it if this lasts
		}
		kept, err := sl.db.Renew(ctx, []state.Lease{sl.hl.get()})
		switch {
		case err != nil:
			sl.log.Warn("renew the hotel's lease", slog.Any("error", err), slog.String("op", "lease"))
		case len(kept) == 0:
			end()
			return
		default:
			sl.hl.extend(kept[0])
		}
	}
}

// leave releases the lease and leaves the replicas of the database.
func (sl *singleLease) leave(ctx context.Context) {
	if err := sl.db.Leave(ctx); err != nil {
		sl.log.Warn("leave the replicas of a database", slog.Any("error", err), slog.String("op", "lease"), slog.String("state", state.Redacted(sl.url)))
	}
	_ = sl.db.Close()
}

// close stops the view's timer, releases the lease and leaves the
// replicas, so that a daemon standing by takes over at once.
func (sl *singleLease) close() {
	if sl.keeping {
		<-sl.kept
	}
	sl.hl.stopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), sl.ttl)
	defer cancel()
	sl.leave(ctx)
}
