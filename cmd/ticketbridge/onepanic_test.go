package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/files"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/fleet"
	"github.com/ticketbridge/ticketbridge/internal/telemetry"
)

// panicsOnCreate is a files helpdesk whose EnsureTicket panics.
type panicsOnCreate struct{ adapters.Helpdesk }

func (panicsOnCreate) EnsureTicket(context.Context, adapters.Ticket) (adapters.Ref, error) {
	panic("a damaged page")
}

// TestRunStopsOnAPanicOfItsHotel: `ticketbridge run` of one hotel whose
// cycle panics returns an error naming the panic, for systemd's
// Restart=on-failure to start it again (see ARCHITECTURE.md, "A daemon
// of one hotel").
func TestRunStopsOnAPanicOfItsHotel(t *testing.T) {
	b := newBridge(t)
	b.ticket("towels")
	ef := envFlag{path: b.envFile()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src, cfg, sc, log, err := loadEnv(ctx, &ef, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := config.LoadHotels(ctx, src.Env)
	if err != nil {
		t.Fatal(err)
	}
	fo := fleetOptions(src, cfg, sc, hc, log, telemetry.Options{WatchdogEvery: -1, Notify: func(string) error { return nil }})
	fo.Registry = adapters.Registry{files.Name: func(ctx context.Context, deps adapters.Deps) (adapters.Helpdesk, error) {
		hd, err := files.Factory(ctx, deps)
		return panicsOnCreate{hd}, err
	}}
	done := make(chan error, 1)
	go func() { done <- serveFleet(ctx, fleet.New(ctx, fo), fo, make(chan os.Signal), nil) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "panicked: a damaged page") {
			t.Fatalf("run after its hotel panicked: %v, want an error naming the panic", err)
		}
	case <-time.After(time.Minute): // a hang's report, not a timing
		t.Fatal("run goes on after its hotel panicked")
	}
}
