package webhook_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/adapters/webhook/receiver"
)

// testSecret is long and distinctive so that a leak is easy to find.
const testSecret = "whsec-TEST-6f1d2c9a8b7e4f30a1b2c3d4e5f60718"

// clock is a fake clock; Sleep advances it and returns at once, recording
// the waits.
type clock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newClock() *clock { return &clock{now: time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *clock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

func (c *clock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// logBuffer collects log lines from concurrent goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// rig is an adapter, an in-process receiver on a loopback port and a fake
// clock shared by both.
type rig struct {
	t     testing.TB
	clock *clock
	logs  *logBuffer
	dir   string
	rc    *receiver.Receiver
	srv   *httptest.Server
	hook  atomic.Pointer[http.Handler] // when set, answers instead of the receiver
	a     *webhook.Adapter
	opts  webhook.Options
	cfg   webhook.Config
}

// newRig starts a receiver and an adapter listening on a free loopback
// port. autoReply makes the receiver answer guest messages.
func newRig(t testing.TB, autoReply bool) *rig {
	t.Helper()
	r := &rig{t: t, clock: newClock(), logs: &logBuffer{}, dir: t.TempDir()}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if h := r.hook.Load(); h != nil {
			(*h).ServeHTTP(w, req)
			return
		}
		r.rc.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := receiver.New(receiver.Options{
		Secret: testSecret, Now: r.clock.Now, ReplyURL: "http://" + ln.Addr().String() + webhook.InboundPath,
		AutoReply: autoReply, Sleep: r.clock.Sleep, Logger: r.logs.logger().With("side", "receiver"),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.rc = rc
	r.cfg = webhook.Config{URL: r.srv.URL + "/hooks/ticketbridge", Secret: testSecret, Dir: r.dir, Listen: "127.0.0.1:0"}
	r.opts = webhook.Options{Logger: r.logs.logger().With("adapter", "webhook"), Now: r.clock.Now, Sleep: r.clock.Sleep, Listener: ln}
	r.a = r.open(r.opts)
	return r
}

// open makes another adapter instance on the rig's directory and receiver
// with opts (no listener unless opts has one).
func (r *rig) open(opts webhook.Options) *webhook.Adapter {
	r.t.Helper()
	cfg := r.cfg
	if opts.Listener == nil {
		cfg.Listen = webhook.ListenOff
	}
	a, err := webhook.New(r.t.Context(), cfg, opts)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := a.Start(r.t.Context()); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() {
		if err := a.Close(); err != nil {
			r.t.Errorf("Close: %v", err)
		}
	})
	return a
}

// answer makes the receiver's URL answer with h until the returned
// function is called.
func (r *rig) answer(h http.HandlerFunc) (restore func()) {
	var hh http.Handler = h
	r.hook.Store(&hh)
	return func() { r.hook.Store(nil) }
}

// newLoopbackServer serves h on a loopback port until the test ends and
// returns its base URL.
func newLoopbackServer(t testing.TB, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
