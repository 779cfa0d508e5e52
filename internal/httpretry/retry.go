package httpretry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// DefaultAttempts is how often [Retrier.Do] tries a request when
// MaxAttempts is zero, the first attempt included.
const DefaultAttempts = 4

// ErrWaitTooLong is matched by [Outcome.Err] when the wait before the next
// attempt is longer than [Retrier.MaxWait]: the caller comes back later.
var ErrWaitTooLong = errors.New("the wait before the next attempt is too long")

// Call describes the request [Retrier.Do] repeats.
type Call struct {
	// Op names what the caller is doing ("list tickets"), for its hooks.
	Op string
	// Idempotent says that repeating the request cannot do its work twice
	// (a GET, or a POST carrying an idempotency key). A request that is not
	// is repeated only when it certainly did not take effect: a 429, or a
	// connection that could not be opened ([NotSent]).
	Idempotent bool
}

// Result is what one attempt gave.
type Result struct {
	Status int         // the answer's status; 0 when none arrived
	Header http.Header // the answer's headers; nil when none arrived
	Err    error       // the transport error; nil when an answer arrived
	// Class, when not zero, is the caller's own verdict and replaces
	// [Classify]: Success for a status the caller accepts, Permanent for
	// a request that could not be built or an answer it cannot use.
	Class Class
}

// Outcome is what [Retrier.Do] ends with: the last attempt and why no
// further one was made.
type Outcome struct {
	Result         // the last attempt's; zero when none was made
	Class    Class // the last attempt's class; zero when none was made
	Attempts int   // how many attempts were made
	// Wait is the wait before a next attempt of a Retryable outcome, and
	// Asked tells whether the server asked for it (Retry-After or the
	// RetryWait hook) rather than the backoff choosing it.
	Wait  time.Duration
	Asked bool
	// Err is set when the loop stopped on its own rather than on the
	// attempt's class or the attempt count: the context ended (before an
	// attempt or during a wait), the wait would pass the context's
	// deadline (it matches context.DeadlineExceeded), or it is longer than
	// MaxWait ([ErrWaitTooLong]).
	Err error
}

// Retrier repeats requests after the daemon's one policy: Retryable
// attempts ([Classify]) are repeated while attempts are left and the
// request may be repeated ([Call.Idempotent]), after the wait the server
// asked for with Retry-After (on a 429 or 503), else after RateLimitWait
// on a 429 when set, else after the [Backoff] delay.
//
// The zero value is usable. Do not change a Retrier's fields while it is
// in use; it is safe for concurrent use when its hooks are.
type Retrier struct {
	// Backoff paces the repeats; the zero value is [DefaultBackoff].
	Backoff Backoff
	// MaxAttempts bounds the attempts, the first included; 0 means
	// [DefaultAttempts], 1 disables repeats.
	MaxAttempts int
	// RateLimitWait is the wait after a 429 without a usable Retry-After;
	// zero means the backoff delay.
	RateLimitWait time.Duration
	// MaxWait is the longest wait Do sits out; a longer one ends the loop
	// with [ErrWaitTooLong]. Zero means no limit but the context's
	// deadline.
	MaxWait time.Duration
	// RetryWait, when set, is asked about every Retryable answer; when it
	// returns ok, its wait replaces Retry-After and the backoff (a
	// vendor's own rate-limit headers).
	RetryWait func(r Result, now time.Time) (wait time.Duration, ok bool)
	// OnRetry, when set, is told of every repeat before its wait (for the
	// caller's log).
	OnRetry func(ctx context.Context, c Call, attempt int, r Result, wait time.Duration)
	// Sleep waits between attempts and returns early with an error when
	// ctx ends; nil means [Sleep].
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock for Retry-After dates; nil means time.Now.
	Now func() time.Time
}

// Do calls attempt (numbered from 1) until an attempt is not Retryable,
// the attempts are spent, the request may not be repeated, or the loop
// stops on its own (see [Outcome.Err]). It never calls attempt once ctx
// has ended.
func (r *Retrier) Do(ctx context.Context, c Call, attempt func(ctx context.Context, n int) Result) Outcome {
	maxAttempts := r.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = DefaultAttempts
	}
	var out Outcome
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			out.Err = err
			return out
		}
		res := attempt(ctx, n)
		class := res.Class
		if class == 0 {
			class = Classify(ctx, res.Status, res.Err)
		}
		out = Outcome{Result: res, Class: class, Attempts: n}
		if class != Retryable {
			return out
		}
		out.Wait, out.Asked = r.wait(res, n)
		if n >= maxAttempts || !mayRepeat(c, res) {
			return out
		}
		if r.MaxWait > 0 && out.Wait > r.MaxWait {
			out.Err = fmt.Errorf("retry in %s: %w", out.Wait, ErrWaitTooLong)
			return out
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < out.Wait {
			out.Err = fmt.Errorf("retry in %s would pass the deadline: %w", out.Wait.Round(time.Millisecond), context.DeadlineExceeded)
			return out
		}
		if r.OnRetry != nil {
			r.OnRetry(ctx, c, n, res, out.Wait)
		}
		if err := r.sleep(ctx, out.Wait); err != nil {
			out.Err = err
			return out
		}
	}
}

// mayRepeat reports whether c may be sent again after res.
func mayRepeat(c Call, res Result) bool {
	switch {
	case c.Idempotent:
		return true
	case res.Err == nil:
		return res.Status == http.StatusTooManyRequests
	}
	return NotSent(res.Err)
}

// wait returns the wait before the attempt after attempt n, and whether
// the server asked for it.
func (r *Retrier) wait(res Result, n int) (time.Duration, bool) {
	now := r.now()
	if r.RetryWait != nil {
		if d, ok := r.RetryWait(res, now); ok {
			return max(d, 0), true
		}
	}
	if res.Status == http.StatusTooManyRequests || res.Status == http.StatusServiceUnavailable {
		if d, ok := RetryAfter(res.Header, now); ok {
			return d, true
		}
	}
	if res.Status == http.StatusTooManyRequests && r.RateLimitWait > 0 {
		return r.RateLimitWait, false
	}
	return r.Backoff.Delay(n), false
}

func (r *Retrier) sleep(ctx context.Context, d time.Duration) error {
	if r.Sleep != nil {
		return r.Sleep(ctx, d)
	}
	return Sleep(ctx, d)
}

func (r *Retrier) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
