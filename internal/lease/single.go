package lease

import (
	"context"
	"errors"
	"log/slog"
	gosync "sync"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
)

// This file holds the lease of one hotel held on its own: a daemon of one
// hotel's (StandBy) and a command's acting for a hotel from outside the
// daemon (Take). Each is renewed by a keeper of its own (keeper.go), the
// one loop that renews every lease: a daemon of one hotel's as a
// replica's, heartbeat included, so that a second daemon of the same
// hotel stands by until the first stops or dies, and a daemon that loses
// the lease stops, to stand by again when its service manager restarts
// it; a command's as a visitor's, without heartbeats.

// ErrLost ends a daemon of one hotel whose lease ended.
var ErrLost = errors.New("this daemon's lease of the hotel ended (another daemon took it over, or the state database was out of reach past TICKETBRIDGE_LEASE_TTL); it stopped syncing, and stands by once started again")

// Single is the lease of one hotel, held on its own: a daemon of one
// hotel's, or a command's.
type Single struct {
	keepers *Keepers
	hl      *Owned
	ttl     time.Duration
}

// one is the Balancer of a Single's keeper: it takes the one hotel when it
// is free (unless it only visits), and calls lost once when its lease is
// gone.
type one struct {
	hotel   string
	log     *slog.Logger
	visitor bool
	// lost is called once, when the lease is gone or its view ended
	// without a renewal.
	lost func()
	// got receives the lease once taken (StandBy).
	got chan *Owned
	// said is the replica last said to hold the hotel while this one
	// stands by, and taken whether the lease was taken (the keeper's
	// goroutine only): it is taken once.
	said  string
	taken bool
}

func (o *one) Failed(_ *Keeper, err error) bool {
	o.log.Warn("open the hotel's lease", slog.Any("error", err), slog.String("op", "lease"))
	return false
}

func (o *one) Plan(k *Keeper, _ []string, holders []state.Owner, lost []*Owned) ([]string, map[string]string, bool) {
	if len(lost) > 0 {
		o.lost()
	}
	if o.visitor || o.taken {
		return nil, nil, false
	}
	for _, h := range holders {
		if h.Hotel == o.hotel && h.Live && o.said != h.Replica {
			o.said = h.Replica
			o.log.Info("standing by: replica "+h.Replica+" syncs hotel "+o.hotel+"; this daemon takes over when it stops or dies", slog.String("op", "lease"), slog.String("replica", k.Keepers().Replica()))
		}
	}
	return []string{o.hotel}, map[string]string{}, false
}

func (o *one) Start(_ string, hl *Owned) bool {
	o.taken = true
	if o.said != "" {
		o.log.Info("this daemon holds the lease of hotel "+o.hotel+" now", slog.String("op", "lease"), slog.Any("fence", hl.Get().Fence))
	}
	hl.ExpireWith(o.lost)
	o.got <- hl // buffered: StandBy takes it, or has left
	return true
}

func (o *one) Settle(*Keeper, map[string]string) {}

// newOne returns the balancer of the lease of hotel, calling lost once.
func newOne(hotel string, log *slog.Logger, visitor bool, lost func()) *one {
	var once gosync.Once
	return &one{hotel: hotel, log: log, visitor: visitor, lost: func() { once.Do(lost) }, got: make(chan *Owned, 1)}
}

// StandBy takes the lease of hotel in the database at url, waiting as long
// as another daemon holds it (looking every tick); it returns ctx's error
// when ctx ends first. The lease it returns is renewed by a keeper of its
// own until ctx ends or Close; lost is called once when the lease is gone
// or its view ended without a renewal.
func StandBy(ctx context.Context, url, hotel string, ttl time.Duration, log *slog.Logger, lost func()) (*Single, error) {
	replica := NewReplicaID()
	db, err := OpenState(ctx, url, replica, Life(ttl))
	if err != nil {
		return nil, err
	}
	return standBy(ctx, db, url, hotel, replica, ttl, log, lost)
}

// standBy is StandBy on db, opened as replica.
func standBy(ctx context.Context, db DB, url, hotel, replica string, ttl time.Duration, log *slog.Logger, lost func()) (*Single, error) {
	o := newOne(hotel, log, false, lost)
	lk := NewKeepers(Options{TTL: ttl, Logger: log, Replica: replica}, o)
	lk.keeper(ctx, url, db)
	select {
	case hl := <-o.got:
		return &Single{keepers: lk, hl: hl, ttl: ttl}, nil
	case <-ctx.Done():
		lk.Leave(context.Background())
		return nil, ctx.Err()
	}
}

// Take takes the lease of hotel in the database at url for a command that
// acts for the hotel from outside the daemon (once, retry, skip), without
// waiting: when a live replica holds it, Take returns a nil lease and that
// replica's hold. The lease it takes is renewed by a keeper of its own,
// as a visitor's: with no heartbeat, so that the replicas of a fleet do
// not count it among them. lost is called once when it is gone. Close it
// when done.
func Take(ctx context.Context, url, hotel string, ttl time.Duration, log *slog.Logger, lost func()) (*Single, state.Owner, error) {
	replica := NewReplicaID()
	db, err := state.OpenLeases(ctx, url, replica, Life(ttl))
	if err != nil {
		return nil, state.Owner{}, err
	}
	return take(ctx, db, url, hotel, replica, ttl, log, lost)
}

// visitDB is a database's leases as a command takes one: DB, and a look
// at one hotel's lease that counts the command among no replicas.
type visitDB interface {
	DB
	Acquire(ctx context.Context, hotel string) (state.Lease, bool, error)
	Owner(ctx context.Context, hotel string) (state.Owner, bool, error)
}

// take is Take on db, opened as replica.
func take(ctx context.Context, db visitDB, url, hotel, replica string, ttl time.Duration, log *slog.Logger, lost func()) (*Single, state.Owner, error) {
	o := newOne(hotel, log, true, lost)
	lk := NewKeepers(Options{TTL: ttl, Logger: log, Replica: replica, Visitor: true}, o)
	l, ok, err := db.Acquire(ctx, hotel)
	if err != nil || !ok {
		var h state.Owner
		if err == nil {
			h, _, err = db.Owner(ctx, hotel)
		}
		leave(ctx, lk.log, url, db, ttl)
		return nil, h, err
	}
	hl := lk.keeper(ctx, url, db).hold(l)
	hl.ExpireWith(o.lost)
	return &Single{keepers: lk, hl: hl, ttl: ttl}, state.Owner{}, nil
}

// leave releases the replica's leases and leaves the replicas of the
// database at url, then closes it.
func leave(ctx context.Context, log *slog.Logger, url string, db DB, ttl time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ttl)
	defer cancel()
	if err := db.Leave(ctx); err != nil {
		log.Warn("leave the replicas of a database", slog.Any("error", err), slog.String("op", "lease"), slog.String("state", state.Redacted(url)))
	}
	_ = db.Close()
}

// Owned returns the lease, renewed while it is held.
func (sl *Single) Owned() *Owned { return sl.hl }

// Close stops the view's timer and the keeper, releases the lease and
// leaves the replicas, so that a daemon standing by takes over at once.
func (sl *Single) Close() {
	sl.hl.StopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), sl.ttl)
	defer cancel()
	sl.keepers.Leave(ctx)
}
