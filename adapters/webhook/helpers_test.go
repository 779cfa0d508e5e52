package webhook_test

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/adapters/webhook/receiver"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

// testSecret is long and distinctive so that a leak is easy to find.
const testSecret = "whsec-TEST-6f1d2c9a8b7e4f30a1b2c3d4e5f60718"

// debugLogger logs everything, as text, to b.
func debugLogger(b *testutil.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// rig is an adapter and an in-process receiver on loopback ports, both on
// the real clock; their waits between attempts are recorded and return at
// once.
type rig struct {
	t     testing.TB
	sleep *testutil.Clock
	logs  *testutil.Buffer
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
	r := &rig{t: t, sleep: testutil.NewClock(time.Time{}), logs: &testutil.Buffer{}, dir: t.TempDir()}
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
		Secret: testSecret, ReplyURL: "http://" + ln.Addr().String() + webhook.InboundPath,
		AutoReply: autoReply, Sleep: r.sleep.Sleep, Logger: debugLogger(r.logs).With("side", "receiver"),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.rc = rc
	r.cfg = webhook.Config{URL: r.srv.URL + "/hooks/ticketbridge", Secret: testSecret, Dir: r.dir, Listen: "127.0.0.1:0",
		Events: append(slices.Clone(webhook.DefaultEvents), webhook.EventTicketUpdated)}
	r.opts = webhook.Options{Logger: debugLogger(r.logs).With("adapter", "webhook"), Sleep: r.sleep.Sleep, Listener: ln}
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
