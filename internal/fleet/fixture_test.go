package fleet

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/fleet/fleettest"
	"github.com/ticketbridge/ticketbridge/internal/lease"
	"github.com/ticketbridge/ticketbridge/internal/telemetry"
)

// fleetFixture is a daemon of many hotels in-process, on the kit of
// package fleettest (the commands' tests run the same kit through
// `ticketbridge run`'s serving).
type fleetFixture struct {
	*fleettest.Kit
	t   testing.TB
	f   *Fleet
	tel *telemetry.Telemetry
	// registry, when set, holds the adapters instead of the daemon's.
	registry adapters.Registry
	// clock, when set, is the fleet's.
	clock lease.Clock
	// notices, when set, are the fleet's notifications.
	notices *Notices
}

func newFleetFixture(t testing.TB) *fleetFixture {
	t.Helper()
	return &fleetFixture{Kit: fleettest.New(t), t: t}
}

// options returns the fleet's options from the fixture's files, its
// telemetry listening on a loopback port when listen.
func (fx *fleetFixture) options(ctx context.Context, listen bool) Options {
	fx.t.Helper()
	src, err := config.FindSource(fx.MainFile(), config.Layout{})
	if err != nil {
		fx.t.Fatal(err)
	}
	cfg, err := config.LoadDaemon(ctx, src.Env)
	if err != nil {
		fx.t.Fatal(err)
	}
	hc, err := config.LoadHotels(ctx, src.Env)
	if err != nil {
		fx.t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	to := telemetry.Options{CycleMax: 20 * time.Minute, WatchdogEvery: -1, Notify: func(string) error { return nil }}
	if listen {
		to.Listen = "127.0.0.1:0"
	}
	tel := telemetry.NewFleet(log, hc.ReadyNames(), to)
	return Options{Source: src, Daemon: cfg, Hotels: hc, Logger: log, Telemetry: tel, Registry: fx.registry, Clock: fx.clock,
		AfterCycle: fx.AfterCycle, Notices: fx.notices}
}

// start runs the fleet of the fixture's files, its endpoints on a
// loopback port, until the test ends.
func (fx *fleetFixture) start() {
	fx.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	opts := fx.options(ctx, true)
	fx.tel = opts.Telemetry
	if err := fx.tel.Start(ctx, nil, nil, 0, nil); err != nil {
		cancel()
		fx.t.Fatal(err)
	}
	fx.f = New(ctx, opts)
	fx.t.Cleanup(func() {
		cancel()
		if err := fx.f.Stop(); err != nil {
			fx.t.Errorf("the fleet stopped with %v", err)
		}
		_ = fx.tel.Stop()
	})
	if err := fx.f.Reload(); err != nil {
		fx.t.Fatal(err)
	}
}

func (fx *fleetFixture) running() map[string]*runningHotel {
	fx.f.mu.Lock()
	defer fx.f.mu.Unlock()
	out := map[string]*runningHotel{}
	for n, rh := range fx.f.hotels {
		out[n] = rh
	}
	return out
}
