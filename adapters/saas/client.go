package saas

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
)

// Client describes the HTTP client of a SaaS adapter; [Client.New] builds
// it. Only Vendor and Authorize are required.
type Client struct {
	// Vendor names the helpdesk: the User-Agent is ticketbridge-<Vendor>.
	Vendor string
	// HTTP sends the requests; nil means a client with Timeout.
	HTTP    *http.Client
	Timeout time.Duration
	// Transport, when set, wraps the client's transport (a rate-limit
	// budget, see [adapters.Budgets]).
	Transport func(http.RoundTripper) http.RoundTripper
	// Authorize, Secrets, Wait, Backoff, Sleep, Now and MaxAttempts are
	// those of [adapters.HTTPClient].
	Authorize   func(*http.Request)
	Secrets     []string
	Wait        func(resp *adapters.HTTPResponse, now time.Time) (time.Duration, bool)
	Backoff     httpretry.Backoff
	Sleep       func(ctx context.Context, d time.Duration) error
	Now         func() time.Time
	MaxAttempts int
	// Log gets the client's retry warnings.
	Log *slog.Logger
}

// New returns the client c describes.
func (c Client) New() *adapters.HTTPClient {
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: c.Timeout}
	}
	if c.Transport != nil {
		wrapped := *hc
		wrapped.Transport = c.Transport(hc.Transport)
		hc = &wrapped
	}
	return &adapters.HTTPClient{
		HTTP:        hc,
		Backoff:     c.Backoff,
		MaxAttempts: c.MaxAttempts,
		Header:      http.Header{"User-Agent": {"ticketbridge-" + c.Vendor}},
		Authorize:   c.Authorize,
		Secrets:     c.Secrets,
		Wait:        c.Wait,
		Sleep:       c.Sleep,
		Now:         c.Now,
		Logger:      c.Log,
	}
}

// Logger returns l, or a logger that discards everything when l is nil.
func Logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// Clock returns now, or time.Now when now is nil.
func Clock(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}

// Memo holds a value the adapter asks its helpdesk for once, such as the
// API user it acts as: the first successful Get keeps it. It is safe for
// concurrent use; the zero value is empty.
type Memo[T any] struct {
	mu sync.Mutex
	v  *T
}

// Get returns the value, calling fetch while there is none. A failed fetch
// keeps nothing, so the next Get asks again.
func (m *Memo[T]) Get(ctx context.Context, fetch func(context.Context) (T, error)) (T, error) {
	m.mu.Lock()
	v := m.v
	m.mu.Unlock()
	if v != nil {
		return *v, nil
	}
	got, err := fetch(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	m.Set(got)
	return got, nil
}

// Set keeps v.
func (m *Memo[T]) Set(v T) {
	m.mu.Lock()
	m.v = &v
	m.mu.Unlock()
}
