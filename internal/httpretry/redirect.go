package httpretry

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/ticketbridge/ticketbridge/internal/redact"
)

// ErrRedirect is matched by the error of a request the server answered
// with a redirect. The daemon follows none: a redirect would carry the
// request again, credentials included (the API key in the body of the
// token exchange, which Go re-sends on a 307 or 308 even to another host;
// the Authorization header to the same host), somewhere the operator did
// not configure. A redirect is [Permanent].
var ErrRedirect = errors.New("the server answered with a redirect, which is not followed")

// RefuseRedirect is the CheckRedirect of every HTTP client of the daemon
// (the API client and the helpdesk clients): it refuses to follow, with
// an error naming the status and the Location (fit to print, see
// package redact) and matching [ErrRedirect].
func RefuseRedirect(req *http.Request, _ []*http.Request) error {
	status := 0
	if req.Response != nil {
		status = req.Response.StatusCode
	}
	return fmt.Errorf("refuse redirect (HTTP %d) to %s: %w; configure the address the server redirects to, if it is the right one",
		status, redact.Parsed(req.URL), ErrRedirect)
}

// NoRedirects returns a shallow copy of hc that refuses every redirect
// ([RefuseRedirect]); a nil hc stays nil. Copying keeps the caller's
// client (its transport, timeout and instrumentation) as it is.
func NoRedirects(hc *http.Client) *http.Client {
	if hc == nil {
		return nil
	}
	c := *hc
	c.CheckRedirect = RefuseRedirect
	return &c
}
