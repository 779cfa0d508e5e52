package adapters_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/internal/httpx"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

// newSleeper returns a fake clock whose Sleep records the waits Do asks
// for and returns at once.
func newSleeper() *testutil.Clock {
	return testutil.NewClock(time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC))
}

// script serves the given statuses in turn (the last one repeats) and
// counts the requests; headers[i] are set on answer i.
type script struct {
	mu       sync.Mutex
	statuses []int
	headers  []http.Header
	body     string
	bodies   [][]byte
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	i := len(s.bodies)
	s.bodies = append(s.bodies, b)
	st := s.statuses[min(i, len(s.statuses)-1)]
	var h http.Header
	if i < len(s.headers) {
		h = s.headers[i]
	}
	s.mu.Unlock()
	for k, vs := range h {
		w.Header()[k] = vs
	}
	w.WriteHeader(st)
	fmt.Fprint(w, s.body)
}

func (s *script) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

func serve(t *testing.T, s *script) string {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv.URL
}

func half() float64 { return 0.5 }

func newClient(sl *testutil.Clock) *adapters.HTTPClient {
	return &adapters.HTTPClient{
		Backoff: httpretry.Backoff{Base: 100 * time.Millisecond, Max: time.Second, Rand: half},
		Sleep:   sl.Sleep,
	}
}

func TestDoRetriesWithTheSharedBackoff(t *testing.T) {
	s := &script{statuses: []int{503, 500, 502, 200}, body: "ok"}
	url := serve(t, s)
	sl := newSleeper()
	resp, err := newClient(sl).Do(t.Context(), adapters.HTTPRequest{Method: "GET", URL: url})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if resp.StatusCode != 200 || string(resp.Body) != "ok" {
		t.Fatalf("answer %d %q", resp.StatusCode, resp.Body)
	}
	if s.count() != 4 {
		t.Fatalf("%d requests, want 4", s.count())
	}
	want := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}
	if !slices.Equal(sl.Sleeps(), want) {
		t.Fatalf("waits %v, want %v (Backoff.Delay of attempts 1..3)", sl.Sleeps(), want)
	}
}

func TestDoGivesUpAfterMaxAttempts(t *testing.T) {
	s := &script{statuses: []int{500}, body: "db down"}
	url := serve(t, s)
	c := newClient(newSleeper())
	c.MaxAttempts = 3
	_, err := c.Do(t.Context(), adapters.HTTPRequest{URL: url})
	var he *adapters.HTTPError
	if !errors.As(err, &he) {
		t.Fatalf("Do = %v, want an *HTTPError", err)
	}
	if s.count() != 3 || he.Attempts != 3 || he.StatusCode != 500 || he.Class != httpretry.Retryable {
		t.Fatalf("%d requests, error %+v; want 3 attempts of a temporary 500", s.count(), he)
	}
	if errors.Is(err, adapters.ErrInvalid) {
		t.Error("a 500 must not be ErrInvalid")
	}
	if !strings.Contains(err.Error(), "db down") || !strings.Contains(err.Error(), "GET "+url) {
		t.Errorf("error %q lacks the method, URL or body snippet", err)
	}
}

// TestDoHonoursRetryAfter: in seconds and as a date. In a bubble, whose
// clock stands still while the recorded waits return at once, a date
// means an exact wait; the helpdesk is served on in-memory connections.
func TestDoHonoursRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		s := &script{
			statuses: []int{429, 429, 503, 200},
			headers: []http.Header{
				{"Retry-After": {"7"}},
				{"Retry-After": {now.Add(12 * time.Second).Format(http.TimeFormat)}},
				{"Retry-After": {"2"}},
			},
		}
		sl := newSleeper()
		c := newClient(sl)
		c.HTTP = &http.Client{Transport: testutil.PipeServer(t, s)}
		if _, err := c.Do(t.Context(), adapters.HTTPRequest{URL: testutil.PipeURL}); err != nil {
			t.Fatalf("Do: %v", err)
		}
		want := []time.Duration{7 * time.Second, 12 * time.Second, 2 * time.Second}
		if !slices.Equal(sl.Sleeps(), want) {
			t.Fatalf("waits %v, want %v", sl.Sleeps(), want)
		}
	})
}

func TestDoReturnsLongRetryAfterToTheCaller(t *testing.T) {
	s := &script{statuses: []int{429}, headers: []http.Header{{"Retry-After": {"3600"}}}}
	url := serve(t, s)
	sl := newSleeper()
	_, err := newClient(sl).Do(t.Context(), adapters.HTTPRequest{URL: url})
	var he *adapters.HTTPError
	if !errors.As(err, &he) || he.RetryAfter != time.Hour || he.Class != httpretry.Retryable {
		t.Fatalf("Do = %v, want a temporary error asking to retry after 1h", err)
	}
	if s.count() != 1 || len(sl.Sleeps()) != 0 {
		t.Fatalf("%d requests, waits %v; want one request and no wait", s.count(), sl.Sleeps())
	}
	if !errors.Is(err, httpretry.ErrWaitTooLong) || he.PutOff == nil || he.PutOff.Wait != time.Hour {
		t.Errorf("Do = %v (put off %+v), want one matching ErrWaitTooLong that says until when", err, he.PutOff)
	}
}

// TestDoWaitsNoLongerThanTheCycleAllows: a context carrying a shorter
// longest wait (the engine's: the schedule's interval) wins over
// MaxWait, for a 503's Retry-After too, and on the last attempt.
func TestDoWaitsNoLongerThanTheCycleAllows(t *testing.T) {
	s := &script{statuses: []int{503}, headers: []http.Header{{"Retry-After": {"120"}}}}
	url := serve(t, s)
	sl := newSleeper()
	c := newClient(sl)
	c.MaxAttempts = 1
	ctx := httpretry.WithMaxWait(t.Context(), 30*time.Second)
	_, err := c.Do(ctx, adapters.HTTPRequest{URL: url})
	var he *adapters.HTTPError
	if !errors.As(err, &he) || he.PutOff == nil || he.PutOff.Wait != 2*time.Minute || he.PutOff.Max != 30*time.Second {
		t.Fatalf("Do = %v, want a put-off of 2m over the 30s allowed", err)
	}
	if s.count() != 1 || len(sl.Sleeps()) != 0 {
		t.Fatalf("%d requests, waits %v; want one request and no wait", s.count(), sl.Sleeps())
	}
}

func TestDoUsesTheAdaptersWaitHook(t *testing.T) {
	s := &script{statuses: []int{429, 200}, headers: []http.Header{{"Retry-After": {"30"}, "X-Rate-Limit-Reset": {"3"}}}}
	url := serve(t, s)
	sl := newSleeper()
	c := newClient(sl)
	var seen int
	c.Wait = func(resp *adapters.HTTPResponse, _ time.Time) (time.Duration, bool) {
		seen = resp.StatusCode
		if v := resp.Header.Get("X-Rate-Limit-Reset"); v == "3" {
			return 3 * time.Second, true
		}
		return 0, false
	}
	if _, err := c.Do(t.Context(), adapters.HTTPRequest{URL: url}); err != nil {
		t.Fatalf("Do: %v", err)
	}
	if seen != 429 || !slices.Equal(sl.Sleeps(), []time.Duration{3 * time.Second}) {
		t.Fatalf("hook saw %d, waits %v; want the hook's 3s", seen, sl.Sleeps())
	}
}

func TestDoRepeatsUnsafeRequestsOnlyWhenTheyDidNotTakeEffect(t *testing.T) {
	for _, c := range []struct {
		name       string
		statuses   []int
		idempotent bool
		want       int
	}{
		{"502 not repeated", []int{502, 200}, false, 1},
		{"429 repeated", []int{429, 200}, false, 2},
		{"idempotent 502 repeated", []int{502, 200}, true, 2},
		{"once PUT 502 not repeated", []int{502, 200}, false, 1},
		{"once PUT 429 repeated", []int{429, 200}, false, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &script{statuses: c.statuses}
			url := serve(t, s)
			body := []byte(`{"comment":"Grüße"}`)
			req := adapters.HTTPRequest{Method: "POST", URL: url, Body: body, Idempotent: c.idempotent}
			if strings.HasPrefix(c.name, "once PUT") {
				req.Method, req.Once = "PUT", true
			}
			_, err := newClient(newSleeper()).Do(t.Context(), req)
			if s.count() != c.want {
				t.Fatalf("%d requests, want %d (err %v)", s.count(), c.want, err)
			}
			if c.want == 1 {
				var he *adapters.HTTPError
				if !errors.As(err, &he) || he.Class != httpretry.Retryable {
					t.Fatalf("Do = %v, want a temporary error for the engine to retry", err)
				}
			}
			for i, b := range s.bodies {
				if !bytes.Equal(b, body) {
					t.Errorf("attempt %d sent body %q, want %q", i+1, b, body)
				}
			}
		})
	}
}

func TestDoRepeatsAPostThatCouldNotConnect(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	sl := newSleeper()
	c := newClient(sl)
	c.MaxAttempts = 3
	_, err = c.Do(t.Context(), adapters.HTTPRequest{Method: "POST", URL: "http://" + addr + "/ticket", Body: []byte("x")})
	var he *adapters.HTTPError
	if !errors.As(err, &he) || he.StatusCode != 0 || he.Class != httpretry.Retryable || he.Attempts != 3 {
		t.Fatalf("Do = %#v, want a temporary connection error after 3 attempts", err)
	}
	var op *net.OpError
	if !errors.As(err, &op) {
		t.Errorf("the transport error is not reachable with errors.As: %v", err)
	}
	if len(sl.Sleeps()) != 2 {
		t.Errorf("waits %v, want 2", sl.Sleeps())
	}
}

func TestDoPermanentAnswers(t *testing.T) {
	for _, c := range []struct {
		status int
		want   error
	}{
		{400, adapters.ErrInvalid},
		{422, adapters.ErrInvalid},
		{413, adapters.ErrInvalid},
		{401, adapters.ErrAuth},
		{403, adapters.ErrAuth},
		{404, adapters.ErrNotFound},
		{409, nil},
	} {
		s := &script{statuses: []int{c.status}, body: `{"error":"nope"}`}
		url := serve(t, s)
		_, err := newClient(newSleeper()).Do(t.Context(), adapters.HTTPRequest{Method: "PUT", URL: url})
		var he *adapters.HTTPError
		if !errors.As(err, &he) || he.StatusCode != c.status || he.Class == httpretry.Retryable {
			t.Errorf("%d: Do = %v, want a permanent *HTTPError", c.status, err)
			continue
		}
		if s.count() != 1 {
			t.Errorf("%d: %d requests, want 1", c.status, s.count())
		}
		for _, sentinel := range []error{adapters.ErrInvalid, adapters.ErrAuth, adapters.ErrNotFound} {
			if errors.Is(err, sentinel) != (sentinel == c.want) {
				t.Errorf("%d: errors.Is(%v) = %v", c.status, sentinel, !(sentinel == c.want))
			}
		}
	}
}

func TestDoAcceptsListedStatuses(t *testing.T) {
	url := serve(t, &script{statuses: []int{404}, body: "[]"})
	resp, err := newClient(newSleeper()).Do(t.Context(), adapters.HTTPRequest{URL: url, Accept: []int{404}})
	if err != nil || resp.StatusCode != 404 {
		t.Fatalf("Do = %v, %v; want the 404 answer", resp, err)
	}
}

func TestErrorsLeakNoCredential(t *testing.T) {
	const (
		user     = "bridge@hotel.example"
		password = "correct-horse-battery"
		token    = "zd-token-8f7e6d5c"
	)
	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "bad credentials: %s / %s / %s / %s", r.Header.Get("Authorization"), password, token, r.URL.RawQuery)
	})
	srv := httptest.NewServer(echo)
	defer srv.Close()

	var logs bytes.Buffer
	c := newClient(newSleeper())
	c.Secrets = []string{token}
	c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	c.Authorize = func(r *http.Request) { r.SetBasicAuth(user, password) }
	u := strings.Replace(srv.URL, "http://", "http://"+user+":"+password+"@", 1) + "/api?api_token=" + token + "&page=2"
	_, err := c.Do(t.Context(), adapters.HTTPRequest{URL: u})
	if !errors.Is(err, adapters.ErrAuth) {
		t.Fatalf("Do = %v, want ErrAuth", err)
	}
	msg := err.Error()
	for _, secret := range []string{password, basic, token, "Basic " + basic} {
		if strings.Contains(msg, secret) {
			t.Errorf("the error shows %q: %s", secret, msg)
		}
	}
	if !strings.Contains(msg, "page=2") || !strings.Contains(msg, "api_token=xxxxx") || !strings.Contains(msg, "refused the credentials") {
		t.Errorf("the error lost what is not secret: %s", msg)
	}
	if strings.Contains(logs.String(), password) {
		t.Errorf("the log shows the password: %s", logs.String())
	}

	// The same through a transport error: the URL must not leak either.
	c.MaxAttempts = 1
	_, err = c.Do(t.Context(), adapters.HTTPRequest{URL: "http://" + user + ":" + password + "@127.0.0.1:1/x?token=" + token})
	if err == nil || strings.Contains(err.Error(), password) || strings.Contains(err.Error(), token) {
		t.Errorf("transport error leaks a secret: %v", err)
	}
}

// TestErrorSnippetCutsNoSecretInTwo checks that a secret the helpdesk
// echoes across the snippet's cut (rune 200, or byte 800 before the
// spaces are folded) is scrubbed before the body is cut: none of its first part may
// stay in the error, the log or the status page.
func TestErrorSnippetCutsNoSecretInTwo(t *testing.T) {
	const token = "zd-token-8f7e6d5c-4b3a"
	for _, tc := range []struct {
		name   string
		before string
	}{
		{"across rune 200", strings.Repeat("a", 200-len(token)/2)},
		{"across byte 800", "x" + strings.Repeat(" ", 789)}, // the spaces fold into one: only the byte cut bites
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{statuses: []int{http.StatusBadRequest}, body: tc.before + token + " more text"}
			c := newClient(newSleeper())
			c.Secrets = []string{token}
			_, err := c.Do(t.Context(), adapters.HTTPRequest{URL: serve(t, s)})
			var he *adapters.HTTPError
			if !errors.As(err, &he) {
				t.Fatalf("Do = %v, want an *HTTPError", err)
			}
			if part := token[:4]; strings.Contains(he.Body, part) || strings.Contains(err.Error(), part) {
				t.Errorf("the snippet keeps the secret's first part %q: %q", part, he.Body)
			}
			if !strings.Contains(he.Body, "[redacted]") {
				t.Errorf("snippet %q does not say a secret was there", he.Body)
			}
		})
	}
}

func TestDoCapsTheBody(t *testing.T) {
	s := &script{statuses: []int{200}, body: strings.Repeat("x", 2048)}
	url := serve(t, s)
	c := newClient(newSleeper())
	c.MaxBody = 1024
	_, err := c.Do(t.Context(), adapters.HTTPRequest{URL: url})
	var he *adapters.HTTPError
	if !errors.As(err, &he) || he.Class == httpretry.Retryable || !strings.Contains(err.Error(), "1024 bytes") {
		t.Fatalf("Do = %v, want a permanent error naming the limit", err)
	}
	if s.count() != 1 {
		t.Errorf("%d requests, want 1", s.count())
	}
	c.MaxBody = 2048
	if _, err := c.Do(t.Context(), adapters.HTTPRequest{URL: url}); err != nil {
		t.Errorf("a body of exactly MaxBody: %v", err)
	}
}

func TestDoStopsWhenTheContextEnds(t *testing.T) {
	s := &script{statuses: []int{503}}
	url := serve(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	c := newClient(newSleeper())
	c.Sleep = func(ctx context.Context, d time.Duration) error {
		cancel()
		return httpretry.Sleep(ctx, d)
	}
	_, err := c.Do(ctx, adapters.HTTPRequest{URL: url})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Do = %v, want context.Canceled", err)
	}
	if s.count() != 1 {
		t.Errorf("%d requests after the context ended, want 1", s.count())
	}
	if _, err := c.Do(ctx, adapters.HTTPRequest{URL: url}); !errors.Is(err, context.Canceled) {
		t.Errorf("Do with an ended context = %v", err)
	}
}

// TestDoAsksTheGuard: a guard in the client's transport (package
// internal/httpx) that starts refusing while Do waits to repeat an
// attempt stops the repeat for good, one that refuses from the start lets
// nothing be sent, and Do's error wraps the guard's.
func TestDoAsksTheGuard(t *testing.T) {
	s := &script{statuses: []int{503, 200}}
	url := serve(t, s)
	errEnded := errors.New("the lease ended")
	var refuse atomic.Bool
	c := newClient(newSleeper())
	c.HTTP = httpx.Chain{Guard: func() error {
		if refuse.Load() {
			return errEnded
		}
		return nil
	}}.Client(&http.Client{})
	inner := c.Sleep
	var waits int
	c.Sleep = func(ctx context.Context, d time.Duration) error {
		waits++
		refuse.Store(true) // the lease ends while Do waits to repeat
		return inner(ctx, d)
	}
	_, err := c.Do(t.Context(), adapters.HTTPRequest{Method: "POST", URL: url, Idempotent: true})
	if !errors.Is(err, errEnded) || s.count() != 1 || waits != 1 {
		t.Errorf("Do = %v after %d requests and %d waits, want the guard's error after the first and no wait after the refusal", err, s.count(), waits)
	}
	if _, err := c.Do(t.Context(), adapters.HTTPRequest{URL: url}); !errors.Is(err, errEnded) || s.count() != 1 || waits != 1 {
		t.Errorf("Do with a guard refusing = %v after %d requests and %d waits, want its error, none sent and no wait", err, s.count(), waits)
	}
}

// TestDoKeepsTheGuardsErrorWhenItEndsTheContext: the daemon's guard ends
// the hotel's context as it refuses; Do's error is still the guard's, not
// the context's, so that the engine sees why.
func TestDoKeepsTheGuardsErrorWhenItEndsTheContext(t *testing.T) {
	s := &script{statuses: []int{200}}
	url := serve(t, s)
	errEnded := errors.New("the lease ended")
	ctx, end := context.WithCancelCause(t.Context())
	c := newClient(newSleeper())
	c.HTTP = httpx.Chain{Guard: func() error {
		end(errEnded)
		return errEnded
	}}.Client(&http.Client{})
	if _, err := c.Do(ctx, adapters.HTTPRequest{URL: url}); !errors.Is(err, errEnded) || s.count() != 0 {
		t.Errorf("Do = %v after %d requests, want the guard's error and none sent", err, s.count())
	}
}

func TestJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Accept") != "application/json" || r.Header.Get("User-Agent") != "ticketbridge-test" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, `{"id": 42, "echo": %s}`, b)
	}))
	defer srv.Close()
	c := newClient(newSleeper())
	c.Header = http.Header{"User-Agent": {"ticketbridge-test"}}
	var out struct {
		ID   int            `json:"id"`
		Echo map[string]any `json:"echo"`
	}
	if _, err := c.JSON(t.Context(), adapters.HTTPRequest{Method: "POST", URL: srv.URL}, map[string]any{"subject": "Towels"}, &out); err != nil {
		t.Fatalf("JSON: %v", err)
	}
	if out.ID != 42 || out.Echo["subject"] != "Towels" {
		t.Fatalf("decoded %+v", out)
	}

	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>") }))
	defer bad.Close()
	if _, err := c.JSON(t.Context(), adapters.HTTPRequest{URL: bad.URL}, nil, &out); err == nil || !strings.Contains(err.Error(), "decode answer") {
		t.Fatalf("JSON of a non-JSON answer: %v", err)
	}
}

// TestHTTPErrorHidesTheURLsSecrets checks that an error names the request's
// URL with its password and every query value masked: a helpdesk may take a
// key in any parameter (format=, not only apikey=).
func TestHTTPErrorHidesTheURLsSecrets(t *testing.T) {
	s := &script{statuses: []int{404}, body: "no"}
	base := strings.Replace(serve(t, s), "http://", "http://bob:pw-marker-1@", 1)
	_, err := newClient(newSleeper()).Do(t.Context(), adapters.HTTPRequest{
		URL: base + "/REST/1.0/ticket?user=bob&apikey=key-marker-2&format=format-marker-3#frag-marker-4",
	})
	if err == nil {
		t.Fatal("Do of a 404 succeeded")
	}
	for _, bad := range []string{"marker-1", "marker-2", "marker-3", "marker-4"} {
		if strings.Contains(err.Error(), bad) {
			t.Errorf("the error shows %q: %v", bad, err)
		}
	}
	if !strings.Contains(err.Error(), "/REST/1.0/ticket?apikey=") {
		t.Errorf("the error lost the URL's path and parameter names: %v", err)
	}
}

// TestDoRetriesAnAttemptThatTimedOut checks that http.Client.Timeout ending
// one attempt is a slow answer to retry, unlike the caller's context ending.
// In a bubble, on in-memory connections: the timeout ends the held attempt
// on the bubble's clock, and the next answer takes none of it, however
// busy the machine.
func TestDoRetriesAnAttemptThatTimedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		tr := testutil.PipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				<-r.Context().Done() // too slow: the client gives up first
				return
			}
			fmt.Fprint(w, "ok")
		}))
		sl := newSleeper()
		c := newClient(sl)
		c.HTTP = &http.Client{Timeout: 100 * time.Millisecond, Transport: tr}
		resp, err := c.Do(t.Context(), adapters.HTTPRequest{Method: "GET", URL: testutil.PipeURL})
		if err != nil {
			t.Fatalf("Do after one slow answer: %v", err)
		}
		if string(resp.Body) != "ok" || n.Load() != 2 || len(sl.Sleeps()) != 1 {
			t.Errorf("answer %q after %d requests and %d waits; want ok after 2 and 1", resp.Body, n.Load(), len(sl.Sleeps()))
		}
	})
}

// TestBackoffLongerThanTheCycleAllowsIsShortened: the client's own
// backoff, longer than the cycle's longest wait (a schedule of a second),
// is shortened to it, not taken for a server asking to be left alone: a
// ticket whose helpdesk call fails twice must not put the helpdesk off.
func TestBackoffLongerThanTheCycleAllowsIsShortened(t *testing.T) {
	s := &script{statuses: []int{503, 500, 502, 200}, body: "ok"}
	url := serve(t, s)
	sl := newSleeper()
	c := newClient(sl)
	c.Backoff = httpretry.Backoff{Base: 2 * time.Second, Max: 10 * time.Second, Rand: half}
	ctx := httpretry.WithMaxWait(t.Context(), time.Second)
	resp, err := c.Do(ctx, adapters.HTTPRequest{URL: url})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("Do = %v: the backoff's own pace was taken for a put-off", err)
	}
	for _, d := range sl.Sleeps() {
		if d > time.Second {
			t.Fatalf("waits %v: one is longer than the 1s the cycle allows", sl.Sleeps())
		}
	}
	if s.count() != 4 {
		t.Fatalf("%d requests, want 4", s.count())
	}
}
