package guestapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// tokenRefreshMargin is how long before its expiry a cached access token is
// replaced (at most half its lifetime).
const tokenRefreshMargin = time.Minute

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
	r := request{op: op, method: http.MethodPost, path: TokenPath, body: TokenRequest{APIKey: c.currentKey()}, retry: true}
	var tok AccessToken
	if err := c.do(ctx, r, func(body []byte) error { return decodeObject(body, &tok) }); err != nil {
		return AccessToken{}, err
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
		var v Verification
		err = c.do(ctx, r, func(body []byte) error { return decodeObject(body, &v) })
		if errors.Is(err, ErrUnauthorized) && try == 0 {
			c.forgetToken(tok.AccessToken)
			continue
		}
		if err != nil {
			return Verification{}, err
		}
		return v, nil
	}
}
