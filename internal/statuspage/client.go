package statuspage

// This file is the console's client: the command line's side of the API
// the Server answers (the audit trail at /tickets/{id}/audit, the actions'
// POSTs with the token as bearer credential and the operator in
// Ticketbridge-Operator), so that both sides of it live in one package.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/redact"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// clientTimeout bounds one request of a Client, its answer read.
const clientTimeout = 15 * time.Second

// Client asks a running daemon's console what a command cannot do itself
// while the daemon holds the hotel's state: read a request's audit trail,
// or act on a request or journal entry. It is given the listener and the
// token as the daemon's Server is given them (Options.Listen, Token);
// the caller reads both from the configuration.
type Client struct {
	// HTTP sends the requests; nil is http.DefaultClient.
	HTTP  *http.Client
	addr  string // host:port, a wildcard address asked on loopback
	token string
	base  string // "" for a daemon of one hotel, else /hotels/NAME
}

// NewClient returns the client of the console on the listener listen
// (TICKETBRIDGE_LISTEN; a wildcard address is asked on loopback) with the
// console token ("" reads only), for the hotel hotel of a daemon of many
// hotels ("" for a daemon of one).
func NewClient(listen, token, hotel string) *Client {
	host, port, _ := net.SplitHostPort(listen)
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	c := &Client{addr: net.JoinHostPort(host, port), token: token}
	if hotel != "" {
		c.base = "/hotels/" + url.PathEscape(hotel)
	}
	return c
}

// Trail returns the audit trail of the request id (its upstream id, the
// first 8 or more characters of it, or its helpdesk reference), oldest
// first.
func (c *Client) Trail(ctx context.Context, id string) ([]state.Audit, error) {
	body, err := c.do(ctx, http.MethodGet, "/tickets/"+url.PathEscape(id)+"/audit", nil, nil, "")
	if err != nil {
		return nil, err
	}
	trail, err := sync.ReadTrailJSON(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("read the daemon's answer: %w", err)
	}
	return trail, nil
}

// Act asks the daemon to take the action (retry, skip, read-now, pause,
// resume, resync, unlink or connect: its path under the hotel's pages)
// on id, for the operator who, with arg: a skip's reason, the helpdesk
// ticket a connect names. It needs the token. It returns the daemon's
// answer, the line that says what was done.
func (c *Client) Act(ctx context.Context, action, id, arg, who string) (string, error) {
	if !slices.ContainsFunc(actions, func(a struct{ path, name string }) bool { return a.path == action }) {
		return "", fmt.Errorf("the console has no action %q", action)
	}
	form := url.Values{}
	if arg != "" {
		form.Set(argField(action), arg)
	}
	body, err := c.do(ctx, http.MethodPost, "/"+action, url.Values{"id": {id}}, form, who)
	return strings.TrimSpace(string(body)), err
}

// do sends one request to the console at path (escaped) under the
// hotel's pages, with form as its body when not nil and who as the
// operator, and returns the body of its 200 answer.
func (c *Client) do(ctx context.Context, method, path string, query, form url.Values, who string) ([]byte, error) {
	raw := c.base + path
	plain, err := url.PathUnescape(raw)
	if err != nil {
		return nil, err
	}
	// Path is the path unescaped; RawPath keeps its escaped slashes and
	// is sent as it is, escaped once.
	u := url.URL{Scheme: "http", Host: c.addr, Path: plain, RawPath: raw, RawQuery: query.Encode()}
	ctx, cancel := context.WithTimeout(ctx, clientTimeout)
	defer cancel()
	var rd io.Reader
	if form != nil {
		rd = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Ticketbridge-Operator", who)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the daemon holds the state file and does not answer on %s: %w", c.addr, redact.Error(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return nil, fmt.Errorf("the daemon refused (%s): %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return io.ReadAll(io.LimitReader(resp.Body, 16<<20))
}

// argField is the form field of an action's argument: the helpdesk
// ticket of a connect, the reason of a skip.
func argField(action string) string {
	if action == "connect" {
		return "ref"
	}
	return "reason"
}
