package freshdesk

import (
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
)

// Freshdesk counts API requests per minute and per account, whoever sends
// them. Every answer carries X-RateLimit-Total (the budget of the minute)
// and X-RateLimit-Remaining; a request over the budget gets 429 with
// Retry-After, the seconds to wait. The adapter
//
//   - waits out Retry-After before repeating a request that got 429 (the
//     shared [adapters.HTTPClient] does, through [rateLimitWait]; a 429
//     without the header waits a minute, the length of Freshdesk's window);
//   - holds back every other request of the adapter until then: they are
//     answered at once, without reaching Freshdesk, as a 429 with the rest
//     of the wait, so concurrent tickets do not spend the next minute's
//     budget on refused calls;
//   - logs a warning when less than a tenth of the budget is left, once
//     until the budget recovers, and reports the last figures through
//     [Adapter.RateLimit].

// RateLimit is what the adapter last learnt of Freshdesk's request budget.
type RateLimit struct {
	Known        bool      // an answer carried the headers
	Total        int       // X-RateLimit-Total: requests allowed per minute
	Remaining    int       // X-RateLimit-Remaining
	BlockedUntil time.Time // a 429 asked to wait until then; zero when none
}

// RateLimit returns the last rate-limit figures Freshdesk sent.
func (a *Adapter) RateLimit() RateLimit {
	a.rate.mu.Lock()
	defer a.rate.mu.Unlock()
	return a.rate.last
}

type rateState struct {
	now func() time.Time
	log *slog.Logger

	mu     sync.Mutex
	last   RateLimit
	warned bool
}

// hold returns how long requests must still wait after a 429.
func (s *rateState) hold() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last.BlockedUntil.IsZero() {
		return 0
	}
	return s.last.BlockedUntil.Sub(s.now())
}

// observe records the rate-limit headers of an answer.
func (s *rateState) observe(r *http.Request, resp *http.Response) {
	h := resp.Header
	total, errT := strconv.Atoi(strings.TrimSpace(h.Get("X-RateLimit-Total")))
	remaining, errR := strconv.Atoi(strings.TrimSpace(h.Get("X-RateLimit-Remaining")))
	now := s.now()
	s.mu.Lock()
	warn := false
	if errT == nil && errR == nil {
		s.last.Known, s.last.Total, s.last.Remaining = true, total, remaining
		low := remaining*10 < total
		warn = low && !s.warned
		s.warned = low
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		d, ok := httpretry.RetryAfter(h, now)
		if !ok {
			d = time.Minute
		}
		if until := now.Add(d); until.After(s.last.BlockedUntil) {
			s.last.BlockedUntil = until
		}
	}
	s.mu.Unlock()
	if warn {
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "freshdesk request budget nearly spent",
			slog.String("op", "rate limit"), slog.Int("remaining", remaining), slog.Int("per_minute", total))
	}
}

// rateLimitWait is the adapter's [adapters.HTTPClient.Wait] hook: a 429
// waits Retry-After, or a minute without it.
func rateLimitWait(resp *adapters.HTTPResponse, now time.Time) (time.Duration, bool) {
	if resp.StatusCode != http.StatusTooManyRequests {
		return 0, false
	}
	if d, ok := httpretry.RetryAfter(resp.Header, now); ok {
		return d, true
	}
	return time.Minute, true
}

// rateTransport observes every answer's rate-limit headers and holds back
// requests while Freshdesk asked to wait.
type rateTransport struct {
	next  http.RoundTripper
	state *rateState
}

func (t *rateTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if d := t.state.hold(); d > 0 {
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
			Body:    io.NopCloser(strings.NewReader(`{"message":"not sent: Freshdesk asked the bridge to wait (rate limit)"}`)),
			Request: r,
		}, nil
	}
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(r)
	if err == nil {
		t.state.observe(r, resp)
	}
	return resp, err
}
