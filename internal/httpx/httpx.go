// Package httpx is the round-tripper chain the daemon puts around every
// HTTP client of a hotel, the Guest Requests API client's and the
// helpdesk adapter's alike. It owns:
//
//   - the request slots ([Slots]): a bound on the requests in flight,
//     shared by a fleet's hotels, their API and helpdesk sides together;
//     a request holds its slot until its answer's body is closed;
//   - the lease guard ([Chain.Guard]): once it refuses (a replica's lease
//     of the hotel ended) no request is sent, and the error matches
//     httpretry.ErrRefused, so that no client repeats it;
//   - the order of the two: a request waits for a slot first, then asks
//     the guard, so that one that waited is not sent once the lease ended
//     meanwhile; what the transport below does (the daemon counts the API
//     requests there) sees only the requests actually sent;
//   - the timeouts of the daemon's API client ([NewClient]), and a
//     client's whole-exchange timeout kept without net/http's goroutine
//     a request ([Bound]).
//
// Each part is given its policy when the chain is built (the slots, the
// guard function); nothing is read from a request's context, and only
// [Bound] sets one (its deadline). The daemon
// builds one chain per hotel and hands it to the hotel's clients: the API
// client as its http.Client, the adapters through adapters.Deps.
//
// It imports nothing of the module but plumbing (internal/httpretry).
package httpx

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/httpretry"
)

// Slots bounds the requests in flight of every chain built with it: a
// daemon of many hotels shares one among its hotels' API and helpdesk
// clients. Make it with [NewSlots].
type Slots chan struct{}

// NewSlots returns slots for n requests in flight at once.
func NewSlots(n int) Slots { return make(Slots, n) }

// Chain is the policy of one hotel's HTTP clients. The zero value adds
// nothing: [Chain.Transport] returns its base as it is.
type Chain struct {
	// Slots, when not nil, bounds the requests in flight: a request waits
	// for one of them (or for its context to end) before it is sent, and
	// holds it until its answer's body is closed.
	Slots Slots
	// Guard, when not nil, is asked before each request is sent, after
	// any wait for a slot: an error refuses the request, which is not
	// sent; the error returned wraps both Guard's and
	// httpretry.ErrRefused.
	Guard func() error
}

// Transport returns base wrapped in c: slots outside, then the guard, then
// base, which sends what both let through. A nil base is
// http.DefaultTransport.
func (c Chain) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if c.Guard != nil {
		base = &guardTransport{base: base, guard: c.Guard}
	}
	if c.Slots != nil {
		base = &slotTransport{base: base, slots: c.Slots}
	}
	return base
}

// Client returns a copy of hc whose transport is hc's wrapped in c (see
// [Chain.Transport]); hc itself is not changed. hc's Timeout becomes the
// copy's [Bound], outside the chain: it bounds the whole exchange, the
// wait for a slot included, as it did.
func (c Chain) Client(hc *http.Client) *http.Client {
	out := *hc
	out.Transport, out.Timeout = Bound(c.Transport(hc.Transport), hc.Timeout), 0
	return &out
}

// Bound returns rt with every exchange bounded by timeout, from the
// request to the close of its answer's body, as http.Client.Timeout
// bounds it; a timeout of 0 or less returns rt as it is. A client sends
// through it with no Timeout of its own.
//
// http.Client.Timeout over a transport net/http does not know (any
// wrapper, such as a [Chain]'s) starts a goroutine, a timer and two
// channels for every request, to cancel it the old way: at thousands of
// hotels, hundreds of goroutines a second to start and wake. Bound gives
// the request a context with the deadline instead, as http.Client does
// for its own transport. A request, or a read of its answer's body, whose
// deadline passes fails with an error that matches
// context.DeadlineExceeded, whose Timeout method reports true, and that
// names the timeout; httpretry classifies it as the timeout of one
// attempt.
func Bound(rt http.RoundTripper, timeout time.Duration) http.RoundTripper {
	if timeout <= 0 {
		return rt
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &boundTransport{base: rt, timeout: timeout}
}

type boundTransport struct {
	base    http.RoundTripper
	timeout time.Duration
}

func (b *boundTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), b.timeout)
	resp, err := b.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, b.named(req.Context(), ctx, err)
	}
	body := resp.Body
	if body == nil {
		body = http.NoBody // as net/http reads a nil body
	}
	resp.Body = &boundBody{ReadCloser: body, b: b, parent: req.Context(), ctx: ctx, cancel: cancel}
	return resp, nil
}

// named returns err as a timeoutError when ctx's deadline ended the
// exchange, parent (the caller's context) still live.
func (b *boundTransport) named(parent, ctx context.Context, err error) error {
	if ctx.Err() != nil && parent.Err() == nil {
		return &timeoutError{d: b.timeout, err: err}
	}
	return err
}

// timeoutError is the error of a bound request whose deadline passed: a
// timeout, as http.Client's own is, that wraps the transport's error
// (which matches context.DeadlineExceeded).
type timeoutError struct {
	d   time.Duration
	err error
}

func (e *timeoutError) Error() string   { return fmt.Sprintf("no answer within %s: %v", e.d, e.err) }
func (e *timeoutError) Unwrap() error   { return e.err }
func (e *timeoutError) Timeout() bool   { return true }
func (e *timeoutError) Temporary() bool { return true }

// boundBody ends its request's context when it is closed; a read the
// deadline ended fails with the timeoutError that names it.
type boundBody struct {
	io.ReadCloser
	b           *boundTransport
	parent, ctx context.Context
	cancel      context.CancelFunc
}

func (b *boundBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = b.b.named(b.parent, b.ctx, err)
	}
	return n, err
}

func (b *boundBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// NewClient returns the daemon's API client: a connection opens within
// 10 s, the TLS handshake within 10 s, the answer's headers come within
// timeout, and the whole exchange ends within timeout; up to idle
// connections per host are kept for reuse. It follows no redirect
// (httpretry.RefuseRedirect).
func NewClient(timeout time.Duration, idle int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = 10 * time.Second
	tr.ResponseHeaderTimeout = timeout
	tr.MaxIdleConnsPerHost = idle
	return &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: httpretry.RefuseRedirect}
}

// guardTransport sends a request only while guard lets it.
type guardTransport struct {
	base  http.RoundTripper
	guard func() error
}

func (g *guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := g.guard(); err != nil {
		closeBody(req)
		return nil, fmt.Errorf("%w: %w", httpretry.ErrRefused, err)
	}
	return g.base.RoundTrip(req)
}

// slotTransport lets a request through only while it holds one of slots.
type slotTransport struct {
	base  http.RoundTripper
	slots Slots
}

func (s *slotTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	select {
	case s.slots <- struct{}{}:
	case <-req.Context().Done():
		closeBody(req)
		return nil, req.Context().Err()
	}
	resp, err := s.base.RoundTrip(req)
	if err != nil {
		<-s.slots
		return nil, err
	}
	// The slot is held until the body is read and closed: the request is
	// in flight until then.
	if resp.Body == nil {
		resp.Body = http.NoBody // as net/http reads a nil body
	}
	resp.Body = &slotBody{ReadCloser: resp.Body, release: func() { <-s.slots }}
	return resp, nil
}

// slotBody gives its slot back at the first Close.
type slotBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *slotBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}

// closeBody closes the body of a request that is not sent, as a
// RoundTripper must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
