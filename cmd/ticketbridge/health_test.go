package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/fleet"
	"github.com/ticketbridge/ticketbridge/internal/telemetry"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
	"github.com/ticketbridge/ticketbridge/sync"
)

// daemonUnderTest is `ticketbridge run` in-process, its health endpoints
// on a loopback port.
type daemonUnderTest struct {
	t      *testing.T
	tel    *telemetry.Telemetry
	addr   string
	cycles chan sync.Report
	done   chan error
	cancel context.CancelFunc
}

// startDaemon runs the daemon of b's configuration with the endpoints on
// 127.0.0.1 and returns once it is wired; each finished cycle's report
// arrives on cycles.
func startDaemon(t *testing.T, b *hotelKit) *daemonUnderTest {
	t.Helper()
	ef := envFlag{path: b.envFile()}
	ctx, cancel := context.WithCancel(context.Background())
	src, cfg, sc, log, err := loadEnv(ctx, &ef, io.Discard)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	d := &daemonUnderTest{t: t, cycles: make(chan sync.Report, 16), done: make(chan error, 1), cancel: cancel}
	hc, err := config.LoadHotels(ctx, src.Env)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	fo := fleetOptions(src, cfg, sc, hc, log, telemetry.Options{Listen: "127.0.0.1:0", CycleMax: 20 * time.Minute, WatchdogEvery: -1, Notify: func(string) error { return nil }})
	fo.AfterCycle = func(_ string, r sync.Report, _ error) { d.cycles <- r }
	tel := fo.Telemetry
	go func() { d.done <- serveFleet(ctx, fleet.New(ctx, fo), fo, make(chan os.Signal), nil) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-d.done:
		case <-time.After(time.Minute): // a hang's report, not a timing
			t.Error("the daemon did not stop")
		}
	})
	d.tel = tel
	return d
}

// next waits for the next cycle's report.
func (d *daemonUnderTest) next() sync.Report {
	d.t.Helper()
	select {
	case r := <-d.cycles:
		// The endpoints listen before the first cycle starts.
		d.addr = d.tel.Addr().String()
		return r
	case err := <-d.done:
		d.t.Fatalf("the daemon stopped: %v", err)
	case <-time.After(time.Minute): // a hang's report, not a timing
		d.t.Fatal("no cycle finished within a minute")
	}
	return sync.Report{}
}

func (d *daemonUnderTest) get(path string) (int, string) {
	d.t.Helper()
	resp, err := http.Get("http://" + d.addr + path)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (d *daemonUnderTest) metric(series string) float64 {
	d.t.Helper()
	code, text := d.get("/metrics")
	if code != 200 {
		d.t.Fatalf("/metrics: %d", code)
	}
	return testutil.MetricValue(d.t, text, series)
}

// TestHealthWithTheAPIUnreachable: a cycle in which no API call succeeded
// has failed: `once` exits 1 saying so, /readyz answers 503 with the
// reason, ticketbridge_ready is 0 and the last-success time never moves.
func TestHealthWithTheAPIUnreachable(t *testing.T) {
	b := newBridge(t)
	b.ticket("towels")
	b.vars["TICKETBRIDGE_API_URL"] = "http://" + testutil.ClosedPort(t)
	b.vars["TICKETBRIDGE_LOG_LEVEL"] = "info"

	out, errOut, code := b.cmd("once")
	if code != 1 || !strings.Contains(errOut, "no call of the Guest Requests API succeeded") || !strings.Contains(out, "failed") {
		t.Fatalf("once with the API unreachable: exit %d, want 1\n%s\n%s", code, out, errOut)
	}

	d := startDaemon(t, b)
	if r := d.next(); r.Synced || r.Outcome != sync.OutcomeFailed {
		t.Fatalf("first cycle: synced %t, outcome %s", r.Synced, r.Outcome)
	}
	code, body := d.get("/readyz")
	if code != 503 || !strings.Contains(body, "the last cycle failed") || !strings.Contains(body, "connection refused") {
		t.Fatalf("/readyz with the API unreachable: %d %q", code, body)
	}
	if v := d.metric("ticketbridge_ready"); v != 0 {
		t.Errorf("ticketbridge_ready = %v, want 0", v)
	}
	if v := d.metric("ticketbridge_last_success_timestamp_seconds"); v != 0 {
		t.Errorf("ticketbridge_last_success_timestamp_seconds = %v, want 0", v)
	}
	if v := d.metric(`ticketbridge_errors_total{kind="api_down"}`); v != 1 {
		t.Errorf(`ticketbridge_errors_total{kind="api_down"} = %v, want 1`, v)
	}
	if v := d.metric(`ticketbridge_cycles_total{outcome="failed"}`); v != 1 {
		t.Errorf(`ticketbridge_cycles_total{outcome="failed"} = %v, want 1`, v)
	}
}

// TestHealthWithARevokedKey: a daemon that synced is ready; once its key
// is revoked the next cycle fails and /readyz answers 503 at once, and the
// last-success time stays where it was.
func TestHealthWithARevokedKey(t *testing.T) {
	b := newBridge(t)
	b.ticket("towels")
	b.vars["TICKETBRIDGE_SCHEDULE"] = "@every 1s"
	b.vars["TICKETBRIDGE_LOG_LEVEL"] = "info"
	d := startDaemon(t, b)
	if r := d.next(); !r.Synced || r.Created != 1 {
		t.Fatalf("first cycle: %s", r)
	}
	if code, body := d.get("/readyz"); code != 200 || !strings.HasPrefix(body, "ok: last cycle ok") {
		t.Fatalf("/readyz after a cycle that synced: %d %q", code, body)
	}
	okAt := d.metric("ticketbridge_last_success_timestamp_seconds")
	if okAt <= 0 {
		t.Fatalf("last success %v after a cycle that synced", okAt)
	}

	if err := b.ts.Server.RevokeKey(b.ts.Org, "tickets-write"); err != nil {
		t.Fatal(err)
	}
	// Cycles may have started before the key was revoked, and synced: the
	// last success is then theirs.
	r := d.next()
	for range 5 {
		if !r.Synced {
			break
		}
		okAt = d.metric("ticketbridge_last_success_timestamp_seconds")
		r = d.next()
	}
	if r.Synced || r.Outcome != sync.OutcomeFailed {
		t.Fatalf("cycle with the key revoked: synced %t, outcome %s", r.Synced, r.Outcome)
	}
	code, body := d.get("/readyz")
	if code != 503 || !strings.Contains(body, "the last cycle failed") || !strings.Contains(body, "refused (401)") {
		t.Fatalf("/readyz with the key revoked: %d %q", code, body)
	}
	if v := d.metric("ticketbridge_ready"); v != 0 {
		t.Errorf("ticketbridge_ready = %v, want 0", v)
	}
	if v := d.metric("ticketbridge_last_success_timestamp_seconds"); v != okAt {
		t.Errorf("last success moved from %v to %v on a failed cycle", okAt, v)
	}
	if v := d.metric(`ticketbridge_errors_total{kind="key_refused"}`); v < 1 {
		t.Errorf(`ticketbridge_errors_total{kind="key_refused"} = %v, want 1 or more`, v)
	}
	if strings.Contains(body, b.ts.Keys.TicketsWrite) {
		t.Fatal("/readyz shows the key")
	}
}

// TestFailedCycleLoggedOnce: the reason a cycle stopped is logged once, in
// the cycle's line, not also on a line of its own.
func TestFailedCycleLoggedOnce(t *testing.T) {
	b := newBridge(t)
	b.ticket("towels")
	b.vars["TICKETBRIDGE_API_KEY_FILE"] = ""
	b.vars["TICKETBRIDGE_API_KEY"] = b.ts.Keys.Revoked
	b.vars["TICKETBRIDGE_LOG_LEVEL"] = "info"
	_, errOut, code := b.cmd("once")
	if code != 1 {
		t.Fatalf("once with a revoked key: exit %d\n%s", code, errOut)
	}
	logged := 0
	for _, line := range strings.Split(errOut, "\n") {
		if strings.HasPrefix(line, "time=") && strings.Contains(line, "refused (401)") {
			logged++
		}
	}
	if logged != 1 {
		t.Fatalf("the reason is logged on %d lines, want 1:\n%s", logged, errOut)
	}
}

// TestKeyRotatedUnderARunningDaemon: the hotel's key is rotated (a new
// key issued, the old one revoked) and the new one written into the key
// file while the daemon runs; the daemon takes it at the first 401 and
// goes on syncing, without a restart, and the guest message written
// meanwhile crosses once.
func TestKeyRotatedUnderARunningDaemon(t *testing.T) {
	b := newBridge(t)
	b.ticket("towels")
	b.vars["TICKETBRIDGE_SCHEDULE"] = "@every 1s"
	d := startDaemon(t, b)
	if r := d.next(); !r.Synced {
		t.Fatalf("first cycle: %s", r)
	}
	k, err := b.ts.Server.IssueKey(b.ts.Org, refserver.KeySpec{Name: "rotated", Platform: refserver.PlatformRead, Tickets: refserver.TicketsWrite})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.vars["TICKETBRIDGE_API_KEY_FILE"], []byte(k.Value+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.ts.Server.RevokeKey(b.ts.Org, "tickets-write"); err != nil {
		t.Fatal(err)
	}
	id := b.ticket("a late checkout")
	for range 5 {
		r := d.next()
		if r.Outcome == sync.OutcomeFailed {
			t.Fatalf("a cycle failed after the key was rotated in its file: %s", r)
		}
		if r.Created > 0 {
			break
		}
	}
	b.folder(id) // the request written after the rotation crossed
	if code, body := d.get("/readyz"); code != 200 {
		t.Fatalf("/readyz after the rotation: %d %q", code, body)
	}
}
