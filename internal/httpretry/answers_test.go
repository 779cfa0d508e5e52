package httpretry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/internal/redact"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

// backoff makes the first backoff wait 50ms.
var backoff = httpretry.Backoff{Base: 100 * time.Millisecond, Max: time.Second, Rand: func() float64 { return 0.5 }}

// answerKind is one way a server can answer the first attempt; a second
// attempt, when one is made, gets a 200.
type answerKind struct {
	name  string
	first func(w http.ResponseWriter, r *http.Request, cancel context.CancelFunc)
	tls   bool // served over TLS with a certificate the client does not trust
	// short is the client's per-attempt timeout, when it matters. Such a
	// kind runs in a testing/synctest bubble on in-memory connections
	// (testutil.PipeServer): the timeout ends the held attempt on the
	// bubble's clock, and the answer to the next takes none of it, however
	// busy the machine.
	short time.Duration
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

// client is one of the daemon's two HTTP clients, set up to make one
// idempotent call to url.
type client struct {
	name string
	call func(ctx context.Context, url string, hc *http.Client, clock *testutil.Clock) error
	// waits and err pick the client's column of an answerKind.
	waits func(answerKind) []time.Duration
	err   func(answerKind) error
}

var clients = []client{
	{
		name: "API client",
		call: func(ctx context.Context, url string, hc *http.Client, clock *testutil.Clock) error {
			c, err := guestapi.New(guestapi.Config{BaseURL: url, APIKey: "rta_answers_test_key", HTTPClient: hc,
				Backoff: backoff, MaxAttempts: 2, Sleep: clock.Sleep})
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
		call: func(ctx context.Context, url string, hc *http.Client, clock *testutil.Clock) error {
			c := &adapters.HTTPClient{HTTP: hc, Backoff: backoff, MaxAttempts: 2, Sleep: clock.Sleep}
			_, err := c.Do(ctx, adapters.HTTPRequest{Method: http.MethodGet, URL: url + "/api/v2/tickets"})
			return err
		},
		waits: func(k answerKind) []time.Duration { return k.hdWaits },
		err:   func(k answerKind) error { return k.hdErr },
	},
}

// TestEveryAnswerKindMeansTheSameToBothClients runs each kind of answer
// against the API client and the helpdesk client over loopback HTTP (the
// attempt timeout on in-memory connections, see answerKind.short): both
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
				if k.short > 0 {
					synctest.Test(t, func(t *testing.T) { answerTimed(t, k, cl, h, &mu, &n) })
					return
				}
				var srv *httptest.Server
				if k.tls {
					srv = httptest.NewUnstartedServer(h)
					srv.Config.ErrorLog = log.New(io.Discard, "", 0)
					srv.StartTLS()
				} else {
					srv = httptest.NewServer(h)
				}
				defer srv.Close()
				// Only a hang's end: no kind but the timed one waits for it.
				hc := &http.Client{Timeout: time.Minute, Transport: http.DefaultTransport.(*http.Transport).Clone()}
				clock := testutil.NewClock(time.Now())

				err := cl.call(ctx, srv.URL, hc, clock)

				if (err == nil) != k.ok {
					t.Fatalf("error %v, want success %v", err, k.ok)
				}
				mu.Lock()
				got := n
				mu.Unlock()
				if got != k.requests {
					t.Errorf("server handled %d requests, want %d", got, k.requests)
				}
				if want := cl.waits(k); !slices.Equal(clock.Sleeps(), want) {
					t.Errorf("waits %v, want %v", clock.Sleeps(), want)
				}
				if want := cl.err(k); want != nil && !errors.Is(err, want) {
					t.Errorf("error %v does not match %v", err, want)
				}
			})
		}
	}
}

// answerTimed runs a kind whose first attempt the client's short timeout
// ends, in a bubble on in-memory connections, and checks as the loopback
// kinds are checked.
func answerTimed(t *testing.T, k answerKind, cl client, h http.Handler, mu *sync.Mutex, n *int) {
	tr := testutil.PipeServer(t, h)
	clock := testutil.NewClock(time.Now())
	err := cl.call(t.Context(), testutil.PipeURL, &http.Client{Timeout: k.short, Transport: tr}, clock)
	if (err == nil) != k.ok {
		t.Fatalf("error %v, want success %v", err, k.ok)
	}
	mu.Lock()
	got := *n
	mu.Unlock()
	if got != k.requests {
		t.Errorf("server handled %d requests, want %d", got, k.requests)
	}
	if want := cl.waits(k); !slices.Equal(clock.Sleeps(), want) {
		t.Errorf("waits %v, want %v", clock.Sleeps(), want)
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
		{"refused by the client's transport", live, fmt.Errorf("lease ended: %w", httpretry.ErrRefused), httpretry.Permanent},
	} {
		if got := httpretry.Classify(c.ctx, 200, c.err); got != c.want {
			t.Errorf("%s: Classify = %s, want %s", c.name, got, c.want)
		}
	}
}

// TestNeitherClientFollowsARedirect: a server answering 307 or 308 would
// have Go re-send the request, the key in the token exchange's body
// included, to another host; a same-host redirect would keep the
// Authorization header. Both clients refuse every redirect, at once and
// for good, with an error naming the Location fit to print.
func TestNeitherClientFollowsARedirect(t *testing.T) {
	const key = "rta_redirect_test_key"
	const hdToken = "helpdesk-token-s3cret"
	calls := []struct {
		name string
		call func(ctx context.Context, url string) error
	}{
		{"token exchange", func(ctx context.Context, url string) error {
			c, err := guestapi.New(guestapi.Config{BaseURL: url, APIKey: key, Backoff: backoff})
			if err != nil {
				return err
			}
			_, err = c.Token(ctx)
			return err
		}},
		{"list tickets", func(ctx context.Context, url string) error {
			c, err := guestapi.New(guestapi.Config{BaseURL: url, APIKey: key, Backoff: backoff})
			if err != nil {
				return err
			}
			_, err = c.ListTickets(ctx, guestapi.ListOptions{})
			return err
		}},
		{"helpdesk call", func(ctx context.Context, url string) error {
			// A client of the caller's own that would follow redirects.
			c := &adapters.HTTPClient{HTTP: &http.Client{}, Backoff: backoff,
				Authorize: func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+hdToken) }}
			_, err := c.Do(ctx, adapters.HTTPRequest{Method: http.MethodPost, URL: url + "/api/v2/tickets",
				Body: []byte(`{"token":"` + hdToken + `"}`), Idempotent: true})
			return err
		}},
	}
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound} {
		for _, cl := range calls {
			t.Run(fmt.Sprintf("%d/%s", code, cl.name), func(t *testing.T) {
				var (
					mu           sync.Mutex
					origin, away int
					leaked       bool
				)
				elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					b, _ := io.ReadAll(r.Body)
					mu.Lock()
					away++
					leaked = leaked || strings.Contains(string(b), key) || strings.Contains(string(b), hdToken) ||
						r.Header.Get("Authorization") != ""
					mu.Unlock()
					io.WriteString(w, `{"tickets":[],"access_token":"t","expires_in":3600}`)
				}))
				defer elsewhere.Close()
				target := elsewhere.URL + "/collect?sig=s3cret-sig"
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					origin++
					mu.Unlock()
					http.Redirect(w, r, target, code)
				}))
				defer srv.Close()

				err := cl.call(t.Context(), srv.URL)
				if !errors.Is(err, httpretry.ErrRedirect) {
					t.Fatalf("error %v, want one matching ErrRedirect", err)
				}
				mu.Lock()
				defer mu.Unlock()
				if away != 0 || leaked {
					t.Errorf("the other server got %d requests (credentials: %v), want none", away, leaked)
				}
				if origin != 1 {
					t.Errorf("the server got %d requests, want 1: a redirect is not retried", origin)
				}
				msg := err.Error()
				if want := redact.URL(target); !strings.Contains(msg, want) {
					t.Errorf("error %q does not name the Location %s", msg, want)
				}
				for _, secret := range []string{"s3cret-sig", key, hdToken} {
					if strings.Contains(msg, secret) {
						t.Errorf("error %q shows %q", msg, secret)
					}
				}
			})
		}
	}
}
