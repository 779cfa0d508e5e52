// Package httpretry is the daemon's one policy for repeating HTTP requests:
// it classifies each exchange (success, retryable, permanent, refused
// credentials), paces the repeats with a capped, jittered exponential
// backoff, and honours the Retry-After a server sends. Both the Guest
// Requests API client (package guestapi) and the helpdesk adapters' client
// (adapters.HTTPClient) run their attempts through [Retrier.Do], so an
// answer means the same on either side.
//
// It also holds what every client of the daemon shares besides the loop:
// no redirect is followed ([RefuseRedirect], [ErrRedirect]), and no wait
// is longer than [DefaultMaxWait] or the caller's [WithMaxWait]; a server
// asking for longer gets a [*WaitError] saying until when.
//
// It is not an HTTP client: callers build, send and read their requests
// and hand the loop what each attempt gave. Errors, logging and secrets
// stay with the callers.
package httpretry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// ErrRefused is matched by the error of a request the client's own
// transport refused to send: the lease guard of package internal/httpx,
// once a replica's lease of the hotel ended. Nothing was sent, and a
// repeat is refused the same way: it is [Permanent].
var ErrRefused = errors.New("request refused before it was sent")

// Class is what one HTTP exchange means for the request that made it.
type Class int

// The classes of [Classify].
const (
	// Success is a 2xx answer.
	Success Class = iota + 1
	// Retryable may succeed when repeated: 408, 425, 429, every 5xx, a
	// connection that failed or was reset, an attempt that timed out.
	Retryable
	// Permanent cannot succeed when repeated unchanged: every other answer,
	// a redirect ([ErrRedirect]), a certificate the client does not trust,
	// a request its own transport refused ([ErrRefused]), and the caller's
	// context ending (the caller gave up).
	Permanent
	// Auth is a 401 or 403: the credentials were refused or lack a right.
	// Repeating cannot help until the configuration changes.
	Auth
)

func (c Class) String() string {
	switch c {
	case Success:
		return "success"
	case Retryable:
		return "retryable"
	case Permanent:
		return "permanent"
	case Auth:
		return "auth"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Classify classifies one exchange: status is the answer's status code and
// err the error of http.Client.Do or of reading the answer (status is
// ignored when err is not nil). ctx is the caller's context: once it has
// ended, every error is Permanent, while a timeout of the attempt alone
// (http.Client.Timeout) is Retryable.
func Classify(ctx context.Context, status int, err error) Class {
	if err == nil {
		return StatusClass(status)
	}
	var (
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		verify    *tls.CertificateVerificationError
	)
	switch {
	case ctx.Err() != nil, errors.Is(err, context.Canceled):
		return Permanent
	case errors.Is(err, ErrRefused):
		// The client itself may not send it (its lease ended): asking
		// again is refused again.
		return Permanent
	case errors.Is(err, ErrRedirect):
		// The server sends the client elsewhere: it answers the same
		// way when asked again.
		return Permanent
	case errors.As(err, &verify), errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid):
		// An untrusted, expired or misnamed certificate does not mend
		// itself within a retry loop.
		return Permanent
	}
	return Retryable
}

// StatusClass classifies an answer by its status code alone; see [Class].
func StatusClass(status int) Class {
	switch {
	case status >= 200 && status < 300:
		return Success
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return Auth
	case status == http.StatusRequestTimeout, status == http.StatusTooEarly, status == http.StatusTooManyRequests,
		status >= 500 && status < 600:
		return Retryable
	}
	return Permanent
}

// IdempotentMethod reports whether repeating a request of this method
// cannot do its work twice: GET, HEAD, OPTIONS, PUT and DELETE (an empty
// method is GET).
func IdempotentMethod(method string) bool {
	switch strings.ToUpper(method) {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// NotSent reports whether a transport error certainly happened before the
// request reached the server: the host could not be resolved or dialled.
func NotSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}
