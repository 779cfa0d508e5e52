package guestapi

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
	"strings"
	"sync"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/httpretry"
)

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

// do runs r and hands the body of its 2xx answer to decode; an error of
// decode comes back as r's [ErrBadResponse]. The body is a pooled read
// buffer, given back when decode returns: decode must not keep it (what
// encoding/json decodes is a copy). When the API refuses the key (401)
// and Rekey gives another, r is made once more with it.
func (c *Client) do(ctx context.Context, r request, decode func(body []byte) error) error {
	buf, err := c.doRaw(ctx, r)
	if err != nil {
		return err
	}
	defer putBuffer(buf)
	if err := decode(buf.Bytes()); err != nil {
		return r.decodeErr(err)
	}
	return nil
}

// doRaw runs r as do does and returns the body of its 2xx answer in a read
// buffer, for putBuffer once decoded.
func (c *Client) doRaw(ctx context.Context, r request) (*bytes.Buffer, error) {
	buf, err := c.doOnce(ctx, r)
	if errors.Is(err, ErrUnauthorized) {
		if again, ok := c.rekeyed(ctx, r); ok {
			buf, err = c.doOnce(ctx, again)
		}
	}
	return buf, err
}

// rekeyed returns r with the key Rekey gives in place of the one the API
// refused, and false when there is none to try.
func (c *Client) rekeyed(ctx context.Context, r request) (request, bool) {
	refused := r.auth
	tr, isToken := r.body.(TokenRequest)
	if isToken {
		refused = tr.APIKey
	}
	if refused == "" {
		return r, false
	}
	key, ok := c.renewKey(ctx, refused)
	if !ok {
		return r, false
	}
	if isToken {
		tr.APIKey = key
		r.body = tr
	} else {
		r.auth = key
	}
	return r, true
}

// doOnce runs r through the retry loop and returns the body of its 2xx
// answer in a read buffer, for putBuffer once decoded.
func (c *Client) doOnce(ctx context.Context, r request) (*bytes.Buffer, error) {
	var payload []byte
	if r.body != nil {
		var err error
		if payload, err = json.Marshal(r.body); err != nil {
			return nil, fmt.Errorf("%s: encode request body: %w", r.op, err)
		}
	}
	var (
		body *bytes.Buffer
		last error // the last attempt's error
	)
	call := httpretry.Call{Op: r.op, Idempotent: r.retry || httpretry.IdempotentMethod(r.method)}
	out := c.retrier.Do(ctx, call, func(ctx context.Context, n int) httpretry.Result {
		var res httpretry.Result
		putBuffer(body) // an earlier attempt's, were there one
		body, res, last = c.attempt(ctx, r, payload, n)
		return res
	})
	if out.Class == httpretry.Success && out.Err == nil {
		return body, nil
	}
	putBuffer(body) // nil unless the last attempt read one
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

// readBuffers holds the buffers answers are read into, so that a daemon
// polling thousands of hotels does not grow a new one for every list.
var readBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// keepBuffer is the largest read buffer put back for reuse: a rare large
// answer does not stay in memory.
const keepBuffer = 1 << 20

// readBody reads at most limit bytes of r into a read buffer, for
// putBuffer once decoded: a list is decoded where it was read, with no
// copy of its own, and no buffer is grown for each answer.
func readBody(r io.Reader, limit int64) (*bytes.Buffer, error) {
	buf := readBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	_, err := buf.ReadFrom(io.LimitReader(r, limit))
	return buf, err
}

// putBuffer gives buf back for reuse, unless it grew past keepBuffer; a
// nil buf is ignored.
func putBuffer(buf *bytes.Buffer) {
	if buf != nil && buf.Cap() <= keepBuffer {
		readBuffers.Put(buf)
	}
}

// attempt makes one HTTP exchange. It returns the body of a 2xx answer (a
// read buffer: see readBody), what the exchange was for the retry loop,
// and the error to report when it failed.
func (c *Client) attempt(ctx context.Context, r request, payload []byte, attempt int) (*bytes.Buffer, httpretry.Result, error) {
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
		body, err := readBody(resp.Body, MaxBodySize+1)
		c.logAttempt(ctx, r, attempt, resp.StatusCode, time.Since(start), err)
		if err != nil {
			putBuffer(body)
			err = fmt.Errorf("read answer: %w", err)
			return nil, httpretry.Result{Err: err}, transportError(r, err)
		}
		if body.Len() > MaxBodySize {
			putBuffer(body)
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
	c.keyMu.Lock()
	s = c.redactLocked(s)
	c.keyMu.Unlock()
	c.tokMu.Lock()
	tok := c.tok
	c.tokMu.Unlock()
	if tok != nil && tok.AccessToken != "" {
		s = strings.ReplaceAll(s, tok.AccessToken, "[redacted]")
	}
	return s
}

// redactLocked removes the key in use and the keys used before from s;
// c.keyMu is held.
func (c *Client) redactLocked(s string) string {
	s = strings.ReplaceAll(s, c.key, KeyPrefix+"[redacted]")
	for _, k := range c.old {
		s = strings.ReplaceAll(s, k, KeyPrefix+"[redacted]")
	}
	return s
}
