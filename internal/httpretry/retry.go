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

// DefaultMaxWait is the longest wait [Retrier.Do] sits out when neither
// [Retrier.MaxWait] nor the context ([WithMaxWait]) sets one: a server
// asking for more (a proxy's Retry-After: 3600) is not waited for inside
// one call.
const DefaultMaxWait = 5 * time.Minute

// ErrWaitTooLong is matched by [Outcome.Err] when the wait before the next
// attempt is longer than the longest wait allowed: the caller comes back
// later. The error is a [*WaitError] saying when.
var ErrWaitTooLong = errors.New("the wait before the next attempt is too long")

// WaitError is the [Outcome.Err] of a server that asked for a wait longer
// than the longest allowed (or of a backoff that would pass it): the
// caller puts off its calls to that server until Until. It matches
// [ErrWaitTooLong].
type WaitError struct {
	Wait  time.Duration // the wait asked for
	Until time.Time     // when the wait ends: the clock's now plus Wait
	Max   time.Duration // the longest wait allowed
}

func (e *WaitError) Error() string {
	return fmt.Sprintf("retry in %s (until %s), longer than the %s allowed: %s",
		e.Wait, e.Until.UTC().Format(time.RFC3339), e.Max, ErrWaitTooLong)
}

// Is matches [ErrWaitTooLong].
func (e *WaitError) Is(target error) bool { return target == ErrWaitTooLong }

type maxWaitKey struct{}

// WithMaxWait returns ctx carrying d as the longest wait of every
// [Retrier.Do] run with it (or a context derived from it), when d is
// shorter than the Retrier's own MaxWait. The sync engine sets the
// schedule's interval on each cycle's context, so that no call waits past
// the next cycle.
func WithMaxWait(ctx context.Context, d time.Duration) context.Context {
	if old, ok := ctx.Value(maxWaitKey{}).(time.Duration); ok && old <= d {
		return ctx
	}
	return context.WithValue(ctx, maxWaitKey{}, d)
}

// maxWait is the longest wait of a Do with ctx.
func (r *Retrier) maxWait(ctx context.Context) time.Duration {
	m := r.MaxWait
	if m <= 0 {
		m = DefaultMaxWait
	}
	if d, ok := ctx.Value(maxWaitKey{}).(time.Duration); ok && d > 0 && d < m {
		m = d
	}
	return m
}

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
	// the longest wait allowed (a [*WaitError], matching [ErrWaitTooLong]).
	// A wait the server asked for that is too long sets it even when no
	// attempt is left or the request may not be repeated: the server asked
	// to be left alone until then.
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
	// MaxWait is the longest wait Do sits out. A longer wait the server
	// asked for ends the loop with a [*WaitError]; a longer backoff delay
	// is shortened to MaxWait. Zero means [DefaultMaxWait]; a context
	// carrying a shorter one ([WithMaxWait]) lowers it.
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
	// Now is the clock for Retry-After dates and WaitError.Until; nil
	// means time.Now. Kept for the guest API's client alone: the
	// simulator of package sync runs it on a fake clock over real sockets,
	// where a testing/synctest bubble's clock cannot advance, and the
	// engine compares Until with that clock. The adapters leave it nil.
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
		repeat := n < maxAttempts && mayRepeat(c, res)
		if m := r.maxWait(ctx); out.Wait > m {
			if out.Asked {
				// The server asked to be left alone longer than a call may
				// wait: the caller comes back then.
				out.Err = &WaitError{Wait: out.Wait, Until: r.now().Add(out.Wait), Max: m}
				return out
			}
			// The backoff's own pace is the client's to choose: it is
			// shortened to the longest wait allowed, never a reason to
			// give up (one slow ticket must not put a whole side off).
			out.Wait = m
		}
		if !repeat {
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
