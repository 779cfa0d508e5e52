package rt

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters"
)

var _ adapters.Connector = (*Adapter)(nil)

// Connect links RT ticket ref, one someone made by hand, to the upstream
// ticket t (see [adapters.Connector]): it sets the ID custom field
// (TICKETBRIDGE_RT_ID_FIELD) to t.UpstreamID, as EnsureTicket does when it
// creates a ticket, in one PUT that it checks by reading the ticket again
// (REST2 answers a refused change with 200 and a message). A custom field
// change is no correspondence or comment, so it notifies nobody and
// Changes does not report it; RT's history shows it as a one-liner. A
// ticket whose field holds t.UpstreamID already is left as it is.
//
// Connect refuses, with [adapters.ErrInvalid], a ticket whose field holds
// another upstream id, a second ticket for t.UpstreamID, and a ticket in
// a queue the adapter does not follow (TICKETBRIDGE_RT_QUEUE and
// TICKETBRIDGE_RT_QUEUES): Changes reads those queues only, so the team's
// replies there would never reach the guest. A ticket RT does not have,
// or does not show the bridge's user, is [adapters.ErrNotFound].
func (a *Adapter) Connect(ctx context.Context, ref adapters.Ref, t adapters.Ticket) error {
	id, err := parseRef(ref)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	if err := checkID("upstream ticket id", t.UpstreamID); err != nil {
		return fmt.Errorf("connect RT ticket %d: %w", id, err)
	}
	s, err := a.ready(ctx)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("connect RT ticket %d to guest request %s", id, t.UpstreamID)
	tk, err := a.getTicket(ctx, "connect", id)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	switch held := heldID(tk, s); {
	case held == t.UpstreamID:
		a.remember(id, t.UpstreamID)
		return nil
	case held != "":
		return fmt.Errorf("%s: it mirrors guest request %s (its custom field %q): %w", what, held, a.cfg.IDField, adapters.ErrInvalid)
	}
	if !a.follows(s, tk) {
		return fmt.Errorf("%s: it is in queue %s, which the bridge does not follow (it follows %s): move it to one of those first: %w",
			what, queueName(tk), quoteList(a.queueNames()), adapters.ErrInvalid)
	}
	found, err := a.findTickets(ctx, t.UpstreamID)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	for _, other := range found {
		if int64(other.ID) != id {
			return fmt.Errorf("%s: RT ticket %d mirrors that request already: %w", what, int64(other.ID), adapters.ErrInvalid)
		}
	}
	set := map[string]any{"CustomFields": map[string]any{strconv.FormatInt(s.idCF, 10): t.UpstreamID}}
	resp, err := a.c.call(ctx, "connect", http.MethodPut, fmt.Sprintf("/ticket/%d", id), nil, set, nil, true)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	now, err := a.getTicket(ctx, "connect", id)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if held := heldID(now, s); held != t.UpstreamID {
		return fmt.Errorf("%s: RT did not take the custom field %q (it holds %q); RT said: %s", what, a.cfg.IDField, held, strings.Join(messages(resp), "; "))
	}
	a.remember(id, t.UpstreamID)
	a.log.LogAttrs(ctx, slog.LevelInfo, "connected RT ticket", slog.String("ticket", t.UpstreamID),
		slog.String("op", "connect"), slog.Int64("rt_ticket", id))
	return nil
}

// heldID returns the upstream id ticket tk holds in the ID custom field.
func heldID(tk rtTicket, s *setup) string {
	if vs := tk.values(s.idCF); len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// follows reports whether ticket tk is in one of the adapter's queues.
func (a *Adapter) follows(s *setup, tk rtTicket) bool {
	for _, qid := range s.queueIDs {
		if int64(tk.Queue.ID) == qid {
			return true
		}
	}
	return false
}

// queueName names the queue of tk for an error: its name when RT gave
// it, else its id.
func queueName(tk rtTicket) string {
	if tk.Queue.Name != "" {
		return strconv.Quote(tk.Queue.Name)
	}
	return strconv.FormatInt(int64(tk.Queue.ID), 10)
}
