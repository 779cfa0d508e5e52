package guestapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

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
	l, err := c.ListTicketsRaw(ctx, opt)
	if err != nil {
		return nil, err
	}
	defer l.Release()
	return l.Tickets()
}

// ListTicketsRaw calls GET /tickets as ListTickets does, and returns the
// answer read but not decoded: a caller that keeps the [ListDigest] of a
// list decodes the next answer only when its digest differs. The caller
// releases it.
func (c *Client) ListTicketsRaw(ctx context.Context, opt ListOptions) (*RawList, error) {
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
	r := request{op: op, method: http.MethodGet, path: TicketsPrefix + "/tickets", query: q, auth: c.currentKey()}
	buf, err := c.doRaw(ctx, r)
	if err != nil {
		return nil, err
	}
	return &RawList{buf: buf, r: r}, nil
}

// GetTicket calls GET /tickets/{id}: the ticket and its messages, oldest
// first. An unknown or foreign ticket is an error matching [ErrNotFound].
func (c *Client) GetTicket(ctx context.Context, id string) (*Thread, error) {
	const op = "get ticket"
	p, err := ticketPath(op, id, "")
	if err != nil {
		return nil, err
	}
	r := request{op: op, method: http.MethodGet, path: p, auth: c.currentKey()}
	var th *Thread
	err = c.do(ctx, r, func(body []byte) (err error) {
		th, err = decodeThread(body)
		return err
	})
	if err != nil {
		return nil, err
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
	r := request{op: op, method: http.MethodPost, path: p, body: m, auth: c.currentKey(), idemKey: idempotencyKey, retry: idempotencyKey != ""}
	var res PostMessageResult
	if err := c.do(ctx, r, func(body []byte) error { return decodeObject(body, &res) }); err != nil {
		return PostMessageResult{}, err
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
	r := request{op: op, method: http.MethodPost, path: p, body: SetStatusRequest{Status: s}, auth: c.currentKey(), idemKey: idempotencyKey, retry: idempotencyKey != ""}
	var res SetStatusResult
	if err := c.do(ctx, r, func(body []byte) error { return decodeObject(body, &res) }); err != nil {
		return SetStatusResult{}, err
	}
	if res.Status == "" {
		return SetStatusResult{}, r.decodeErr(errors.New("status is missing"))
	}
	return res, nil
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
