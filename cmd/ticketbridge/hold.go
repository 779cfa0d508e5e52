package main

// This file makes the commands that write a hotel's state or helpdesk
// from outside the daemon (once, retry, skip) hold the hotel's lease when
// its state is in PostgreSQL, as a daemon does: a state file's lock keeps
// them from acting beside a daemon, a database does not.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/lease"
	"github.com/ticketbridge/ticketbridge/state"
)

// errHoldLost ends a command whose lease of the hotel ended while it ran.
var errHoldLost = errors.New("the lease of the hotel ended while this command ran (another replica took it over, or the state database was out of reach past TICKETBRIDGE_LEASE_TTL); it stopped, and the next cycle does what it left undone")

// hold is a command's lease of a hotel: the context that ends when the
// lease does, and the fence and guard the hotel's store and clients take.
// A hotel whose state is a file needs none; hold is then empty.
type hold struct {
	sl  *lease.Single
	end context.CancelCauseFunc
}

// holdHotel takes the lease of cfg's hotel for the command name when its
// state is in PostgreSQL, without waiting. When another replica holds the
// lease it returns a *leaseHeldError and ctx as it was. Otherwise it
// returns a context of ctx ending when the lease does (with cause
// errHoldLost); call release when done.
func holdHotel(ctx context.Context, name string, env envconfig.Lookuper, cfg config.Daemon, log *slog.Logger) (context.Context, *hold, error) {
	if !cfg.State.IsDB() {
		return ctx, &hold{}, nil
	}
	hc, err := config.LoadHotels(ctx, env)
	if err != nil {
		return ctx, nil, err
	}
	hotel := cmp.Or(cfg.Hotel, state.DefaultHotel)
	return holdWith(ctx, name, hotel, func(ctx context.Context, lost func()) (*lease.Single, state.Owner, error) {
		return lease.Take(ctx, cfg.State.Value(), hotel, hc.LeaseTTL, log, lost)
	})
}

// takeFunc takes a hotel's lease as lease.Take does: a nil lease and its
// holder when a live replica holds it; lost is called once when the lease
// taken ends.
type takeFunc func(ctx context.Context, lost func()) (*lease.Single, state.Owner, error)

// holdWith is holdHotel for the command name and hotel, with take taking
// the lease (tests give a fake).
// Without the lease it returns ctx itself, never the context it ends:
// retry and skip go on to ask the daemon holding the lease with it.
func holdWith(ctx context.Context, name, hotel string, take takeFunc) (context.Context, *hold, error) {
	hctx, end := context.WithCancelCause(ctx)
	sl, holder, err := take(hctx, func() { end(errHoldLost) })
	switch {
	case err != nil:
		end(nil)
		return ctx, nil, fmt.Errorf("%s: %w", name, err)
	case sl == nil:
		end(nil)
		return ctx, nil, &leaseHeldError{command: name, hotel: hotel, holder: holder}
	}
	return hctx, &hold{sl: sl, end: end}, nil
}

// options puts the lease's fence and guard into a hotel's wiring.
func (h *hold) options(o *bridge.Options) {
	if h.sl == nil {
		return
	}
	o.Fence = h.sl.Owned().Get().Fence
	o.Chain.Guard = lease.Guard(h.sl.Owned(), h.end, errHoldLost)
}

// fence is the fence to open the hotel's store with; 0 without a lease.
func (h *hold) fence() int64 {
	if h.sl == nil {
		return 0
	}
	return h.sl.Owned().Get().Fence
}

// release gives the lease back at once, so that a daemon standing by, or
// the replica the hotel belongs to, takes it at its next look.
func (h *hold) release() {
	if h.sl == nil {
		return
	}
	h.sl.Close()
	h.end(nil)
}

// leaseHeldError is a command's refusal to act for a hotel whose lease a
// live replica holds.
type leaseHeldError struct {
	command, hotel string
	holder         state.Owner
}

func (e *leaseHeldError) Error() string {
	who, where := "replica "+e.holder.Replica, "its host"
	if host := lease.HostOf(e.holder.Replica); host != "" {
		who += " (host " + host + ")"
		where = host
	}
	head := fmt.Sprintf("%s: hotel %s is synced by %s, which holds its lease", e.command, e.hotel, who)
	lapse := "or wait until that daemon stopped and its lease lapsed (at most TICKETBRIDGE_LEASE_TTL after its last renewal)"
	if e.command == "once" {
		return fmt.Sprintf("%s; once does not run beside it, as both would write the same helpdesk tickets. That daemon's next cycle does what once would; to run once by hand, stop that daemon (on %s) and run once again, %s", head, where, lapse)
	}
	if e.command == "confirm-move" {
		return fmt.Sprintf("%s; stop that daemon (on %s) and run confirm-move again, %s", head, where, lapse)
	}
	return fmt.Sprintf("%s: run %s on %s, where it asks that daemon through its console (TICKETBRIDGE_LISTEN and the console token), or stop that daemon and run it again, %s", head, e.command, where, lapse)
}
