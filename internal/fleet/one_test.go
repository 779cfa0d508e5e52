package fleet

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/files"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/lease/leasetest"
	"github.com/ticketbridge/ticketbridge/internal/telemetry"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
	"github.com/ticketbridge/ticketbridge/state/statetest"
)

// oneOptions returns the options of a fleet of one whose hotel is the
// fixture's hotel name, as a daemon of one hotel whose main configuration
// is that hotel's: no hotels directory, its telemetry telemetry.NewOne's,
// logging to log.
func (fx *fleetFixture) oneOptions(ctx context.Context, name string, log *slog.Logger) Options {
	fx.t.Helper()
	opts := fx.options(ctx, false)
	good, bad, err := config.LoadHotelDir(ctx, opts.Source, opts.Daemon, opts.Hotels.Dir, func(string) {})
	if err != nil || len(bad) > 0 {
		fx.t.Fatalf("hotels: %v %v", err, bad)
	}
	for _, h := range good {
		if h.Name() == name {
			opts.Source.Env, opts.Daemon, opts.Sync = h.Env, h.Daemon, h.Sync
		}
	}
	opts.Hotels.Dir = ""
	opts.Logger = log
	opts.Telemetry = telemetry.NewOne(log, telemetry.Options{Listen: "127.0.0.1:0", CycleMax: 20 * time.Minute, WatchdogEvery: -1, Notify: func(string) error { return nil }})
	return opts
}

// TestOneHotelPanicEndsTheDaemon: in a daemon of one hotel, a panic in
// its cycle is recovered and logged with its stack, and ends the daemon
// with an error (Failed), for its service manager to restart it: the
// hotel is not started again in-process, and no series of a fleet's (the
// count of panics, a hotel label) appears on /metrics.
func TestOneHotelPanicEndsTheDaemon(t *testing.T) {
	fx := newFleetFixture(t)
	fx.clock = leasetest.NewClock()
	var left atomic.Int32
	left.Store(1)
	panicked := make(chan struct{}, 1)
	fx.registry = adapters.Registry{files.Name: func(ctx context.Context, deps adapters.Deps) (adapters.Helpdesk, error) {
		hd, err := files.Factory(ctx, deps)
		if err != nil {
			return nil, err
		}
		return panicking{Helpdesk: hd, left: &left, panicked: panicked}, nil
	}}
	fx.WriteHotel("alpha", nil)
	fx.Ticket("alpha", "towels")
	logs := &testutil.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := fx.oneOptions(ctx, "alpha", slog.New(slog.NewTextHandler(logs, nil)))
	tel := opts.Telemetry
	if err := tel.Start(ctx, nil, nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	defer tel.Stop()
	f := New(ctx, opts)
	defer f.Stop()
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	<-panicked
	err := <-f.Failed()
	if err == nil || !strings.Contains(err.Error(), "panicked: a damaged page") {
		t.Fatalf("the fleet of one failed with %v, want the panic", err)
	}
	if !strings.Contains(logs.String(), "stack=") || !strings.Contains(logs.String(), "EnsureTicket") {
		t.Errorf("the panic's stack is not logged:\n%s", logs.String())
	}
	if ok, body := tel.Readiness(time.Now()); ok || !strings.Contains(body, "panicked: a damaged page") {
		t.Errorf("/readyz after the panic: %v %q", ok, body)
	}
	resp, err := http.Get("http://" + tel.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if bytes.Contains(b, []byte("ticketbridge_hotel_panics_total")) || bytes.Contains(b, []byte(`hotel="`)) {
		t.Errorf("/metrics of a daemon of one hotel shows a fleet's series or a hotel label:\n%s", b)
	}
	if !bytes.Contains(b, []byte("ticketbridge_ready 0")) {
		t.Errorf("/metrics lacks ticketbridge_ready 0:\n%s", b)
	}
	// Not started again: its service manager restarts the daemon.
	if fx.clock.(*leasetest.Clock).Armed() != 0 {
		t.Error("the hotel waits to start again in-process")
	}
}

// TestOneHotelStandsByWhenItsLeaseIsTakenOver: a daemon of one hotel
// whose lease another daemon took over stops syncing and stands by
// in-process, neither failing nor taking the hotel back while the other
// holds it, and takes it again once the other stops.
func TestOneHotelStandsByWhenItsLeaseIsTakenOver(t *testing.T) {
	db := statetest.PostgresURL(t)
	fx := newFleetFixture(t)
	fx.MainVars["TICKETBRIDGE_STATE"] = db
	fx.WriteHotel("alpha", nil)
	ctx := t.Context()
	replica := func() (*Fleet, *testutil.Buffer, *telemetry.Telemetry) {
		logs := &testutil.Buffer{}
		opts := fx.oneOptions(ctx, "alpha", slog.New(slog.NewTextHandler(logs, nil)))
		opts.Clock = leasetest.NewClock() // balanced by the test, not by ticks
		f := New(ctx, opts)
		t.Cleanup(func() { _ = f.Stop() })
		if err := f.Reload(); err != nil {
			t.Fatal(err)
		}
		f.balance()
		return f, logs, opts.Telemetry
	}
	a, _, _ := replica()
	balanceUntil(t, a, []string{"alpha"})

	// Another daemon of the hotel starts: it stands by.
	b, blogs, btel := replica()
	b.balance()
	if got := b.Running(); len(got) != 0 {
		t.Fatalf("the second daemon runs %v while the first holds the lease", got)
	}
	if !strings.Contains(blogs.String(), "standing by: replica "+a.Replica()) {
		t.Errorf("the second daemon does not say it stands by:\n%s", blogs.String())
	}
	if ok, body := btel.Readiness(time.Now()); ok || body != "standing by: synced by replica "+a.Replica() {
		t.Errorf("/readyz of the daemon standing by: %t %q", ok, body)
	}

	// The first's lease lapses (cut off from the database) and the second
	// takes it over.
	pgExecTest(t, db, `UPDATE ticketbridge_leases SET expires_at = now() WHERE hotel = 'alpha'`)
	balanceUntil(t, b, []string{"alpha"})
	waitHandovers(a)
	waitHandovers(a)
	if got := a.Running(); len(got) != 0 {
		t.Fatalf("the first daemon runs %v after its lease was taken over", got)
	}
	select {
	case err := <-a.Failed():
		t.Fatalf("the first daemon failed with %v; it should stand by", err)
	default:
	}

	// The second stops: the first takes the hotel again.
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	balanceUntil(t, a, []string{"alpha"})
}
