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
	// stopKeeping ends keep; kept is closed when keep returned. close
	// does both, so that no heartbeat follows the leave.
	stopKeeping context.CancelFunc
	kept        chan struct{}
}

// standBy takes the lease of hotel in the database at url, waiting as long
// as another daemon holds it (checking every tick); it returns ctx's error
// when ctx ends first. The lease it returns is renewed on a goroutine of
// its own (see keep) until ctx ends or close; lost is called once when the
// lease is gone or its view ended without a renewal.
func standBy(ctx context.Context, url, hotel string, ttl time.Duration, log *slog.Logger, lost func()) (*singleLease, error) {
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
				var kctx context.Context
				kctx, sl.stopKeeping = context.WithCancel(ctx)
				go sl.keep(kctx, lost)
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
// when the lease is gone or its view ended without a renewal. standBy
// runs it on a goroutine of its own.
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
	sl.stopKeeping()
	<-sl.kept
	sl.hl.stopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), sl.ttl)
	defer cancel()
	sl.leave(ctx)
}
