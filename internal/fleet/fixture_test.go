package fleet

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/lease"
	"github.com/ticketbridge/ticketbridge/internal/telemetry"
	"github.com/ticketbridge/ticketbridge/sync"
)

// fleetFixture is a daemon of many hotels in-process: one reference
// server, each hotel an organisation of its own with its own key, files
// helpdesk and state file. (The commands' tests have its black-box twin,
// which runs the fleet as `ticketbridge run` does.)
type fleetFixture struct {
	t         testing.TB
	ts        *refservertest.TestServer
	dir       string
	hotelsDir string
	mainVars  map[string]string
	orgs      map[string]string // hotel -> organisation
	cycles    chan hotelCycle
	f         *Fleet
	tel       *telemetry.Telemetry
	// registry, when set, holds the adapters instead of the daemon's.
	registry adapters.Registry
	// clock, when set, is the fleet's.
	clock lease.Clock
}

type hotelCycle struct {
	hotel string
	rep   sync.Report
	err   error
}

func newFleetFixture(t testing.TB) *fleetFixture {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, config.EnvPrefix) || k == "NOTIFY_SOCKET" || k == "WATCHDOG_USEC" || k == "STATE_DIRECTORY" || k == "CREDENTIALS_DIRECTORY" {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	dir := t.TempDir()
	fx := &fleetFixture{t: t, ts: refservertest.New(t), dir: dir, hotelsDir: filepath.Join(dir, "hotels.d"),
		orgs: map[string]string{}, cycles: make(chan hotelCycle, 4096)}
	if err := os.Mkdir(fx.hotelsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	fx.mainVars = map[string]string{
		"TICKETBRIDGE_API_URL":      fx.ts.URL,
		"TICKETBRIDGE_ADAPTER":      "files",
		"TICKETBRIDGE_FILES_SETTLE": "0s",
		"TICKETBRIDGE_STATE":        filepath.Join(dir, "state", "main.db"),
		"TICKETBRIDGE_SCHEDULE":     "@every 1000h", // cycles after the first are run by the tests
		"TICKETBRIDGE_HOTELS_DIR":   fx.hotelsDir,
	}
	return fx
}

// writeHotel writes the file of a hotel with an organisation and a key of
// its own (made at the first call), plus extra variables.
func (fx *fleetFixture) writeHotel(name string, extra map[string]string) {
	fx.t.Helper()
	if _, ok := fx.orgs[name]; !ok {
		org := uuid.NewString()
		if err := fx.ts.Server.AddOrganization(org, "hotel"); err != nil {
			fx.t.Fatal(err)
		}
		k, err := fx.ts.Server.IssueKey(org, refserver.KeySpec{Name: "bridge", Platform: refserver.PlatformRead, Tickets: refserver.TicketsWrite})
		if err != nil {
			fx.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(fx.dir, name+".key"), []byte(k.Value+"\n"), 0o600); err != nil {
			fx.t.Fatal(err)
		}
		fx.orgs[name] = org
	}
	var s strings.Builder
	fmt.Fprintf(&s, "# hotel %s\nTICKETBRIDGE_API_KEY_FILE=%s\nTICKETBRIDGE_FILES_DIR=%s\n",
		name, filepath.Join(fx.dir, name+".key"), fx.filesDir(name))
	for k, v := range extra {
		fmt.Fprintf(&s, "%s=%s\n", k, v)
	}
	if err := os.WriteFile(filepath.Join(fx.hotelsDir, name+".env"), []byte(s.String()), 0o600); err != nil {
		fx.t.Fatal(err)
	}
}

func (fx *fleetFixture) filesDir(name string) string { return filepath.Join(fx.dir, "helpdesk", name) }

func (fx *fleetFixture) mainFile() string {
	fx.t.Helper()
	var s strings.Builder
	for k, v := range fx.mainVars {
		s.WriteString(k + "=" + v + "\n")
	}
	path := filepath.Join(fx.dir, "ticketbridge.env")
	if err := os.WriteFile(path, []byte(s.String()), 0o600); err != nil {
		fx.t.Fatal(err)
	}
	return path
}

// options returns the fleet's options from the fixture's files, its
// telemetry listening on a loopback port when listen.
func (fx *fleetFixture) options(ctx context.Context, listen bool) Options {
	fx.t.Helper()
	src, err := config.FindSource(fx.mainFile(), config.Layout{})
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
		AfterCycle: func(h string, r sync.Report, err error) {
			select {
			case fx.cycles <- hotelCycle{h, r, err}:
			default:
			}
		}}
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

// waitCycles waits until each hotel named has finished a cycle, and
// returns the last report of each.
func (fx *fleetFixture) waitCycles(names ...string) map[string]hotelCycle {
	fx.t.Helper()
	got := map[string]hotelCycle{}
	for len(got) < len(names) {
		select {
		case c := <-fx.cycles:
			for _, n := range names {
				if n == c.hotel {
					got[n] = c
				}
			}
		case <-time.After(time.Minute): // a hang's report, not a timing
			fx.t.Fatalf("no cycle of every hotel of %v within a minute; got %v", names, got)
		}
	}
	return got
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

func (fx *fleetFixture) ticket(hotel, desc string) string {
	fx.t.Helper()
	tv, err := fx.ts.Server.CreateTicket(fx.orgs[hotel], refserver.NewTicket{Department: "housekeeping", TaskDescription: desc})
	if err != nil {
		fx.t.Fatal(err)
	}
	return tv.ID
}

// folders returns the ticket folders of a hotel's files helpdesk.
func (fx *fleetFixture) folders(hotel string) []string {
	des, _ := os.ReadDir(filepath.Join(fx.filesDir(hotel), "tickets"))
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}
