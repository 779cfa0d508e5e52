package refserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
)

// Paths of the API, below {functions_url}.
const (
	APIPrefix    = "/ops-public-api/"
	BasePath     = "/ops-public-api/v1" // {base_url} relative to {functions_url}
	TokenPath    = "/api-auth/token"
	VerifyPath   = "/api-auth/verify"
	ConsolePath  = "/console/v1"
	jsonType     = "application/json"
	maxIdemKey   = 255
	maxAuthorLen = 255
)

// Server is the reference Guest Requests API v1 over an in-memory store. It
// is an http.Handler and safe for concurrent use.
type Server struct {
	opts         Options
	log          *slog.Logger
	consoleToken string

	st store

	tokenLimiter  *limiter
	ticketLimiter *limiter
	faults        faultState
	stats         statsState
}

// New returns a server with no organisations. It panics when opts are
// invalid (a negative limit or TTL, fault rates outside 0..1), as
// net/http/httptest does on a bad setup: the options are the caller's code.
func New(opts Options) *Server {
	o, err := opts.withDefaults()
	if err != nil {
		panic("refserver: " + err.Error())
	}
	s := &Server{opts: o, log: o.Logger, consoleToken: o.ConsoleToken, st: newStore()}
	s.st.keepUpdated = o.MessagesKeepUpdatedAt
	if s.consoleToken == "" {
		s.consoleToken = newSecret("console_")
	}
	if o.TokenRateLimit.Requests > 0 {
		s.tokenLimiter = newLimiter(o.TokenRateLimit)
	}
	if o.TicketRateLimit.Requests > 0 {
		s.ticketLimiter = newLimiter(o.TicketRateLimit)
	}
	s.faults.set(o.Faults)
	s.stats.init()
	return s
}

// ConsoleToken returns the token that guards /console/v1.
func (s *Server) ConsoleToken() string { return s.consoleToken }

// response is a complete answer, built under the store's lock and written
// after it (slowly, when a fault says so).
type response struct {
	status     int
	body       []byte
	retryAfter int    // seconds; 0: no header
	allow      string // 405: the Allow header
}

func jsonResponse(status int, v any) response {
	b, err := json.Marshal(v)
	if err != nil {
		return errorResponse(http.StatusInternalServerError, guestapi.CodeInternal, "encode answer: "+err.Error())
	}
	return response{status: status, body: append(b, '\n')}
}

func errorResponse(status int, code, msg string) response {
	return jsonResponse(status, guestapi.ErrorBody{Error: code, Message: msg})
}

func badRequest(format string, args ...any) response {
	return errorResponse(http.StatusBadRequest, guestapi.CodeBadRequest, fmt.Sprintf(format, args...))
}

func notFound(msg string) response {
	return errorResponse(http.StatusNotFound, guestapi.CodeNotFound, msg)
}

func methodNotAllowed(method, allow string) response {
	r := errorResponse(http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("method %s is not allowed here; use %s", method, allow))
	r.allow = allow
	return r
}

func unauthorized(msg string) response {
	return errorResponse(http.StatusUnauthorized, guestapi.CodeUnauthorized, msg)
}

func forbidden(need string) response {
	return jsonResponse(http.StatusForbidden, guestapi.ErrorBody{Error: guestapi.CodeForbidden, Need: need,
		Message: "the key lacks the right " + need})
}

func rateLimited(wait time.Duration, msg string) response {
	secs := int((wait + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	r := errorResponse(http.StatusTooManyRequests, guestapi.CodeRateLimited, fmt.Sprintf("%s; retry after %d s", msg, secs))
	r.retryAfter = secs
	return r
}

func (r response) writeHeader(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", jsonType)
	h.Set("Content-Length", strconv.Itoa(len(r.body)))
	h.Set("Cache-Control", "no-store")
	if r.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(r.retryAfter))
	}
	if r.allow != "" {
		h.Set("Allow", r.allow)
	}
	w.WriteHeader(r.status)
}

func (r response) write(w http.ResponseWriter) {
	r.writeHeader(w)
	_, _ = w.Write(r.body)
}

// ServeHTTP answers the public API ({base_url} = /ops-public-api/v1), the
// token endpoints (/api-auth/token, /api-auth/verify) and the console API
// (/console/v1).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &recorder{ResponseWriter: w}
	route := routeOf(r)
	start := s.nowUTC()
	defer func() {
		if v := recover(); v != nil {
			s.stats.count(route, 0, r, start)
			panic(v)
		}
		s.stats.count(route, rec.status, r, start)
	}()
	path := r.URL.Path
	switch {
	case path == ConsolePath || strings.HasPrefix(path, ConsolePath+"/"):
		s.serveConsole(rec, r)
	case strings.HasPrefix(path, APIPrefix) || path == TokenPath || path == VerifyPath:
		if hook := s.faults.hook(); hook != nil {
			hook(rec, r, http.HandlerFunc(s.servePublicFaulty))
			return
		}
		s.servePublicFaulty(rec, r)
	default:
		notFound(fmt.Sprintf("no endpoint at %s; tickets are under %s/tickets", path, BasePath)).write(rec)
	}
}

// readBody reads the request body up to the configured limit.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *response) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxRequestBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			resp := badRequest("request body is larger than the limit of %d bytes", s.opts.MaxRequestBytes)
			return nil, &resp
		}
		resp := badRequest("read request body: %v", err)
		return nil, &resp
	}
	return b, nil
}

// checkContentType refuses a body declared as something other than JSON. A
// missing Content-Type is accepted.
func checkContentType(r *http.Request, body []byte) *response {
	ct := r.Header.Get("Content-Type")
	if ct == "" || len(body) == 0 {
		return nil
	}
	mt, _, _ := strings.Cut(ct, ";")
	if !strings.EqualFold(strings.TrimSpace(mt), jsonType) {
		resp := badRequest("Content-Type %q is not accepted; send application/json", ct)
		return &resp
	}
	return nil
}

// bearer returns the credential of an "Authorization: Bearer X" header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, cred, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	cred = strings.TrimSpace(cred)
	return cred, cred != ""
}

// recorder remembers the status code written, for the counters.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flush, hijack).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
