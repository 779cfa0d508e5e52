package adapters

import (
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/httpretry"
)

// Budget is what an adapter last learnt of one of its helpdesk's request
// budgets: the account's, or one endpoint's.
type Budget struct {
	Known        bool      // an answer carried the figures
	Total        int       // requests allowed per window
	Remaining    int       // requests left in the window
	BlockedUntil time.Time // a 429 asked to wait until then; zero when none
}

// Budgets tracks a helpdesk's request budgets from its answers' rate-limit
// headers: the account's, which every request spends, and each endpoint's
// (Freshdesk allows its ticket list 20 calls a minute on the Growth plan,
// besides the account's 200). Its [Budgets.Transport] holds a request back
// while the budget it would spend is blocked, answering it at once with a
// 429 and the rest of the wait, so that concurrent tickets do not spend the
// next window on refused calls; a 429 for one endpoint holds back that
// endpoint only, unless the account's budget is spent too.
//
// It sits below the retry loop of [HTTPClient] (it is an
// http.RoundTripper) and changes nothing of it: the held-back answer is a
// 429 like the helpdesk's own. A Budgets is safe for concurrent use; set
// its fields before use.
type Budgets struct {
	// Endpoint names the endpoint budget r spends, "" for none.
	Endpoint func(r *http.Request) string
	// TotalHeader and RemainingHeader name the headers of the account's
	// budget, e.g. X-RateLimit-Total and X-RateLimit-Remaining.
	TotalHeader, RemainingHeader string
	// DefaultWait is the wait after a 429 without Retry-After; zero means
	// a minute.
	DefaultWait time.Duration
	// Log gets a warning when less than a tenth of the account's budget
	// is left, once until it recovers; nil discards it.
	Log *slog.Logger
	// What names the helpdesk in the warning, e.g. "freshdesk".
	What string

	mu        sync.Mutex
	account   Budget
	endpoints map[string]Budget
	warned    bool
}

// Account returns the account's budget as last seen.
func (b *Budgets) Account() Budget {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.account
}

// Endpoints returns the endpoint budgets a 429 has blocked so far, by
// endpoint name.
func (b *Budgets) Endpoints() map[string]Budget {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]Budget, len(b.endpoints))
	for k, v := range b.endpoints {
		out[k] = v
	}
	return out
}

// hold returns how long a request to endpoint must still wait.
func (b *Budgets) hold(endpoint string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	until := b.account.BlockedUntil
	if e, ok := b.endpoints[endpoint]; ok && endpoint != "" && e.BlockedUntil.After(until) {
		until = e.BlockedUntil
	}
	if until.IsZero() {
		return 0
	}
	return time.Until(until)
}

// observe records the budget figures of an answer to a request of
// endpoint.
func (b *Budgets) observe(r *http.Request, endpoint string, resp *http.Response) {
	h := resp.Header
	total, errT := strconv.Atoi(strings.TrimSpace(h.Get(b.TotalHeader)))
	remaining, errR := strconv.Atoi(strings.TrimSpace(h.Get(b.RemainingHeader)))
	known := b.TotalHeader != "" && errT == nil && errR == nil
	now := time.Now()
	b.mu.Lock()
	warn := false
	if known {
		b.account.Known, b.account.Total, b.account.Remaining = true, total, remaining
		low := remaining*10 < total
		warn = low && !b.warned
		b.warned = low
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		d, ok := httpretry.RetryAfter(h, now)
		if !ok {
			d = b.DefaultWait
			if d <= 0 {
				d = time.Minute
			}
		}
		until := now.Add(d)
		if endpoint == "" || (known && remaining <= 0) {
			// The account's budget is spent: every request waits.
			if until.After(b.account.BlockedUntil) {
				b.account.BlockedUntil = until
			}
		} else {
			if b.endpoints == nil {
				b.endpoints = map[string]Budget{}
			}
			e := b.endpoints[endpoint]
			if until.After(e.BlockedUntil) {
				e.BlockedUntil = until
			}
			b.endpoints[endpoint] = e
		}
	}
	b.mu.Unlock()
	if warn && b.Log != nil {
		b.Log.LogAttrs(r.Context(), slog.LevelWarn, b.What+" request budget nearly spent",
			slog.String("op", "rate limit"), slog.Int("remaining", remaining), slog.Int("per_minute", total))
	}
}

// Transport returns next (http.DefaultTransport when nil) wrapped so that
// every answer updates the budgets and a request whose budget is blocked
// is held back.
func (b *Budgets) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &budgetTransport{next: next, b: b}
}

type budgetTransport struct {
	next http.RoundTripper
	b    *Budgets
}

func (t *budgetTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	endpoint := ""
	if t.b.Endpoint != nil {
		endpoint = t.b.Endpoint(r)
	}
	if d := t.b.hold(endpoint); d > 0 {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		secs := int64((d + time.Second - 1) / time.Second)
		return &http.Response{
			Status:     "429 Too Many Requests",
			StatusCode: http.StatusTooManyRequests,
			Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{
				"Retry-After":  {strconv.FormatInt(secs, 10)},
				"Content-Type": {"application/json"},
			},
			Body:    io.NopCloser(strings.NewReader(`{"message":"not sent: the helpdesk asked the bridge to wait (rate limit)"}`)),
			Request: r,
		}, nil
	}
	resp, err := t.next.RoundTrip(r)
	if err == nil {
		t.b.observe(r, endpoint, resp)
	}
	return resp, err
}
