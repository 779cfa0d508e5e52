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
	"net/http"
	"os"
	"slices"
	gosync "sync"
	"time"

	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/adapters"
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
	db    *state.Leases
	mu    gosync.Mutex
	lease state.Lease
	timer *time.Timer
}

// valid reports whether the hotel may still act.
func (hl *hotelLease) valid() bool {
	hl.mu.Lock()
	defer hl.mu.Unlock()
	return hl.lease.Valid(time.Now())
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
		hl.timer.Reset(time.Until(l.Until))
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
	hl.timer = time.AfterFunc(time.Until(hl.lease.Until), lost)
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

// leaseGuard returns the guard of the context of a hotel held under hl
// (see adapters.WithGuard): once the lease's view ended it ends the
// hotel's context with cause and refuses with it, so that a replica that
// was paused or cut off sends nothing more for the hotel, to the API or
// the helpdesk, even in the moment before the view's timer stops the
// hotel; and the cycle sees its own end, not a failing request to record.
func leaseGuard(hl *hotelLease, end context.CancelCauseFunc, cause error) adapters.Guard {
	return func() error {
		if hl.valid() {
			return nil
		}
		end(cause)
		return cause
	}
}

// guardTransport refuses a request whose context's guard refuses: the
// API side of adapters.WithGuard, which the helpdesk adapters' client
// honours itself.
type guardTransport struct{ base http.RoundTripper }

func (g guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := adapters.CheckGuard(req.Context()); err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	return g.base.RoundTrip(req)
}

// guarded returns hc with each request refused once its context's guard
// refuses.
func guarded(hc *http.Client) *http.Client {
	c := *hc
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = guardTransport{base: base}
	return &c
}

// leaseKeeper holds the fleet's leases: one state.Leases per database,
// opened on first use.
type leaseKeeper struct {
	replica string
	ttl     time.Duration
	log     *slog.Logger
	dbs     map[string]*state.Leases // by state URL
	closing gosync.WaitGroup         // databases closeUnused is closing
}

func newLeaseKeeper(ttl time.Duration, log *slog.Logger) *leaseKeeper {
	return &leaseKeeper{replica: newReplicaID(), ttl: ttl, log: log, dbs: map[string]*state.Leases{}}
}

// db returns the leases of the database at url.
func (k *leaseKeeper) db(ctx context.Context, url string) (*state.Leases, error) {
	if l, ok := k.dbs[url]; ok {
		return l, nil
	}
	l, err := state.OpenLeases(ctx, url, k.replica, leaseLife(k.ttl))
	if err != nil {
		return nil, err
	}
	k.dbs[url] = l
	return l, nil
}

// leave releases every lease and leaves the replicas of each database,
// after the databases closeUnused is closing.
func (k *leaseKeeper) leave(ctx context.Context) {
	k.closing.Wait()
	for url, l := range k.dbs {
		if err := l.Leave(ctx); err != nil {
			k.log.Warn("leave the replicas of a database", slog.Any("error", err), slog.String("op", "lease"), slog.String("state", state.Redacted(url)))
		}
		_ = l.Close()
		delete(k.dbs, url)
	}
}

// closeUnused quits and closes the databases that no hotel in use names
// any more (a reload moved the hotels elsewhere, or removed them), so
// that a replica does not keep their connections until it stops. It does
// not wait: a database that does not answer must not hold up the
// renewals of the others; leave waits for it.
func (k *leaseKeeper) closeUnused(inUse func(url string, l *state.Leases) bool) {
	for url, l := range k.dbs {
		if inUse(url, l) {
			continue
		}
		delete(k.dbs, url)
		k.closing.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), leaseTick(k.ttl))
			defer cancel()
			if err := l.Quit(ctx); err != nil {
				k.log.Warn("leave the replicas of a database no hotel names any more", slog.Any("error", err), slog.String("op", "lease"), slog.String("state", state.Redacted(url)))
			} else {
				k.log.Info("left the replicas of a database no hotel names any more", slog.String("op", "lease"), slog.String("state", state.Redacted(url)))
			}
			_ = l.Close()
		})
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

// balance renews this replica's leases and moves hotels to and from it.
func (f *fleet) balance() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.balanceLocked()
}

// balanceLocked is balance with f.mu held. For each database of leased
// hotels it heartbeats, renews the leases of the hotels running here (a
// lease not renewed stops its hotel at once), hands over the hotels that
// belong to another replica now (they stop after their cycle in flight,
// and their leases are released), and takes the hotels that belong here
// and are free.
func (f *fleet) balanceLocked() {
	ctx := f.life
	if ctx.Err() != nil {
		return
	}
	begin := time.Now()
	// Hotels whose handover finished give their leases back: once their
	// wiring closed, so that the next holder finds the helpdesk's
	// listener and folder let go.
	for name, rh := range f.handing {
		select {
		case <-rh.closed:
		default:
			continue
		}
		delete(f.handing, name)
		f.release(rh)
	}
	// A leased hotel that ended: killed when its lease's view ended (it
	// may start again once this replica holds the lease anew), or failed
	// to start (this replica leaves it to the others for a while; it stays
	// among the hotels the replicas share out, so that they agree).
	for name, rh := range f.hotels {
		if rh.lease == nil || rh.alive() {
			continue
		}
		delete(f.hotels, name)
		f.closeWhenDone(rh)
		f.release(rh)
		if rh.life.Err() == nil {
			f.backoff[name] = time.Now().Add(startBackoff)
		}
	}
	byDB := map[string][]string{}
	for name, h := range f.leased {
		byDB[h.cfg.State] = append(byDB[h.cfg.State], name)
	}
	for name, rh := range f.hotels {
		if rh.lease != nil {
			if _, ok := f.leased[name]; !ok {
				byDB[rh.conf.cfg.State] = append(byDB[rh.conf.cfg.State], name)
			}
		}
	}
	elsewhere := map[string]string{}
	for url, names := range byDB {
		// A database that did not answer keeps what /readyz said of its
		// hotels.
		if m := f.balanceDB(ctx, begin, url, names); m != nil {
			f.elsewhere[url] = m
		}
	}
	for url, m := range f.elsewhere {
		if _, ok := byDB[url]; !ok {
			delete(f.elsewhere, url)
			continue
		}
		maps.Copy(elsewhere, m)
	}
	f.tel.hotelsElsewhere(elsewhere)
	f.keeper.closeUnused(func(url string, l *state.Leases) bool {
		if _, ok := byDB[url]; ok {
			return true
		}
		for _, rh := range f.handing { // released once it closed
			if rh.lease.db == l {
				return true
			}
		}
		return false
	})
}

// startBackoff is how long a replica leaves a hotel it could not start to
// the others.
const startBackoff = time.Minute

// balanceDB balances the hotels of one database; it returns what /readyz
// says of those synced elsewhere, nil when the database did not answer.
// It takes hotels only during the first half of a tick from begin, so
// that a replica starting many hotels renews its leases in time; the
// rest wait for the next ticks.
func (f *fleet) balanceDB(ctx context.Context, begin time.Time, url string, names []string) map[string]string {
	k := f.keeper
	opLog := f.log.With(slog.String("op", "lease"))
	elsewhere := map[string]string{}
	db, err := k.db(ctx, url)
	if err != nil {
		opLog.Error("hotels not started", slog.Any("error", err), slog.Any("hotels", names))
		for _, n := range names {
			if _, ok := f.hotels[n]; !ok {
				f.tel.dropHotel(n, err.Error())
			}
		}
		return elsewhere
	}
	replicas, holders, err := db.Heartbeat(ctx)
	if err != nil {
		// The hotels running here go on while their leases' views last.
		opLog.Warn("lease heartbeat failed; the hotels running here go on while their leases last", slog.Any("error", err))
		return nil
	}
	// Renew what runs here, and what is handing over.
	var mine []state.Lease
	running := map[string]*runningHotel{}
	for name, rh := range f.hotels {
		if rh.lease != nil && rh.lease.db == db {
			mine = append(mine, rh.lease.get())
			running[name] = rh
		}
	}
	for name, rh := range f.handing {
		if rh.lease.db == db {
			mine = append(mine, rh.lease.get())
			running[name] = rh
		}
	}
	kept, err := db.Renew(ctx, mine)
	if err != nil {
		opLog.Warn("renew leases", slog.Any("error", err))
		return nil
	}
	renewed := map[string]state.Lease{}
	for _, l := range kept {
		renewed[l.Hotel] = l
	}
	for name, rh := range running {
		if l, ok := renewed[name]; ok {
			rh.lease.extend(l)
			continue
		}
		opLog.Warn("hotel stopped: its lease was taken over by another replica", slog.Any("hotel", name))
		rh.lease.end()
		rh.lease.stopTimer()
		rh.kill()
		if _, ok := f.hotels[name]; ok {
			delete(f.hotels, name)
			f.tel.dropHotel(name, "")
			f.closeLater(rh)
		}
	}
	owner := assign(names, replicas)
	holder := map[string]state.Holder{}
	for _, h := range holders {
		holder[h.Hotel] = h
		if _, here := f.hotels[h.Hotel]; !here && h.Live && h.Replica != k.replica {
			// Another replica syncs it: a reason this replica could not
			// start it is no longer what /readyz should say here.
			f.tel.clearBroken(h.Hotel)
		}
	}
	for _, name := range names {
		rh, here := f.hotels[name]
		_, wanted := f.leased[name]
		switch {
		case here && (owner[name] != k.replica || !wanted):
			// Another replica's now (or the file is gone): stop after the
			// cycle in flight; balance releases the lease once it ended.
			opLog.Info("hotel handed over to another replica", slog.Any("hotel", name), slog.Any("to", owner[name]))
			f.handOver(name, rh)
			elsewhere[name] = "handed over to replica " + owner[name]
		case here:
		case !wanted:
		case owner[name] != k.replica && !orphan(holder[name], k.ttl):
			h, ok := holder[name]
			elsewhere[name] = elsewhereReason(h, ok)
		default:
			if _, busy := f.handing[name]; busy {
				elsewhere[name] = "handing over"
				continue
			}
			if until, ok := f.backoff[name]; ok && time.Now().Before(until) {
				elsewhere[name] = "could not start on this replica; left to the others until " + until.Format(time.TimeOnly)
				continue
			}
			if time.Since(begin) > leaseTick(k.ttl)/2 {
				elsewhere[name] = "waiting for this replica's next tick"
				continue
			}
			if h, ok := holder[name]; ok && h.Live && h.Replica != k.replica {
				elsewhere[name] = elsewhereReason(h, ok)
				continue // its holder hands it over at its next tick
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
			hl := &hotelLease{db: db, lease: l}
			rh, err := f.start(f.leased[name], hl)
			if err != nil {
				opLog.Error("hotel not started; left to the other replicas for a while", slog.Any("error", err), slog.Duration("backoff", startBackoff), slog.Any("hotel", name))
				f.tel.dropHotel(name, err.Error())
				f.backoff[name] = time.Now().Add(startBackoff)
				_ = db.Release(ctx, l)
				continue
			}
			f.hotels[name] = rh
		}
	}
	return elsewhere
}

// handOver stops a leased hotel after its cycle in flight; balance renews
// its lease until then, and releases it after.
func (f *fleet) handOver(name string, rh *runningHotel) {
	rh.stop()
	delete(f.hotels, name)
	f.tel.dropHotel(name, "")
	f.handing[name] = rh
	f.closeLater(rh)
}

// closeLater closes a stopped hotel's wiring once its goroutine ended;
// stopAll waits for it.
func (f *fleet) closeLater(rh *runningHotel) {
	f.closing.Go(func() { f.closeWhenDone(rh) })
}

// closeWhenDone closes a stopped hotel's wiring once its goroutine ended.
func (f *fleet) closeWhenDone(rh *runningHotel) {
	<-rh.done
	if rh.page != nil {
		// Off the status page before its state closes.
		f.tel.hidePage(rh.conf.name(), rh.page.hotel)
	}
	if rh.lease != nil {
		rh.lease.stopTimer()
	}
	if err := rh.w.Close(); err != nil {
		f.log.Warn("close hotel", slog.Any("error", err), slog.Any("hotel", rh.conf.name()), slog.String("op", "stop"))
	}
	close(rh.closed)
}

// release gives back the lease of a hotel that stopped, if it has one.
func (f *fleet) release(rh *runningHotel) {
	if rh.lease == nil {
		return
	}
	rh.lease.stopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), f.hcfg.LeaseTTL)
	defer cancel()
	if err := rh.lease.db.Release(ctx, rh.lease.get()); err != nil {
		f.log.Warn("release the hotel's lease", slog.Any("error", err), slog.Any("hotel", rh.conf.name()), slog.String("op", "lease"))
	}
}

// A daemon of one hotel whose state is in PostgreSQL holds the hotel's
// lease as a replica of a fleet does: a second daemon of the same hotel
// stands by until the first stops or dies, and a daemon that loses the
// lease stops, to stand by again when its service manager restarts it.

// errLeaseLost ends a daemon of one hotel whose lease ended.
var errLeaseLost = errors.New("this daemon's lease of the hotel ended (another daemon took it over, or the state database was out of reach past TICKETBRIDGE_LEASE_TTL); it stopped syncing, and stands by once started again")

// singleLease is the lease of a daemon of one hotel.
type singleLease struct {
	keeper *leaseKeeper
	db     *state.Leases
	hotel  string
	hl     *hotelLease
	// kept is closed when keep returned; close waits for it, so that no
	// heartbeat follows the leave.
	kept    chan struct{}
	keeping bool
}

// standBy takes the lease of hotel in the database at url, waiting as long
// as another daemon holds it (checking every tick); it returns ctx's error
// when ctx ends first.
func standBy(ctx context.Context, url, hotel string, ttl time.Duration, log *slog.Logger) (*singleLease, error) {
	k := newLeaseKeeper(ttl, log)
	db, err := k.db(ctx, url)
	if err != nil {
		return nil, err
	}
	sl := &singleLease{keeper: k, db: db, hotel: hotel, kept: make(chan struct{})}
	said := ""
	for {
		_, holders, err := db.Heartbeat(ctx)
		if err == nil {
			var l state.Lease
			var ok bool
			l, ok, err = db.Acquire(ctx, hotel)
			if err == nil && ok {
				sl.hl = &hotelLease{db: db, lease: l}
				if said != "" {
					log.Info("this daemon holds the lease of hotel "+hotel+" now", slog.String("op", "lease"), slog.Any("fence", l.Fence))
				}
				return sl, nil
			}
			for _, h := range holders {
				if h.Hotel == hotel && h.Live && said != h.Replica {
					said = h.Replica
					log.Info("standing by: replica "+h.Replica+" syncs hotel "+hotel+"; this daemon takes over when it stops or dies", slog.String("op", "lease"), slog.String("replica", k.replica))
				}
			}
		}
		if err != nil {
			log.Warn("take the hotel's lease", slog.Any("error", err), slog.String("op", "lease"))
		}
		select {
		case <-ctx.Done():
			k.leave(context.Background())
			return nil, ctx.Err()
		case <-time.After(leaseTick(ttl)): // the next look at the lease
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
	tick := time.NewTicker(leaseTick(sl.keeper.ttl))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, _, err := sl.db.Heartbeat(ctx); err != nil {
			sl.keeper.log.Warn("lease heartbeat failed", slog.Any("error", err), slog.String("op", "lease"))
			continue // the view's timer ends it if this lasts
		}
		kept, err := sl.db.Renew(ctx, []state.Lease{sl.hl.get()})
		switch {
		case err != nil:
			sl.keeper.log.Warn("renew the hotel's lease", slog.Any("error", err), slog.String("op", "lease"))
		case len(kept) == 0:
			end()
			return
		default:
			sl.hl.extend(kept[0])
		}
	}
}

// close stops the view's timer, releases the lease and leaves the
// replicas, so that a daemon standing by takes over at once.
func (sl *singleLease) close() {
	if sl.keeping {
		<-sl.kept
	}
	sl.hl.stopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), sl.keeper.ttl)
	defer cancel()
	sl.keeper.leave(ctx)
}
