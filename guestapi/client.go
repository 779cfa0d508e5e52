package guestapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/internal/redact"
)

// Paths below Config.BaseURL (the spec's {functions_url}).
const (
	TicketsPrefix = "/ops-public-api/v1"
	TokenPath     = "/api-auth/token"
	VerifyPath    = "/api-auth/verify"
)

// KeyPrefix starts every API key (part 2 of the spec).
const KeyPrefix = "rta_"

// Defaults of [Config].
const (
	DefaultMaxAttempts    = 4
	DefaultUserAgent      = "ticketbridge"
	DefaultRequestTimeout = 30 * time.Second
)

// Read limits: a success body larger than MaxBodySize is an error; of an
// error body at most MaxErrorBodySize bytes are read.
const (
	MaxBodySize      = 16 << 20
	MaxErrorBodySize = 64 << 10
)

// RateLimitWait is how long a 429 without a usable Retry-After header
// waits: the spec says "retry after one minute".
const RateLimitWait = time.Minute

// tokenRefreshMargin is how long before its expiry a cached access token is
// replaced (at most half its lifetime).
const tokenRefreshMargin = time.Minute

// ErrBadResponse is matched (errors.Is) by every error about a 2xx answer the
// client cannot use: undecodable JSON, a missing required field, a body over
// [MaxBodySize]. Such an answer is not retried.
var ErrBadResponse = errors.New("unusable answer")

// Config configures a [Client]. Only BaseURL and APIKey are required.
type Config struct {
	// BaseURL is the spec's {functions_url}, e.g. http://127.0.0.1:8089.
	// Ticket endpoints are below BaseURL + "/ops-public-api/v1", the token
	// exchange at BaseURL + "/api-auth/token".
	BaseURL string
	// APIKey is the organisation's key, starting with "rta_". It is sent
	// only in the Authorization header of ticket requests and in the body of
	// the token exchange, and never appears in logs or errors.
	APIKey string
	// HTTPClient makes the requests; nil means a client with a 30 s timeout
	// per attempt and bounded dial, TLS and header timeouts. The client
	// uses a copy of it that follows no redirect (see
	// httpretry.ErrRedirect): the key must not travel to an address
	// other than BaseURL.
	HTTPClient *http.Client
	// Logger receives one debug record per attempt; nil discards.
	Logger *slog.Logger
	// UserAgent is sent on every request; empty means "ticketbridge".
	UserAgent string
	// Backoff paces retries of temporary failures; the zero value is the
	// daemon's default backoff.
	Backoff httpretry.Backoff
	// MaxAttempts bounds the attempts per call, the first included; zero
	// means 4, 1 disables retries.
	MaxAttempts int
	// MaxWait is the longest wait between attempts; zero means
	// httpretry.DefaultMaxWait (a context may lower it, see
	// httpretry.WithMaxWait). When the server asks for longer (a
	// Retry-After), the call ends at once with an error matching
	// httpretry.ErrWaitTooLong that says until when (httpretry.WaitError).
	MaxWait time.Duration
	// Now is the clock for token expiry and Retry-After dates; nil means
	// time.Now.
	Now func() time.Time
	// Sleep waits between attempts and returns early with an error when ctx
	// ends; nil means a real timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Client is a typed client of the Guest Requests API v1 and of the
// key-for-token exchange. It is safe for concurrent use.
type Client struct {
	base    *url.URL
	key     string
	hc      *http.Client
	log     *slog.Logger
	ua      string
	now     func() time.Time
	retrier httpretry.Retrier

	tokMu     sync.Mutex
	tok       *AccessToken
	tokAt     time.Time // when the cached token was obtained
	tokReuse  time.Time // the cached token is used until this instant
	tokFlight *tokenCall
}

type tokenCall struct {
	done chan struct{}
	tok  AccessToken
	err  error
}

// New checks cfg and returns a client. Errors name the offending field and
// never contain the key.
func New(cfg Config) (*Client, error) {
	base, err := parseBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	key := strings.TrimSpace(cfg.APIKey)
	switch {
	case key == "":
		return nil, errors.New("check config: APIKey is empty")
	case !strings.HasPrefix(key, KeyPrefix):
		return nil, fmt.Errorf("check config: APIKey does not start with %q: it is not a Guest Requests API key", KeyPrefix)
	case len(key) == len(KeyPrefix):
		return nil, fmt.Errorf("check config: APIKey holds only the prefix %q", KeyPrefix)
	case strings.IndexFunc(key, func(r rune) bool { return r <= ' ' || r >= 0x7f }) >= 0:
		return nil, errors.New("check config: APIKey contains spaces, control or non-ASCII characters")
	}
	if cfg.MaxAttempts < 0 {
		return nil, fmt.Errorf("check config: MaxAttempts %d is negative: want 0 (default %d) or more", cfg.MaxAttempts, DefaultMaxAttempts)
	}
	if cfg.MaxWait < 0 {
		return nil, fmt.Errorf("check config: MaxWait %s is negative: want 0 (default %s) or more", cfg.MaxWait, httpretry.DefaultMaxWait)
	}
	if cfg.Backoff.Base < 0 || cfg.Backoff.Max < 0 {
		return nil, fmt.Errorf("check config: Backoff base %s, max %s: durations must not be negative", cfg.Backoff.Base, cfg.Backoff.Max)
	}
	if strings.ContainsAny(cfg.UserAgent, "\r\n") {
		return nil, errors.New("check config: UserAgent contains a line break")
	}
	c := &Client{
		base: base,
		key:  key,
		hc:   httpretry.NoRedirects(cfg.HTTPClient),
		log:  cfg.Logger,
		ua:   cfg.UserAgent,
		now:  cfg.Now,
	}
	if c.hc == nil {
		c.hc = defaultHTTPClient()
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.ua == "" {
		c.ua = DefaultUserAgent
	}
	if c.now == nil {
		c.now = time.Now
	}
	attempts := cfg.MaxAttempts
	if attempts == 0 {
		attempts = DefaultMaxAttempts
	}
	c.retrier = httpretry.Retrier{
		Backoff:       cfg.Backoff,
		MaxAttempts:   attempts,
		RateLimitWait: RateLimitWait,
		MaxWait:       cfg.MaxWait,
		Sleep:         cfg.Sleep,
		Now:           c.now,
		OnRetry: func(ctx context.Context, call httpretry.Call, attempt int, _ httpretry.Result, wait time.Duration) {
			c.log.LogAttrs(ctx, slog.LevelDebug, "api retry wait",
				slog.String("op", call.Op), slog.Int("attempt", attempt), slog.Duration("wait", wait))
		},
	}
	return c, nil
}

func parseBaseURL(s string) (*url.URL, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("check config: BaseURL is empty: want the API root, e.g. https://api.example.com")
	}
	u, err := url.Parse(s)
	if err != nil {
		// url.Parse quotes the input; it could hold credentials.
		return nil, errors.New("check config: BaseURL does not parse as a URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("check config: BaseURL scheme %q: want http or https", u.Scheme)
	case u.Host == "":
		return nil, errors.New("check config: BaseURL has no host")
	case u.User != nil:
		return nil, errors.New("check config: BaseURL contains user information: the API authenticates with APIKey only")
	case u.RawQuery != "" || u.Fragment != "":
		return nil, errors.New("check config: BaseURL has a query or fragment: want only scheme, host and an optional path")
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

func defaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = 10 * time.Second
	t.ResponseHeaderTimeout = DefaultRequestTimeout
	t.IdleConnTimeout = 90 * time.Second
	t.MaxIdleConnsPerHost = 4
	return &http.Client{Transport: t, Timeout: DefaultRequestTimeout, CheckRedirect: httpretry.RefuseRedirect}
}

// String describes the client without its key.
func (c *Client) String() string {
	return fmt.Sprintf("guestapi.Client{base=%s key=%s[redacted]}", redact.Parsed(c.base), KeyPrefix)
}

// GoString hides the key from %#v as well.
func (c *Client) GoString() string { return c.String() }

// LogValue describes the client for slog without its key.
func (c *Client) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("base_url", redact.Parsed(c.base)),
		slog.String("key", KeyPrefix+"[redacted]"),
	)
}

// ListOptions filters GET /tickets. Zero fields are not sent.
type ListOptions struct {
	// Status is an exact match; empty lists every status.
	Status Status
	// Department is a department code; empty lists every department.
	Department string
	// Limit is the number of tickets to return; 0 leaves it to the server
	// (50 by the spec), the spec's maximum is 200. Negative is refused.
	Limit int
}

// ListTickets calls GET /tickets: the current queue, newest first. Values the
// client does not know (a new status, say) are passed on as they are and
// left to the server to judge.
func (c *Client) ListTickets(ctx context.Context, opt ListOptions) ([]Ticket, error) {
	const op = "list tickets"
	if opt.Limit < 0 {
		return nil, fmt.Errorf("%s: limit %d is negative: want 0 (server default) or 1 to 200", op, opt.Limit)
	}
	q := url.Values{}
	if opt.Status != "" {
		q.Set("status", string(opt.Status))
	}
	if opt.Department != "" {
		q.Set("department", opt.Department)
	}
	if opt.Limit > 0 {
		q.Set("limit", strconv.Itoa(opt.Limit))
	}
	r := request{op: op, method: http.MethodGet, path: TicketsPrefix + "/tickets", query: q, auth: c.key}
	body, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	ts, err := decodeList(body)
	if err != nil {
		return nil, r.decodeErr(err)
	}
	return ts, nil
}

// GetTicket calls GET /tickets/{id}: the ticket and its messages, oldest
// first. An unknown or foreign ticket is an error matching [ErrNotFound].
func (c *Client) GetTicket(ctx context.Context, id string) (*Thread, error) {
	const op = "get ticket"
	p, err := ticketPath(op, id, "")
	if err != nil {
		return nil, err
	}
	r := request{op: op, method: http.MethodGet, path: p, auth: c.key}
	body, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	th, err := decodeThread(body)
	if err != nil {
		return nil, r.decodeErr(err)
	}
	return th, nil
}

// PostMessage calls POST /tickets/{id}/messages. With a non-empty
// idempotencyKey the request is sent with that Idempotency-Key and repeated
// on temporary failures; a repeat returns the first call's result and
// creates no second message. Without one it is sent exactly once. The body
// is passed on as it is: an empty one gets the server's body_required.
func (c *Client) PostMessage(ctx context.Context, id string, m NewMessage, idempotencyKey string) (PostMessageResult, error) {
	const op = "post message"
	p, err := ticketPath(op, id, "/messages")
	if err != nil {
		return PostMessageResult{}, err
	}
	if err := checkIdempotencyKey(op, idempotencyKey); err != nil {
		return PostMessageResult{}, err
	}
	r := request{op: op, method: http.MethodPost, path: p, body: m, auth: c.key, idemKey: idempotencyKey, retry: idempotencyKey != ""}
	body, err := c.do(ctx, r)
	if err != nil {
		return PostMessageResult{}, err
	}
	var res PostMessageResult
	if err := decodeObject(body, &res); err != nil {
		return PostMessageResult{}, r.decodeErr(err)
	}
	if res.MessageID == "" {
		return PostMessageResult{}, r.decodeErr(errors.New("message_id is missing"))
	}
	return res, nil
}

// SetStatus calls POST /tickets/{id}/status. Idempotency and retries work as
// for [Client.PostMessage]. s is passed on as it is: a value the server does
// not accept gets invalid_status, with the allowed values in [Error.Allowed].
func (c *Client) SetStatus(ctx context.Context, id string, s Status, idempotencyKey string) (SetStatusResult, error) {
	const op = "set status"
	p, err := ticketPath(op, id, "/status")
	if err != nil {
		return SetStatusResult{}, err
	}
	if err := checkIdempotencyKey(op, idempotencyKey); err != nil {
		return SetStatusResult{}, err
	}
	r := request{op: op, method: http.MethodPost, path: p, body: SetStatusRequest{Status: s}, auth: c.key, idemKey: idempotencyKey, retry: idempotencyKey != ""}
	body, err := c.do(ctx, r)
	if err != nil {
		return SetStatusResult{}, err
	}
	var res SetStatusResult
	if err := decodeObject(body, &res); err != nil {
		return SetStatusResult{}, r.decodeErr(err)
	}
	if res.Status == "" {
		return SetStatusResult{}, r.decodeErr(errors.New("status is missing"))
	}
	return res, nil
}

// Token returns an access token of the service API, exchanging the key for
// one (POST /api-auth/token) only when no cached token is left: a token is
// reused until a minute before it expires (at most half its lifetime).
// Concurrent callers share one exchange. The exchange creates nothing on the
// server, so it is retried like a GET, 429 included (after Retry-After, a
// minute by default); mind the server's limit of 10 exchanges a minute.
func (c *Client) Token(ctx context.Context) (AccessToken, error) {
	for {
		c.tokMu.Lock()
		if c.tok != nil && c.now().Before(c.tokReuse) {
			t := *c.tok
			c.tokMu.Unlock()
			return t, nil
		}
		call := c.tokFlight
		leader := call == nil
		if leader {
			call = &tokenCall{done: make(chan struct{})}
			c.tokFlight = call
		}
		c.tokMu.Unlock()

		if leader {
			tok, err := c.exchange(ctx)
			c.tokMu.Lock()
			if err == nil {
				c.cacheToken(tok)
			}
			c.tokFlight = nil
			c.tokMu.Unlock()
			call.tok, call.err = tok, err
			close(call.done)
			return tok, err
		}
		select {
		case <-ctx.Done():
			return AccessToken{}, fmt.Errorf("get access token: wait for the exchange in flight: %w", ctx.Err())
		case <-call.done:
		}
		// The leader's own context ended: ours has not, so try ourselves.
		if call.err != nil && ctx.Err() == nil &&
			(errors.Is(call.err, context.Canceled) || errors.Is(call.err, context.DeadlineExceeded)) {
			continue
		}
		return call.tok, call.err
	}
}

// cacheToken stores tok; c.tokMu is held.
func (c *Client) cacheToken(tok AccessToken) {
	life := time.Duration(tok.ExpiresIn) * time.Second
	margin := min(tokenRefreshMargin, life/2)
	t := tok
	c.tok = &t
	c.tokAt = c.now()
	c.tokReuse = c.tokAt.Add(life - margin)
}

// forgetToken drops the cached token if it is still tok (a 401 showed it is
// no longer good).
func (c *Client) forgetToken(tok string) {
	c.tokMu.Lock()
	defer c.tokMu.Unlock()
	if c.tok != nil && c.tok.AccessToken == tok {
		c.tok = nil
	}
}

func (c *Client) exchange(ctx context.Context) (AccessToken, error) {
	const op = "get access token"
	r := request{op: op, method: http.MethodPost, path: TokenPath, body: TokenRequest{APIKey: c.key}, retry: true}
	body, err := c.do(ctx, r)
	if err != nil {
		return AccessToken{}, err
	}
	var tok AccessToken
	if err := decodeObject(body, &tok); err != nil {
		return AccessToken{}, r.decodeErr(err)
	}
	switch {
	case tok.AccessToken == "":
		return AccessToken{}, r.decodeErr(errors.New("access_token is missing"))
	case tok.ExpiresIn <= 0:
		return AccessToken{}, r.decodeErr(fmt.Errorf("expires_in %d: want a positive number of seconds", tok.ExpiresIn))
	case tok.TokenType != "" && !strings.EqualFold(tok.TokenType, "bearer"):
		return AccessToken{}, r.decodeErr(fmt.Errorf("token_type %q: want Bearer", clean(tok.TokenType, 40)))
	}
	return tok, nil
}

// Verify calls POST /api-auth/verify with an access token from
// [Client.Token]: the organisation, rights and expiry the key stands for.
// Like the exchange it creates nothing and is retried like a GET. When the
// server refuses a cached token (401), the token is dropped and the call is
// made once more with a fresh one.
func (c *Client) Verify(ctx context.Context) (Verification, error) {
	const op = "verify access token"
	for try := 0; ; try++ {
		tok, err := c.Token(ctx)
		if err != nil {
			return Verification{}, fmt.Errorf("%s: %w", op, err)
		}
		r := request{op: op, method: http.MethodPost, path: VerifyPath, auth: tok.AccessToken, retry: true}
		body, err := c.do(ctx, r)
		if errors.Is(err, ErrUnauthorized) && try == 0 {
			c.forgetToken(tok.AccessToken)
			continue
		}
		if err != nil {
			return Verification{}, err
		}
		var v Verification
		if err := decodeObject(body, &v); err != nil {
			return Verification{}, r.decodeErr(err)
		}
		return v, nil
	}
}

func ticketPath(op, id, suffix string) (string, error) {
	switch {
	case id == "":
		return "", fmt.Errorf("%s: ticket id is empty", op)
	case id == "." || id == "..":
		return "", fmt.Errorf("%s: ticket id %q is not an identifier", op, id)
	case len(id) > 256:
		return "", fmt.Errorf("%s: ticket id is %d bytes long: want at most 256", op, len(id))
	}
	return TicketsPrefix + "/tickets/" + url.PathEscape(id) + suffix, nil
}

func checkIdempotencyKey(op, k string) error {
	if len(k) > 255 {
		return fmt.Errorf("%s: idempotency key is %d bytes long: want at most 255", op, len(k))
	}
	if strings.IndexFunc(k, func(r rune) bool { return r <= ' ' || r >= 0x7f }) >= 0 {
		return fmt.Errorf("%s: idempotency key %q contains spaces, control or non-ASCII characters", op, clean(k, 80))
	}
	return nil
}

// request is one call of the API, attempted up to MaxAttempts times.
type request struct {
	op      string // for logs and error messages, e.g. "list tickets"
	method  string
	path    string // below BaseURL, escaped
	query   url.Values
	body    any    // JSON-encoded when non-nil
	auth    string // bearer credential; empty sends none
	idemKey string
	retry   bool // may be repeated on temporary failures (POSTs only with an idempotency key)
}

func (r request) decodeErr(err error) error {
	return fmt.Errorf("%s: decode answer of %s %s: %w: %w", r.op, r.method, r.path, ErrBadResponse, err)
}

// do runs r and returns the body of its 2xx answer.
func (c *Client) do(ctx context.Context, r request) ([]byte, error) {
	var payload []byte
	if r.body != nil {
		var err error
		if payload, err = json.Marshal(r.body); err != nil {
			return nil, fmt.Errorf("%s: encode request body: %w", r.op, err)
		}
	}
	var (
		body []byte
		last error // the last attempt's error
	)
	call := httpretry.Call{Op: r.op, Idempotent: r.retry || httpretry.IdempotentMethod(r.method)}
	out := c.retrier.Do(ctx, call, func(ctx context.Context, n int) httpretry.Result {
		var res httpretry.Result
		body, res, last = c.attempt(ctx, r, payload, n)
		return res
	})
	if out.Class == httpretry.Success && out.Err == nil {
		return body, nil
	}
	var ae *Error
	if out.Asked && errors.As(last, &ae) {
		ae.RetryAfter = out.Wait
	}
	switch {
	case out.Err != nil && last != nil:
		return nil, fmt.Errorf("%s: %w (last error: %w)", r.op, out.Err, last)
	case out.Err != nil:
		return nil, fmt.Errorf("%s: %w", r.op, out.Err)
	case out.Attempts > 1:
		return nil, fmt.Errorf("%s (%d attempts): %w", r.op, out.Attempts, last)
	}
	return nil, fmt.Errorf("%s: %w", r.op, last)
}

// attempt makes one HTTP exchange. It returns the body of a 2xx answer,
// what the exchange was for the retry loop, and the error to report when
// it failed.
func (c *Client) attempt(ctx context.Context, r request, payload []byte, attempt int) ([]byte, httpretry.Result, error) {
	u := *c.base
	// r.path is escaped; set both forms so that escaped ids keep their
	// escapes (an id holding "/" stays one path segment).
	raw := c.base.EscapedPath() + r.path
	p, err := url.PathUnescape(raw)
	if err != nil {
		return nil, httpretry.Result{Class: httpretry.Permanent}, fmt.Errorf("build request %s %s: %w", r.method, r.path, err)
	}
	u.Path, u.RawPath = p, raw
	if len(r.query) > 0 {
		u.RawQuery = r.query.Encode()
	}
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), rd)
	if err != nil {
		return nil, httpretry.Result{Class: httpretry.Permanent}, fmt.Errorf("build request %s %s: %w", r.method, r.path, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.ua)
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.auth != "" {
		req.Header.Set("Authorization", "Bearer "+r.auth)
	}
	if r.idemKey != "" {
		req.Header.Set("Idempotency-Key", r.idemKey)
	}

	start := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		c.logAttempt(ctx, r, attempt, 0, time.Since(start), err)
		return nil, httpretry.Result{Err: err}, transportError(r, err)
	}
	defer resp.Body.Close()
	res := httpretry.Result{Status: resp.StatusCode, Header: resp.Header}

	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodySize+1))
		c.logAttempt(ctx, r, attempt, resp.StatusCode, time.Since(start), err)
		if err != nil {
			err = fmt.Errorf("read answer: %w", err)
			return nil, httpretry.Result{Err: err}, transportError(r, err)
		}
		if len(body) > MaxBodySize {
			res.Class = httpretry.Permanent
			return nil, res, fmt.Errorf("read answer of %s %s: %w: larger than %d bytes", r.method, r.path, ErrBadResponse, MaxBodySize)
		}
		return body, res, nil
	}

	body, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBodySize))
	// Redact before decoding, so that cutting a snippet short cannot leave
	// part of a credential behind; the fields are redacted again below.
	ae := decodeError(resp.StatusCode, []byte(c.redact(string(body))))
	ae.Method, ae.Path = r.method, r.path
	ae.Message = c.redact(ae.Message)
	ae.Code = c.redact(ae.Code)
	ae.Need = c.redact(ae.Need)
	for i := range ae.Allowed {
		ae.Allowed[i] = c.redact(ae.Allowed[i])
	}
	c.logAttempt(ctx, r, attempt, resp.StatusCode, time.Since(start), nil)
	return nil, res, ae
}

// transportError is the error to report for a failure of the exchange
// itself. Errors of net/http quote the URL, which holds no secret; it is
// stripped anyway to keep messages short and uniform.
func transportError(r request, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("%s %s: %w", r.method, r.path, err)
}

func (c *Client) logAttempt(ctx context.Context, r request, attempt, status int, d time.Duration, err error) {
	if !c.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs := []slog.Attr{
		slog.String("op", r.op),
		slog.String("method", r.method),
		slog.String("path", r.path),
		slog.Int("status", status),
		slog.Int("attempt", attempt),
		slog.Duration("duration", d),
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", c.redact(err.Error())))
	}
	c.log.LogAttrs(ctx, slog.LevelDebug, "api request", attrs...)
}

// redact removes the key (and the cached access token) from s, in case a
// server or proxy echoes a credential back.
func (c *Client) redact(s string) string {
	if s == "" {
		return s
	}
	s = strings.ReplaceAll(s, c.key, KeyPrefix+"[redacted]")
	c.tokMu.Lock()
	tok := c.tok
	c.tokMu.Unlock()
	if tok != nil && tok.AccessToken != "" {
		s = strings.ReplaceAll(s, tok.AccessToken, "[redacted]")
	}
	return s
}

// decodeObject decodes a JSON object into v, tolerating unknown fields.
func decodeObject(body []byte, v any) error {
	b := bytes.TrimSpace(body)
	if len(b) == 0 {
		return errors.New("empty body")
	}
	if b[0] != '{' {
		return fmt.Errorf("want a JSON object, got %s", clean(string(b), 40))
	}
	if !utf8.Valid(b) {
		// encoding/json would turn the bad bytes into U+FFFD silently.
		return errors.New("the answer is not valid UTF-8")
	}
	return json.Unmarshal(b, v)
}

// decodeList decodes the answer of GET /tickets.
func decodeList(body []byte) ([]Ticket, error) {
	var w struct {
		Tickets json.RawMessage `json:"tickets"`
	}
	if err := decodeObject(body, &w); err != nil {
		return nil, err
	}
	if w.Tickets == nil {
		return nil, errors.New("tickets is missing")
	}
	var ts []Ticket
	if err := json.Unmarshal(w.Tickets, &ts); err != nil {
		return nil, fmt.Errorf("tickets: %w", err)
	}
	if ts == nil { // null: a server's empty list
		ts = []Ticket{}
	}
	seen := make(map[string]int, len(ts))
	for i, t := range ts {
		if t.ID == "" {
			return nil, fmt.Errorf("tickets[%d]: id is missing", i)
		}
		if j, dup := seen[t.ID]; dup {
			return nil, fmt.Errorf("tickets[%d]: id %q repeats tickets[%d]", i, clean(t.ID, 80), j)
		}
		seen[t.ID] = i
	}
	return ts, nil
}

// decodeThread decodes the answer of GET /tickets/{id}.
func decodeThread(body []byte) (*Thread, error) {
	var w struct {
		Ticket   *TicketDetail `json:"ticket"`
		Messages []Message     `json:"messages"`
	}
	if err := decodeObject(body, &w); err != nil {
		return nil, err
	}
	if w.Ticket == nil {
		return nil, errors.New("ticket is missing")
	}
	if w.Ticket.ID == "" {
		return nil, errors.New("ticket: id is missing")
	}
	seen := make(map[string]int, len(w.Messages))
	for i, m := range w.Messages {
		if m.ID == "" {
			return nil, fmt.Errorf("messages[%d]: id is missing", i)
		}
		if j, dup := seen[m.ID]; dup {
			return nil, fmt.Errorf("messages[%d]: id %q repeats messages[%d]", i, clean(m.ID, 80), j)
		}
		seen[m.ID] = i
	}
	th := &Thread{Ticket: *w.Ticket, Messages: w.Messages}
	if th.Messages == nil {
		th.Messages = []Message{}
	}
	return th, nil
}

// decodeError turns a non-2xx answer into an *Error. A JSON body fills the
// code and the extra fields, each read on its own so that one odd field does
// not lose the others; any other body leaves a short sanitized snippet (an
// HTML page's title, else its first printable characters) in Message.
func decodeError(status int, body []byte) *Error {
	e := &Error{StatusCode: status}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) == nil && fields != nil {
		var s string
		if json.Unmarshal(fields["error"], &s) == nil {
			e.Code = clean(s, 64)
		}
		if json.Unmarshal(fields["need"], &s) == nil {
			e.Need = clean(s, 64)
		}
		var msg string
		if json.Unmarshal(fields["message"], &msg) == nil {
			e.Message = clean(msg, 300)
		}
		var allowed []json.RawMessage
		if json.Unmarshal(fields["allowed"], &allowed) == nil {
			for _, a := range allowed {
				if json.Unmarshal(a, &s) == nil && len(e.Allowed) < 32 {
					e.Allowed = append(e.Allowed, clean(s, 64))
				}
			}
		}
		if e.Code != "" || e.Message != "" {
			return e
		}
	}
	e.Message = snippet(body)
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	return e
}

// snippet returns a short printable excerpt of a non-JSON body: the HTML
// title when there is one, else the start of the text.
func snippet(body []byte) string {
	s := string(body)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "")
	}
	lower := strings.ToLower(s)
	if i := strings.Index(lower, "<title>"); i >= 0 {
		rest := s[i+len("<title>"):]
		if j := strings.Index(strings.ToLower(rest), "</title>"); j >= 0 {
			if t := clean(rest[:j], 120); t != "" {
				return t
			}
		}
	}
	return clean(s, 120)
}

// clean collapses whitespace, drops control and other unprintable
// characters and cuts s to at most n runes (marking a cut with "...").
func clean(s string, n int) string {
	var b strings.Builder
	count := 0
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if !unicode.IsPrint(r) {
			continue
		}
		if count >= n {
			b.WriteString("...")
			return b.String()
		}
		if space {
			b.WriteByte(' ')
			count++
			space = false
		}
		b.WriteRune(r)
		count++
	}
	return b.String()
}
