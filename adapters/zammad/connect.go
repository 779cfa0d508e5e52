package zammad

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
)

var _ adapters.Connector = (*Adapter)(nil)

// Connect links Zammad ticket ref, one someone made by hand, to the
// upstream ticket t (see [adapters.Connector]): it writes t.UpstreamID
// into the ticket attribute TICKETBRIDGE_ZAMMAD_ID_FIELD, as Create does,
// with one ticket update, and nothing else: no article, tag or state. A
// ticket whose attribute holds t.UpstreamID already is not written.
//
// Zammad records the update in the ticket's history; Changes reads that
// entry as the time of the connect and reports only the articles and
// state changes made after it, even within its overlap (the ticket's
// first article, written by the agent who made it, is no reply to the
// guest). Lookup lists the agents' articles from before as well, as it
// does for any ticket: the engine sets those aside when it connects.
//
// Connect refuses, with [adapters.ErrInvalid], a ticket whose attribute
// holds another upstream id, and a second ticket for t.UpstreamID; each
// error names the other. A ticket Zammad does not have is
// [adapters.ErrNotFound]; one in a group the API user has no access to
// is refused by Zammad, and the error says to grant it.
func (a *Adapter) Connect(ctx context.Context, ref adapters.Ref, t adapters.Ticket) error {
	if err := a.Input().UpstreamID("connect", t.UpstreamID); err != nil {
		return err
	}
	id, err := saas.ParseRef(Name, ref)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	what := fmt.Sprintf("connect zammad ticket %d to guest request %s", id, t.UpstreamID)
	tk, err := a.ticket(ctx, id)
	if errors.Is(err, adapters.ErrAuth) {
		return fmt.Errorf("%s: the API user may not read it: give it access to the ticket's group (Admin > Manage > Users, or through a role): %w", what, err)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	held, present := tk.attr(a.cfg.IDField)
	switch {
	case !present:
		return fmt.Errorf("%s: Zammad's tickets have no attribute %q: %s: %w", what, a.cfg.IDField, a.attributeHelp(), adapters.ErrInvalid)
	case held == t.UpstreamID:
		return nil
	case held != "":
		return fmt.Errorf("%s: it mirrors guest request %s (its attribute %s): %w", what, held, a.cfg.IDField, adapters.ErrInvalid)
	}
	others, err := a.byUpstream(ctx, t.UpstreamID)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	for _, o := range others {
		if o.ID != id {
			return fmt.Errorf("%s: zammad ticket %d mirrors that request already: %w", what, o.ID, adapters.ErrInvalid)
		}
	}
	var out zmTicket
	_, err = a.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodPut, URL: a.url("/tickets/"+idString(id), url.Values{"expand": {"true"}}), Op: "connect"},
		map[string]any{a.cfg.IDField: t.UpstreamID}, &out)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if v, _ := out.attr(a.cfg.IDField); v != t.UpstreamID {
		return fmt.Errorf("%s: Zammad did not store the upstream id in the attribute %q: %s: %w", what, a.cfg.IDField, a.attributeHelp(), adapters.ErrInvalid)
	}
	a.log.LogAttrs(ctx, slog.LevelInfo, "connected zammad ticket",
		slog.String("ticket", t.UpstreamID), slog.String("op", "connect"), slog.Int64("zammad_ticket", id))
	return nil
}

// history reads the history of ticket id, oldest first.
func (a *Adapter) history(ctx context.Context, id int64) ([]zmHistory, error) {
	var hist struct {
		History []zmHistory `json:"history"`
	}
	if _, err := a.get(ctx, "/ticket_history/"+idString(id), nil, "read ticket history", &hist); err != nil {
		return nil, fmt.Errorf("read history of zammad ticket %d: %w", id, err)
	}
	return hist.History, nil
}

// connectedAt returns when the ticket of hist was connected to upstream:
// the last update of the attribute to that value. Zero for a ticket
// created with it (the bridge's own), whose history records no such
// update.
func (a *Adapter) connectedAt(hist []zmHistory, upstream string) time.Time {
	var at time.Time
	for _, h := range hist {
		if h.Object == "Ticket" && h.Type == "updated" && h.Attribute == a.cfg.IDField && h.ValueTo == upstream && h.CreatedAt.After(at) {
			at = h.CreatedAt
		}
	}
	return at
}
