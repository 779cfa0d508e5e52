package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

func TestEndpointTemplates(t *testing.T) {
	id := "0d9a7c1e-5b43-4e2f-8a61-7c0b9e1f2a11"
	for path, want := range map[string]string{
		"/ops-public-api/v1/tickets":                     "/tickets",
		"/ops-public-api/v1/tickets/":                    "/tickets",
		"/ops-public-api/v1/tickets/" + id:               "/tickets/{id}",
		"/ops-public-api/v1/tickets/" + id + "/messages": "/tickets/{id}/messages",
		"/ops-public-api/v1/tickets/" + id + "/status":   "/tickets/{id}/status",
		"/prefix/ops-public-api/v1/tickets/" + id:        "/tickets/{id}",
		"/ops-public-api/v1/tickets/a%2Fb/status":        "/tickets/{id}/status",
		"/ops-public-api/v1/tickets/" + id + "/other":    "other",
		"/ops-public-api/v1/tickets/" + id + "/a/b":      "other",
		"/api-auth/token":                                "/api-auth/token",
		"/functions/api-auth/verify":                     "/api-auth/verify",
		"/" + id:                                         "other",
		"/":                                              "other",
	} {
		if got := endpointOf(path); got != want {
			t.Errorf("endpointOf(%q) = %q, want %q", path, got, want)
		}
	}
}

// TestAPIRequestsCounted drives the real client through the instrumented
// transport against the reference server.
func TestAPIRequestsCounted(t *testing.T) {
	ts := refservertest.New(t)
	ticket, err := ts.Server.CreateTicket(ts.Org, refserver.NewTicket{Department: "housekeeping", TaskDescription: "Towels"})
	if err != nil {
		t.Fatal(err)
	}
	tel, _ := testTelemetry(t, Options{})
	cl, err := guestapi.New(guestapi.Config{BaseURL: ts.URL, APIKey: ts.Keys.TicketsWrite, HTTPClient: &http.Client{Transport: tel.CountRequests(nil)}, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cl.ListTickets(ctx, guestapi.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.GetTicket(ctx, ticket.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.GetTicket(ctx, "00000000-0000-4000-8000-000000000000"); !errors.Is(err, guestapi.ErrNotFound) {
		t.Fatalf("get unknown ticket: %v", err)
	}
	if _, err := cl.PostMessage(ctx, ticket.ID, guestapi.NewMessage{Body: "On the way"}, "key-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.SetStatus(ctx, ticket.ID, guestapi.StatusDone, "key-2"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	dead, err := guestapi.New(guestapi.Config{BaseURL: "http://" + testutil.ClosedPort(t), APIKey: ts.Keys.TicketsWrite, HTTPClient: &http.Client{Transport: tel.CountRequests(nil)}, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dead.ListTickets(ctx, guestapi.ListOptions{}); err == nil {
		t.Fatal("list on a closed port succeeded")
	}

	text := testutil.Scrape(t, tel.Handler(nil))
	for series, want := range map[string]float64{
		`ticketbridge_api_requests_total{code="200",endpoint="/tickets",method="GET"}`:                1,
		`ticketbridge_api_requests_total{code="200",endpoint="/tickets/{id}",method="GET"}`:           1,
		`ticketbridge_api_requests_total{code="404",endpoint="/tickets/{id}",method="GET"}`:           1,
		`ticketbridge_api_requests_total{code="200",endpoint="/tickets/{id}/messages",method="POST"}`: 1,
		`ticketbridge_api_requests_total{code="200",endpoint="/tickets/{id}/status",method="POST"}`:   1,
		`ticketbridge_api_requests_total{code="200",endpoint="/api-auth/token",method="POST"}`:        1,
		`ticketbridge_api_requests_total{code="200",endpoint="/api-auth/verify",method="POST"}`:       1,
		`ticketbridge_api_requests_total{code="error",endpoint="/tickets",method="GET"}`:              1,
		`ticketbridge_api_request_duration_seconds_count{endpoint="/tickets/{id}"}`:                   2,
	} {
		if got := testutil.MetricValue(t, text, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	for _, secret := range []string{ticket.ID, ts.Keys.TicketsWrite, "00000000-0000-4000-8000-000000000000", "127.0.0.1"} {
		if strings.Contains(text, secret) {
			t.Errorf("metrics contain %q", secret)
		}
	}
}

// TestCycleMetricsAndReadiness runs at t0 in a bubble: the bounds pass
// on its clock.
func TestCycleMetricsAndReadiness(t *testing.T) { atT0(t, testCycleMetricsAndReadiness) }

func testCycleMetricsAndReadiness(t *testing.T) {
	tel, sent := testTelemetry(t, Options{CycleMax: 20 * time.Minute})
	h := tel.Handler(nil)
	get := func(path string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, path, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "not started") {
		t.Fatalf("readyz before start: %d %q", code, body)
	}
	sched, err := sync.ParseSchedule("@every 30s")
	if err != nil {
		t.Fatal(err)
	}
	stats := state.Stats{ByStatus: map[string]int{"new": 2, "done": 1, "": 1, "frozen": 1}, Retired: 1,
		JournalPending: 3, JournalFailed: 1, JournalUnmarked: 2, FileSize: 32768}
	if err := tel.Start(context.Background(), nil, sched, 30*time.Second, func() (state.Stats, error) { return stats, nil }); err != nil {
		t.Fatal(err)
	}
	defer tel.Stop()
	if got := drain(sent); len(got) < 1 || got[0] != "READY=1" {
		t.Fatalf("notifications at start: %q, want READY=1 first", got)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("healthz: %d %q", code, body)
	}
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "no cycle has finished yet") || strings.Count(body, "\n") != 1 {
		t.Fatalf("readyz before the first cycle: %d %q", code, body)
	}

	// A failed cycle: not ready, with its reason.
	time.Sleep(2 * time.Second)
	fatal := fmt.Errorf("list tickets: %w", sync.ErrKeyRefused)
	tel.CycleDone(sync.Report{Outcome: sync.OutcomeFailed, Duration: 2 * time.Second, Lag: 2500 * time.Millisecond, Fatal: fatal.Error()}, fatal)
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "revoked, expired or mistyped") {
		t.Fatalf("readyz after a failed cycle: %d %q", code, body)
	}

	// A partial cycle that synced counts as a success.
	time.Sleep(30 * time.Second)
	tel.CycleDone(sync.Report{Outcome: sync.OutcomePartial, Synced: true, Duration: 1500 * time.Millisecond, Lag: 4 * time.Second, Mirrored: 4, Sent: 2, Errors: 1, Failed: 1,
		Signalled: 5, Unsignalled: 1, Throttled: 3, Reconcile: map[string]int{sync.ReconcileCarriedUp: 2}}, nil)
	if code, body := get("/readyz"); code != 200 || !strings.Contains(body, "partial") {
		t.Fatalf("readyz after a partial cycle: %d %q", code, body)
	}
	status := drain(sent)
	if len(status) == 0 || !strings.HasPrefix(status[len(status)-1], "STATUS=last cycle partial") {
		t.Fatalf("no STATUS after the cycle: %q", status)
	}

	text := testutil.Scrape(t, h)
	okAt := float64(time.Now().Unix())
	for series, want := range map[string]float64{
		`ticketbridge_cycles_total{outcome="failed"}`:                   1,
		`ticketbridge_cycles_total{outcome="partial"}`:                  1,
		`ticketbridge_cycles_total{outcome="ok"}`:                       0,
		`ticketbridge_cycle_duration_seconds_count`:                     2,
		`ticketbridge_cycle_duration_seconds_sum`:                       3.5,
		`ticketbridge_cycle_lag_seconds_count`:                          2,
		`ticketbridge_cycle_lag_seconds_sum`:                            6.5,
		`ticketbridge_cycle_lag_seconds_bucket{le="3"}`:                 1,
		`ticketbridge_cycle_lag_seconds_bucket{le="5"}`:                 2,
		`ticketbridge_messages_mirrored_total{direction="to_helpdesk"}`: 4,
		`ticketbridge_messages_mirrored_total{direction="to_api"}`:      2,
		`ticketbridge_errors_total{kind="key_refused"}`:                 1,
		`ticketbridge_errors_total{kind="ticket"}`:                      1,
		`ticketbridge_errors_total{kind="refused"}`:                     1,
		`ticketbridge_errors_total{kind="cycle"}`:                       0,
		`ticketbridge_ticket_reads_total{cause="signalled"}`:            5,
		`ticketbridge_ticket_reads_total{cause="unsignalled"}`:          1,
		`ticketbridge_ticket_reads_total{cause="throttled"}`:            3,
		`ticketbridge_reconcile_total{outcome="carried_up"}`:            2,
		`ticketbridge_reconcile_total{outcome="conflict"}`:              0,
		`ticketbridge_tickets{status="new"}`:                            2,
		`ticketbridge_tickets{status="done"}`:                           1,
		`ticketbridge_tickets{status="unknown"}`:                        1,
		`ticketbridge_tickets{status="other"}`:                          1,
		`ticketbridge_tickets{status="assigned"}`:                       0,
		`ticketbridge_tickets_retired`:                                  1,
		`ticketbridge_journal_entries{state="pending"}`:                 3,
		`ticketbridge_journal_entries{state="failed"}`:                  1,
		`ticketbridge_journal_entries{state="unmarked"}`:                2,
		`ticketbridge_state_file_bytes`:                                 32768,
		`ticketbridge_last_success_timestamp_seconds`:                   okAt,
		`ticketbridge_last_cycle_timestamp_seconds`:                     okAt,
		`ticketbridge_ready`:                                            1,
	} {
		if got := testutil.MetricValue(t, text, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	if !strings.Contains(text, "ticketbridge_build_info{") || !strings.Contains(text, "go_goroutines ") {
		t.Errorf("build info or Go collector missing")
	}
	if strings.Contains(text, "frozen") {
		t.Errorf("an unknown status became a label value")
	}

	// Ready until TICKETBRIDGE_CYCLE_MAX past the next scheduled start.
	time.Sleep(30*time.Second + 20*time.Minute)
	if code, _ := get("/readyz"); code != 200 {
		t.Fatalf("readyz CycleMax past the next start: %d, want 200", code)
	}
	time.Sleep(time.Second)
	// The gauge follows the clock at each scrape, not only when a cycle
	// ends or /readyz is asked: a hung cycle turns it to 0.
	if got := testutil.MetricValue(t, testutil.Scrape(t, h), "ticketbridge_ready"); got != 0 {
		t.Fatalf("ticketbridge_ready = %v past the bound, want 0", got)
	}
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "nothing synced since") || !strings.Contains(body, "TICKETBRIDGE_CYCLE_MAX (20m0s)") {
		t.Fatalf("readyz past the bound: %d %q", code, body)
	}

	// A cycle in which no API call succeeded fails at once, and the
	// success timestamp stays.
	time.Sleep(time.Second)
	down := fmt.Errorf("run cycle: %w: list tickets: connection refused", sync.ErrNoAPISuccess)
	tel.CycleDone(sync.Report{Outcome: sync.OutcomeFailed, Fatal: down.Error()}, down)
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "the last cycle failed") || !strings.Contains(body, "connection refused") {
		t.Fatalf("readyz after a cycle with the API down: %d %q", code, body)
	}
	text = testutil.Scrape(t, h)
	if got := testutil.MetricValue(t, text, "ticketbridge_last_success_timestamp_seconds"); got != okAt {
		t.Fatalf("last success moved to %v on a failed cycle, want %v", got, okAt)
	}
	if got := testutil.MetricValue(t, text, `ticketbridge_errors_total{kind="api_down"}`); got != 1 {
		t.Fatalf("api_down errors = %v, want 1", got)
	}
	// A report without Synced (nothing succeeded upstream) is no success.
	tel.CycleDone(sync.Report{Outcome: sync.OutcomeOK}, nil)
	if code, _ := get("/readyz"); code != 503 {
		t.Fatalf("readyz after a cycle that did not sync: %d, want 503", code)
	}
	if code, _ := get("/metrics"); code != 200 {
		t.Fatalf("metrics: %d", code)
	}
	req, _ := http.NewRequest(http.MethodPost, "/metrics", strings.NewReader("x"))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") == "" {
		t.Fatalf("POST /metrics: %d", rec.Code)
	}
	if code, _ := get("/nothing"); code != 404 {
		t.Fatalf("unknown path: %d, want 404", code)
	}
}

func TestErrorKinds(t *testing.T) {
	for err, want := range map[error]string{
		fmt.Errorf("x: %w", sync.ErrKeyRefused):      errKindKeyRefused,
		fmt.Errorf("x: %w", sync.ErrMissingRight):    errKindMissingRight,
		fmt.Errorf("x: %w", sync.ErrAdapterMismatch): errKindState,
		fmt.Errorf("x: %w", context.Canceled):        errKindCanceled,
		errors.New("disk full"):                      errKindCycle,
	} {
		if got := errorKind(err); got != want {
			t.Errorf("errorKind(%v) = %q, want %q", err, got, want)
		}
	}
}

// TestWatchdogBound checks when the daemon counts as alive, for a short
// and a daily schedule, with and without cycle starts being reported.
func TestWatchdogBound(t *testing.T) {
	t.Run("every 30s", func(t *testing.T) {
		atT0(t, func(t *testing.T) {
			tel, sent := testTelemetry(t, Options{CycleMax: 10 * time.Minute})
			sched, _ := sync.ParseSchedule("@every 30s")
			if err := tel.Start(context.Background(), nil, sched, 30*time.Second, nil); err != nil {
				t.Fatal(err)
			}
			defer tel.Stop()
			drain(sent)
			// The first cycle runs at once: alive for CycleMax from the start.
			time.Sleep(10*time.Minute - time.Second)
			if !tel.FeedWatchdog() {
				t.Fatal("not fed during the first cycle")
			}
			if got := drain(sent); len(got) != 1 || got[0] != "WATCHDOG=1" {
				t.Fatalf("notifications when fed: %q", got)
			}
			time.Sleep(time.Second)
			if tel.FeedWatchdog() {
				t.Fatal("fed although the first cycle has run for CycleMax")
			}
			if got := drain(sent); len(got) != 1 || !strings.HasPrefix(got[0], "STATUS=stuck") {
				t.Fatalf("notifications when stuck: %q", got)
			}
			// A cycle completes: fed again until the next start + CycleMax.
			tel.CycleDone(sync.Report{Outcome: sync.OutcomeOK, Synced: true}, nil)
			end := time.Now()
			if !tel.FeedWatchdog() {
				t.Fatal("not fed after a cycle completed")
			}
			if got := drain(sent); got[len(got)-1] != "WATCHDOG=1" {
				t.Fatalf("notifications: %q", got)
			}
			time.Sleep(time.Until(sched.Next(end).Add(10*time.Minute - time.Second)))
			if !tel.FeedWatchdog() {
				t.Fatal("not fed within CycleMax of the next start")
			}
			time.Sleep(time.Until(sched.Next(end).Add(10 * time.Minute)))
			if tel.FeedWatchdog() {
				t.Fatal("fed although no cycle completed within CycleMax of the next start")
			}
			// A failed cycle still completes.
			tel.CycleDone(sync.Report{Outcome: sync.OutcomeFailed, Fatal: "API down"}, errors.New("API down"))
			if !tel.FeedWatchdog() {
				t.Fatal("a failed cycle did not feed the watchdog")
			}
			// A reported start bounds the cycle itself.
			tel.CycleStarted()
			time.Sleep(10*time.Minute - time.Second)
			if !tel.FeedWatchdog() {
				t.Fatal("not fed while a cycle runs within CycleMax")
			}
			time.Sleep(time.Second)
			if tel.FeedWatchdog() {
				t.Fatal("fed while a cycle runs past CycleMax")
			}
		})
	})
	t.Run("daily", func(t *testing.T) {
		atT0(t, func(t *testing.T) {
			tel, _ := testTelemetry(t, Options{CycleMax: 20 * time.Minute})
			sched, _ := sync.ParseSchedule("0 3 * * *")
			if err := tel.Start(context.Background(), nil, sched, 24*time.Hour, nil); err != nil {
				t.Fatal(err)
			}
			defer tel.Stop()
			tel.CycleDone(sync.Report{Outcome: sync.OutcomeOK, Synced: true}, nil) // 09:00
			// Alive through the quiet day, until the next 03:00 + CycleMax.
			next := sched.Next(t0)
			time.Sleep(time.Until(next.Add(20*time.Minute - time.Second)))
			if !tel.FeedWatchdog() {
				t.Fatalf("not fed before %s + CycleMax", next)
			}
			time.Sleep(time.Until(next.Add(20 * time.Minute)))
			if tel.FeedWatchdog() {
				t.Fatalf("fed although the cycle of %s did not complete", next)
			}
			if ok, why := tel.Ready(next.Add(20*time.Minute - time.Second)); !ok {
				t.Fatalf("not ready before %s + CycleMax: %s", next, why)
			}
		})
	})
}

// TestWatchdogLoop feeds the watchdog from ticks until stopped.
func TestWatchdogLoop(t *testing.T) {
	tel, sent := testTelemetry(t, Options{})
	sched, _ := sync.ParseSchedule("@every 30s")
	if err := tel.Start(context.Background(), nil, sched, 30*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	drain(sent)
	tick := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tel.runWatchdog(ctx, tick); close(done) }()
	for range 3 {
		tick <- t0
		if got := <-sent; got != "WATCHDOG=1" {
			t.Fatalf("got %q, want WATCHDOG=1", got)
		}
	}
	cancel()
	<-done
	tel.Stop()
	if got := drain(sent); len(got) != 1 || got[0] != "STOPPING=1" {
		t.Fatalf("at stop: %q, want STOPPING=1", got)
	}
}

// notifySocket listens where NOTIFY_SOCKET points, as systemd does, and
// reads every notification as it comes, as systemd does: a socket left
// unread fills (a few hundred datagrams), and the watchdog's next ping
// then blocks the daemon, as it would with a systemd that hung.
func notifySocket(t *testing.T) <-chan string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NOTIFY_SOCKET", path)
	got := make(chan string, 1<<16) // 20 minutes of pings every 20 ms
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return // closed at the test's end
			}
			got <- string(buf[:n])
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	return got
}

// readNotification returns the next notification.
func readNotification(t *testing.T, got <-chan string) string {
	t.Helper()
	// The real sd_notify path over a real socket, with the real watchdog's
	// ticker: no fake clock reaches it. The bound only reports a hang;
	// every notification comes within milliseconds.
	select {
	case n := <-got:
		return n
	case <-time.After(time.Minute):
		t.Fatal("no notification in a minute")
		return ""
	}
}

// TestSystemdNotifications runs the real sd_notify path: READY, the
// watchdog systemd asked for through WATCHDOG_USEC, STOPPING; and the
// endpoints on a real listener.
func TestSystemdNotifications(t *testing.T) {
	conn := notifySocket(t)
	t.Setenv("WATCHDOG_USEC", "40000") // pings every 20ms
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	tel := New(nil, Options{Listen: "127.0.0.1:0", CycleMax: time.Hour})
	sched, _ := sync.ParseSchedule("@every 30s")
	if err := tel.Start(context.Background(), nil, sched, 30*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	if got := readNotification(t, conn); got != "READY=1" {
		t.Fatalf("first notification %q, want READY=1", got)
	}
	for got := readNotification(t, conn); got != "WATCHDOG=1"; got = readNotification(t, conn) {
		if !strings.HasPrefix(got, "STATUS=") {
			t.Fatalf("unexpected notification %q", got)
		}
	}

	base := "http://" + tel.Addr().String()
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 503, "/metrics": 200} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d %q, want %d", path, resp.StatusCode, body, want)
		}
		if path == "/metrics" && !strings.Contains(string(body), "ticketbridge_cycles_total") {
			t.Errorf("metrics lack ticketbridge_cycles_total")
		}
	}
	// A second daemon on the same address fails to start.
	other := New(nil, Options{Listen: tel.Addr().String(),
		Notify: func(string) error { t.Error("a telemetry that failed to start notified systemd"); return nil }})
	if err := other.Start(context.Background(), nil, sched, 30*time.Second, nil); err == nil || !strings.Contains(err.Error(), "start metrics listener") {
		t.Fatalf("second listener: %v", err)
	}

	if err := tel.Stop(); err != nil {
		t.Fatal(err)
	}
	for got := readNotification(t, conn); got != "STOPPING=1"; got = readNotification(t, conn) {
		if got != "WATCHDOG=1" && !strings.HasPrefix(got, "STATUS=") {
			t.Fatalf("unexpected notification %q", got)
		}
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Fatal("endpoints still served after stop")
	}
}

// TestInterruptedCycleKeepsReadiness: a cycle cancelled (a daemon
// stopping, a hotel handed over) is no failure for readiness or for the
// metrics' error counts.
func TestInterruptedCycleKeepsReadiness(t *testing.T) { atT0(t, testInterruptedCycleKeepsReadiness) }

func testInterruptedCycleKeepsReadiness(t *testing.T) {
	tel, _ := testTelemetry(t, Options{CycleMax: 20 * time.Minute})
	sched, _ := sync.ParseSchedule("@every 30s")
	if err := tel.Start(t.Context(), nil, sched, 30*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	defer tel.Stop()
	tel.CycleDone(sync.Report{Outcome: sync.OutcomeOK, Synced: true}, nil)
	time.Sleep(30 * time.Second)
	tel.CycleDone(sync.Report{Outcome: sync.OutcomeInterrupted}, sync.ErrInterrupted)
	if ok, why := tel.Ready(time.Now()); !ok {
		t.Errorf("not ready after an interrupted cycle: %s", why)
	}
	if n := tel.m.cycles.WithLabelValues(sync.OutcomeFailed).get(); n != 0 {
		t.Errorf("an interrupted cycle counted as failed: %v", n)
	}
}

// TestOneHotelStatusReachesSystemd: a daemon of one hotel, run as a
// fleet of one, tells systemd its hotel's last cycle (the Status line of
// systemctl status) as it always did; a hotel of many tells it nothing.
func TestOneHotelStatusReachesSystemd(t *testing.T) {
	for _, c := range []struct {
		name string
		new  func(Options) *Telemetry
		want bool
	}{
		{"one", func(o Options) *Telemetry { return NewOne(nil, o) }, true},
		{"many", func(o Options) *Telemetry { return NewFleet(nil, nil, o) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sent := make(chan string, 100)
			tel := c.new(Options{Notify: func(s string) error { sent <- s; return nil }, WatchdogEvery: -1})
			tel.Hotel("default").CycleDone(sync.Report{Outcome: sync.OutcomeOK, Synced: true, Mirrored: 2}, nil)
			got := false
			for _, s := range drain(sent) {
				got = got || strings.HasPrefix(s, "STATUS=last cycle ok at ") && strings.Contains(s, "mirrored 2")
			}
			if got != c.want {
				t.Errorf("systemd told of the hotel's cycle: %t, want %t", got, c.want)
			}
		})
	}
}
