package zammad

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// cond is one entry of a ticket search's condition.
type cond struct {
	attr, op, value string
}

// timeValue formats t for a condition, at Zammad's millisecond precision.
func timeValue(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// search asks GET /tickets/search with a condition and no full-text query,
// which Zammad answers from its database rather than from its search index
// (which lags behind writes), expanded to ticket objects.
func (a *Adapter) search(ctx context.Context, conds []cond, sortBy, orderBy string, page int, op string) ([]zmTicket, *adapters.HTTPResponse, error) {
	q := url.Values{}
	for _, c := range conds {
		q.Set("condition[ticket."+c.attr+"][operator]", c.op)
		q.Set("condition[ticket."+c.attr+"][value]", c.value)
	}
	if sortBy != "" {
		q.Set("sort_by", sortBy)
		q.Set("order_by", orderBy)
	}
	q.Set("page", strconv.Itoa(page))
	q.Set("per_page", strconv.Itoa(a.cfg.PageSize))
	q.Set("limit", strconv.Itoa(a.cfg.PageSize))
	q.Set("expand", "true")
	var out []zmTicket
	resp, err := a.get(ctx, "/tickets/search", q, op, &out)
	return out, resp, err
}

// byUpstream returns the tickets whose attribute holds upstreamID, oldest
// first. It checks the value of every ticket Zammad answers: a search that
// ignored the condition is an error, so that a foreign ticket is never
// adopted and a missed one never duplicated.
func (a *Adapter) byUpstream(ctx context.Context, upstreamID string) ([]zmTicket, error) {
	var out []zmTicket
	for page := 1; ; page++ {
		ts, _, err := a.search(ctx, []cond{{attr: a.cfg.IDField, op: "is", value: upstreamID}}, "id", "asc", page, "find ticket")
		if err != nil {
			if errors.Is(err, adapters.ErrInvalid) {
				return nil, fmt.Errorf("search tickets by %s (does the ticket attribute exist? %s): %w", a.cfg.IDField, a.attributeHelp(), err)
			}
			return nil, fmt.Errorf("search tickets by %s: %w", a.cfg.IDField, err)
		}
		for _, t := range ts {
			v, present := t.attr(a.cfg.IDField)
			if v != upstreamID {
				return nil, fmt.Errorf("search tickets by %s: Zammad answered ticket %d, whose %s is %q (present: %v), for %q: the search ignored its condition, and this Zammad cannot be used without it: %w",
					a.cfg.IDField, t.ID, a.cfg.IDField, v, present, upstreamID, adapters.ErrInvalid)
			}
			if !slices.ContainsFunc(out, func(x zmTicket) bool { return x.ID == t.ID }) {
				out = append(out, t)
			}
		}
		if len(ts) < a.cfg.PageSize {
			break
		}
	}
	slices.SortFunc(out, func(x, y zmTicket) int { return cmp.Compare(x.ID, y.ID) })
	return out, nil
}

// ticket reads one ticket with its names (state, group).
func (a *Adapter) ticket(ctx context.Context, id int64) (zmTicket, error) {
	var t zmTicket
	if _, err := a.get(ctx, "/tickets/"+idString(id), url.Values{"expand": {"true"}}, "read ticket", &t); err != nil {
		return zmTicket{}, err
	}
	return t, nil
}

// Resolve reads the ticket ref names; one that mirrors no upstream ticket
// is not found.
func (v vendor) Resolve(ctx context.Context, ref adapters.Ref) (zmTicket, error) {
	id, err := saas.ParseRef(Name, ref)
	if err != nil {
		return zmTicket{}, err
	}
	t, err := v.ticket(ctx, id)
	if err != nil {
		return zmTicket{}, err
	}
	if upstream, _ := t.attr(v.cfg.IDField); upstream == "" {
		return zmTicket{}, fmt.Errorf("ticket %d mirrors no guest request (its %s is empty): %w", id, v.cfg.IDField, adapters.ErrNotFound)
	}
	return t, nil
}

// articles reads every article of ticket id, oldest first.
func (a *Adapter) articles(ctx context.Context, id int64) ([]zmArticle, error) {
	var out []zmArticle
	if _, err := a.get(ctx, "/ticket_articles/by_ticket/"+idString(id), url.Values{"expand": {"true"}}, "read articles", &out); err != nil {
		return nil, err
	}
	return out, nil
}

// customer returns the fields that name the customer of a new ticket: an
// email address as "guess:" (Zammad finds or creates the customer), a
// login by name.
func (a *Adapter) customer(in map[string]any) {
	if strings.Contains(a.cfg.Customer, "@") {
		in["customer_id"] = "guess:" + a.cfg.Customer
	} else {
		in["customer"] = a.cfg.Customer
	}
}

// Find returns the oldest ticket whose attribute holds upstreamID.
func (v vendor) Find(ctx context.Context, upstreamID string) (adapters.Ref, bool, error) {
	ts, err := v.byUpstream(ctx, upstreamID)
	if err != nil || len(ts) == 0 {
		return "", false, err
	}
	return saas.RefOf(ts[0].ID), true, nil
}

// Create makes the ticket of t in the department's group with the
// configured customer, the mapped state, the tags of its origin and
// rating (see [Adapter.Update]), and the request as its first article (public when
// the guest wrote it). Zammad offers no idempotency
// key, so the creation is sent once: after a failure whose outcome is
// unknown the engine calls EnsureTicket again, and the search (answered
// from the database, without the search index's lag) finds the ticket if
// it was made.
func (v vendor) Create(ctx context.Context, t adapters.Ticket) (adapters.Ref, error) {
	a := v.Adapter
	st := t.Status
	if st == "" {
		st = guestapi.StatusNew
	}
	state := a.status.Down(st)
	in := map[string]any{
		"title":       title(t),
		"group":       saas.Group(a.groups, t.Department, a.cfg.Group),
		"state":       state,
		a.cfg.IDField: t.UpstreamID,
		"article": articleIn{
			Subject: title(t), Body: saas.DescriptionText(t), ContentType: "text/plain", Type: "note",
			Internal: t.Origin != guestapi.OriginGuest,
		},
	}
	if isPending(state) {
		in["pending_time"] = timeValue(time.Now().Add(a.cfg.PendingFor))
	}
	// Zammad's creation takes the tags as one text: "origin_guest,guest_rating_4".
	if tags := strings.Join(saas.CreateTags(nil, originTag(t.Origin), t.GuestRating), ","); tags != "" {
		in["tags"] = tags
	}
	a.customer(in)
	var out zmTicket
	_, err := a.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodPost, URL: a.url("/tickets", url.Values{"expand": {"true"}}), Op: "create ticket"}, in, &out)
	if err != nil {
		return "", err
	}
	if out.ID == 0 {
		return "", errors.New("the answer names no ticket")
	}
	if v, _ := out.attr(a.cfg.IDField); v != t.UpstreamID {
		// Zammad drops attributes it does not have: the ticket exists but
		// cannot be found again. Say so loudly; the searches of later
		// calls fail on the missing attribute, so no second ticket is made.
		a.log.LogAttrs(ctx, slog.LevelError, "zammad did not store the upstream id in the ticket attribute",
			slog.String("ticket", t.UpstreamID), slog.String("op", "create ticket"),
			slog.Int64("zammad_ticket", out.ID), slog.String("attribute", a.cfg.IDField))
		return "", fmt.Errorf("zammad made ticket %d but did not store the upstream id in the attribute %q: %s: %w",
			out.ID, a.cfg.IDField, a.attributeHelp(), adapters.ErrInvalid)
	}
	a.log.LogAttrs(ctx, slog.LevelInfo, "created zammad ticket",
		slog.String("ticket", t.UpstreamID), slog.String("op", "create ticket"), slog.Int64("zammad_ticket", out.ID))
	return saas.RefOf(out.ID), nil
}

// reopenFrom are the states a guest's new public message reopens: the
// ticket left the team's open views, or waits for something the guest's
// message may change.
var reopenFrom = []string{stateClosed, statePendingClose, statePendingReminder}

// Comment adds m as one article, written by the API user as text/plain,
// internal after visible_to_guest. A guest's public message on a closed
// or pending ticket first reopens it (state open, Zammad's follow-up
// state). Zammad has no idempotency key: the article is sent once.
func (v vendor) Comment(ctx context.Context, t zmTicket, m adapters.Message) (zmTicket, string, error) {
	if m.Public && m.AuthorType == guestapi.AuthorGuest && slices.Contains(reopenFrom, t.State) {
		if err := v.putState(ctx, t.ID, stateOpen, "reopen ticket"); err != nil {
			return t, "", fmt.Errorf("append message %s: reopen zammad ticket %d: %w", m.UpstreamID, t.ID, err)
		}
		t.State = stateOpen
	}
	var art zmArticle
	_, err := v.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodPost, URL: v.url("/ticket_articles", url.Values{"expand": {"true"}}), Op: "append message"},
		articleIn{TicketID: t.ID, Body: saas.MessageText(m), ContentType: "text/plain", Type: "note", Internal: !m.Public}, &art)
	if err != nil {
		return t, "", fmt.Errorf("append message %s to zammad ticket %d: %w", m.UpstreamID, t.ID, err)
	}
	if art.ID == 0 {
		return t, "", fmt.Errorf("append message %s to zammad ticket %d: the answer names no article", m.UpstreamID, t.ID)
	}
	return t, idString(art.ID), nil
}

// putState sets a ticket's state, with a pending till for a pending state.
// Setting a state is idempotent, so the request is repeated on failures.
func (a *Adapter) putState(ctx context.Context, id int64, state, op string) error {
	in := map[string]any{"state": state}
	if isPending(state) {
		in["pending_time"] = timeValue(time.Now().Add(a.cfg.PendingFor))
	}
	_, err := a.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodPut, URL: a.url("/tickets/"+idString(id), nil), Op: op}, in, nil)
	return err
}

// Status sets the Zammad state s maps to. Nothing is written when the
// ticket's state already maps to s (an agent's pending reminder stays for
// in_progress) or is the one s maps to. Agents cannot move a ticket back
// to new once it left it, and neither can the bridge: new then counts as
// open.
func (v vendor) Status(ctx context.Context, t zmTicket, s guestapi.Status) error {
	target, ok := saas.Target(v.status, t.State, s, stateNew, stateOpen)
	if !ok {
		return nil
	}
	if err := v.putState(ctx, t.ID, target, "set status"); err != nil {
		return fmt.Errorf("set status of zammad ticket %d to %s: %w", t.ID, target, err)
	}
	return nil
}

// Current reports the ticket's state. Zammad keeps no time of the last
// state change on the ticket: its updated_at stands for it.
func (v vendor) Current(t zmTicket) adapters.FoundStatus {
	return saas.Current(v.status, t.State, t.UpdatedAt, stateNew, stateOpen)
}

// Note writes text as an internal note. Zammad lets agents add notes to
// closed tickets without reopening them.
func (v vendor) Note(ctx context.Context, t zmTicket, op, text string) error {
	_, err := v.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodPost, URL: v.url("/ticket_articles", nil), Op: op},
		articleIn{TicketID: t.ID, Body: text, ContentType: "text/plain", Type: "note", Internal: true}, nil)
	if err != nil {
		return fmt.Errorf("write note on zammad ticket %d: %w", t.ID, err)
	}
	return nil
}

// Thread finds the ticket whose attribute holds upstreamID, the oldest
// should there be several.
func (v vendor) Thread(ctx context.Context, upstreamID string) (zmTicket, adapters.Ref, bool, error) {
	ts, err := v.byUpstream(ctx, upstreamID)
	if err != nil || len(ts) == 0 {
		return zmTicket{}, "", false, err
	}
	if len(ts) > 1 {
		v.log.LogAttrs(ctx, slog.LevelWarn, "several zammad tickets hold the same upstream id; the oldest is used",
			slog.String("ticket", upstreamID), slog.String("op", "look up"), slog.Int("zammad_tickets", len(ts)))
	}
	return ts[0], saas.RefOf(ts[0].ID), true, nil
}

// Comments lists the ticket's articles.
func (v vendor) Comments(ctx context.Context, t zmTicket) ([]saas.Comment, error) {
	arts, err := v.articles(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	upstream, _ := t.attr(v.cfg.IDField)
	out := make([]saas.Comment, len(arts))
	for i, art := range arts {
		out[i] = saas.Comment{ID: idString(art.ID), Author: art.CreatedByID, Text: articleText(art)}
		if ev, ok := articleEvent(art, saas.RefOf(t.ID), upstream); ok {
			ev.AuthorName = displayFrom(art.From) // Changes' fallback
			out[i].Event, out[i].Files = &ev, art.files()
		}
	}
	return out, nil
}

// AuthorName returns the name Changes gives the author of c.
func (v vendor) AuthorName(ctx context.Context, c saas.Comment) (string, error) {
	return v.authorName(ctx, c.Author, "")
}
