// Package refservertest starts the reference Guest Requests API server
// (package refserver) on a loopback port for tests, in the spirit of
// net/http/httptest: one call gives a running server, two organisations,
// keys of every right, and cleanup through testing.TB.
//
// It is not a mock: the answers come from the same refserver.Server that
// `ticketbridge refserver` runs. It keeps package testing out of the
// binary by living apart from refserver.
package refservertest

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

// Organisations every TestServer holds.
const (
	Org      = "11111111-1111-4111-8111-111111111111" // the organisation of most keys
	OtherOrg = "22222222-2222-4222-8222-222222222222" // another organisation: its tickets must stay invisible
)

// Keys holds one key value of each right. All are in Org except
// OtherTicketsWrite.
type Keys struct {
	TicketsWrite      string // tickets write, platform read
	TicketsRead       string // tickets read, platform read
	TicketsNoneAdmin  string // tickets none, platform admin: no ticket access
	PlatformRead      string // tickets none, platform read
	PlatformWrite     string // tickets none, platform write
	PlatformAdmin     string // tickets none, platform admin (same rights as TicketsNoneAdmin, another key)
	TicketsNone       string // tickets none, platform none: can do nothing
	AdminTicketsWrite string // tickets write, platform admin
	Expired           string // tickets write, platform write, expired a day before the server's start
	Revoked           string // tickets write, platform write, revoked
	OtherTicketsWrite string // tickets write, platform read, in OtherOrg
}

// TestServer is a running reference server.
type TestServer struct {
	// URL is {functions_url}: http://127.0.0.1:PORT, no trailing slash.
	URL string
	// BaseURL is {base_url}: URL + /ops-public-api/v1.
	BaseURL string
	// Server is the handler, for console calls (CreateTicket, AddMessage,
	// SetStatus, IssueKey, RevokeKey, Ticket, Stats, SetFaults, ...).
	Server *refserver.Server
	// HTTP is the underlying httptest server; its Client() talks to it.
	HTTP *httptest.Server
	// Org and OtherOrg are the two organisations' ids.
	Org, OtherOrg string
	// Keys are the key values of each right.
	Keys Keys
	// ConsoleToken guards URL + /console/v1.
	ConsoleToken string
}

// Option changes the server's options before it starts.
type Option func(*refserver.Options)

// WithClock makes the server read c for every time it writes or checks and
// sleep through c.
func WithClock(c *Clock) Option {
	return func(o *refserver.Options) {
		o.Now = c.Now
		o.Sleep = c.Sleep
	}
}

// WithOptions replaces the options with opts, except that a clock (Now,
// Sleep) set by an earlier option such as [WithClock] is kept where opts
// leaves it nil. Options given after it apply on top.
func WithOptions(opts refserver.Options) Option {
	return func(o *refserver.Options) {
		now, sleep := o.Now, o.Sleep
		*o = opts
		if o.Now == nil {
			o.Now = now
		}
		if o.Sleep == nil {
			o.Sleep = sleep
		}
	}
}

// New starts a server on a loopback port with Org and OtherOrg (both
// product type hotel) and the keys of [Keys], and closes it when the test
// ends. It has no tickets; create them with ts.Server.CreateTicket or
// ts.Server.ApplySeed.
func New(tb testing.TB, opts ...Option) *TestServer {
	tb.Helper()
	o := refserver.Options{ConsoleToken: "console-test-token"}
	for _, opt := range opts {
		opt(&o)
	}
	srv := refserver.New(o)
	now := time.Now()
	if o.Now != nil {
		now = o.Now()
	}
	ts := &TestServer{Server: srv, Org: Org, OtherOrg: OtherOrg, ConsoleToken: srv.ConsoleToken()}
	for _, org := range []string{Org, OtherOrg} {
		if err := srv.AddOrganization(org, "hotel"); err != nil {
			tb.Fatalf("refservertest: %v", err)
		}
	}
	issue := func(org, name string, p refserver.Platform, t refserver.TicketRight) string {
		k, err := srv.IssueKey(org, refserver.KeySpec{Name: name, Platform: p, Tickets: t})
		if err != nil {
			tb.Fatalf("refservertest: %v", err)
		}
		return k.Value
	}
	ts.Keys = Keys{
		TicketsWrite:      issue(Org, "tickets-write", refserver.PlatformRead, refserver.TicketsWrite),
		TicketsRead:       issue(Org, "tickets-read", refserver.PlatformRead, refserver.TicketsRead),
		TicketsNoneAdmin:  issue(Org, "tickets-none-admin", refserver.PlatformAdmin, refserver.TicketsNone),
		PlatformRead:      issue(Org, "platform-read", refserver.PlatformRead, refserver.TicketsNone),
		PlatformWrite:     issue(Org, "platform-write", refserver.PlatformWrite, refserver.TicketsNone),
		PlatformAdmin:     issue(Org, "platform-admin", refserver.PlatformAdmin, refserver.TicketsNone),
		TicketsNone:       issue(Org, "nothing", refserver.PlatformNone, refserver.TicketsNone),
		AdminTicketsWrite: issue(Org, "admin-tickets-write", refserver.PlatformAdmin, refserver.TicketsWrite),
		Revoked:           issue(Org, "revoked", refserver.PlatformWrite, refserver.TicketsWrite),
		OtherTicketsWrite: issue(OtherOrg, "tickets-write", refserver.PlatformRead, refserver.TicketsWrite),
	}
	if err := srv.RevokeKey(Org, "revoked"); err != nil {
		tb.Fatalf("refservertest: %v", err)
	}
	expired := refserver.KeyPrefix + "expiredtestkey0000000000000"
	yesterday := now.Add(-24 * time.Hour)
	if err := srv.AddKey(Org, refserver.SeedKey{Name: "expired", Value: expired, Platform: refserver.PlatformWrite,
		Tickets: refserver.TicketsWrite, ExpiresAt: &yesterday}); err != nil {
		tb.Fatalf("refservertest: %v", err)
	}
	ts.Keys.Expired = expired
	ts.HTTP = httptest.NewServer(srv)
	ts.URL = ts.HTTP.URL
	ts.BaseURL = ts.URL + refserver.BasePath
	tb.Cleanup(ts.Close)
	return ts
}

// Close stops the server; New arranges it through tb.Cleanup.
func (ts *TestServer) Close() { ts.HTTP.Close() }

// Client returns an HTTP client for the server.
func (ts *TestServer) Client() *http.Client { return ts.HTTP.Client() }

// Clock is the fake clock of package testutil, for [WithClock]: Now,
// Advance, Set, and a Sleep that passes the time at once.
type Clock = testutil.Clock

// NewClock returns a clock standing at t.
func NewClock(t time.Time) *Clock { return testutil.NewClock(t) }
