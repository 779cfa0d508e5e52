package notify

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/hmacsig"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
)

// Defaults of [Poster].
const (
	DefaultHTTPTimeout = 30 * time.Second
	DefaultMaxWait     = time.Minute
	maxAnswer          = 64 << 10
)

// Poster sends the HTTP targets' requests with the daemon's one retry
// policy (internal/httpretry): a 429 or 5xx, a reset connection or a
// timeout is repeated after the backoff or the Retry-After asked for, and
// no redirect is followed. A notice is sent again on a retryable answer
// even though a POST is not idempotent: a notice shown twice costs less
// than one lost.
//
// The zero value is usable; do not change its fields once in use.
type Poster struct {
	// HTTP sends each attempt; nil means a client with a timeout of
	// [DefaultHTTPTimeout]. Its redirects are refused whatever it says.
	HTTP *http.Client
	// Retrier paces the attempts; its zero value is httpretry's default
	// with a longest wait of [DefaultMaxWait].
	Retrier httpretry.Retrier
	// Now is the clock of the signed webhook's timestamp; nil means
	// time.Now.
	Now func() time.Time
}

func (p *Poster) client() *http.Client {
	if p.HTTP == nil {
		return &http.Client{Timeout: DefaultHTTPTimeout, CheckRedirect: httpretry.RefuseRedirect}
	}
	return httpretry.NoRedirects(p.HTTP)
}

func (p *Poster) retrier() httpretry.Retrier {
	if p == nil {
		return httpretry.Retrier{MaxWait: DefaultMaxWait}
	}
	r := p.Retrier
	if r.MaxWait == 0 {
		r.MaxWait = DefaultMaxWait
	}
	return r
}

func (p *Poster) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// SendError is a notice a target did not take. It names the target by
// kind and host only; Status is the last answer's, 0 when none arrived.
type SendError struct {
	Target   string
	Status   int
	Attempts int
	Class    httpretry.Class
	detail   string
	err      error
}

func (e *SendError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "notify %s: ", e.Target)
	if e.Status != 0 {
		fmt.Fprintf(&b, "HTTP %d", e.Status)
		if e.detail != "" {
			b.WriteString(": ")
		}
	}
	b.WriteString(e.detail)
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (%d attempts)", e.Attempts)
	}
	return b.String()
}

// Unwrap gives the sentinel of the transport error (context.Canceled,
// httpretry.ErrRedirect), never the *url.Error that holds the URL.
func (e *SendError) Unwrap() error { return e.err }

// httpTarget is what the HTTP targets share: where they post and what of
// it is secret.
type httpTarget struct {
	kind    string
	host    string
	url     string // without user information
	secrets []string
	poster  *Poster
}

func (t *httpTarget) String() string { return t.kind + " " + hostOnly(t.host) }

// post sends body to the target with method, with header and, when set, sign called
// on each attempt's request.
func (t *httpTarget) post(ctx context.Context, method string, body []byte, header http.Header, sign func(http.Header)) error {
	hc := t.poster.client()
	var (
		answer []byte
		status int
	)
	r := t.poster.retrier()
	out := r.Do(ctx, httpretry.Call{Op: "notify " + t.kind, Idempotent: true}, func(ctx context.Context, _ int) httpretry.Result {
		req, err := http.NewRequestWithContext(ctx, method, t.url, bytes.NewReader(body))
		if err != nil {
			return httpretry.Result{Err: err, Class: httpretry.Permanent}
		}
		for k, v := range header {
			req.Header[k] = v
		}
		req.Header.Set("User-Agent", "ticketbridge-notify")
		if sign != nil {
			sign(req.Header)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return httpretry.Result{Err: err}
		}
		defer resp.Body.Close()
		answer, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		status = resp.StatusCode
		if err != nil {
			return httpretry.Result{Status: resp.StatusCode, Header: resp.Header, Err: err}
		}
		return httpretry.Result{Status: resp.StatusCode, Header: resp.Header}
	})
	if out.Class == httpretry.Success && out.Err == nil {
		return nil
	}
	e := &SendError{Target: t.String(), Attempts: out.Attempts, Class: out.Class}
	switch {
	case out.Result.Err != nil:
		e.err = transportCause(out.Result.Err)
		e.detail = scrub(e.err.Error(), t.secrets)
	case out.Attempts > 0:
		e.Status = status
		e.detail = snippet(scrub(string(answer), t.secrets))
	}
	if out.Err != nil {
		if e.detail != "" {
			e.detail += "; "
		}
		e.detail += scrub(out.Err.Error(), t.secrets)
		if e.err == nil {
			e.err = out.Err
		}
	}
	return e
}

// transportCause is err without the *url.Error around it, whose text
// holds the whole URL and so the token.
func transportCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func snippet(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func postJSON(ctx context.Context, t *httpTarget, v any, sign func(http.Header, []byte)) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("notify %s: encode: %w", t, err)
	}
	h := http.Header{"Content-Type": {"application/json"}}
	var s func(http.Header)
	if sign != nil {
		s = func(h http.Header) { sign(h, body) }
	}
	return t.post(ctx, http.MethodPost, body, h, s)
}

// chatTarget posts to a Slack, Teams Workflows or Google Chat webhook.
type chatTarget struct{ httpTarget }

func (t *chatTarget) Send(ctx context.Context, n Notice) error {
	var payload any
	switch t.kind {
	case KindSlack:
		payload = slackPayload(n)
	case KindTeams:
		payload = teamsPayload(n)
	default:
		payload = gchatPayload(n)
	}
	return postJSON(ctx, &t.httpTarget, payload, nil)
}

// webhookTarget posts the notice as JSON, signed as internal/hmacsig says.
type webhookTarget struct {
	httpTarget
	secret string
}

func (t *webhookTarget) Send(ctx context.Context, n Notice) error {
	return postJSON(ctx, &t.httpTarget, webhookPayload(n), func(h http.Header, body []byte) {
		hmacsig.SetSignature(h, t.secret, t.poster.now(), body)
		h.Set("X-Ticketbridge-Event", "notice")
	})
}

// ntfyTarget publishes to an ntfy topic: the text as the body, the title,
// priority, tags and click link as headers.
type ntfyTarget struct {
	httpTarget
	auth string // the Authorization header; "" for none
}

func (t *ntfyTarget) Send(ctx context.Context, n Notice) error {
	h := http.Header{
		"Content-Type": {"text/plain; charset=utf-8"},
		"Title":        {n.Title()},
		"Priority":     {strconv.Itoa(n.Severity())},
		"Tags":         {ntfyTags(n)},
	}
	if n.StatusURL != "" {
		h.Set("Click", n.StatusURL)
	}
	if t.auth != "" {
		h.Set("Authorization", t.auth)
	}
	return t.post(ctx, http.MethodPost, []byte(strings.Join(n.Lines(), "\n")), h, nil)
}

func ntfyTags(n Notice) string {
	switch n.Phase {
	case Resolved:
		return "white_check_mark,ticketbridge"
	case Testing:
		return "test_tube,ticketbridge"
	}
	return "warning,ticketbridge," + string(n.Kind)
}

func basicAuth(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}
