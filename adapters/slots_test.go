package adapters_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/internal/httpx"
)

// TestDoHoldsASlotPerAttempt: with slots in its client's transport
// (package internal/httpx), each attempt holds a slot while the helpdesk
// answers, none while waiting to retry, and gives it back after; full
// slots hold the request back until the context ends.
func TestDoHoldsASlotPerAttempt(t *testing.T) {
	slots := httpx.NewSlots(1)
	var held, hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		held.Store(int32(len(slots)))
		if hits.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	var heldWhileWaiting int
	c := &adapters.HTTPClient{
		HTTP:    httpx.Chain{Slots: slots}.Client(srv.Client()),
		Backoff: httpretry.Backoff{Base: time.Millisecond},
		Sleep: func(context.Context, time.Duration) error {
			heldWhileWaiting = len(slots)
			return nil
		},
	}
	ctx := t.Context()
	if _, err := c.Do(ctx, adapters.HTTPRequest{Method: "GET", URL: srv.URL}); err != nil {
		t.Fatal(err)
	}
	if hits.Load() != 2 || held.Load() != 1 || heldWhileWaiting != 0 || len(slots) != 0 {
		t.Errorf("%d attempts; slots held during the last attempt %d, while waiting %d, after %d; want 2, 1, 0, 0",
			hits.Load(), held.Load(), heldWhileWaiting, len(slots))
	}

	slots <- struct{}{} // another request holds the only slot
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Do(cctx, adapters.HTTPRequest{Method: "GET", URL: srv.URL}); err == nil || hits.Load() != 2 {
		t.Errorf("with every slot taken: err %v, %d attempts; want the context's error and no attempt", err, hits.Load())
	}
}

// TestDepsHTTPBoundsWithoutAGoroutine: an adapter's client over the
// daemon's chain bounds each request by its timeout through the request's
// context, not through http.Client.Timeout, which over a transport net/http
// does not know starts a goroutine and a timer a request.
func TestDepsHTTPBoundsWithoutAGoroutine(t *testing.T) {
	var seen *http.Request
	deps := adapters.Deps{Transport: httpx.Chain{Slots: httpx.NewSlots(1)}.Transport(roundTrip(func(req *http.Request) (*http.Response, error) {
		seen = req
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
	}))}
	hc := deps.HTTP(5 * time.Second)
	before := time.Now()
	resp, err := hc.Get("http://helpdesk.example/api")
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if hc.Timeout != 0 {
		t.Errorf("client Timeout %s: want 0, the bound in the request's context", hc.Timeout)
	}
	if d, ok := seen.Context().Deadline(); !ok || d.Before(before.Add(5*time.Second)) || d.After(after.Add(5*time.Second)) {
		t.Errorf("the request's deadline %v (set %v), want 5 s after the request", d, ok)
	}
	if c := (adapters.Deps{}).HTTP(5 * time.Second); c.Timeout != 5*time.Second {
		t.Errorf("without a chain the client's Timeout is %s, want 5s (net/http's own transport)", c.Timeout)
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
