package sync

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
)

// The cycle's side of an operator's connect (see commands.go): the
// request, read, is stored in the helpdesk ticket the operator named
// (adapters.Connector), which is then adopted as a ticket found after a
// state loss is.

// connect stores r's request in the ticket its connect names. A refusal
// of the helpdesk (no such ticket, one that mirrors another request, a
// second ticket for this one) fails the request with why, backed off as
// a refused input is, until an operator connects it elsewhere or
// unlinks it: nothing is created meanwhile.
func (c *cycle) connect(r *refreshResult, d guestapi.TicketDetail) error {
	to := adapters.Ref(r.t.ConnectRef)
	var err error
	if cn, ok := c.e.hd.(adapters.Connector); ok {
		err = cn.Connect(c.ctx, to, toAdapterTicket(d))
	} else {
		err = fmt.Errorf("the %s helpdesk cannot connect a ticket made by hand: %w", c.e.hd.Name(), adapters.ErrInvalid)
	}
	if err == nil {
		return nil
	}
	a := state.Audit{Kind: "connect", Outcome: state.AuditRetrying, Detail: err.Error()}
	if errors.Is(err, adapters.ErrNotFound) || errors.Is(err, adapters.ErrInvalid) {
		a.Outcome = state.AuditRefused
		err = fmt.Errorf("%w (connect it to another ticket, or unlink it)", err)
		if !errors.Is(err, adapters.ErrInvalid) {
			err = fmt.Errorf("%w: %w", err, adapters.ErrInvalid) // backed off as refused input
		}
	}
	c.audit(r, a)
	*r = c.ticketError(*r, "connect helpdesk ticket "+string(to), err)
	return err
}

// connected checks what Lookup found of r's request just connected to
// its ticket (f, ok), and marks r as connected: the connect is done,
// and the team's replies and notes already on the ticket are journaled
// set aside, never sent unless an operator retries one (they were
// written before the ticket mirrored the request: to the guest by other
// means, or to the team).
func (c *cycle) connected(r *refreshResult, f adapters.Found, ok bool) error {
	to := r.t.ConnectRef
	if !ok || string(f.Ref) != to {
		// The adapter stored the id, and its search does not show it
		// yet (or shows another ticket): tried again, never created.
		return fmt.Errorf("connect helpdesk ticket %s: the helpdesk does not find it by the request's id yet (found %q)", to, f.Ref)
	}
	var fresh []adapters.Event // neither sent nor journaled before (a relink meets its own)
	err := c.e.st.View(c.ctx, func(tx *state.Tx) error {
		for _, ev := range f.Events {
			if ev.Kind != adapters.EventReply && ev.Kind != adapters.EventNote {
				continue
			}
			if _, sent := f.Sent[ev.ID]; sent || checkEvent(ev) != nil {
				continue
			}
			_, journaled, err := tx.JournalEntry(ev.ID)
			if err != nil {
				return err
			}
			if !journaled {
				fresh = append(fresh, ev)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, ev := range fresh {
		r.journal = append(r.journal, state.Entry{
			EventID: ev.ID, TicketID: r.t.ID, Ref: to, IdempotencyKey: IdempotencyKey(c.e.hd.Name(), f.Ref, ev.ID),
			Kind: string(ev.Kind), State: state.Abandoned, CreatedAt: ev.At,
			Payload:   state.Payload{Body: ev.Body, AuthorName: ev.AuthorName, Visible: ev.Kind == adapters.EventReply},
			LastError: "set aside: written on the helpdesk ticket before it was connected to the request (retry sends it)",
		})
		r.audit = append(r.audit, abandonAudit(r.journal[len(r.journal)-1], c.now, state.AuditOperator))
	}
	r.t.ConnectRef = ""
	c.audit(r, state.Audit{Kind: "connect", Outcome: state.AuditOK, Detail: fmt.Sprintf("connected; %d replies and notes already on it set aside", len(r.journal))})
	c.e.log.LogAttrs(c.ctx, slog.LevelInfo, "request connected to a helpdesk ticket made by hand: the messages it lacks are appended",
		slog.String("op", "import"), slog.String("ticket", r.t.ID), slog.String("ref", to))
	return nil
}

// relink completes the connect of an unlinked request to its own ticket
// again: the ticket is given the request's id again (an agent may have
// cleared it; Connect writes nothing when it holds it; a helpdesk without
// Connect keeps it in its tickets' names), what state keeps
// of it stays, and the team's replies and notes written on it while it
// was unlinked are set aside, as those on a ticket made by hand are.
func (c *cycle) relink(r *refreshResult, d guestapi.TicketDetail) error {
	// A helpdesk that cannot connect names its tickets by the request's
	// id (the webhook's, email's): its ticket holds the id for good.
	if _, ok := c.e.hd.(adapters.Connector); ok {
		if err := c.connect(r, d); err != nil {
			return err
		}
	}
	f, ok, err := c.e.hd.Lookup(c.ctx, r.t.ID)
	if err == nil {
		err = c.connected(r, f, ok)
	}
	if err != nil {
		*r = c.ticketError(*r, "look up helpdesk ticket", err)
	}
	return err
}
