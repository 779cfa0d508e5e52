package saas

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// Connecter is the primitive of a [Vendor] that links a ticket made by
// hand to an upstream ticket ([adapters.Connector]); Helpdesk.ConnectTicket
// builds the rest on it: the input check, the reads that decide whether
// anything is to be written, and the refusals.
type Connecter[T any] interface {
	// Open reads the ticket ref names, whether or not it mirrors an
	// upstream ticket, and returns it with the upstream id it holds (""
	// for none). An unknown ref is [adapters.ErrNotFound]; a ticket whose
	// field holds something the bridge did not write there (another
	// integration's id) is [adapters.ErrInvalid], saying what it holds.
	Open(ctx context.Context, ref adapters.Ref) (th T, upstream string, err error)
	// Stamp stores upstreamID in th, which holds no upstream id, where
	// Create stores it, and writes nothing there that an agent would
	// see as the bridge's (no comment, no note), so that Thread finds th
	// by it and Events reports the team's work on it from then on. A
	// ticket that can take no write (closed or archived for good) is
	// [adapters.ErrInvalid], saying why.
	Stamp(ctx context.Context, th T, upstreamID string) error
}

// ConnectTicket is the body of a SaaS adapter's Connect (see
// [adapters.Connector]), on the vendor's [Connecter]: it reads ticket
// ref, returns nil without writing when it holds t.UpstreamID already,
// refuses it when it holds another upstream id or when Thread finds
// another ticket that mirrors t.UpstreamID (a second mirror of one
// request), and else has the vendor stamp it.
func (h *Helpdesk[T]) ConnectTicket(ctx context.Context, ref adapters.Ref, t adapters.Ticket) error {
	if err := h.in.UpstreamID("connect", t.UpstreamID); err != nil {
		return err
	}
	what := fmt.Sprintf("connect %s ticket %s to request %s", h.in.Name, ref, t.UpstreamID)
	c, ok := h.v.(Connecter[T])
	if !ok {
		return fmt.Errorf("%s: the %s adapter cannot connect tickets: %w", what, h.in.Name, adapters.ErrInvalid)
	}
	th, holds, err := c.Open(ctx, ref)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	case holds == t.UpstreamID:
		return nil
	case holds != "":
		return fmt.Errorf("%s: it mirrors request %s: %w", what, holds, adapters.ErrInvalid)
	}
	_, other, found, err := h.v.Thread(ctx, t.UpstreamID)
	switch {
	case err != nil:
		return fmt.Errorf("%s: look for a ticket that mirrors it: %w", what, err)
	case found && other != ref:
		return fmt.Errorf("%s: ticket %s mirrors that request: %w", what, other, adapters.ErrInvalid)
	}
	if err := c.Stamp(ctx, th, t.UpstreamID); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	h.log.LogAttrs(ctx, slog.LevelInfo, "connected "+h.in.Name+" ticket made by hand",
		slog.String("ticket", t.UpstreamID), slog.String("op", "connect"), slog.String(h.in.Name+"_ticket", string(ref)))
	return nil
}
