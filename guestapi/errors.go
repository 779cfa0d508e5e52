package guestapi

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Error codes of part 7 of the spec, plus rate_limited for a 429 (the spec
// names the status, not a code).
const (
	CodeUnsupportedVersion = "unsupported_version"
	CodeBodyRequired       = "body_required"
	CodeInvalidStatus      = "invalid_status"
	CodeUnauthorized       = "unauthorized"
	CodeForbidden          = "forbidden"
	CodeNotFound           = "not_found"
	CodeInternal           = "internal_error"
	CodeRateLimited        = "rate_limited"
	CodeBadRequest         = "bad_request" // the reference server's code for other 400s
)

// Sentinels to match an [*Error] with errors.Is. An *Error matches the
// sentinel of its code, or, when the code is missing or unknown, the one of
// its HTTP status.
var (
	ErrUnsupportedVersion = errors.New("unsupported API version")
	ErrBodyRequired       = errors.New("message body required")
	ErrInvalidStatus      = errors.New("invalid status")
	ErrUnauthorized       = errors.New("unauthorized: the API key is missing, revoked, expired or unknown")
	ErrForbidden          = errors.New("forbidden: the API key lacks a right")
	ErrNotFound           = errors.New("not found")
	ErrRateLimited        = errors.New("rate limited")
	ErrInternal           = errors.New("server error")
)

// ErrorBody is the JSON error body of part 7: error carries the code, need
// and allowed appear where the table lists them. Message is the reference
// server's human-readable explanation; other fields may appear.
type ErrorBody struct {
	Error   string   `json:"error"`
	Need    string   `json:"need,omitempty"`
	Allowed []string `json:"allowed,omitempty"`
	Message string   `json:"message,omitempty"`
}

// Error is every error answer of the API: HTTP status, code, and the extra
// fields of the spec's error table. It never holds the API key.
type Error struct {
	StatusCode int           // HTTP status
	Code       string        // the body's error field; empty when the body was not JSON
	Need       string        // 403: the missing right
	Allowed    []string      // 400 invalid_status: the permitted values
	Message    string        // the body's message field, or a snippet of a non-JSON body
	RetryAfter time.Duration // 429: how long the server asked to wait
	Method     string        // request method
	Path       string        // request path, without query or host
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Method != "" {
		fmt.Fprintf(&b, "%s %s: ", e.Method, e.Path)
	}
	fmt.Fprintf(&b, "HTTP %d", e.StatusCode)
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
	}
	switch {
	case e.Need != "":
		fmt.Fprintf(&b, ": the API key needs the right %s", e.Need)
	case len(e.Allowed) > 0:
		fmt.Fprintf(&b, ": allowed values are %s", strings.Join(e.Allowed, ", "))
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	return b.String()
}

// Is matches the sentinel of e's code, else of its HTTP status.
func (e *Error) Is(target error) bool {
	return target == e.sentinel()
}

func (e *Error) sentinel() error {
	switch e.Code {
	case CodeUnsupportedVersion:
		return ErrUnsupportedVersion
	case CodeBodyRequired:
		return ErrBodyRequired
	case CodeInvalidStatus:
		return ErrInvalidStatus
	case CodeUnauthorized:
		return ErrUnauthorized
	case CodeForbidden:
		return ErrForbidden
	case CodeNotFound:
		return ErrNotFound
	case CodeRateLimited:
		return ErrRateLimited
	case CodeInternal:
		return ErrInternal
	}
	switch {
	case e.StatusCode == 401:
		return ErrUnauthorized
	case e.StatusCode == 403:
		return ErrForbidden
	case e.StatusCode == 404:
		return ErrNotFound
	case e.StatusCode == 429:
		return ErrRateLimited
	case e.StatusCode >= 500:
		return ErrInternal
	}
	return nil
}
