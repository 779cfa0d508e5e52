package main

import (
	"io"
	"net"
	"net/http"
	gosync "sync"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// The HTTP round-trippers the daemon puts around its clients: a bound on
// requests in flight shared by a fleet's hotels, the lease guard on the
// API side, and the API client's timeouts.

// newAPIClient returns an HTTP client with the timeouts guestapi's
// default client has, keeping up to idle connections per host.
func newAPIClient(idle int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = 10 * time.Second
	tr.ResponseHeaderTimeout = guestapi.DefaultRequestTimeout
	tr.MaxIdleConnsPerHost = idle
	return &http.Client{Transport: tr, Timeout: guestapi.DefaultRequestTimeout}
}

// guardTransport refuses a request whose context's guard refuses: the
// API side of adapters.WithGuard, which the helpdesk adapters' client
// honours itself.
type guardTransport struct{ base http.RoundTripper }

func (g guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := adapters.CheckGuard(req.Context()); err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	return g.base.RoundTrip(req)
}

// guarded returns hc with each request refused once its context's guard
// refuses.
func guarded(hc *http.Client) *http.Client {
	c := *hc
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = guardTransport{base: base}
	return &c
}

// boundedTransport lets a request through only while it holds one of
// slots, shared with the hotels' helpdesk adapters (see adapters.Slots):
// the bound is on API and helpdesk requests together.
type boundedTransport struct {
	base  http.RoundTripper
	slots adapters.Slots
}

func (b *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	select {
	case b.slots <- struct{}{}:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	resp, err := b.base.RoundTrip(req)
	if err != nil {
		<-b.slots
		return nil, err
	}
	// The slot is held until the body is read and closed: the request is
	// in flight until then.
	resp.Body = &slotBody{ReadCloser: resp.Body, release: func() { <-b.slots }}
	return resp, nil
}

type slotBody struct {
	io.ReadCloser
	once    gosync.Once
	release func()
}

func (s *slotBody) Close() error {
	err := s.ReadCloser.Close()
	s.once.Do(s.release)
	return err
}
