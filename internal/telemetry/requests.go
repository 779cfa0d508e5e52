package telemetry

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
)

// CountRequests returns base wrapped so that every request is counted by
// endpoint template, method and status code.
func (t *Telemetry) CountRequests(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &countingTransport{base: base, m: &t.m}
}

// countingTransport counts the requests it carries.
type countingTransport struct {
	base http.RoundTripper
	m    *metrics
}

func (ct *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ep := endpointOf(req.URL.EscapedPath())
	method := req.Method
	if method != http.MethodGet && method != http.MethodPost {
		method = "other"
	}
	start := time.Now()
	resp, err := ct.base.RoundTrip(req)
	ct.m.apiDuration.WithLabelValues(ep).Observe(time.Since(start).Seconds())
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	ct.m.apiRequests.WithLabelValues(ep, method, code).Inc()
	return resp, err
}

// endpointOf maps a request path to its template: ids never become labels.
// The API may sit below a path prefix, so the known parts are found from
// the right.
func endpointOf(p string) string {
	switch {
	case strings.HasSuffix(p, guestapi.TokenPath):
		return guestapi.TokenPath
	case strings.HasSuffix(p, guestapi.VerifyPath):
		return guestapi.VerifyPath
	}
	i := strings.LastIndex(p, guestapi.TicketsPrefix+"/tickets")
	if i < 0 {
		return "other"
	}
	rest := p[i+len(guestapi.TicketsPrefix+"/tickets"):]
	if rest == "" || rest == "/" {
		return "/tickets"
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] != "":
		return "/tickets/{id}"
	case len(parts) == 2 && parts[0] != "" && (parts[1] == "messages" || parts[1] == "status"):
		return "/tickets/{id}/" + parts[1]
	}
	return "other"
}
