package lease

import (
	"context"
	"errors"
	"log/slog"
	gosync "sync"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
)

// A daemon of one hotel whose state is in PostgreSQL holds the hotel's
// lease as a replica of a fleet does: a second daemon of the same hotel
// stands by until the first stops or dies, and a daemon that loses the
// lease stops, to stand by again when its service manager restarts it.

// ErrLost ends a daemon of one hotel whose lease ended.
var ErrLost = errors.New("this daemon's lease of the hotel ended (another daemon took it over, or the state database was out of reach past TICKETBRIDGE_LEASE_TTL); it stopped syncing, and stands by once started again")

// Single is the lease of a daemon of one hotel.
type Single struct {
	replica string
	ttl     time.Duration
	log     *slog.Logger
	clock   Clock
	url     string
	db      DB
	hotel   string
	hl      *Held
	// visitor is set for a command acting from outside the daemon (Take):
	// it renews its lease without heartbeats, so that the replicas of a
	// fleet do not count it among them.
	visitor bool
	// stopKeeping ends keep; kept is closed when keep returned. Close
	// does both, so that no heartbeat follows the leave.
	stopKeeping context.CancelFunc
	kept        chan struct{}
}

// StandBy takes the lease of hotel in the database at url, waiting as long
// as another daemon holds it (checking every tick); it returns ctx's error
// when ctx ends first. The lease it returns is renewed on a goroutine of
// its own (see keep) until ctx ends or Close; lost is called once when the
// lease is gone or its view ended without a renewal.
func StandBy(ctx context.Context, url, hotel string, ttl time.Duration, log *slog.Logger, lost func()) (*Single, error) {
	sl := &Single{replica: NewReplicaID(), ttl: ttl, log: log, clock: SystemClock{}, url: url, hotel: hotel, kept: make(chan struct{})}
	db, err := OpenState(ctx, url, sl.replica, Life(ttl))
	if err != nil {
		return nil, err
	}
	sl.db = db
	tick, stop := sl.clock.NewTicker(Tick(ttl))
	defer stop()
	said := ""
	for {
		_, holders, err := db.Heartbeat(ctx)
		if err == nil {
			var taken []state.Lease
			taken, err = db.Take(ctx, []string{hotel})
			if err == nil && len(taken) == 1 {
				l := taken[0]
				sl.hl = newHeld(nil, sl.clock, l)
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

// Take takes the lease of hotel in the database at url for a command that
// acts for the hotel from outside the daemon (once, retry, skip), without
// waiting: when a live replica holds it, Take returns a nil lease and that
// replica's hold. The lease it takes is renewed as StandBy's is, but with
// no heartbeat (see Single.visitor); lost is called once when it is gone.
// Close it when done.
func Take(ctx context.Context, url, hotel string, ttl time.Duration, log *slog.Logger, lost func()) (*Single, state.Holder, error) {
	sl := &Single{replica: NewReplicaID(), ttl: ttl, log: log, clock: SystemClock{}, url: url, hotel: hotel, visitor: true, kept: make(chan struct{})}
	db, err := state.OpenLeases(ctx, url, sl.replica, Life(ttl))
	if err != nil {
		return nil, state.Holder{}, err
	}
	sl.db = db
	l, ok, err := db.Acquire(ctx, hotel)
	if err != nil || !ok {
		var h state.Holder
		if err == nil {
			h, _, err = db.Holder(ctx, hotel)
		}
		sl.leave(context.Background())
		return nil, h, err
	}
	sl.hl = newHeld(nil, sl.clock, l)
	var kctx context.Context
	kctx, sl.stopKeeping = context.WithCancel(ctx)
	go sl.keep(kctx, lost)
	return sl, state.Holder{}, nil
}

// keep renews the lease every tick until ctx ends, and calls lost once
// when the lease is gone or its view ended without a renewal. standBy
// runs it on a goroutine of its own.
func (sl *Single) keep(ctx context.Context, lost func()) {
	defer close(sl.kept)
	var once gosync.Once
	end := func() { once.Do(lost) }
	sl.hl.ExpireWith(end)
	tick, stop := sl.clock.NewTicker(Tick(sl.ttl))
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		if !sl.visitor {
			if _, _, err := sl.db.Heartbeat(ctx); err != nil {
				sl.log.Warn("lease heartbeat failed", slog.Any("error", err), slog.String("op", "lease"))
				continue // the view's timer ends it if this lasts
			}
		}
		r, err := sl.db.Renew(ctx, []state.Lease{sl.hl.Get()})
		switch {
		case err != nil:
			sl.log.Warn("renew the hotel's lease", slog.Any("error", err), slog.String("op", "lease"))
		case len(r.Lost) > 0:
			end()
			return
		default:
			sl.hl.extend(r.Until)
		}
	}
}

// leave releases the lease and leaves the replicas of the database.
func (sl *Single) leave(ctx context.Context) {
	if err := sl.db.Leave(ctx); err != nil {
		sl.log.Warn("leave the replicas of a database", slog.Any("error", err), slog.String("op", "lease"), slog.String("state", state.Redacted(sl.url)))
	}
	_ = sl.db.Close()
}

// Held returns the lease, renewed while the daemon holds it.
func (sl *Single) Held() *Held { return sl.hl }

// Close stops the view's timer, releases the lease and leaves the
// replicas, so that a daemon standing by takes over at once.
func (sl *Single) Close() {
	sl.stopKeeping()
	<-sl.kept
	sl.hl.StopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), sl.ttl)
	defer cancel()
	sl.leave(ctx)
}
