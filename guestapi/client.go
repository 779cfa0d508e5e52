package guestapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/internal/httpx"
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
	// Rekey, when set, is asked for the key again when the API refuses it
	// (401): a key rotated in its file is then used at once, and the
	// refused request is made once more with it. It returns the key to use
	// now; an error, or the key in use, leaves the 401 as it is. It is
	// called at most once per refused request.
	Rekey func() (string, error)
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
	// time.Now. Kept because the simulator of package sync,
	// internal/looptest and the conformance tests share one fake clock
	// with the reference server over real sockets, where a
	// testing/synctest bubble's clock cannot advance.
	Now func() time.Time
	// Sleep waits between attempts and returns early with an error when ctx
	// ends; nil means a real timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Client is a typed client of the Guest Requests API v1 and of the
// key-for-token exchange. It is safe for concurrent use.
type Client struct {
	base    *url.URL
	rekey   func() (string, error)
	hc      *http.Client
	log     *slog.Logger
	ua      string
	clock   func() time.Time // Config.Now as given, nil or not: read it through now
	retrier httpretry.Retrier

	keyMu sync.Mutex
	key   string   // the key in use
	old   []string // keys used before, redacted too; the last few only

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
	if err := checkKey(key); err != nil {
		return nil, fmt.Errorf("check config: %w", err)
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
		base:  base,
		key:   key,
		rekey: cfg.Rekey,
		hc:    httpretry.NoRedirects(cfg.HTTPClient),
		log:   cfg.Logger,
		ua:    cfg.UserAgent,
		clock: cfg.Now,
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

// now is the time on the client's clock: [Config.Now], or time.Now.
func (c *Client) now() time.Time {
	if c.clock != nil {
		return c.clock()
	}
	return time.Now()
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
	return httpx.NewClient(DefaultRequestTimeout, 4)
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

// checkKey says what is wrong with key, never quoting it.
func checkKey(key string) error {
	switch {
	case key == "":
		return errors.New("APIKey is empty")
	case !strings.HasPrefix(key, KeyPrefix):
		return fmt.Errorf("APIKey does not start with %q: it is not a Guest Requests API key", KeyPrefix)
	case len(key) == len(KeyPrefix):
		return fmt.Errorf("APIKey holds only the prefix %q", KeyPrefix)
	case strings.IndexFunc(key, func(r rune) bool { return r <= ' ' || r >= 0x7f }) >= 0:
		return errors.New("APIKey contains spaces, control or non-ASCII characters")
	}
	return nil
}

// currentKey is the key in use.
func (c *Client) currentKey() string {
	c.keyMu.Lock()
	defer c.keyMu.Unlock()
	return c.key
}

// keptOld is how many keys used before the client keeps for redaction.
const keptOld = 4

// renewKey asks Rekey for the key after refused was refused, and reports
// whether another, well-formed key is in use now: one a concurrent call
// took already, or the one Rekey returned.
func (c *Client) renewKey(ctx context.Context, refused string) (string, bool) {
	if c.rekey == nil {
		return "", false
	}
	c.keyMu.Lock()
	defer c.keyMu.Unlock()
	if c.key != refused {
		return c.key, true // another call took a new key meanwhile
	}
	key, err := c.rekey()
	key = strings.TrimSpace(key)
	switch {
	case err != nil:
		c.log.LogAttrs(ctx, slog.LevelWarn, "read the API key again after a 401", slog.String("error", c.redactLocked(err.Error())))
		return "", false
	case key == c.key:
		return "", false
	case checkKey(key) != nil:
		c.log.LogAttrs(ctx, slog.LevelWarn, "read the API key again after a 401: the new key is unusable", slog.String("error", checkKey(key).Error()))
		return "", false
	}
	c.old = append(c.old, c.key)
	if len(c.old) > keptOld {
		c.old = c.old[len(c.old)-keptOld:]
	}
	c.key = key
	c.tokMu.Lock()
	c.tok, c.tokFlight = nil, nil // a token of the old key is the old key's
	c.tokMu.Unlock()
	c.log.LogAttrs(ctx, slog.LevelInfo, "the API refused the key, and its file holds another: using the new key")
	return key, true
}
