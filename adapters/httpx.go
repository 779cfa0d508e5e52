package adapters

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/internal/redact"
)

// ErrAuth marks an answer of 401 or 403: the helpdesk refused the
// credentials the adapter was configured with (or they lack a right). The
// error never contains the credentials themselves. Repeating the request
// cannot help until the configuration changes.
var ErrAuth = errors.New("helpdesk refused the credentials")

// httpSentinel is the error an answer with status matches: 400, 413 and 422
// are [ErrInvalid], 401 and 403 [ErrAuth], 404 and 410 [ErrNotFound].
func httpSentinel(status int) error {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return ErrInvalid
	case http.StatusUnauthorized, http.StatusForbidden:
		return ErrAuth
	case http.StatusNotFound, http.StatusGone:
		return ErrNotFound
	}
	return nil
}

// HTTPError is an HTTP exchange with a helpdesk that did not succeed. It
// holds no credential: the URL has no userinfo and secret query values are
// replaced, the body snippet and the transport error text are scrubbed of
// the client's secrets, and no request header is kept.
//
// It matches, with errors.Is, [ErrInvalid] (400, 413, 422), [ErrAuth] (401,
// 403), [ErrNotFound] (404, 410), or the transport error (context.Canceled,
// a *net.OpError, ...).
type HTTPError struct {
	Method     string
	URL        string        // as redact.URL prints it: no password, query values masked
	StatusCode int           // 0 when no answer arrived
	Body       string        // a short snippet of the answer's body
	RetryAfter time.Duration // the wait the helpdesk asked for, when it did
	Attempts   int           // how many times the request was sent
	Class      httpretry.Class
	Err        error // the sentinel or transport error; nil for other statuses
	// PutOff is set when the helpdesk asked for a wait longer than the
	// client's MaxWait: the caller comes back after PutOff.Until.
	PutOff *httpretry.WaitError

	detail string // Err's text, scrubbed
}

func (e *HTTPError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: ", e.Method, e.URL)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, "HTTP %d", e.StatusCode)
		if e.detail != "" {
			fmt.Fprintf(&b, " (%s)", e.detail)
		}
		if e.Body != "" {
			fmt.Fprintf(&b, ": %q", e.Body)
		}
	} else {
		b.WriteString(e.detail)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, "; retry after %s", e.RetryAfter)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, "; %d attempts", e.Attempts)
	}
	return b.String()
}

// Unwrap returns the sentinel or transport error, and PutOff when set.
func (e *HTTPError) Unwrap() []error {
	var errs []error
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	if e.PutOff != nil {
		errs = append(errs, e.PutOff)
	}
	return errs
}

// HTTPRequest is one request for [HTTPClient.Do]. The body is bytes so that
// every retry sends it again unchanged.
type HTTPRequest struct {
	Method string
	URL    string
	Header http.Header // request headers besides the client's own; never copied into errors
	Body   []byte      // nil: no body
	// Idempotent says that repeating the request cannot do its work twice
	// (a POST that searches, or one carrying an idempotency key). GET,
	// HEAD, OPTIONS, PUT and DELETE are idempotent anyway. A request that
	// is not is repeated only when it certainly did not take effect: a 429,
	// or a connection that could not be opened.
	Idempotent bool
	// Once marks a request that is not idempotent although its method is
	// (a PUT that adds a comment): it is repeated only when it certainly
	// did not take effect, like a POST. It wins over Idempotent.
	Once bool
	// Accept lists statuses besides 2xx that Do returns as an answer rather
	// than an error, e.g. 404 for a search that found nothing.
	Accept []int
	// Op names what the adapter was doing, for the log ("create ticket").
	Op string
}

// HTTPResponse is the answer Do returns: the status, the headers and the
// whole body (at most [HTTPClient.MaxBody] bytes).
type HTTPResponse struct {
	StatusCode int
	Header     http.Header
	Body       []byte
}

// Defaults of [HTTPClient].
const (
	DefaultHTTPAttempts = 4
	DefaultHTTPMaxWait  = time.Minute
	DefaultHTTPMaxBody  = 8 << 20
	DefaultHTTPTimeout  = time.Minute
)

// HTTPClient sends requests to a helpdesk with the daemon's one retry
// policy (package internal/httpretry, shared with the API client):
// retryable answers are repeated after the backoff delay, or after the wait
// the helpdesk asked for with Retry-After on a 429 or 503, or after what the
// adapter's Wait hook reads from its vendor's rate-limit headers. The
// context bounds every attempt and every wait.
//
// The zero value is usable. An HTTPClient is safe for concurrent use when
// its hooks are; do not change its fields once it is in use.
type HTTPClient struct {
	// HTTP sends the requests; nil means a client with a timeout of
	// [DefaultHTTPTimeout] per attempt. Do follows no redirect, whatever
	// the client's CheckRedirect: a redirect is a permanent error naming
	// the Location (httpretry.ErrRedirect), so that credentials go only to
	// the configured address. The daemon's policy (the request slots, the
	// lease guard) is in its transport (see [Deps.HTTP]): each attempt
	// holds a slot while it is sent and its answer read, never while Do
	// waits to retry, and an attempt the guard refuses is neither sent nor
	// repeated.
	HTTP *http.Client
	// Backoff is the wait between attempts; the zero value is the daemon's
	// default.
	Backoff httpretry.Backoff
	// MaxAttempts caps how often one request is sent; 0 means
	// [DefaultHTTPAttempts], 1 disables retries.
	MaxAttempts int
	// MaxWait is the longest wait Do sits out before a retry; 0 means
	// [DefaultHTTPMaxWait], and a context carrying a shorter one
	// (httpretry.WithMaxWait) lowers it. When the helpdesk asks for
	// longer, Do returns at once a retryable error whose RetryAfter says
	// how long and which matches httpretry.ErrWaitTooLong (its
	// httpretry.WaitError says until when), and the engine puts off its
	// calls to the helpdesk until then.
	MaxWait time.Duration
	// MaxBody caps how much of an answer's body is read; 0 means
	// [DefaultHTTPMaxBody]. A longer body is an error.
	MaxBody int64
	// Header is sent with every request (User-Agent, Accept); it must not
	// hold credentials, set those in Authorize.
	Header http.Header
	// Authorize adds the credentials to each attempt's request.
	Authorize func(r *http.Request)
	// Secrets are strings that must never appear in an error (tokens,
	// passwords); they are replaced wherever the helpdesk's answer echoes
	// them. The values Authorize sets are scrubbed without being listed.
	Secrets []string
	// Wait is the adapter's hook for its vendor's rate-limit headers. It is
	// asked about every retryable answer; when it returns ok, its wait is
	// used instead of Retry-After and the backoff.
	Wait func(resp *HTTPResponse, now time.Time) (wait time.Duration, ok bool)
	// Sleep waits between attempts; nil means a real timer.
	// Tests inject one that records the wait and returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger gets one warning per retry; nil discards them.
	Logger *slog.Logger
}

var defaultHTTP = &http.Client{Timeout: DefaultHTTPTimeout, CheckRedirect: httpretry.RefuseRedirect}

// Do sends req, repeating it while the answer is retryable and attempts
// are left (see [HTTPRequest.Idempotent] for requests that are not safe to
// repeat). It returns the answer when its status is 2xx or listed in
// req.Accept, and an [*HTTPError] otherwise.
func (c *HTTPClient) Do(ctx context.Context, req HTTPRequest) (*HTTPResponse, error) {
	var (
		resp    *HTTPResponse // the last attempt's answer
		secrets []string      // what Authorize put on the last attempt
	)
	r := httpretry.Retrier{
		Backoff:     c.Backoff,
		MaxAttempts: c.MaxAttempts,
		MaxWait:     c.maxWait(),
		Sleep:       c.Sleep,
	}
	if c.Wait != nil {
		r.RetryWait = func(_ httpretry.Result, now time.Time) (time.Duration, bool) {
			if resp == nil {
				return 0, false
			}
			return c.Wait(resp, now)
		}
	}
	if c.Logger != nil {
		r.OnRetry = func(ctx context.Context, _ httpretry.Call, attempt int, res httpretry.Result, wait time.Duration) {
			herr := c.newError(req, resp, res.Err, attempt, secrets)
			c.Logger.LogAttrs(ctx, slog.LevelWarn, "helpdesk request failed, retrying",
				slog.String("op", req.Op), slog.String("method", herr.Method), slog.String("url", herr.URL),
				slog.Int("status", res.Status), slog.Int("attempt", attempt), slog.Duration("wait", wait),
				slog.Any("error", herr))
		}
	}
	idempotent := !req.Once && (req.Idempotent || httpretry.IdempotentMethod(req.Method))
	out := r.Do(ctx, httpretry.Call{Op: req.Op, Idempotent: idempotent}, func(ctx context.Context, _ int) httpretry.Result {
		var res httpretry.Result
		resp, secrets, res = c.once(ctx, req)
		if res.Err == nil && slices.Contains(req.Accept, res.Status) {
			res.Class = httpretry.Success
		}
		return res
	})
	if out.Attempts == 0 {
		return nil, fmt.Errorf("%s %s: %w", c.method(req), redact.URL(req.URL), out.Err)
	}
	if out.Class == httpretry.Success && out.Err == nil {
		return resp, nil
	}
	herr := c.newError(req, resp, out.Result.Err, out.Attempts, secrets)
	herr.Class = out.Class
	if out.Asked {
		herr.RetryAfter = out.Wait
	}
	if errors.As(out.Err, &herr.PutOff) {
		herr.RetryAfter = out.Wait
		return nil, herr
	}
	if out.Err != nil {
		return nil, fmt.Errorf("wait to retry: %w (last error: %w)", out.Err, herr)
	}
	return nil, herr
}

// JSON sends req with in encoded as its JSON body (unless in is nil) and
// decodes a 2xx answer's body into out (unless out is nil or the body is
// empty). It sets Content-Type and Accept to application/json.
func (c *HTTPClient) JSON(ctx context.Context, req HTTPRequest, in, out any) (*HTTPResponse, error) {
	req.Header = req.Header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("encode request of %s %s: %w", req.Method, redact.URL(req.URL), err)
		}
		req.Body = b
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	resp, err := c.Do(ctx, req)
	if err != nil {
		return nil, err
	}
	if out != nil && resp.StatusCode >= 200 && resp.StatusCode < 300 && len(bytes.TrimSpace(resp.Body)) > 0 {
		if err := json.Unmarshal(resp.Body, out); err != nil {
			return resp, fmt.Errorf("decode answer of %s %s (HTTP %d): %w", req.Method, redact.URL(req.URL), resp.StatusCode, err)
		}
	}
	return resp, nil
}

// once sends one attempt. It returns the secrets Authorize put on the
// request so that the error can be scrubbed of them.
func (c *HTTPClient) once(ctx context.Context, req HTTPRequest) (*HTTPResponse, []string, httpretry.Result) {
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	r, err := http.NewRequestWithContext(ctx, c.method(req), req.URL, body)
	if err != nil {
		// A URL that does not parse: no repeat can mend it.
		return nil, nil, httpretry.Result{Err: fmt.Errorf("build request: %w", unwrapURLError(err)), Class: httpretry.Permanent}
	}
	for k, vs := range c.Header {
		r.Header[k] = slices.Clone(vs)
	}
	for k, vs := range req.Header {
		r.Header[k] = slices.Clone(vs)
	}
	if c.Authorize != nil {
		c.Authorize(r)
	}
	secrets := requestSecrets(r)
	hc := defaultHTTP
	if c.HTTP != nil {
		hc = httpretry.NoRedirects(c.HTTP)
	}
	res, err := hc.Do(r)
	if err != nil {
		if errors.Is(err, httpretry.ErrRefused) {
			// The transport's guard (see package internal/httpx): nothing
			// was sent, and its error says why, even when the guard ended
			// ctx as it refused.
			return nil, secrets, httpretry.Result{Err: unwrapURLError(err), Class: httpretry.Permanent}
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, secrets, httpretry.Result{Err: ctxErr}
		}
		return nil, secrets, httpretry.Result{Err: unwrapURLError(err)}
	}
	defer res.Body.Close()
	limit := c.MaxBody
	if limit <= 0 {
		limit = DefaultHTTPMaxBody
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, secrets, httpretry.Result{Err: ctxErr}
		}
		return nil, secrets, httpretry.Result{Err: fmt.Errorf("read answer: %w", err)}
	}
	if int64(len(b)) > limit {
		// An answer over MaxBody will be as long when asked again.
		err := fmt.Errorf("answer (HTTP %d) longer than the limit of %d bytes", res.StatusCode, limit)
		return nil, secrets, httpretry.Result{Err: err, Class: httpretry.Permanent}
	}
	resp := &HTTPResponse{StatusCode: res.StatusCode, Header: res.Header, Body: b}
	return resp, secrets, httpretry.Result{Status: res.StatusCode, Header: res.Header}
}

// method is req's method in upper case; empty means GET.
func (c *HTTPClient) method(req HTTPRequest) string {
	if req.Method == "" {
		return http.MethodGet
	}
	return strings.ToUpper(req.Method)
}

func (c *HTTPClient) maxWait() time.Duration {
	if c.MaxWait <= 0 {
		return DefaultHTTPMaxWait
	}
	return c.MaxWait
}

func (c *HTTPClient) newError(req HTTPRequest, resp *HTTPResponse, err error, attempts int, secrets []string) *HTTPError {
	secrets = append(secrets, c.Secrets...)
	e := &HTTPError{Method: c.method(req), URL: redact.URL(req.URL), Attempts: attempts}
	if err != nil {
		e.Err = err
		e.detail = scrub(err.Error(), secrets)
		return e
	}
	e.StatusCode = resp.StatusCode
	e.Err = httpSentinel(resp.StatusCode)
	if e.Err != nil {
		e.detail = e.Err.Error()
	}
	// Scrub the whole body first: a secret the cut went through would
	// leave its first part in the snippet, where scrub no longer finds it.
	e.Body = snippet(scrub(string(resp.Body), secrets))
	return e
}

// requestSecrets collects what Authorize (or the caller) put on r that is a
// credential: the Authorization header, its token part, a basic-auth
// password and the URL's password.
func requestSecrets(r *http.Request) []string {
	var out []string
	for _, h := range []string{"Authorization", "Proxy-Authorization"} {
		for _, v := range r.Header.Values(h) {
			out = append(out, v)
			if _, tok, ok := strings.Cut(v, " "); ok {
				out = append(out, strings.TrimSpace(tok))
			}
		}
	}
	if _, pass, ok := r.BasicAuth(); ok {
		out = append(out, pass)
	}
	if r.URL != nil && r.URL.User != nil {
		if pass, ok := r.URL.User.Password(); ok {
			out = append(out, pass)
		}
	}
	return out
}

// scrub replaces every secret in s.
func scrub(s string, secrets []string) string {
	for _, sec := range secrets {
		if len(sec) >= 3 {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return s
}

const snippetRunes = 200

// snippet is the start of an answer's body on one line, at most
// snippetRunes runes, valid UTF-8. The body must be scrubbed already.
func snippet(s string) string {
	if len(s) > 4*snippetRunes {
		s = s[:4*snippetRunes]
	}
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
	if utf8.RuneCountInString(s) > snippetRunes {
		s = string([]rune(s)[:snippetRunes]) + "…"
	}
	return s
}

// unwrapURLError drops the *url.Error around a transport error: its text
// carries the full URL, query secrets included.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
