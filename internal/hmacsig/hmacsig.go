// Package hmacsig signs and verifies HTTP bodies with HMAC-SHA256 the way
// every signed request of ticketbridge is signed: the webhook helpdesk's
// deliveries and events, and the notifications' generic JSON webhook. The
// signature header holds "sha256=" and the lowercase hex of
// HMAC-SHA256(secret, "<unix seconds>.<raw body>"); the timestamp header
// holds the seconds, and a verifier refuses a timestamp further than a
// tolerance from its clock.
//
// It is plumbing: the standard library only. Errors never contain the
// secret or the expected signature.
package hmacsig

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers of a signed request.
const (
	HeaderTimestamp = "X-Ticketbridge-Timestamp" // unix seconds of the attempt
	HeaderSignature = "X-Ticketbridge-Signature" // "sha256=" + hex HMAC-SHA256 of "<timestamp>.<raw body>"
)

// SignaturePrefix starts every signature header value.
const SignaturePrefix = "sha256="

// DefaultTolerance is how far a request's timestamp may be from the
// verifier's clock, either way, before it is refused as stale.
const DefaultTolerance = 5 * time.Minute

// Errors of [Verify]. Both mean the request must be answered 401.
var (
	// ErrBadSignature: the signature header is missing or malformed, or it
	// does not match the body and timestamp under the shared secret.
	ErrBadSignature = errors.New("bad signature")
	// ErrStale: the timestamp is missing, unreadable, or further from now
	// than the tolerance (a replayed old request, or a clock far off).
	ErrStale = errors.New("stale timestamp")
)

// Sign returns the signature header value for body sent at timestamp (unix
// seconds) under secret: "sha256=" followed by the lowercase hex of
// HMAC-SHA256(secret, "<timestamp>.<body>").
func Sign(secret string, timestamp int64, body []byte) string {
	return SignaturePrefix + hex.EncodeToString(mac(secret, timestamp, body))
}

func mac(secret string, timestamp int64, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(strconv.AppendInt(nil, timestamp, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks a request's timestamp and signature header values against
// body under secret. The timestamp must be within tolerance of now, in
// either direction (zero tolerance means [DefaultTolerance]); the signature
// is compared in constant time. The error wraps [ErrStale] or
// [ErrBadSignature] and never contains the secret or the expected
// signature.
func Verify(secret, timestamp, signature string, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	ts, err := strconv.ParseInt(strings.TrimSpace(timestamp), 10, 64)
	if err != nil {
		if strings.TrimSpace(timestamp) == "" {
			return fmt.Errorf("verify request: %w: %s is missing", ErrStale, HeaderTimestamp)
		}
		return fmt.Errorf("verify request: %w: %s is not unix seconds", ErrStale, HeaderTimestamp)
	}
	// Compare in seconds, against bounds that cannot overflow whatever the
	// timestamp.
	n, tol := now.Unix(), int64(tolerance/time.Second)
	if ts < n-tol || ts > n+tol {
		return fmt.Errorf("verify request: %w: %s is %s, more than the tolerance of %s", ErrStale, HeaderTimestamp, ageText(ts, n), tolerance)
	}
	sig := strings.TrimSpace(signature)
	if sig == "" {
		return fmt.Errorf("verify request: %w: %s is missing", ErrBadSignature, HeaderSignature)
	}
	hexSig, ok := strings.CutPrefix(sig, SignaturePrefix)
	if !ok {
		return fmt.Errorf("verify request: %w: %s does not start with %q", ErrBadSignature, HeaderSignature, SignaturePrefix)
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("verify request: %w: %s is not %d hex bytes", ErrBadSignature, HeaderSignature, sha256.Size)
	}
	if !hmac.Equal(got, mac(secret, ts, body)) {
		return fmt.Errorf("verify request: %w: it does not match the body and timestamp under the shared secret", ErrBadSignature)
	}
	return nil
}

func ageText(ts, now int64) string {
	const day = int64(24 * time.Hour / time.Second)
	switch {
	case ts > now+day:
		return "more than a day ahead"
	case ts > now:
		return (time.Duration(ts-now) * time.Second).String() + " ahead"
	case ts < now-day:
		return "more than a day behind"
	}
	return (time.Duration(now-ts) * time.Second).String() + " behind"
}

// SetSignature sets the timestamp and signature headers of a request that
// sends body at now.
func SetSignature(h http.Header, secret string, now time.Time, body []byte) {
	ts := now.Unix()
	h.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	h.Set(HeaderSignature, Sign(secret, ts, body))
}

// ErrTooLarge is returned by [ReadVerified] for a body over its limit
// (answer 413).
var ErrTooLarge = errors.New("request body too large")

// ReadVerified reads r's body, at most limit bytes, and verifies its
// signature headers with [Verify]. It returns the body only when the
// signature holds. A body over limit gives an error wrapping [ErrTooLarge].
func ReadVerified(r *http.Request, secret string, now time.Time, tolerance time.Duration, limit int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("read request body: %w: more than %d bytes", ErrTooLarge, limit)
	}
	if err := Verify(secret, r.Header.Get(HeaderTimestamp), r.Header.Get(HeaderSignature), body, now, tolerance); err != nil {
		return nil, err
	}
	return body, nil
}
