package lease

import (
	"context"
	"log/slog"
	gosync "sync"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
)

// This file holds the lease of one hotel taken by a command that acts for
// it from outside the daemon (Take: once, retry, skip). It is renewed by a
// keeper of its own (keeper.go), the one loop that renews every lease, as
// a visitor's: without heartbeats, so that the replicas of a database do
// not count the command among them. A daemon of one hotel holds its lease
// as a fleet of one does (package internal/fleet).

// Single is the lease of one hotel a command holds.
type Single struct {
	keepers *Keepers
	hl      *Owned
	ttl     time.Duration
}

// visit is the Balancer of a Single's keeper: it takes nothing, and calls
// lost once when the lease is gone.
type visit struct {
	log *slog.Logger
	// lost is called once, when the lease is gone or its view ended
	// without a renewal.
	lost func()
}

func (v *visit) Failed(_ *Keeper, err error) bool {
	v.log.Warn("open the hotel's lease", slog.Any("error", err), slog.String("op", "lease"))
	return false
}

func (v *visit) Plan(_ *Keeper, _ []string, _ []state.Owner, lost []*Owned) ([]string, map[string]string, bool) {
	if len(lost) > 0 {
		v.lost()
	}
	return nil, nil, false
}

func (v *visit) Start(string, *Owned) bool { return false }

func (v *visit) Settle(*Keeper, map[string]string) {}

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
	var once gosync.Once
	v := &visit{log: log, lost: func() { once.Do(lost) }}
	lk := NewKeepers(Options{TTL: ttl, Logger: log, Replica: replica, Visitor: true}, v)
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
	hl.ExpireWith(v.lost)
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

// Close stops the view's timer and the keeper and releases the lease, so
// that a daemon standing by takes over at once.
func (sl *Single) Close() {
	sl.hl.StopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), sl.ttl)
	defer cancel()
	sl.keepers.Leave(ctx)
}
