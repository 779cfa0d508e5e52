package saas

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
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
	// HTTP sends the requests: the adapter's client of adapters.Deps.HTTP
	// (the daemon's round-tripper chain), or a test's; nil means a client
	// with a timeout of adapters.DefaultHTTPTimeout.
	HTTP *http.Client
	// Transport, when set, wraps the client's transport (a rate-limit
	// budget, see [adapters.Budgets]).
	Transport func(http.RoundTripper) http.RoundTripper
	// Authorize, Secrets, Wait, Backoff, Sleep and MaxAttempts are those
	// of [adapters.HTTPClient].
	Authorize   func(*http.Request)
	Secrets     []string
	Wait        func(resp *adapters.HTTPResponse, now time.Time) (time.Duration, bool)
	Backoff     httpretry.Backoff
	Sleep       func(ctx context.Context, d time.Duration) error
	MaxAttempts int
	// Log gets the client's retry warnings.
	Log *slog.Logger
}

// New returns the client c describes.
func (c Client) New() *adapters.HTTPClient {
	hc := c.HTTP
	if hc == nil {
		hc = adapters.Deps{}.HTTP(adapters.DefaultHTTPTimeout)
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

// URL returns base+path with query, given as name, value pairs.
func URL(base, path string, query ...string) string {
	u := base + path
	if len(query) > 0 {
		q := url.Values{}
		for i := 0; i+1 < len(query); i += 2 {
			q.Set(query[i], query[i+1])
		}
		u += "?" + q.Encode()
	}
	return u
}

// Names caches the display names of helpdesk users by id. It is safe for
// concurrent use; the zero value is empty.
type Names struct {
	mu sync.Mutex
	m  map[int64]string
}

// Known returns the name of user id if the cache holds it.
func (n *Names) Known(id int64) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	name, ok := n.m[id]
	return name, ok
}

// Set keeps the name of user id ("" for a user the helpdesk does not show).
func (n *Names) Set(id int64, name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		n.m = map[int64]string{}
	}
	n.m[id] = name
}

// Get returns the name of user id, calling fetch when the cache does not
// hold it; a failed fetch keeps nothing.
func (n *Names) Get(ctx context.Context, id int64, fetch func(context.Context, int64) (string, error)) (string, error) {
	if name, ok := n.Known(id); ok {
		return name, nil
	}
	name, err := fetch(ctx, id)
	if err != nil {
		return "", err
	}
	n.Set(id, name)
	return name, nil
}

// CheckGroups asks the helpdesk of vendor name for each group id the
// configuration names: group (variable prefix+GROUP, 0 for none) and the
// values of groups (prefix+GROUPS). A group the helpdesk does not have
// (a GET of at(id) answering 404) is an error naming the variable and
// where to look (missing).
func CheckGroups(ctx context.Context, c *adapters.HTTPClient, name, prefix string, group int64, groups map[string]int64, at func(int64) string, missing string) error {
	check := map[int64]string{}
	if group != 0 {
		check[group] = prefix + "GROUP"
	}
	for dept, id := range groups {
		check[id] = fmt.Sprintf("%sGROUPS (department %s)", prefix, dept)
	}
	for id, where := range check {
		_, err := c.JSON(ctx, adapters.HTTPRequest{Method: http.MethodGet, URL: at(id), Op: "check group"}, nil, nil)
		if errors.Is(err, adapters.ErrNotFound) {
			return fmt.Errorf("check %s group %d named in %s: %s", name, id, where, missing)
		}
		if err != nil {
			return fmt.Errorf("check %s group %d named in %s: %w", name, id, where, err)
		}
	}
	return nil
}

// Group returns the group of department dept: its entry in groups, or
// def.
func Group[G any](groups map[string]G, dept string, def G) G {
	if g, ok := groups[dept]; ok {
		return g
	}
	return def
}
