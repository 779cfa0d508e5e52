package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/files"
	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/fleet"
	"github.com/ticketbridge/ticketbridge/internal/fleet/fleettest"
	"github.com/ticketbridge/ticketbridge/internal/httpx"
	"github.com/ticketbridge/ticketbridge/internal/telemetry"
)

// fleetFixture is a daemon of many hotels in-process, served as `run`
// serves it, on the kit of package fleettest.
type fleetFixture struct {
	*fleettest.Kit
	t    testing.TB
	f    *fleet.Fleet
	tel  *telemetry.Telemetry
	hup  chan os.Signal
	done chan error
	// registry, when set, holds the adapters instead of the daemon's.
	registry adapters.Registry
	// slots are the fleet's request slots.
	slots httpx.Slots
}

func newFleetFixture(t testing.TB) *fleetFixture {
	t.Helper()
	fx := &fleetFixture{Kit: fleettest.New(t), t: t}
	fx.MainVars["TICKETBRIDGE_LOG_FORMAT"] = "text"
	fx.MainVars["TICKETBRIDGE_LOG_LEVEL"] = "warn"
	return fx
}

// start runs the daemon of the fixture's files, its endpoints on a
// loopback port, until the test ends.
func (fx *fleetFixture) start() {
	fx.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ef := envFlag{path: fx.MainFile()}
	src, cfg, _, log, err := loadEnv(ctx, &ef, io.Discard)
	if err != nil {
		cancel()
		fx.t.Fatal(err)
	}
	hc, err := config.LoadHotels(ctx, src.Env)
	if err != nil {
		cancel()
		fx.t.Fatal(err)
	}
	fx.tel = telemetry.NewFleet(log, hc.ReadyNames(), telemetry.Options{Listen: "127.0.0.1:0", CycleMax: 20 * time.Minute, WatchdogEvery: -1, Notify: func(string) error { return nil }})
	fx.slots = httpx.NewSlots(hc.MaxInFlight)
	opts := fleet.Options{Source: src, Daemon: cfg, Hotels: hc, Logger: log, Telemetry: fx.tel, Registry: fx.registry, Slots: fx.slots,
		AfterCycle: fx.AfterCycle}
	fx.f = fleet.New(ctx, opts)
	fx.hup, fx.done = make(chan os.Signal, 1), make(chan error, 1)
	fx.Stopped = fx.done
	go func() { fx.done <- serveFleet(ctx, fx.f, opts, fx.hup, make(chan os.Signal)) }()
	fx.t.Cleanup(func() {
		cancel()
		select {
		case err := <-fx.done:
			if err != nil {
				fx.t.Errorf("the daemon stopped with %v", err)
			}
		case <-time.After(time.Minute): // a hang's report, not a timing
			fx.t.Error("the daemon did not stop")
		}
	})
}

// running returns the wirings of the hotels running, by name.
func (fx *fleetFixture) running() map[string]*bridge.Bridge { return fx.f.Bridges() }

func (fx *fleetFixture) get(path string) (int, string) {
	fx.t.Helper()
	resp, err := http.Get("http://" + fx.tel.Addr().String() + path)
	if err != nil {
		fx.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHotelsDirectoryNames(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("alpha.env", "TICKETBRIDGE_ADAPTER=files\n")
	write("b-2.env", "")
	write("README", "notes")
	write("alpha.env~", "backup of an editor")
	write(".alpha.env.swp", "swap file of an editor")
	if err := os.Mkdir(filepath.Join(dir, "..data"), 0o700); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	files, err := config.ReadHotelsDir(dir, func(s string) { warnings = append(warnings, s) })
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Name != "alpha" || files[1].Name != "b-2" || files[0].Vars["TICKETBRIDGE_ADAPTER"] != "files" {
		t.Errorf("hotels = %+v, want alpha and b-2", files)
	}
	if len(warnings) != 2 || !strings.Contains(strings.Join(warnings, "\n"), "README is not a hotel file") {
		t.Errorf("warnings = %q, want one for README and one for alpha.env~", warnings)
	}
	for _, bad := range []string{"Alpha.env", "-x.env", "a_b.env", "a b.env", "h\u00f4tel.env", strings.Repeat("a", 64) + ".env"} {
		t.Run(bad, func(t *testing.T) {
			d := t.TempDir()
			if err := os.WriteFile(filepath.Join(d, bad), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := config.ReadHotelsDir(d, func(string) {})
			if err == nil || !strings.Contains(err.Error(), filepath.Join(d, bad)) || !strings.Contains(err.Error(), "not a hotel name") {
				t.Errorf("error = %v, want one naming %s as not a hotel name", err, bad)
			}
		})
	}
	if _, err := config.ReadHotelsDir(filepath.Join(dir, "missing"), func(string) {}); err == nil || !strings.Contains(err.Error(), "read hotels directory") {
		t.Errorf("a missing directory: error = %v", err)
	}
}

// TestHotelConfiguration: a hotel's file wins over the main configuration,
// which gives the defaults; the state defaults to one file per hotel; the
// key is never inherited; two hotels never share a key, a state file or a
// helpdesk folder.
func TestHotelConfiguration(t *testing.T) {
	fx := newFleetFixture(t)
	fx.MainVars["TICKETBRIDGE_AUTHOR_NAME"] = "Front desk"
	fx.MainVars["TICKETBRIDGE_API_KEY"] = "rta_the-main-key-is-never-a-hotel-key"
	fx.WriteHotel("alpha", nil)
	fx.WriteHotel("beta", map[string]string{"TICKETBRIDGE_AUTHOR_NAME": "Beta desk", "TICKETBRIDGE_STATE": filepath.Join(fx.Dir, "beta.db")})
	ctx := context.Background()
	ef := envFlag{path: fx.MainFile()}
	src, cfg, _, _, err := loadEnv(ctx, &ef, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	load := func() ([]config.Hotel, map[string]error, error) {
		return config.LoadHotelDir(ctx, src, cfg, fx.HotelsDir, func(string) {})
	}
	good, bad, err := load()
	if err != nil || len(bad) != 0 || len(good) != 2 {
		t.Fatalf("load: %v, bad %v, good %d", err, bad, len(good))
	}
	a, b := good[0], good[1]
	if a.Sync.AuthorName != "Front desk" || b.Sync.AuthorName != "Beta desk" {
		t.Errorf("author names %q and %q, want the main's default and beta's own", a.Sync.AuthorName, b.Sync.AuthorName)
	}
	if want := filepath.Join(fx.Dir, "state", "hotels", "alpha.db"); a.Daemon.State.Value() != want {
		t.Errorf("alpha's state = %s, want %s", a.Daemon.State.Value(), want)
	}
	if b.Daemon.State.Value() != filepath.Join(fx.Dir, "beta.db") {
		t.Errorf("beta's state = %s, want its own", b.Daemon.State.Value())
	}
	if strings.Contains(string(a.Key), "main-key") || a.Key == b.Key {
		t.Error("a hotel got the main configuration's key, or the two hotels the same")
	}

	// A hotel without a key of its own is refused, the others go on.
	if err := os.WriteFile(filepath.Join(fx.HotelsDir, "gamma.env"), []byte("TICKETBRIDGE_FILES_DIR="+fx.FilesDir("gamma")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good, bad, err = load()
	if err != nil || len(good) != 2 || bad["gamma"] == nil || !strings.Contains(bad["gamma"].Error(), "hotel gamma") ||
		strings.Contains(bad["gamma"].Error(), "main-key") {
		t.Errorf("gamma without a key: err %v, bad %v, good %d", err, bad, len(good))
	}
	_ = os.Remove(filepath.Join(fx.HotelsDir, "gamma.env"))

	// Shared key, state or folder: the directory is refused.
	for what, extra := range map[string]map[string]string{
		"an API key":             {"TICKETBRIDGE_API_KEY_FILE": filepath.Join(fx.Dir, "alpha.key")},
		"the state file":         {"TICKETBRIDGE_STATE": filepath.Join(fx.Dir, "beta.db")},
		"TICKETBRIDGE_FILES_DIR": {"TICKETBRIDGE_FILES_DIR": fx.FilesDir("alpha")},
	} {
		fx.WriteHotel("delta", extra)
		if _, _, err := load(); err == nil || !strings.Contains(err.Error(), what) || !strings.Contains(err.Error(), "delta") {
			t.Errorf("delta sharing %s: error = %v", what, err)
		}
	}
}

// TestFleetReload: the hotels run side by side; a reload starts a new
// hotel, stops a removed one, restarts an edited one and leaves the
// others untouched; a broken directory changes nothing.
func TestFleetReload(t *testing.T) {
	fx := newFleetFixture(t)
	for _, n := range []string{"alpha", "beta", "gamma"} {
		fx.WriteHotel(n, nil)
		fx.Ticket(n, "towels for "+n)
	}
	fx.start()
	fx.WaitCycles("alpha", "beta", "gamma")
	for _, n := range []string{"alpha", "beta", "gamma"} {
		if got := fx.Folders(n); len(got) != 1 {
			t.Errorf("hotel %s's helpdesk holds %v, want its one ticket", n, got)
		}
	}
	before := fx.running()

	fx.WriteHotel("beta", map[string]string{"TICKETBRIDGE_AUTHOR_NAME": "Beta front desk"})
	if err := os.Remove(filepath.Join(fx.HotelsDir, "gamma.env")); err != nil {
		t.Fatal(err)
	}
	fx.WriteHotel("delta", nil)
	fx.Ticket("delta", "a late checkout")
	if err := fx.f.Reload(); err != nil {
		t.Fatal(err)
	}
	fx.WaitCycles("beta", "delta")
	after := fx.running()
	if after["alpha"] != before["alpha"] {
		t.Error("alpha, whose file did not change, was restarted")
	}
	if after["beta"] == nil || after["beta"] == before["beta"] {
		t.Error("beta, whose file changed, was not restarted")
	}
	if after["gamma"] != nil {
		t.Error("gamma, whose file is gone, still runs")
	}
	if after["delta"] == nil || len(fx.Folders("delta")) != 1 {
		t.Error("delta, whose file is new, did not start or sync")
	}
	fx.f.WaitClosed()
	if !before["gamma"].Closed() {
		t.Error("gamma's wiring was not closed")
	}

	// A bad name refuses the whole directory; what runs goes on.
	if err := os.WriteFile(filepath.Join(fx.HotelsDir, "Bad_Name.env"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := fx.f.Reload(); err == nil || !strings.Contains(err.Error(), "Bad_Name.env") {
		t.Errorf("reload with a bad name: %v", err)
	}
	if got := fx.running(); len(got) != 3 || got["alpha"] != after["alpha"] || got["delta"] != after["delta"] {
		t.Errorf("after a refused reload the hotels are %v", got)
	}
	_ = os.Remove(filepath.Join(fx.HotelsDir, "Bad_Name.env"))

	// SIGHUP's path: the daemon reloads on its channel.
	fx.WriteHotel("gamma", nil)
	fx.hup <- syscall.SIGHUP
	fx.WaitCycles("gamma")
	if got := fx.running(); got["gamma"] == nil || got["alpha"] != after["alpha"] {
		t.Errorf("after SIGHUP the hotels are %v", got)
	}
}

// TestFleetReadiness: /readyz names each hotel and answers 503 only while
// a hotel it answers for fails; the metrics carry the hotel label.
func TestFleetReadiness(t *testing.T) {
	fx := newFleetFixture(t)
	fx.WriteHotel("good", nil)
	fx.WriteHotel("revoked", nil)
	if err := fx.TS.Server.RevokeKey(fx.Orgs["revoked"], "bridge"); err != nil {
		t.Fatal(err)
	}
	fx.MainVars["TICKETBRIDGE_READY_HOTELS"] = "good"
	fx.start()
	fx.WaitCycles("good", "revoked")
	code, body := fx.get("/readyz")
	if code != 200 || !strings.Contains(body, "hotel good: ready") || !strings.Contains(body, "hotel revoked: not ready (not in TICKETBRIDGE_READY_HOTELS)") {
		t.Errorf("/readyz with revoked outside the ready set: %d\n%s", code, body)
	}
	_, metrics := fx.get("/metrics")
	for _, want := range []string{`ticketbridge_ready{hotel="good"} 1`, `ticketbridge_ready{hotel="revoked"} 0`,
		`ticketbridge_errors_total{hotel="revoked",kind="key_refused"} 1`, `ticketbridge_cycles_total{hotel="good",outcome="ok"} 1`, "go_goroutines "} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(metrics, "ticketbridge_ready 0") || strings.Contains(metrics, `go_goroutines{hotel=`) {
		t.Error("/metrics carries series of no hotel besides the process's, or the process's series per hotel")
	}

	// That every hotel counts by default: TestFleetReadinessEveryHotel
	// (internal/telemetry).
}

// cmd runs a command of the fixture's main file and returns stdout,
// stderr and the exit code.
func (fx *fleetFixture) cmd(args ...string) (string, string, int) {
	fx.t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{args[0], "--env-file", fx.MainFile()}, args[1:]...)
	if args[0] == "state" {
		full = append([]string{"state", args[1], "--env-file", fx.MainFile()}, args[2:]...)
	}
	err := run(context.Background(), full, &out, &errb)
	code := exitCode(err, &errb)
	return out.String(), errb.String(), code
}

// TestHotelCommands: once, status, check and state backup cover every
// hotel, one section each, or the one --hotel names.
func TestHotelCommands(t *testing.T) {
	fx := newFleetFixture(t)
	fx.WriteHotel("alpha", nil)
	fx.WriteHotel("beta", nil)
	fx.Ticket("alpha", "extra pillows")
	fx.Ticket("beta", "a taxi at six")

	out, errOut, code := fx.cmd("once", "--hotel", "alpha")
	if code != 0 || strings.Contains(out, "== hotel") || len(fx.Folders("alpha")) != 1 || len(fx.Folders("beta")) != 0 {
		t.Fatalf("once --hotel alpha: %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = fx.cmd("once")
	if code != 0 || !strings.Contains(out, "== hotel alpha ==") || !strings.Contains(out, "== hotel beta ==") || len(fx.Folders("beta")) != 1 {
		t.Fatalf("once: %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = fx.cmd("status")
	if code != 0 || !strings.Contains(out, "== hotel alpha ==") || !strings.Contains(out, filepath.Join("hotels", "beta.db")) {
		t.Errorf("status: %d\n%s", code, out)
	}
	out, _, code = fx.cmd("status", "--json")
	var byHotel map[string]struct{ Counts struct{ Tickets int } }
	if err := json.Unmarshal([]byte(out), &byHotel); code != 0 || err != nil || byHotel["alpha"].Counts.Tickets != 1 || byHotel["beta"].Counts.Tickets != 1 {
		t.Errorf("status --json: %d %v\n%s", code, err, out)
	}
	out, _, code = fx.cmd("check", "--hotel", "beta")
	if code != 0 || !strings.Contains(out, "== hotel beta ==") || strings.Contains(out, "alpha") {
		t.Errorf("check --hotel beta: %d\n%s", code, out)
	}
	backups := filepath.Join(fx.Dir, "backups")
	out, _, code = fx.cmd("state", "backup", backups)
	if code != 0 {
		t.Errorf("state backup: %d\n%s", code, out)
	}
	for _, n := range []string{"alpha", "beta"} {
		if _, err := os.Stat(filepath.Join(backups, n+".db")); err != nil {
			t.Errorf("state backup of every hotel: %v", err)
		}
	}

	// A hotel that fails fails the command, the others still run.
	if err := fx.TS.Server.RevokeKey(fx.Orgs["beta"], "bridge"); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fx.cmd("once")
	if code != 1 || !strings.Contains(errOut, "1 of 2 hotels failed: beta") || !strings.Contains(out, "== hotel alpha ==") {
		t.Errorf("once with beta's key revoked: %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = fx.cmd("check")
	if code != 1 || !strings.Contains(out, "== hotel alpha ==") || !strings.Contains(out, "FAIL") {
		t.Errorf("check with beta's key revoked: %d\n%s", code, out)
	}

	// --hotel names a hotel of the directory, and needs one.
	if _, errOut, code := fx.cmd("status", "--hotel", "gamma"); code != 2 || !strings.Contains(errOut, "no such hotel") || !strings.Contains(errOut, "alpha, beta") {
		t.Errorf("status --hotel gamma: %d %s", code, errOut)
	}
	// The commands on one hotel's state need --hotel, and name the hotels.
	for _, c := range []struct {
		args  []string
		whose string
	}{
		{[]string{"log", "some-id"}, "log: this configuration serves many hotels"},
		{[]string{"pause", "some-id"}, "say whose request it is with --hotel NAME (hotels: alpha, beta)"},
		{[]string{"skip", "--reason", "x", "some-id"}, "say whose entry it is with --hotel NAME"},
		{[]string{"confirm-move", "--api", "https://x"}, "say which moved with --hotel NAME"},
	} {
		if _, errOut, code := fx.cmd(c.args...); code != 2 || !strings.Contains(errOut, c.whose) {
			t.Errorf("%v without --hotel: %d %s", c.args, code, errOut)
		}
	}
	delete(fx.MainVars, "TICKETBRIDGE_HOTELS_DIR")
	for _, args := range [][]string{{"once", "--hotel", "alpha"}, {"status", "--hotel", "alpha"}, {"check", "--hotel", "alpha"}, {"state", "backup", "--hotel", "alpha", backups + "/x"}} {
		if _, errOut, code := fx.cmd(args...); code != 2 || !strings.Contains(errOut, "--hotel needs TICKETBRIDGE_HOTELS_DIR") {
			t.Errorf("%v without a hotels directory: %d %s", args, code, errOut)
		}
	}
}

// TestFleetSharesItsSlots: every hotel's helpdesk adapter is given the
// fleet's chain, so that its requests hold the slots the hotels' API
// clients hold too (TICKETBRIDGE_MAX_IN_FLIGHT), each until its answer's
// body is closed.
func TestFleetSharesItsSlots(t *testing.T) {
	fx := newFleetFixture(t)
	var mu gosync.Mutex
	var given []http.RoundTripper
	fx.registry = adapters.Registry{files.Name: func(ctx context.Context, deps adapters.Deps) (adapters.Helpdesk, error) {
		mu.Lock()
		given = append(given, deps.Transport)
		mu.Unlock()
		return files.Factory(ctx, deps)
	}}
	fx.WriteHotel("alpha", nil)
	fx.WriteHotel("beta", nil)
	fx.start()
	fx.WaitCycles("alpha", "beta")
	var held atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		held.Store(int32(len(fx.slots)))
	}))
	t.Cleanup(srv.Close)
	mu.Lock()
	defer mu.Unlock()
	if len(given) != 2 {
		t.Fatalf("%d adapters opened, want 2", len(given))
	}
	for i, tr := range given {
		resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		before := len(fx.slots)
		_ = resp.Body.Close()
		if held.Load() != 1 || before != 1 || len(fx.slots) != 0 {
			t.Errorf("hotel %d's helpdesk request: fleet slots held while answered %d, before its body is closed %d, after %d; want 1, 1, 0",
				i, held.Load(), before, len(fx.slots))
		}
	}
}

// TestHotelStateInADatabase: with the main state in a database, every
// hotel's state is there too (under its name), which two hotels may share.
func TestHotelStateInADatabase(t *testing.T) {
	fx := newFleetFixture(t)
	db := "postgres://tb@127.0.0.1:1/tb"
	fx.MainVars["TICKETBRIDGE_STATE"] = db
	fx.WriteHotel("alpha", nil)
	fx.WriteHotel("beta", nil)
	ctx := context.Background()
	ef := envFlag{path: fx.MainFile()}
	src, cfg, _, _, err := loadEnv(ctx, &ef, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	good, bad, err := config.LoadHotelDir(ctx, src, cfg, fx.HotelsDir, func(string) {})
	if err != nil || len(bad) != 0 || len(good) != 2 || good[0].Daemon.State.Value() != db || good[1].Daemon.State.Value() != db {
		t.Errorf("hotels on a database: %v %v %+v", err, bad, good)
	}
}

// TestWebhookHotelsListenApart: two webhook hotels whose inbound
// endpoints would take the same port are refused with both names, the
// second of them would otherwise fail to start; hotels listening apart,
// or not at all, are not.
func TestWebhookHotelsListenApart(t *testing.T) {
	fx := newFleetFixture(t)
	ctx := context.Background()
	hook := func(name, listen string) {
		vars := map[string]string{
			"TICKETBRIDGE_ADAPTER":        "webhook",
			"TICKETBRIDGE_WEBHOOK_URL":    "http://127.0.0.1:1/" + name,
			"TICKETBRIDGE_WEBHOOK_SECRET": "a-webhook-secret-long-enough-of-" + name,
			"TICKETBRIDGE_WEBHOOK_DIR":    filepath.Join(fx.Dir, "webhook", name),
		}
		if listen != "" {
			vars["TICKETBRIDGE_WEBHOOK_LISTEN"] = listen
		}
		fx.WriteHotel(name, vars)
	}
	for _, tc := range []struct {
		a, b  string // the two hotels' TICKETBRIDGE_WEBHOOK_LISTEN; "" is the default
		clash bool
	}{
		{"", "", true},
		{"", "127.0.0.1:9465", true},
		{"127.0.0.1:9501", "127.0.0.1:9502", false},
		{"0.0.0.0:9501", "127.0.0.1:9501", true},
		{"127.0.0.1:9501", "[::]:9501", true},
		{"127.0.0.1:9501", "127.0.0.2:9501", false},
		{"localhost:9501", "127.0.0.1:9501", true},
		{"127.0.0.1:0", "127.0.0.1:0", false},
		{"off", "off", false},
		{"", "off", false},
	} {
		hook("alpha", tc.a)
		hook("beta", tc.b)
		ef := envFlag{path: fx.MainFile()}
		src, cfg, _, _, err := loadEnv(ctx, &ef, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = config.LoadHotelDir(ctx, src, cfg, fx.HotelsDir, func(string) {})
		if tc.clash != (err != nil) || err != nil && !(strings.Contains(err.Error(), "hotels alpha and beta") && strings.Contains(err.Error(), "TICKETBRIDGE_WEBHOOK_LISTEN")) {
			t.Errorf("alpha on %q, beta on %q: error = %v, want a clash: %v", tc.a, tc.b, err, tc.clash)
		}
	}
}

// TestHotelStateFileAmongReplicas: with the main state in a database, a
// hotel that keeps its state in a file is warned about, by name: it holds
// no lease, so every replica would sync it.
func TestHotelStateFileAmongReplicas(t *testing.T) {
	fx := newFleetFixture(t)
	fx.MainVars["TICKETBRIDGE_STATE"] = "postgres://tb@127.0.0.1:1/tb"
	fx.WriteHotel("alpha", nil)
	fx.WriteHotel("beta", map[string]string{"TICKETBRIDGE_STATE": filepath.Join(fx.Dir, "beta.db")})
	ctx := context.Background()
	ef := envFlag{path: fx.MainFile()}
	src, cfg, _, _, err := loadEnv(ctx, &ef, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	if _, _, err := config.LoadHotelDir(ctx, src, cfg, fx.HotelsDir, func(w string) { warnings = append(warnings, w) }); err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "hotel beta keeps its state in the file") || !strings.Contains(warnings[0], "every replica") {
		t.Errorf("warnings = %q, want one about beta's state file", warnings)
	}
}

// TestFleetWatchdogAndBrokenHotel: a hotel that could not start is listed
// failing by /readyz and does not starve the watchdog; a running hotel
// that never completes a cycle does. It runs in a bubble: the two hours
// pass on its clock.
func TestFleetWatchdogAndBrokenHotel(t *testing.T) { synctest.Test(t, testFleetWatchdogAndBrokenHotel) }

func testFleetWatchdogAndBrokenHotel(t *testing.T) {
	now := time.Now()
	tel := telemetry.NewFleet(nil, nil, telemetry.Options{CycleMax: time.Hour})
	tel.Hotel("broken")
	tel.DropHotel("broken", "state file of another adapter")
	if u := tel.AliveUntil(); u.Before(now.Add(time.Hour)) {
		t.Errorf("alive until %s with no hotel running, want an hour on", u)
	}
	if ok, reason := tel.Readiness(now); ok || !strings.Contains(reason, "hotel broken: not ready: failed to start: state file of another adapter") {
		t.Errorf("readiness = %v %q", ok, reason)
	}
	stuck := tel.Hotel("stuck")
	if err := stuck.Start(context.Background(), nil, nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	stuck.CycleStarted()
	time.Sleep(2 * time.Hour)
	if tel.FeedWatchdog() {
		t.Error("the watchdog was fed while a hotel's cycle hung for two hours")
	}
}

// lineWatch is a log writer that passes each line holding want on.
type lineWatch struct {
	mu    gosync.Mutex
	buf   []byte
	want  string
	lines chan string
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		if strings.Contains(line, w.want) {
			select {
			case w.lines <- line:
			default:
			}
		}
	}
}

// TestRunReloadsOnSIGHUP: `ticketbridge run` with a hotels directory
// starts a hotel added to it when the process gets SIGHUP.
func TestRunReloadsOnSIGHUP(t *testing.T) {
	fx := newFleetFixture(t)
	fx.MainVars["TICKETBRIDGE_LOG_LEVEL"] = "info"
	fx.WriteHotel("alpha", nil)
	logs := &lineWatch{want: "hotel started", lines: make(chan string, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"run", "--env-file", fx.MainFile()}, io.Discard, logs) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	started := func(hotel string) {
		t.Helper()
		select {
		case line := <-logs.lines:
			if !strings.Contains(line, "hotel="+hotel) {
				t.Fatalf("started %q, want hotel %s", line, hotel)
			}
		case err := <-done:
			t.Fatalf("run ended: %v", err)
		case <-time.After(time.Minute): // a hang's report, not a timing
			t.Fatalf("hotel %s did not start within a minute", hotel)
		}
	}
	started("alpha")
	fx.WriteHotel("beta", nil)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	started("beta")
}

// TestCheckFailsOnHotelFileSecrets: check fails a hotel whose file, which
// its group may read (staff join the group ticketbridge), sets a secret
// as a value; the verdict names the file and the _FILE variable to use
// instead, never the secret. A hotel file only the service reads passes.
func TestCheckFailsOnHotelFileSecrets(t *testing.T) {
	const marker = "hotel-token-MARKER-77c3"
	fx := newFleetFixture(t)
	fx.WriteHotel("alpha", map[string]string{"TICKETBRIDGE_ZENDESK_TOKEN": marker})
	fx.WriteHotel("beta", map[string]string{"TICKETBRIDGE_ZENDESK_TOKEN": marker})
	alpha := filepath.Join(fx.HotelsDir, "alpha.env")
	if err := os.Chmod(alpha, 0o640); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := fx.cmd("check")
	if code != 1 || strings.Contains(out+errOut, marker) {
		t.Fatalf("check: exit %d, want 1 and no secret:\n%s%s", code, out, errOut)
	}
	_, alphaOut, _ := strings.Cut(out, "== hotel alpha ==")
	alphaOut, betaOut, _ := strings.Cut(alphaOut, "== hotel beta ==")
	if !strings.Contains(alphaOut, "FAIL  hotel secrets") || !strings.Contains(alphaOut, alpha) || !strings.Contains(alphaOut, "TICKETBRIDGE_ZENDESK_TOKEN_FILE") {
		t.Errorf("hotel alpha: no FAIL naming %s and TICKETBRIDGE_ZENDESK_TOKEN_FILE:\n%s", alpha, out)
	}
	if strings.Contains(betaOut, "hotel secrets") {
		t.Errorf("hotel beta, whose file only the service reads, fails:\n%s", out)
	}
}
