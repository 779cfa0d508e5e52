package httpretry_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
)

// backoff makes the first backoff wait 50ms.
var backoff = httpretry.Backoff{Base: 100 * time.Millisecond, Max: time.Second, Rand: func() float64 { return 0.5 }}

// answerKind is one way a server can answer the first attempt; a second
// attempt, when one is made, gets a 200.
type answerKind struct {
	name  string
	first func(w http.ResponseWriter, r *http.Request, cancel context.CancelFunc)
	tls   bool          // served over TLS with a certificate the client does not trust
	short time.Duration // the client's per-attempt timeout, when it matters
	// requests the server handles, and whether the call ends well.
	requests int
	ok       bool
	// The waits before the repeat, for the API client and the helpdesk
	// client (nil: none).
	apiWaits, hdWaits []time.Duration
	// The error the call must match, for each client (nil: not checked).
	apiErr, hdErr error
}

func status(code int, header ...string) func(http.ResponseWriter, *http.Request, context.CancelFunc) {
	return func(w http.ResponseWriter, _ *http.Request, _ context.CancelFunc) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, `{"error":"x"}`)
	}
}

var backoffWait = []time.Duration{50 * time.Millisecond}

var answerKinds = []answerKind{
	{name: "2xx", requests: 1, ok: true},
	{name: "400", first: status(400), requests: 1, hdErr: adapters.ErrInvalid},
	{name: "401", first: status(401), requests: 1, apiErr: guestapi.ErrUnauthorized, hdErr: adapters.ErrAuth},
	{name: "404", first: status(404), requests: 1, apiErr: guestapi.ErrNotFound, hdErr: adapters.ErrNotFound},
	{name: "408", first: status(408), requests: 2, ok: true, apiWaits: backoffWait, hdWaits: backoffWait},
	{name: "409", first: status(409), requests: 1},
	{name: "425", first: status(425), requests: 2, ok: true, apiWaits: backoffWait, hdWaits: backoffWait},
	{name: "429 with Retry-After", first: status(429, "Retry-After", "7"), requests: 2, ok: true,
		apiWaits: []time.Duration{7 * time.Second}, hdWaits: []time.Duration{7 * time.Second}},
	// The API's spec says "retry after one minute"; a helpdesk that
	// names no wait gets the backoff.
	{name: "429 without Retry-After", first: status(429), requests: 2, ok: true,
		apiWaits: []time.Duration{time.Minute}, hdWaits: backoffWait},
	{name: "500", first: status(500), requests: 2, ok: true, apiWaits: backoffWait, hdWaits: backoffWait},
	{name: "503 with Retry-After", first: status(503, "Retry-After", "3"), requests: 2, ok: true,
		apiWaits: []time.Duration{3 * time.Second}, hdWaits: []time.Duration{3 * time.Second}},
	{name: "connection reset", first: reset, requests: 2, ok: true, apiWaits: backoffWait, hdWaits: backoffWait},
	{name: "attempt timeout", first: hang, short: 200 * time.Millisecond, requests: 2, ok: true,
		apiWaits: backoffWait, hdWaits: backoffWait},
	{name: "certificate not trusted", tls: true, requests: 0},
	{name: "context cancelled", first: cancelCaller, requests: 1, apiErr: context.Canceled, hdErr: context.Canceled},
}

// reset closes the connection with a TCP reset instead of answering.
func reset(w http.ResponseWriter, _ *http.Request, _ context.CancelFunc) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// hang answers only after the client gave up on the attempt.
func hang(_ http.ResponseWriter, r *http.Request, _ context.CancelFunc) { <-r.Context().Done() }

// cancelCaller ends the caller's context while its request is in flight.
func cancelCaller(_ http.ResponseWriter, r *http.Request, cancel context.CancelFunc) {
	cancel()
	<-r.Context().Done()
}

// waits records the waits a client asks for and returns at once.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.d = append(w.d, d)
	return ctx.Err()
}

func (w *waits) got() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.d)
}

// client is one of the daemon's two HTTP clients, set up to make one
// idempotent call to url.
type client struct {
	name string
	call func(ctx context.Context, url string, hc *http.Client, w *waits) error
	// waits and err pick the client's column of an answerKind.
	waits func(answerKind) []time.Duration
	err   func(answerKind) error
}

var clients = []client{
	{
		name: "API client",
		call: func(ctx context.Context, url string, hc *http.Client, w *waits) error {
			c, err := guestapi.New(guestapi.Config{BaseURL: url, APIKey: "rta_answers_test_key", HTTPClient: hc,
				Backoff: backoff, MaxAttempts: 2, Sleep: w.sleep})
			if err != nil {
				return err
			}
			_, err = c.ListTickets(ctx, guestapi.ListOptions{})
			return err
		},
		waits: func(k answerKind) []time.Duration { return k.apiWaits },
		err:   func(k answerKind) error { return k.apiErr },
	},
	{
		name: "helpdesk client",
		call: func(ctx context.Context, url string, hc *http.Client, w *waits) error {
			c := &adapters.HTTPClient{HTTP: hc, Backoff: backoff, MaxAttempts: 2, Sleep: w.sleep}
			_, err := c.Do(ctx, adapters.HTTPRequest{Method: http.MethodGet, URL: url + "/api/v2/tickets"})
			return err
		},
		waits: func(k answerKind) []time.Duration { return k.hdWaits },
		err:   func(k answerKind) error { return k.hdErr },
	},
}

// TestEveryAnswerKindMeansTheSameToBothClients runs each kind of answer
// against the API client and the helpdesk client over loopback HTTP: both
// repeat the same answers, after the same waits (but for the API's one
// minute after a bare 429), and give up on the same.
func TestEveryAnswerKindMeansTheSameToBothClients(t *testing.T) {
	for _, k := range answerKinds {
		for _, cl := range clients {
			t.Run(k.name+"/"+cl.name, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				var (
					mu sync.Mutex
					n  int
				)
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					n++
					first := n == 1
					mu.Unlock()
					if first && k.first != nil {
						k.first(w, r, cancel)
						return
					}
					io.WriteString(w, `{"tickets":[]}`)
				})
				var srv *httptest.Server
				if k.tls {
					srv = httptest.NewUnstartedServer(h)
					srv.Config.ErrorLog = log.New(io.Discard, "", 0)
					srv.StartTLS()
				} else {
					srv = httptest.NewServer(h)
				}
				defer srv.Close()
				timeout := 10 * time.Second
				if k.short > 0 {
					timeout = k.short
				}
				hc := &http.Client{Timeout: timeout, Transport: http.DefaultTransport.(*http.Transport).Clone()}
				w := &waits{}

				err := cl.call(ctx, srv.URL, hc, w)

				if (err == nil) != k.ok {
					t.Fatalf("error %v, want success %v", err, k.ok)
				}
				mu.Lock()
				got := n
				mu.Unlock()
				if got != k.requests {
					t.Errorf("server handled %d requests, want %d", got, k.requests)
				}
				if want := cl.waits(k); !slices.Equal(w.got(), want) {
					t.Errorf("waits %v, want %v", w.got(), want)
				}
				if want := cl.err(k); want != nil && !errors.Is(err, want) {
					t.Errorf("error %v does not match %v", err, want)
				}
			})
		}
	}
}

// TestClassify checks the classes of transport errors against the caller's
// context.
func TestClassify(t *testing.T) {
	live := t.Context()
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want httpretry.Class
	}{
		{"dial", live, &net.OpError{Op: "dial", Err: errors.New("connection refused")}, httpretry.Retryable},
		{"EOF", live, io.ErrUnexpectedEOF, httpretry.Retryable},
		{"attempt timeout", live, context.DeadlineExceeded, httpretry.Retryable},
		{"caller's deadline", ended, context.DeadlineExceeded, httpretry.Permanent},
		{"cancelled", live, context.Canceled, httpretry.Permanent},
		{"any error once the caller gave up", ended, io.ErrUnexpectedEOF, httpretry.Permanent},
	} {
		if got := httpretry.Classify(c.ctx, 200, c.err); got != c.want {
			t.Errorf("%s: Classify = %s, want %s", c.name, got, c.want)
		}
	}
}
