package refserver

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
)

// Defaults of [Options].
const (
	DefaultIdempotencyTTL  = 24 * time.Hour
	DefaultMaxRequestBytes = 1 << 20 // 1 MiB
	DefaultMaxMessageBytes = 64 << 10
	DefaultTokenRequests   = 10
	DefaultTokenWindow     = time.Minute
	// TokenLifetime is the lifetime of an access token (expires_in 3600).
	TokenLifetime = time.Hour
)

// Options configure a [Server]. The zero value is usable: every field has a
// default, named in its comment.
type Options struct {
	// Now is the server's clock; nil means time.Now. Every timestamp the
	// server writes and every expiry it checks (keys, tokens, idempotency
	// keys, rate limit windows) reads it. Kept because the simulator of
	// package sync, internal/looptest and the clients' tests move it over
	// real sockets, where a testing/synctest bubble's clock cannot
	// advance.
	Now func() time.Time
	// Sleep waits d or until ctx ends; nil means a real timer. Injected
	// latency and slow bodies use it, so tests pass a function that returns
	// at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// NewID returns a new identifier for tickets and messages; nil means a
	// random UUID.
	NewID func() string
	// Logger receives the server's log lines; nil discards them.
	Logger *slog.Logger
	// ConsoleToken guards the HTTP console API under /console/v1. Empty
	// means a random one, readable with [Server.ConsoleToken].
	ConsoleToken string
	// IdempotencyTTL is how long an Idempotency-Key is remembered; zero
	// means 24 h.
	IdempotencyTTL time.Duration
	// MaxRequestBytes limits every request body; zero means 1 MiB. A larger
	// body gets 400 bad_request.
	MaxRequestBytes int64
	// MaxMessageBytes limits the body text of a message posted through the
	// API; zero means 64 KiB. A longer text gets 400 bad_request.
	MaxMessageBytes int
	// TokenRateLimit limits POST /api-auth/token per client address; the
	// zero value means the spec's 10 per minute. Requests < 0 removes the
	// limit.
	TokenRateLimit RateLimit
	// TicketRateLimit limits the ticket endpoints per API key; the zero
	// value means no limit (the spec shows none).
	TicketRateLimit RateLimit
	// Faults are injected into the public API and the token endpoints from
	// the start; see [Server.SetFaults].
	Faults Faults
	// MessagesKeepUpdatedAt makes a new message leave its ticket's
	// updated_at as it is. The spec does not promise that a message moves
	// it; clients that must not rely on it are tested with this set.
	MessagesKeepUpdatedAt bool
}

// RateLimit allows Requests requests in any sliding Window. A request over
// the limit gets 429 rate_limited with Retry-After, the whole seconds until
// a slot frees, and is not counted itself.
type RateLimit struct {
	Requests int
	Window   time.Duration
}

func (o Options) withDefaults() (Options, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = realSleep
	}
	if o.NewID == nil {
		o.NewID = uuid.NewString
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.IdempotencyTTL == 0 {
		o.IdempotencyTTL = DefaultIdempotencyTTL
	}
	if o.IdempotencyTTL < 0 {
		return o, fmt.Errorf("check options: IdempotencyTTL is %s; want a positive duration", o.IdempotencyTTL)
	}
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.MaxRequestBytes < 0 {
		return o, fmt.Errorf("check options: MaxRequestBytes is %d; want a positive size", o.MaxRequestBytes)
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.MaxMessageBytes < 0 {
		return o, fmt.Errorf("check options: MaxMessageBytes is %d; want a positive size", o.MaxMessageBytes)
	}
	if o.TokenRateLimit == (RateLimit{}) {
		o.TokenRateLimit = RateLimit{Requests: DefaultTokenRequests, Window: DefaultTokenWindow}
	}
	if o.TokenRateLimit.Requests > 0 && o.TokenRateLimit.Window <= 0 {
		return o, fmt.Errorf("check options: TokenRateLimit.Window is %s; want a positive duration", o.TokenRateLimit.Window)
	}
	if o.TicketRateLimit.Requests > 0 && o.TicketRateLimit.Window <= 0 {
		return o, fmt.Errorf("check options: TicketRateLimit.Window is %s; want a positive duration", o.TicketRateLimit.Window)
	}
	if err := o.Faults.validate(); err != nil {
		return o, fmt.Errorf("check options: %w", err)
	}
	return o, nil
}

func realSleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
