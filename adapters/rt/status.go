package rt

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// keepsStatus reports whether mirroring guest correspondence leaves a
// ticket in status was: a new ticket always, a closed one when the message
// is history being filled in.
func (a *Adapter) keepsStatus(was string, backfill bool) bool {
	up, ok := a.status.Up(was)
	switch {
	case !ok:
		return false
	case up == guestapi.StatusNew:
		return true
	case up.Closed():
		return backfill
	}
	return false
}

// SetStatus sets the RT status s maps to.
func (a *Adapter) SetStatus(ctx context.Context, ref adapters.Ref, s guestapi.Status) error {
	if !s.Known() {
		return fmt.Errorf("set status of RT ticket %s: %q is not one of the API's statuses: %w", ref, s, adapters.ErrInvalid)
	}
	target := a.status.Down(s)
	if target == "" {
		return fmt.Errorf("set status of RT ticket %s: status %q maps to no RT status: %w", ref, s, adapters.ErrInvalid)
	}
	id, err := parseRef(ref)
	if err != nil {
		return fmt.Errorf("set status: %w", err)
	}
	if _, err := a.ready(ctx); err != nil {
		return err
	}
	tk, err := a.getTicket(ctx, "set status", id)
	if err != nil {
		return fmt.Errorf("set status: %w", err)
	}
	if tk.Status == target {
		return nil
	}
	if err := a.setStatus(ctx, id, target); err != nil {
		return err
	}
	a.log.LogAttrs(ctx, slog.LevelDebug, "set status", slog.String("ticket", a.upstreamOf(id)),
		slog.String("op", "status"), slog.Int64("rt_ticket", id), slog.String("status", target))
	return nil
}

// setStatus moves ticket id to status and checks that RT did: REST2
// answers a refused change with 200 and a message.
func (a *Adapter) setStatus(ctx context.Context, id int64, status string) error {
	resp, err := a.c.call(ctx, "set status", http.MethodPut, fmt.Sprintf("/ticket/%d", id), nil, map[string]any{"Status": status}, nil, true)
	if err != nil {
		return fmt.Errorf("set status of RT ticket %d to %q: %w", id, status, err)
	}
	now, err := a.getTicket(ctx, "set status", id)
	if err != nil {
		return fmt.Errorf("set status of RT ticket %d to %q: %w", id, status, err)
	}
	if now.Status == status {
		return nil
	}
	said := strings.Join(messages(resp), "; ")
	err = fmt.Errorf("set status of RT ticket %d to %q: the ticket is still %q; RT said: %s", id, status, now.Status, said)
	if strings.Contains(said, "isn't a valid status") {
		err = fmt.Errorf("%w (the status mapping names a status this queue's lifecycle lacks): %w", err, adapters.ErrInvalid)
	}
	return err
}
