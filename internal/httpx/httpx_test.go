package httpx

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/httpretry"
)

// sender is a base transport that answers every request with "ok",
// counting them, and tells what the chain around it held while it did.
type sender struct {
	sent   atomic.Int32
	during func() // called as each request is sent
}

func (s *sender) RoundTrip(req *http.Request) (*http.Response, error) {
	s.sent.Add(1)
	if s.during != nil {
		s.during()
	}
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("ok")), Request: req}, nil
}

func get(t *testing.T, ctx context.Context, rt http.RoundTripper) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://hotel.example/v1/tickets", nil)
	if err != nil {
		t.Fatal(err)
	}
	return rt.RoundTrip(req)
}

// TestSlotsBound: with every slot taken a request waits until one is
// given back, which happens when the holder's body is closed (once, however
// often it is closed); a request whose context ends while it waits is
// never sent.
func TestSlotsBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slots := NewSlots(1)
		base := &sender{}
		rt := Chain{Slots: slots}.Transport(base)

		first, err := get(t, t.Context(), rt)
		if err != nil {
			t.Fatal(err)
		}
		if len(slots) != 1 {
			t.Fatalf("slots held before the body is closed: %d, want 1", len(slots))
		}
		var second atomic.Pointer[http.Response]
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err := get(t, t.Context(), rt)
			if err != nil {
				t.Error(err)
				return
			}
			second.Store(resp)
		}()
		synctest.Wait()
		if base.sent.Load() != 1 || second.Load() != nil {
			t.Fatalf("%d requests sent while the only slot is held, want 1", base.sent.Load())
		}
		_, _ = io.ReadAll(first.Body)
		_ = first.Body.Close()
		<-done
		if base.sent.Load() != 2 || len(slots) != 1 {
			t.Fatalf("after the first body is closed: %d sent, %d slots held; want 2 and 1", base.sent.Load(), len(slots))
		}
		_ = first.Body.Close() // a second Close gives back nothing more
		if len(slots) != 1 {
			t.Fatalf("the first body closed twice gave back another request's slot: %d held, want 1", len(slots))
		}
		_ = second.Load().Body.Close()
		if len(slots) != 0 {
			t.Fatalf("%d slots held after every body is closed, want 0", len(slots))
		}

		// A request waiting for a slot stops when its context ends.
		slots <- struct{}{}
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() {
			_, err := get(t, ctx, rt)
			errc <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("a request whose context ended while waiting for a slot: %v, want context.Canceled", err)
		}
		if base.sent.Load() != 2 {
			t.Errorf("%d requests sent, want the waiting one not sent", base.sent.Load())
		}
	})
}

// TestSlotHeldUntilTheBodyIsClosed: through a real server, an answer
// holds its slot after its headers arrived, until its body is closed.
func TestSlotHeldUntilTheBodyIsClosed(t *testing.T) {
	slots := NewSlots(1)
	var held atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		held.Store(int32(len(slots)))
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	hc := Chain{Slots: slots}.Client(srv.Client())
	resp, err := hc.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if held.Load() != 1 || len(slots) != 1 {
		t.Errorf("slots held while answered %d, before the body is closed %d; want 1 and 1", held.Load(), len(slots))
	}
	_, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if len(slots) != 0 {
		t.Errorf("%d slots held after the body is closed, want 0", len(slots))
	}
}

// TestGuardRefusesBeforeSending: a request the guard refuses never
// reaches the server, its body is closed, and its error wraps the
// guard's and httpretry.ErrRefused; once the guard lets it, it goes.
func TestGuardRefusesBeforeSending(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
	}))
	t.Cleanup(srv.Close)
	errEnded := errors.New("the lease ended")
	var refuse atomic.Bool
	refuse.Store(true)
	hc := Chain{Guard: func() error {
		if refuse.Load() {
			return errEnded
		}
		return nil
	}}.Client(srv.Client())

	body := &closeCounter{Reader: strings.NewReader("{}")}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, body)
	if err != nil {
		t.Fatal(err)
	}
	_, err = hc.Do(req)
	if !errors.Is(err, errEnded) || !errors.Is(err, httpretry.ErrRefused) {
		t.Errorf("a refused request: %v, want the guard's error and httpretry.ErrRefused", err)
	}
	if hits.Load() != 0 {
		t.Errorf("%d requests reached the server under a refusing guard, want none", hits.Load())
	}
	if body.closed.Load() == 0 {
		t.Error("the refused request's body was not closed")
	}
	if got := httpretry.Classify(t.Context(), 0, err); got != httpretry.Permanent {
		t.Errorf("a refused request is %s, want permanent: no client repeats it", got)
	}

	refuse.Store(false)
	resp, err := hc.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if hits.Load() != 1 {
		t.Errorf("%d requests reached the server once the guard lets them, want 1", hits.Load())
	}
}

type closeCounter struct {
	io.Reader
	closed atomic.Int32
}

func (c *closeCounter) Close() error { c.closed.Add(1); return nil }

// TestChainOrder: a request waits for a slot first and asks the guard
// while it holds it, so that one that waited is not sent once the guard
// refuses meanwhile; a refused request gives its slot back at once; the
// base sees only what both let through; an empty chain is its base.
func TestChainOrder(t *testing.T) {
	slots := NewSlots(2)
	var heldAtGuard, heldAtBase int
	var refuse bool
	base := &sender{during: func() { heldAtBase = len(slots) }}
	rt := Chain{Slots: slots, Guard: func() error {
		heldAtGuard = len(slots)
		if refuse {
			return errors.New("the lease ended")
		}
		return nil
	}}.Transport(base)

	resp, err := get(t, t.Context(), rt)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if heldAtGuard != 1 || heldAtBase != 1 || base.sent.Load() != 1 {
		t.Errorf("slots held when the guard was asked %d, when sent %d; %d sent; want 1, 1, 1", heldAtGuard, heldAtBase, base.sent.Load())
	}

	refuse = true
	if _, err := get(t, t.Context(), rt); !errors.Is(err, httpretry.ErrRefused) {
		t.Errorf("a refused request: %v", err)
	}
	if heldAtGuard != 1 || len(slots) != 0 || base.sent.Load() != 1 {
		t.Errorf("refused: guard asked holding %d slots, %d held after, %d sent; want 1, 0, 1", heldAtGuard, len(slots), base.sent.Load())
	}

	if rt := (Chain{}).Transport(base); rt != http.RoundTripper(base) {
		t.Errorf("an empty chain wraps its base: %T", rt)
	}
	if rt := (Chain{}).Transport(nil); rt != http.DefaultTransport {
		t.Errorf("an empty chain over nil is %T, want http.DefaultTransport", rt)
	}
}

// TestNewClient: the API client's timeouts, and no redirect followed.
func TestNewClient(t *testing.T) {
	hc := NewClient(30*time.Second, 7)
	tr, ok := hc.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("transport %T, want *http.Transport", hc.Transport)
	}
	if hc.Timeout != 30*time.Second || tr.ResponseHeaderTimeout != 30*time.Second || tr.TLSHandshakeTimeout != 10*time.Second || tr.MaxIdleConnsPerHost != 7 {
		t.Errorf("timeouts: client %s, headers %s, TLS %s, idle per host %d", hc.Timeout, tr.ResponseHeaderTimeout, tr.TLSHandshakeTimeout, tr.MaxIdleConnsPerHost)
	}
	if hc.CheckRedirect == nil {
		t.Error("the client follows redirects")
	}
	if tr == http.DefaultTransport {
		t.Error("the client changes http.DefaultTransport")
	}
}

// hanging is a base transport that answers only once its request's context
// ends, with the context's error, as net/http's does; seen holds each
// request it was given.
type hanging struct{ seen []*http.Request }

func (h *hanging) RoundTrip(req *http.Request) (*http.Response, error) {
	h.seen = append(h.seen, req)
	<-req.Context().Done()
	return nil, req.Context().Err()
}

// TestBoundEndsASilentExchange: a server that does not answer ends the
// exchange after the client's timeout with a timeout error that names it,
// which httpretry retries; the caller's context is not ended; and no
// request goes the old way of http.Client.Timeout over a wrapped
// transport (a Cancel channel, watched by a goroutine and a timer a
// request).
func TestBoundEndsASilentExchange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &hanging{}
		hc := Chain{Slots: NewSlots(1)}.Client(&http.Client{Transport: base, Timeout: 30 * time.Second})
		if hc.Timeout != 0 {
			t.Errorf("the chained client keeps Timeout %s: net/http would start a goroutine a request", hc.Timeout)
		}
		start := time.Now()
		_, err := hc.Get("http://hotel.example/v1/tickets")
		if took := time.Since(start); took != 30*time.Second {
			t.Errorf("the exchange ended after %s, want 30s", took)
		}
		var ne interface{ Timeout() bool }
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() || !strings.Contains(err.Error(), "no answer within 30s") {
			t.Errorf("error %v: want a timeout matching context.DeadlineExceeded that names 30s", err)
		}
		if c := httpretry.Classify(t.Context(), 0, err); c != httpretry.Retryable {
			t.Errorf("classified %v, want Retryable (the timeout of one attempt)", c)
		}
		if len(base.seen) != 1 || cancelSet(base.seen[0]) {
			t.Fatalf("requests sent %d, the first with a Cancel channel: %v", len(base.seen), len(base.seen) == 1 && cancelSet(base.seen[0]))
		}
	})
}

// TestBoundHoldsUntilTheBodyIsClosed: the deadline bounds the read of the
// answer's body too, and closing the body ends the request's context, so
// that nothing of it is left waiting.
func TestBoundHoldsUntilTheBodyIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ctx context.Context
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			ctx = req.Context()
			return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("ok")), Request: req}, nil
		})
		resp, err := get(t, t.Context(), Bound(base, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := ctx.Deadline(); !ok || time.Until(d) != time.Minute {
			t.Errorf("the request's deadline %v (set %v), want a minute from now", d, ok)
		}
		if ctx.Err() != nil {
			t.Fatalf("the request's context ended before its body was closed: %v", ctx.Err())
		}
		_ = resp.Body.Close()
		if !errors.Is(ctx.Err(), context.Canceled) {
			t.Errorf("after the body's close the request's context is %v, want canceled", ctx.Err())
		}
		if rt := Bound(base, 0); reflect.ValueOf(rt).Pointer() != reflect.ValueOf(base).Pointer() {
			t.Errorf("Bound with no timeout wraps its transport: %T", rt)
		}
	})
}

// cancelSet reports whether net/http set req's Cancel channel, which it
// does only to end a request the old way, with a goroutine and a timer.
func cancelSet(req *http.Request) bool {
	//lint:ignore SA1019 the deprecated field is the old way's mark
	return req.Cancel != nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// ctxBody is an answer's body that sends nothing until its request's
// context ends, and then fails with the context's error, as net/http's
// does.
type ctxBody struct{ ctx context.Context }

func (b ctxBody) Read([]byte) (int, error) {
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}
func (ctxBody) Close() error { return nil }

// TestBoundNamesATimeoutInTheBody: an answer whose body stops coming ends
// at the deadline with the timeout error that names it; an answer without
// a body reads as empty through the chain, as net/http has it.
func TestBoundNamesATimeoutInTheBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusOK, Body: ctxBody{req.Context()}, Request: req}, nil
		})
		resp, err := get(t, t.Context(), Bound(base, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.ReadAll(resp.Body)
		var ne interface{ Timeout() bool }
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() || !strings.Contains(err.Error(), "no answer within 1m0s") {
			t.Errorf("reading the body: %v, want the timeout that names 1m0s", err)
		}
		_ = resp.Body.Close()

		none := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusNoContent, Request: req}, nil
		})
		slots := NewSlots(1)
		resp, err = get(t, t.Context(), Bound(Chain{Slots: slots}.Transport(none), time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(resp.Body); err != nil || len(b) != 0 {
			t.Errorf("an answer without a body reads %q, %v", b, err)
		}
		if err := resp.Body.Close(); err != nil || len(slots) != 0 {
			t.Errorf("closing an answer without a body: %v, %d slots still held", err, len(slots))
		}
	})
}
