package rt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// parseRef returns the RT ticket number of ref; a ref that is no ticket
// number is no ticket RT has.
func parseRef(ref adapters.Ref) (int64, error) {
	n, err := strconv.ParseInt(string(ref), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("RT ticket %q: not a ticket number: %w", string(ref), adapters.ErrNotFound)
	}
	return n, nil
}

func refOf(id int64) adapters.Ref { return adapters.Ref(strconv.FormatInt(id, 10)) }

// getTicket reads one ticket; a ticket RT does not have (or does not show
// the bridge) is [adapters.ErrNotFound].
func (a *Adapter) getTicket(ctx context.Context, op string, id int64) (rtTicket, error) {
	var t rtTicket
	_, err := a.c.get(ctx, op, fmt.Sprintf("/ticket/%d", id), nil, &t)
	if err != nil {
		return rtTicket{}, fmt.Errorf("read RT ticket %d: %w", id, err)
	}
	if t.ID == 0 {
		return rtTicket{}, fmt.Errorf("read RT ticket %d: %w", id, adapters.ErrNotFound)
	}
	return t, nil
}

// findTickets returns the tickets whose ID field holds upstreamID, oldest
// first. RT leaves deleted tickets out of every search (REST2 gives no way
// to ask for them), so a deleted ticket is not found.
func (a *Adapter) findTickets(ctx context.Context, upstreamID string) ([]rtTicket, error) {
	q := url.Values{
		"query":    {fmt.Sprintf("'CF.{%s}' = %s", a.cfg.IDField, ticketSQLQuote(upstreamID))},
		"fields":   {"Status,Created,LastUpdated,CustomFields"},
		"orderby":  {"id"},
		"order":    {"ASC"},
		"per_page": {strconv.Itoa(perPage)},
	}
	var p page[rtTicket]
	if _, err := a.c.get(ctx, "lookup", "/tickets", q, &p); err != nil {
		return nil, fmt.Errorf("search RT for guest request %s: %w", upstreamID, err)
	}
	for _, t := range p.Items {
		a.remember(int64(t.ID), upstreamID)
	}
	return p.Items, nil
}

func (a *Adapter) remember(ticket int64, upstreamID string) {
	a.mu.Lock()
	a.tickets[ticket] = upstreamID
	a.mu.Unlock()
}

// EnsureTicket returns the RT ticket of t.UpstreamID, creating it in the
// department's queue, with the custom field set, when none exists.
func (a *Adapter) EnsureTicket(ctx context.Context, t adapters.Ticket) (adapters.Ref, error) {
	if err := checkID("upstream ticket id", t.UpstreamID); err != nil {
		return "", fmt.Errorf("ensure RT ticket: %w", err)
	}
	if t.Status != "" && !t.Status.Known() {
		return "", fmt.Errorf("ensure RT ticket for %s: status %q is not one of the API's: %w", t.UpstreamID, t.Status, adapters.ErrInvalid)
	}
	s, err := a.ready(ctx)
	if err != nil {
		return "", err
	}
	found, err := a.findTickets(ctx, t.UpstreamID)
	if err != nil {
		return "", fmt.Errorf("ensure RT ticket: %w", err)
	}
	if len(found) > 0 {
		id, err := a.oneTicket(ctx, t.UpstreamID, found)
		return refOf(id), err
	}
	queue := a.queueFor(t.Department)
	st := ""
	if t.Status != "" {
		st = a.status.Down(t.Status)
	}
	id, err := a.create(ctx, s, t, queue, st)
	if err != nil {
		return "", err
	}
	a.remember(id, t.UpstreamID)
	a.log.LogAttrs(ctx, slog.LevelInfo, "created RT ticket", slog.String("ticket", t.UpstreamID),
		slog.String("op", "ensure"), slog.Int64("rt_ticket", id), slog.String("queue", queue))
	// A bridge killed while RT was creating a ticket leaves that create
	// running in RT; the restarted bridge may have searched before it
	// finished and made a second ticket. Look again.
	if found, err = a.findTickets(ctx, t.UpstreamID); err == nil && len(found) > 1 {
		id, err = a.oneTicket(ctx, t.UpstreamID, found)
		if err != nil {
			return "", err
		}
	}
	return refOf(id), nil
}

// oneTicket returns the ticket of found that mirrors upstreamID and merges
// any others into it (RT's way with duplicates): the one holding the most
// mirrored messages, the oldest of those. Merging keeps every transaction,
// and RT shows a merged ticket's history in the one it was merged into, so
// the markers of both count from then on. Duplicates arise only when a
// bridge is killed while RT creates a ticket (see EnsureTicket).
func (a *Adapter) oneTicket(ctx context.Context, upstreamID string, found []rtTicket) (int64, error) {
	if len(found) == 1 {
		return int64(found[0].ID), nil
	}
	best, most := int64(0), -1
	for _, t := range found { // oldest first
		held, _, err := a.markers(ctx, int64(t.ID), 0)
		if err != nil {
			return 0, fmt.Errorf("choose among the RT tickets of guest request %s: %w", upstreamID, err)
		}
		if len(held) > most {
			best, most = int64(t.ID), len(held)
		}
	}
	for _, t := range found {
		dup := int64(t.ID)
		if dup == best {
			continue
		}
		resp, err := a.c.call(ctx, "merge duplicate", http.MethodPut, fmt.Sprintf("/ticket/%d", dup), nil, map[string]any{"MergeInto": best}, nil, true)
		if err != nil {
			return 0, fmt.Errorf("merge RT ticket %d into %d, two tickets of guest request %s: %w", dup, best, upstreamID, err)
		}
		a.log.LogAttrs(ctx, slog.LevelWarn, "merged a duplicate RT ticket of a guest request (the bridge was stopped while RT created it)",
			slog.String("ticket", upstreamID), slog.String("op", "merge"), slog.Int64("rt_ticket", best),
			slog.Int64("duplicate", dup), slog.String("rt_said", strings.Join(messages(resp), "; ")))
	}
	return best, nil
}

// create makes the ticket. RT lets a lifecycle restrict the statuses a new
// ticket may have (the default one allows new, open and resolved); when it
// refuses the status, the ticket is created with the queue's default and
// then moved.
func (a *Adapter) create(ctx context.Context, s *setup, t adapters.Ticket, queue, status string) (int64, error) {
	body := map[string]any{
		"Queue":        queue,
		"Subject":      subject(t),
		"Content":      renderTicket(t),
		"ContentType":  "text/plain",
		"CustomFields": a.createFields(s, t),
	}
	if status != "" {
		body["Status"] = status
	}
	var created struct {
		ID flexID `json:"id"`
	}
	_, err := a.c.call(ctx, "create ticket", http.MethodPost, "/ticket", nil, body, &created, false)
	var herr *adapters.HTTPError
	if status != "" && errors.As(err, &herr) && herr.StatusCode == http.StatusBadRequest && strings.Contains(herr.Body, "status") {
		delete(body, "Status")
		_, err = a.c.call(ctx, "create ticket", http.MethodPost, "/ticket", nil, body, &created, false)
		if err == nil && created.ID != 0 {
			a.remember(int64(created.ID), t.UpstreamID)
			if err := a.setStatus(ctx, int64(created.ID), status); err != nil {
				return 0, err
			}
		}
	}
	if err != nil {
		return 0, fmt.Errorf("create RT ticket for %s in queue %q: %w", t.UpstreamID, queue, err)
	}
	if created.ID == 0 {
		return 0, fmt.Errorf("create RT ticket for %s in queue %q: RT answered without a ticket id", t.UpstreamID, queue)
	}
	return int64(created.ID), nil
}

// createFields are the custom fields a new ticket gets: the upstream id,
// and the guest's rating where a rating field is configured.
func (a *Adapter) createFields(s *setup, t adapters.Ticket) map[string]any {
	cf := map[string]any{strconv.FormatInt(s.idCF, 10): t.UpstreamID}
	if s.ratingCF != 0 && t.GuestRating != nil {
		cf[strconv.FormatInt(s.ratingCF, 10)] = adapters.FormatRating(*t.GuestRating)
	}
	return cf
}

// upstreamOf returns the upstream id of an RT ticket the adapter has seen,
// for the log.
func (a *Adapter) upstreamOf(id int64) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tickets[id]
}

// Lookup finds the RT ticket of upstreamID with the upstream messages it
// holds (by their markers), the deliveries MarkSent recorded, and the
// team's replies and comments (see [Adapter.ticketEvents]).
func (a *Adapter) Lookup(ctx context.Context, upstreamID string) (adapters.Found, bool, error) {
	if err := checkID("upstream ticket id", upstreamID); err != nil {
		return adapters.Found{}, false, fmt.Errorf("lookup: %w", err)
	}
	s, err := a.ready(ctx)
	if err != nil {
		return adapters.Found{}, false, err
	}
	found, err := a.findTickets(ctx, upstreamID)
	if err != nil {
		return adapters.Found{}, false, fmt.Errorf("lookup: %w", err)
	}
	if len(found) == 0 {
		return adapters.Found{}, false, nil
	}
	id, err := a.oneTicket(ctx, upstreamID, found)
	if err != nil {
		return adapters.Found{}, false, fmt.Errorf("lookup: %w", err)
	}
	var tk rtTicket
	for _, t := range found {
		if int64(t.ID) == id {
			tk = t
		}
	}
	msgs, _, err := a.markers(ctx, int64(tk.ID), 0)
	if err != nil {
		return adapters.Found{}, false, fmt.Errorf("lookup: %w", err)
	}
	// RT keeps no time of the last status change on the ticket: its
	// LastUpdated is the latest of any change, which is as late or later.
	updated, _ := rtTime(tk.LastUpdated)
	f := adapters.Found{Ref: refOf(int64(tk.ID)), Messages: msgs, Sent: map[string]string{},
		Status: a.status.Current(tk.Status, updated)}
	if s.sentCF != 0 {
		for _, v := range tk.values(s.sentCF) {
			if ev, up, ok := strings.Cut(v, "="); ok && ev != "" {
				f.Sent[ev] = up
			}
		}
	}
	if f.Events, err = a.ticketEvents(ctx, s, int64(tk.ID), upstreamID); err != nil {
		return adapters.Found{}, false, fmt.Errorf("lookup: %w", err)
	}
	return f, true, nil
}
