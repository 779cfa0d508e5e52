package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/notify"
	"github.com/ticketbridge/ticketbridge/internal/telemetry"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
	"github.com/ticketbridge/ticketbridge/sync"
)

// TestKeyRefusedNotice: a hotel whose key the API refuses sends exactly
// one notice, "API key refused", from its first failed cycle (its cycles
// failing, whose delay has not passed, send none); once a valid key is in
// its file and the daemon reloads, its next cycle sends one "back to
// normal", and nothing else is decided. The notices go to an ntfy target
// on a local receiver; the other hotel, which syncs, sends none.
func TestKeyRefusedNotice(t *testing.T) {
	titles := make(chan string, 16)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		titles <- r.Header.Get("Title")
	}))
	defer recv.Close()
	next := func() string {
		t.Helper()
		select {
		case s := <-titles:
			return s
		case <-time.After(time.Minute): // a hang's report, not a timing
			t.Fatal("no notice within a minute")
			return ""
		}
	}

	fx := newFleetFixture(t)
	fx.WriteHotel("north", nil)
	fx.WriteHotel("south", nil)
	keyFile := filepath.Join(fx.Dir, "north.key")
	good, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte("rta_not-a-key-of-the-api\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := fx.options(ctx, false)
	ns := testNotices(t, notify.Config{URLs: "ntfy+" + recv.URL + "/ops", Repeat: time.Hour,
		CyclesFailingAfter: 15 * time.Minute, RequestErrorAfter: time.Hour, PingInterval: time.Minute, PingPer: "process"})
	opts.Notices = ns
	f := New(ctx, opts)
	stopped := false
	defer func() {
		if !stopped {
			_ = f.Stop()
		}
	}()
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	cycles := fx.WaitCycles("north", "south")
	if err := cycles["north"].Err; !errors.Is(err, sync.ErrKeyRefused) {
		t.Fatalf("north's first cycle: %v, want the key refused", err)
	}
	if cycles["south"].Err != nil {
		t.Fatalf("south's first cycle: %v", cycles["south"].Err)
	}
	if got := next(); !strings.Contains(got, "API key refused for hotel north") {
		t.Fatalf("first notice %q, want the key refused for north", got)
	}

	if err := os.WriteFile(keyFile, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.Reload(); err != nil { // the key file changed: north restarts
		t.Fatal(err)
	}
	if c := fx.WaitCycles("north")["north"]; c.Err != nil {
		t.Fatalf("north's cycle with its key back: %v", c.Err)
	}
	if got := next(); !strings.Contains(got, "Back to normal: hotel north (API key refused)") {
		t.Fatalf("second notice %q, want north back to normal", got)
	}
	// The target's goroutine sends one notice at a time: the second
	// arrived, so the first was counted (the second may still be on its
	// way back).
	if v := metricOf(t, opts.Telemetry, `ticketbridge_notify_sent_total{target_kind="ntfy"}`); v < 1 {
		t.Errorf("ticketbridge_notify_sent_total{target_kind=\"ntfy\"} = %v, want 1 or more", v)
	}
	if v := metricOf(t, opts.Telemetry, `ticketbridge_notify_failed_total{target_kind="ntfy"}`); v != 0 {
		t.Errorf("ticketbridge_notify_failed_total{target_kind=\"ntfy\"} = %v, want 0", v)
	}
	stopped = true
	if err := f.Stop(); err != nil {
		t.Fatal(err)
	}
	if c := ns.Notifier().Counters(); c.Decided != 2 {
		t.Errorf("%d notices decided, want 2: %+v", c.Decided, c)
	}
	select {
	case s := <-titles:
		t.Errorf("a third notice: %q", s)
	default:
	}
}

// metricOf returns the value of series on tel's /metrics.
func metricOf(t *testing.T, tel *telemetry.Telemetry, series string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	tel.Handler(nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return testutil.MetricValue(t, rec.Body.String(), series)
}

// TestHotelHeartbeat: with TICKETBRIDGE_NOTIFY_PING_PER=hotel each hotel
// pings the URL its own file names after its cycle, and a hotel that
// names none pings nothing.
func TestHotelHeartbeat(t *testing.T) {
	pings := make(chan string, 16)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { pings <- r.Method + " " + r.URL.Path }))
	defer recv.Close()
	fx := newFleetFixture(t)
	fx.WriteHotel("north", map[string]string{"TICKETBRIDGE_NOTIFY_PING_URL": recv.URL + "/north"})
	fx.WriteHotel("south", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := fx.options(ctx, false)
	ns := testNotices(t, notify.Config{Repeat: time.Hour, CyclesFailingAfter: 15 * time.Minute,
		RequestErrorAfter: time.Hour, PingInterval: time.Minute, PingPer: "hotel"})
	opts.Notices = ns
	f := New(ctx, opts)
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	fx.WaitCycles("north", "south")
	select {
	case p := <-pings:
		if p != "GET /north" {
			t.Fatalf("ping %q, want GET /north", p)
		}
	case <-time.After(time.Minute): // a hang's report, not a timing
		t.Fatal("north did not ping within a minute")
	}
	if err := f.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-pings:
		t.Errorf("another ping: %q", p)
	default:
	}
}

// TestWhyFailed: a failed cycle's notice says what to do in the table of
// fixes' words when the cycle's error carries them, as check and the log
// do, and its cause is the same for every hotel so that one notice names
// them all.
func TestWhyFailed(t *testing.T) {
	d := config.Daemon{APIKeyFile: "/etc/ticketbridge/keys/north.key"}
	err := config.WithFix(fmt.Errorf("cycle: %w", sync.ErrKeyRefused), d, nil, config.Account{Name: "ticketbridge", Group: "ticketbridge"})
	_, want, ok := strings.Cut(err.Error(), "; fix: ")
	if !ok {
		t.Fatalf("the table gave no fix for a refused key: %v", err)
	}
	cause, fix := whyFailed(err)
	if fix != want || strings.Contains(cause, "north") {
		t.Errorf("whyFailed: cause %q, fix %q; want the table's fix %q and a cause naming no hotel", cause, fix, want)
	}
	if cause, fix := whyFailed(errors.New("state: disk full")); cause != "the cycle failed: state: disk full" || fix == "" {
		t.Errorf("another error: cause %q, fix %q", cause, fix)
	}
}

// beats records the outcomes a heartbeat is told.
type beats struct {
	mu  gosync.Mutex
	got []bool
}

func (b *beats) Beat(ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = append(b.got, ok)
}

// TestProcessPingWaitsForEveryHotel: with one ping for the process
// (TICKETBRIDGE_NOTIFY_PING_PER=process), the ping tells success only
// while every hotel's last cycle succeeded: one hotel syncing and another
// failing is a failure at each of their cycles, not a success and a
// failure in turn, which a monitor would see as a flapping check.
func TestProcessPingWaitsForEveryHotel(t *testing.T) {
	rec := &beats{}
	ns := &Notices{process: rec}
	a, b := &hotelNotices{ns: ns, hotel: "a"}, &hotelNotices{ns: ns, hotel: "b"}
	failed := errors.New("the API did not answer")
	a.cycleDone(nil)
	for range 3 {
		b.cycleDone(failed)
		a.cycleDone(nil)
	}
	b.cycleDone(nil)
	a.cycleDone(nil)
	want := []bool{true, false, false, false, false, false, false, true, true}
	if !slices.Equal(rec.got, want) {
		t.Errorf("the process's ping was told %v, want %v", rec.got, want)
	}
}

// testNotices are the notifications of c, checked and parsed as the
// daemon's are.
func testNotices(t *testing.T, c notify.Config) *Notices {
	t.Helper()
	s, err := c.Validate()
	if err != nil {
		t.Fatal(err)
	}
	return NewNotices(config.Notify{Settings: s}, slog.New(slog.DiscardHandler))
}
