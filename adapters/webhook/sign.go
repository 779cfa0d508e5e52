package webhook

import (
	"net/http"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/hmacsig"
)

// Headers of every request in either direction. The delivery id and the
// event type are sent on outbound deliveries only; inbound events carry
// their id in the body. The signing itself is package internal/hmacsig's,
// shared with the notifications' signed webhook.
const (
	HeaderTimestamp = hmacsig.HeaderTimestamp   // unix seconds of the attempt
	HeaderSignature = hmacsig.HeaderSignature   // "sha256=" + hex HMAC-SHA256 of "<timestamp>.<raw body>"
	HeaderDelivery  = "X-Ticketbridge-Delivery" // UUID, the same for every retry of one event
	HeaderEvent     = "X-Ticketbridge-Event"    // the event type, as in the body's "type"
)

// SignaturePrefix starts every signature header value.
const SignaturePrefix = hmacsig.SignaturePrefix

// DefaultTolerance is how far a request's timestamp may be from the
// verifier's clock, either way, before it is refused as stale.
const DefaultTolerance = hmacsig.DefaultTolerance

// Errors of [Verify]. Both mean the request must be answered 401.
var (
	// ErrBadSignature: the signature header is missing or malformed, or it
	// does not match the body and timestamp under the shared secret.
	ErrBadSignature = hmacsig.ErrBadSignature
	// ErrStale: the timestamp is missing, unreadable, or further from now
	// than the tolerance (a replayed old request, or a clock far off).
	ErrStale = hmacsig.ErrStale
)

// ErrTooLarge is returned by [ReadVerified] for a body over its limit
// (answer 413).
var ErrTooLarge = hmacsig.ErrTooLarge

// Sign returns the signature header value for body sent at timestamp
// (unix seconds) under secret; see [hmacsig.Sign].
func Sign(secret string, timestamp int64, body []byte) string {
	return hmacsig.Sign(secret, timestamp, body)
}

// Verify checks a request's timestamp and signature header values against
// body under secret; see [hmacsig.Verify].
func Verify(secret, timestamp, signature string, body []byte, now time.Time, tolerance time.Duration) error {
	return hmacsig.Verify(secret, timestamp, signature, body, now, tolerance)
}

// SetSignature sets the timestamp and signature headers of a request that
// sends body at now.
func SetSignature(h http.Header, secret string, now time.Time, body []byte) {
	hmacsig.SetSignature(h, secret, now, body)
}

// ReadVerified reads r's body, at most limit bytes, and verifies its
// signature headers; see [hmacsig.ReadVerified].
func ReadVerified(r *http.Request, secret string, now time.Time, tolerance time.Duration, limit int64) ([]byte, error) {
	return hmacsig.ReadVerified(r, secret, now, tolerance, limit)
}
