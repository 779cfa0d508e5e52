package fleet

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/lease"
	"github.com/ticketbridge/ticketbridge/internal/lease/leasetest"
	"github.com/ticketbridge/ticketbridge/internal/telemetry"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// These tests hold a daemon of one hotel, run as a fleet of one, to what
// the daemon of one hotel did before it was one: its health and its
// lease go on across a reload, it fails when it cannot open its state
// database, it tells systemd READY only once its hotel started or stands
// by, and its /readyz and ticketbridge_ready agree.

// notes records the notifications sent to systemd.
type notes struct {
	mu   gosync.Mutex
	sent []string
}

func (n *notes) notify(s string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sent = append(n.sent, s)
	return nil
}

// count returns how many notifications were s.
func (n *notes) count(s string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, x := range n.sent {
		if x == s {
			c++
		}
	}
	return c
}

// heldWire wraps f's wiring: each wiring is announced on entered, and
// the wirings after the first pass wait for a token on next.
type heldWire struct {
	entered chan struct{}
	next    chan struct{}
	calls   int
}

func holdWirings(f *Fleet, holdFirst bool) *heldWire {
	hw := &heldWire{entered: make(chan struct{}, 16), next: make(chan struct{}, 16)}
	realWire := f.wire
	f.wire = func(ctx context.Context, env envconfig.Lookuper, cfg config.Daemon, sc sync.Config, log *slog.Logger, opts bridge.Options) (*bridge.Bridge, error) {
		hw.calls++ // the hotel's goroutines wire one after the other
		first := hw.calls == 1
		hw.entered <- struct{}{}
		if !first || holdFirst {
			select {
			case <-hw.next:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return realWire(ctx, env, cfg, sc, log, opts)
	}
	return hw
}

// startOne starts a fleet of one of opts as the daemon does: its
// telemetry first, then the fleet; both stop when the test ends.
func startOne(t *testing.T, opts Options, set func(*Fleet)) *Fleet {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if err := opts.Telemetry.Start(ctx, nil, nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	f := New(ctx, opts)
	t.Cleanup(func() {
		cancel()
		_ = f.Stop()
		_ = opts.Telemetry.Stop()
	})
	if set != nil {
		set(f)
	}
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	return f
}

// rotateKey writes a new key of hotel name into its key file.
func (fx *fleetFixture) rotateKey(name string) {
	fx.t.Helper()
	k, err := fx.TS.Server.IssueKey(fx.Orgs[name], refserver.KeySpec{Name: "rotated", Platform: refserver.PlatformRead, Tickets: refserver.TicketsWrite})
	if err != nil {
		fx.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fx.Dir, name+".key"), []byte(k.Value+"\n"), 0o600); err != nil {
		fx.t.Fatal(err)
	}
}

// scrape returns what tel's /readyz answers, and its ticketbridge_ready
// line of /metrics.
func scrape(t *testing.T, tel *telemetry.Telemetry) (readyz int, body, gauge string) {
	t.Helper()
	h := tel.Handler(nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	readyz, body = rec.Code, strings.TrimSpace(rec.Body.String())
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for line := range strings.SplitSeq(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "ticketbridge_ready ") {
			gauge = line
		}
	}
	return readyz, body, gauge
}

// TestOneHotelReloadKeepsItsHealth: a reload that restarts the hotel of
// a daemon of one hotel (its key file changed) leaves the daemon ready
// and its watchdog fed while the hotel starts again: the restarted hotel
// goes on from the health of its last cycle, as the daemon of one hotel
// rewired in place did.
func TestOneHotelReloadKeepsItsHealth(t *testing.T) {
	fx := newFleetFixture(t)
	fx.WriteHotel("alpha", nil)
	fx.Ticket("alpha", "towels")
	opts := fx.oneOptions(t.Context(), "alpha", slog.New(slog.DiscardHandler))
	opts.AfterCycle = fx.AfterCycle
	tel := opts.Telemetry
	var hw *heldWire
	f := startOne(t, opts, func(f *Fleet) { hw = holdWirings(f, false) })
	fx.WaitCycles("alpha")
	if code, body, gauge := scrape(t, tel); code != http.StatusOK || gauge != "ticketbridge_ready 1" {
		t.Fatalf("before the reload: /readyz %d %q, %q", code, body, gauge)
	}

	fx.rotateKey("alpha")
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	<-hw.entered // the first wiring's
	<-hw.entered // the restarted hotel is being wired, and waits
	if code, body, gauge := scrape(t, tel); code != http.StatusOK || gauge != "ticketbridge_ready 1" {
		t.Errorf("while the hotel restarts: /readyz %d %q, %q; want 200 and ready 1", code, body, gauge)
	}
	if !tel.FeedWatchdog() {
		t.Error("while the hotel restarts the watchdog is not fed")
	}
	hw.next <- struct{}{}
	fx.Ticket("alpha", "a late checkout")
	if c := fx.WaitCycles("alpha")["alpha"]; c.Err != nil || c.Report.Created != 1 {
		t.Errorf("the first cycle after the restart: %v, %+v", c.Err, c.Report)
	}
	if code, body, gauge := scrape(t, tel); code != http.StatusOK || gauge != "ticketbridge_ready 1" {
		t.Errorf("after the restart's first cycle: /readyz %d %q, %q", code, body, gauge)
	}
}

// TestOneHotelReadyOnceStarted: a daemon of one hotel tells systemd
// READY=1 once its hotel is wired and started, not while it is wired,
// and once only, also across a reload that restarts the hotel.
func TestOneHotelReadyOnceStarted(t *testing.T) {
	fx := newFleetFixture(t)
	fx.WriteHotel("alpha", nil)
	fx.Ticket("alpha", "towels")
	log := slog.New(slog.DiscardHandler)
	opts := fx.oneOptions(t.Context(), "alpha", log)
	opts.AfterCycle = fx.AfterCycle
	sd := &notes{}
	opts.Telemetry = telemetry.NewOne(log, telemetry.Options{CycleMax: 20 * time.Minute, WatchdogEvery: -1, Notify: sd.notify})
	var hw *heldWire
	f := startOne(t, opts, func(f *Fleet) { hw = holdWirings(f, true) })
	<-hw.entered
	if n := sd.count("READY=1"); n != 0 {
		t.Errorf("READY=1 sent %d times while the hotel is being wired, want none", n)
	}
	hw.next <- struct{}{}
	fx.WaitCycles("alpha")
	if n := sd.count("READY=1"); n != 1 {
		t.Errorf("READY=1 sent %d times once the hotel started, want once", n)
	}
	fx.rotateKey("alpha")
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	<-hw.entered
	hw.next <- struct{}{}
	fx.WaitCycles("alpha")
	if n := sd.count("READY=1"); n != 1 {
		t.Errorf("READY=1 sent %d times after a reload restarted the hotel, want once", n)
	}
}

// oneOnFakeLeases is a daemon of one hotel, alpha, whose state is in a
// database held in memory (the keeper's leases; the hotel itself is wired
// on a state file), on a clock that stands still: its keeper balances
// when the test calls balance. others are the live leases other
// replicas hold there.
func oneOnFakeLeases(t *testing.T, sd *notes, others map[string]string) (*fleetFixture, *Fleet, *telemetry.Telemetry, func() *fakeLeases) {
	t.Helper()
	fx := newFleetFixture(t)
	fx.WriteHotel("alpha", map[string]string{"TICKETBRIDGE_STATE": okDB})
	fx.Ticket("alpha", "towels")
	log := slog.New(slog.DiscardHandler)
	opts := fx.oneOptions(t.Context(), "alpha", log)
	opts.AfterCycle = fx.AfterCycle
	opts.Telemetry = telemetry.NewOne(log, telemetry.Options{CycleMax: 20 * time.Minute, WatchdogEvery: -1, Notify: sd.notify})
	clock := leasetest.NewClock()
	var mu gosync.Mutex
	var db *fakeLeases
	opts.Clock = clock
	opts.OpenLeases = func(_ context.Context, _, replica string, life time.Duration) (lease.DB, error) {
		mu.Lock()
		defer mu.Unlock()
		if db == nil {
			db = &fakeLeases{clock: clock, life: life, replica: replica, held: map[string]int64{}, renewals: make(chan fakeRenewal, 1<<14), others: others}
		}
		return db, nil
	}
	f := startOne(t, opts, func(f *Fleet) {
		realWire := f.wire
		f.wire = func(ctx context.Context, env envconfig.Lookuper, cfg config.Daemon, sc sync.Config, log *slog.Logger, o bridge.Options) (*bridge.Bridge, error) {
			cfg.State = state.ParseLocation(filepath.Join(fx.Dir, cfg.Hotel+".db"))
			return realWire(ctx, env, cfg, sc, log, o)
		}
	})
	f.balance()
	return fx, f, opts.Telemetry, func() *fakeLeases { mu.Lock(); defer mu.Unlock(); return db }
}

// TestOneHotelReloadKeepsItsLease: on a state database, a reload that
// restarts the hotel (its key file changed) restarts it under the lease
// it holds: the lease is never given back, so that a daemon standing by
// cannot take the hotel in between.
func TestOneHotelReloadKeepsItsLease(t *testing.T) {
	fx, f, _, leases := oneOnFakeLeases(t, &notes{}, nil)
	fx.WaitCycles("alpha")
	f.mu.Lock()
	before := f.hotels["alpha"]
	f.mu.Unlock()
	if before == nil || before.lease == nil {
		t.Fatal("alpha does not run under a lease")
	}
	fence := before.lease.Get().Fence

	fx.rotateKey("alpha")
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	f.WaitClosed()
	db := leases()
	db.mu.Lock()
	held, releases := db.held["alpha"], db.releases
	db.mu.Unlock()
	if releases != 0 || held != fence {
		t.Errorf("after the reload the database holds alpha at fence %d (want %d), after %d releases (want none)", held, fence, releases)
	}
	f.mu.Lock()
	after := f.hotels["alpha"]
	f.mu.Unlock()
	if after == nil || after == before || after.lease != before.lease {
		t.Fatal("the reload did not restart alpha under the lease it held")
	}
	fx.Ticket("alpha", "a late checkout")
	if c := fx.WaitCycles("alpha")["alpha"]; c.Err != nil || c.Report.Created != 1 {
		t.Errorf("the first cycle after the restart: %v, %+v", c.Err, c.Report)
	}
}

// TestOneHotelStandingByIsNotReady: a daemon of one hotel standing by
// while another replica holds its hotel's lease tells systemd READY=1
// (it runs as it should), and is not ready for /readyz nor for
// ticketbridge_ready, which agree: it syncs nothing, as the daemon of one
// hotel that stood by before its listener opened answered nothing. Once
// the other lets the lease go, it takes the hotel and is ready.
func TestOneHotelStandingByIsNotReady(t *testing.T) {
	sd := &notes{}
	others := map[string]string{"alpha": "replica-b"}
	fx, f, tel, leases := oneOnFakeLeases(t, sd, others)
	if got := f.Running(); len(got) != 0 {
		t.Fatalf("the daemon runs %v while replica-b holds the lease", got)
	}
	code, body, gauge := scrape(t, tel)
	if code != http.StatusServiceUnavailable || gauge != "ticketbridge_ready 0" || !strings.Contains(body, "standing by") || !strings.Contains(body, "replica-b") {
		t.Errorf("standing by: /readyz %d %q, %q; want 503 saying it stands by for replica-b, and ready 0", code, body, gauge)
	}
	if n := sd.count("READY=1"); n != 1 {
		t.Errorf("standing by: READY=1 sent %d times, want once", n)
	}
	db := leases()
	db.mu.Lock()
	clear(db.others)
	db.mu.Unlock()
	f.balance()
	fx.WaitCycles("alpha")
	if code, body, gauge := scrape(t, tel); code != http.StatusOK || gauge != "ticketbridge_ready 1" {
		t.Errorf("after taking the hotel over: /readyz %d %q, %q", code, body, gauge)
	}
	if n := sd.count("READY=1"); n != 1 {
		t.Errorf("READY=1 sent %d times after taking over, want once", n)
	}
}

// TestOneHotelFailsWithoutItsDatabase: a daemon of one hotel that cannot
// open its state database at start fails with the database's error, as
// the daemon of one hotel did, rather than logging and going on.
func TestOneHotelFailsWithoutItsDatabase(t *testing.T) {
	fx := newFleetFixture(t)
	fx.WriteHotel("alpha", map[string]string{"TICKETBRIDGE_STATE": okDB})
	opts := fx.oneOptions(t.Context(), "alpha", slog.New(slog.DiscardHandler))
	opts.Clock = leasetest.NewClock()
	refused := errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	opts.OpenLeases = func(context.Context, string, string, time.Duration) (lease.DB, error) { return nil, refused }
	f := startOne(t, opts, nil)
	f.balance()
	select {
	case err := <-f.Failed():
		if !errors.Is(err, refused) {
			t.Errorf("the daemon failed with %v, want the database's error", err)
		}
	default:
		t.Fatal("the daemon goes on without its state database")
	}
	if got := f.Running(); len(got) != 0 {
		t.Errorf("the daemon runs %v without its state database", got)
	}
}
