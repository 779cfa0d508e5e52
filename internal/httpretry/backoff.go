package httpretry

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Default retry policy: the first retry waits up to half a second, each
// further one up to twice as long, never more than 30 seconds.
const (
	DefaultBackoffBase = 500 * time.Millisecond
	DefaultBackoffMax  = 30 * time.Second
)

// Backoff is a capped exponential backoff with full jitter: the wait before
// retry n is a uniformly random duration in [0, min(Max, Base*2^(n-1))).
// It is shared by the API client and the helpdesk adapters (through
// [Retrier]) so that every outbound HTTP call of the daemon backs off the
// same way.
//
// The zero value is usable and means [DefaultBackoffBase] and
// [DefaultBackoffMax]. A Backoff is safe for concurrent use when its Rand is.
type Backoff struct {
	// Base is the ceiling of the first wait; zero means DefaultBackoffBase.
	Base time.Duration
	// Max caps every wait; zero means DefaultBackoffMax.
	Max time.Duration
	// Rand returns a number in [0, 1) that scales the ceiling (the jitter).
	// Nil means math/rand/v2's Float64. Tests inject a constant to get
	// deterministic waits; func() float64 { return 0.5 } gives half the
	// ceiling.
	Rand func() float64
}

// DefaultBackoff returns the policy used when none is configured.
func DefaultBackoff() Backoff {
	return Backoff{Base: DefaultBackoffBase, Max: DefaultBackoffMax}
}

func (b Backoff) base() time.Duration {
	if b.Base <= 0 {
		return DefaultBackoffBase
	}
	return b.Base
}

func (b Backoff) max() time.Duration {
	if b.Max <= 0 {
		return DefaultBackoffMax
	}
	return b.Max
}

// Ceiling returns the upper bound of the wait before retry attempt (1 for
// the first retry): min(Max, Base*2^(attempt-1)). An attempt below 1 counts
// as 1. It never overflows.
func (b Backoff) Ceiling(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	base, limit := b.base(), b.max()
	if base >= limit {
		return limit
	}
	d := base
	for i := 1; i < attempt; i++ {
		if d >= limit/2 {
			return limit
		}
		d *= 2
	}
	return d
}

// Delay returns the jittered wait before retry attempt (1 for the first
// retry): a random duration in [0, Ceiling(attempt)).
func (b Backoff) Delay(attempt int) time.Duration {
	c := b.Ceiling(attempt)
	r := b.Rand
	if r == nil {
		r = rand.Float64
	}
	f := r()
	if f < 0 || f >= 1 || f != f { // out of contract or NaN: no jitter rather than garbage
		f = 0.999999
	}
	return time.Duration(float64(c) * f)
}

// RetryAfter reads the Retry-After header, in delta-seconds or as an
// HTTP-date (relative to now). ok is false when the header is absent or
// unreadable. A date in the past gives 0 with ok true.
func RetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		const maxSeconds = int64(1<<63-1) / int64(time.Second)
		if n > maxSeconds {
			n = maxSeconds
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	if d := t.Sub(now); d > 0 {
		return d, true
	}
	return 0, true
}

// Sleep waits for d or until ctx is done, whichever comes first, and
// returns ctx.Err() in the second case. It is the default of [Retrier.Sleep].
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
