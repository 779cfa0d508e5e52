package zendesk

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// keySpace is the UUIDv5 namespace of the Idempotency-Keys of ticket
// creations. It never changes: a changed namespace would let a retry
// within Zendesk's two hours create a second ticket.
var keySpace = uuid.MustParse("b0a3c1d6-5e2f-4c8a-9f17-2d6e8b4a7c35")

// chain is the tickets that mirror one upstream ticket, oldest first: the
// ticket EnsureTicket made and the follow-ups made when it was closed.
type chain struct {
	ref      adapters.Ref // what the engine names it by
	upstream string
	tickets  []zdTicket
}

func (c chain) root() zdTicket   { return c.tickets[0] }
func (c chain) active() zdTicket { return c.tickets[len(c.tickets)-1] }

// Find returns the oldest ticket whose external_id names upstreamID,
// looking among archived tickets only when the list holds none.
func (v vendor) Find(ctx context.Context, upstreamID string) (adapters.Ref, bool, error) {
	existing, err := v.byExternalID(ctx, upstreamID)
	if err == nil && len(existing) == 0 {
		// An archived ticket is left out of the list; only a search
		// finds it.
		existing, err = v.searchExternalID(ctx, upstreamID)
	}
	if err != nil || len(existing) == 0 {
		return "", false, err
	}
	v.remember(existing[0].ID, upstreamID, existing[0].ID)
	return saas.RefOf(existing[0].ID), true, nil
}

// Create makes the ticket of t with the request as its first comment, the
// department's group, the tag and the mapped status. The creation carries
// an Idempotency-Key derived from its payload, so a retry after a lost
// answer gets the first ticket back.
func (v vendor) Create(ctx context.Context, t adapters.Ticket) (adapters.Ref, error) {
	a := v.Adapter
	in := zdTicketIn{
		Subject:    subject(t),
		Comment:    &zdCommentIn{Body: saas.DescriptionText(t), Public: t.Origin == guestapi.OriginGuest},
		ExternalID: externalPrefix + t.UpstreamID,
		Status:     a.status.Down(t.Status),
		GroupID:    saas.Group(a.groups, t.Department, a.cfg.Group),
		Tags:       saas.CreateTags(a.tags, originTag(t.Origin), t.GuestRating),
	}
	ans, err := a.create(ctx, in, "create ticket")
	if err != nil {
		return "", err
	}
	a.remember(ans.Ticket.ID, t.UpstreamID, ans.Ticket.ID)
	a.log.LogAttrs(ctx, slog.LevelInfo, "created zendesk ticket",
		slog.String("ticket", t.UpstreamID), slog.String("op", "create ticket"), slog.Int64("zendesk_ticket", ans.Ticket.ID))
	return saas.RefOf(ans.Ticket.ID), nil
}

// create posts a new ticket with an Idempotency-Key derived from its
// payload: Zendesk answers a repeat within two hours with the first
// ticket, and refuses the key with another payload, which a payload-derived
// key never meets.
func (a *Adapter) create(ctx context.Context, in zdTicketIn, op string) (zdWriteAnswer, error) {
	body := map[string]any{"ticket": in}
	b, err := json.Marshal(body)
	if err != nil {
		return zdWriteAnswer{}, fmt.Errorf("encode ticket: %w", err)
	}
	var out zdWriteAnswer
	_, err = a.http.JSON(ctx, adapters.HTTPRequest{
		Method:     http.MethodPost,
		URL:        a.url("/tickets"),
		Header:     http.Header{"Idempotency-Key": {uuid.NewSHA1(keySpace, b).String()}},
		Idempotent: true,
		Op:         op,
	}, body, &out)
	if err != nil {
		return zdWriteAnswer{}, err
	}
	if out.Ticket.ID == 0 {
		return zdWriteAnswer{}, errors.New("the answer names no ticket")
	}
	return out, nil
}

// update sends one ticket update through c, spending one of the ticket's
// budget (see [Adapter.Update]).
func (a *Adapter) update(ctx context.Context, c *adapters.HTTPClient, id int64, in zdTicketIn, op string) (zdWriteAnswer, error) {
	var out zdWriteAnswer
	_, err := a.putWith(ctx, c, saas.RefOf(id), id, in, op, &out)
	return out, err
}

// Comment adds m as one comment (public after visible_to_guest) in one
// ticket update. A guest's public message reopens a solved or pending
// ticket in the same update. A closed ticket cannot be changed in
// Zendesk: the message becomes the first comment of a follow-up ticket
// (same external_id, linked to the closed one), which takes the rest.
//
// The update is sent once: Zendesk has no idempotency key for updates, so
// after a failure whose outcome is unknown the engine calls Append again,
// which finds the comment by its marker if it was made.
func (v vendor) Comment(ctx context.Context, c chain, m adapters.Message) (chain, string, error) {
	active := c.active()
	var ans zdWriteAnswer
	var err error
	if active.Status == statusClosed {
		in := zdTicketIn{Comment: &zdCommentIn{Body: followUpBody(active.ID, m), Public: m.Public}, Status: statusOpen}
		ans, err = v.followUp(ctx, c, in)
		if err != nil {
			return c, "", fmt.Errorf("append message %s: follow up closed zendesk ticket %d: %w", m.UpstreamID, active.ID, err)
		}
		c.tickets = append(c.tickets, ans.Ticket)
	} else {
		in := zdTicketIn{Comment: &zdCommentIn{Body: saas.MessageText(m), Public: m.Public}}
		if m.Public && m.AuthorType == guestapi.AuthorGuest && (active.Status == statusSolved || active.Status == statusPending) {
			in.Status = statusOpen
		}
		ans, err = v.update(ctx, v.once, active.ID, in, "append message")
		if err != nil {
			return c, "", fmt.Errorf("append message %s to zendesk ticket %d: %w", m.UpstreamID, active.ID, v.closedMeanwhile(ctx, active.ID, err))
		}
		c.tickets[len(c.tickets)-1] = ans.Ticket
	}
	cid := ans.commentID()
	if cid == 0 {
		return c, "", fmt.Errorf("append message %s to zendesk ticket %d: the answer names no comment", m.UpstreamID, ans.Ticket.ID)
	}
	return c, idString(cid), nil
}

// followUp creates a follow-up of the chain's closed last ticket with in's
// comment and status.
func (a *Adapter) followUp(ctx context.Context, c chain, in zdTicketIn) (zdWriteAnswer, error) {
	closed := c.active()
	in.Subject = closed.Subject
	in.ExternalID = externalPrefix + c.upstream
	in.ViaFollowupSourceID = closed.ID
	in.Tags = a.tags
	if closed.GroupID != nil {
		in.GroupID = *closed.GroupID
	}
	ans, err := a.create(ctx, in, "create follow-up")
	if err != nil {
		return zdWriteAnswer{}, err
	}
	a.remember(ans.Ticket.ID, c.upstream, c.root().ID)
	a.log.LogAttrs(ctx, slog.LevelInfo, "created zendesk follow-up ticket",
		slog.String("ticket", c.upstream), slog.String("op", "create follow-up"),
		slog.Int64("zendesk_ticket", ans.Ticket.ID), slog.Int64("closed_ticket", closed.ID))
	return ans, nil
}

// closedMeanwhile turns a refused update of a ticket that Zendesk closed
// since it was read into a temporary error (the next attempt makes a
// follow-up); any other error is returned as it is.
func (a *Adapter) closedMeanwhile(ctx context.Context, id int64, err error) error {
	if !errors.Is(err, adapters.ErrInvalid) {
		return err
	}
	t, rerr := a.ticket(ctx, id)
	if rerr == nil && t.Status == statusClosed {
		return fmt.Errorf("the ticket was closed meanwhile, the next attempt makes a follow-up (%v)", err)
	}
	return err
}

// SetStatus sets the Zendesk status s maps to (see [vendor.Status]); a
// success settles whatever Zendesk held back of ref.
func (a *Adapter) SetStatus(ctx context.Context, ref adapters.Ref, s guestapi.Status) error {
	err := a.Helpdesk.SetStatus(ctx, ref, s)
	if err == nil {
		a.release(ref)
	}
	return err
}

// Status sets the Zendesk status s maps to. Nothing is written when the
// ticket's status already maps to s (an agent's pending stays pending for
// in_progress) or is the one s maps to; new cannot be set again once a
// ticket left it, so it counts as open. A closed ticket stays closed for a
// closing status; for any other the request was reopened and a follow-up
// ticket says so.
func (v vendor) Status(ctx context.Context, c chain, s guestapi.Status) error {
	active := c.active()
	target, ok := saas.Target(v.status, active.Status, s, statusNew, statusOpen)
	if !ok {
		return nil
	}
	if active.Status == statusClosed {
		if target == statusSolved {
			return nil
		}
		in := zdTicketIn{Comment: &zdCommentIn{Body: reopenBody(active.ID, c.upstream, s)}, Status: target}
		if _, err := v.followUp(ctx, c, in); err != nil {
			return fmt.Errorf("set status %s: follow up closed zendesk ticket %d: %w", s, active.ID, err)
		}
		return nil
	}
	resp, err := v.put(ctx, c.ref, active.ID, zdTicketIn{Status: target}, "set status", http.StatusUnprocessableEntity)
	if err == nil && resp.StatusCode == http.StatusUnprocessableEntity {
		if need := requiredOnSolve(resp.Body); need != "" {
			return v.holdSolve(ctx, c.ref, c, s, need)
		}
		err = fmt.Errorf("HTTP 422 %q: %w", strings.ToValidUTF8(string(resp.Body[:min(len(resp.Body), 300)]), "?"), adapters.ErrInvalid)
	}
	if err != nil {
		return fmt.Errorf("set status of zendesk ticket %d to %s: %w", active.ID, target, v.closedMeanwhile(ctx, active.ID, err))
	}
	return nil
}

// requiredOnSolve reads a 422 answer to an update to solved: when Zendesk
// refused it for fields required on solve, it returns their descriptions
// ("Room number: is required when solving a ticket"), else "".
func requiredOnSolve(body []byte) string {
	var ans struct {
		Error   string `json:"error"`
		Details struct {
			Base []struct {
				Description   string `json:"description"`
				TicketFieldID int64  `json:"ticket_field_id"`
			} `json:"base"`
		} `json:"details"`
	}
	if json.Unmarshal(body, &ans) != nil || ans.Error != "RecordInvalid" {
		return ""
	}
	var need []string
	for _, b := range ans.Details.Base {
		if b.TicketFieldID != 0 && b.Description != "" {
			need = append(need, b.Description)
		}
	}
	return strings.Join(need, "; ")
}

// holdSolve handles Zendesk refusing to solve the chain's active ticket
// because fields required on solve are empty: the ticket stays as it is,
// an internal comment tells the team what is missing (once per missing
// set and adapter instance), and a [adapters.HeldError] makes the engine
// try again later, which succeeds once the fields are filled in.
func (a *Adapter) holdSolve(ctx context.Context, ref adapters.Ref, c chain, s guestapi.Status, need string) error {
	held := &adapters.HeldError{Ref: ref, Op: "set status " + string(s), Need: "Zendesk refuses to solve the ticket: " + need}
	a.mu.Lock()
	prev, told := a.holds[ref]
	a.holds[ref] = *held
	a.mu.Unlock()
	if !told || prev.Need != held.Need {
		in := zdTicketIn{Comment: &zdCommentIn{Body: heldBody(s, need)}}
		if _, err := a.update(ctx, a.once, c.active().ID, in, "note held status"); err != nil {
			a.mu.Lock()
			delete(a.holds, ref) // tell the team on the next attempt
			a.mu.Unlock()
			return fmt.Errorf("note on zendesk ticket %d that solving it is held: %w", c.active().ID, err)
		}
		a.log.LogAttrs(ctx, slog.LevelWarn, "zendesk refuses to solve the ticket until fields are filled in",
			slog.String("ticket", c.upstream), slog.String("op", "set status"), slog.String("need", need))
	}
	return held
}

// release forgets that a change of ref was held.
func (a *Adapter) release(ref adapters.Ref) {
	a.mu.Lock()
	delete(a.holds, ref)
	a.mu.Unlock()
}

// Held lists the status changes Zendesk holds back (see
// [adapters.Holder]), oldest ticket first.
func (a *Adapter) Held(context.Context) []adapters.HeldError {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]adapters.HeldError, 0, len(a.holds))
	for _, h := range a.holds {
		out = append(out, h)
	}
	slices.SortFunc(out, func(x, y adapters.HeldError) int { return strings.Compare(string(x.Ref), string(y.Ref)) })
	return out
}

// Note writes text as a private comment on the ticket of the chain that
// takes writes. A closed ticket cannot take it; the note (a delivery
// record, the files not sent) then goes unwritten and is logged.
func (v vendor) Note(ctx context.Context, c chain, op, text string) error {
	active := c.active()
	if active.Status == statusClosed {
		v.log.LogAttrs(ctx, slog.LevelInfo, "zendesk ticket is closed, note not written in it",
			slog.String("ticket", c.upstream), slog.String("op", op), slog.Int64("zendesk_ticket", active.ID))
		return nil
	}
	in := zdTicketIn{Comment: &zdCommentIn{Body: text, Public: false}}
	if _, err := v.update(ctx, v.once, active.ID, in, op); err != nil {
		err = v.closedMeanwhile(ctx, active.ID, err)
		return fmt.Errorf("write note on zendesk ticket %d: %w", active.ID, err)
	}
	return nil
}

// Current reports the status of the chain's active ticket. Zendesk keeps
// no time of the last status change on the ticket: its updated_at, as
// late or later, stands for it.
func (v vendor) Current(c chain) adapters.FoundStatus {
	active := c.active()
	return saas.Current(v.status, active.Status, active.UpdatedAt, statusNew, statusOpen)
}

// Thread finds the tickets whose external_id names upstreamID, archived
// ones included; the first of them is the Ref.
func (v vendor) Thread(ctx context.Context, upstreamID string) (chain, adapters.Ref, bool, error) {
	ts, err := v.chainTickets(ctx, upstreamID)
	if err != nil || len(ts) == 0 {
		return chain{}, "", false, err
	}
	for _, t := range ts {
		v.remember(t.ID, upstreamID, ts[0].ID)
	}
	return chain{ref: saas.RefOf(ts[0].ID), upstream: upstreamID, tickets: ts}, saas.RefOf(ts[0].ID), true, nil
}

// remember caches what ticket id mirrors.
func (a *Adapter) remember(id int64, upstream string, root int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tickets[id] = ticketInfo{upstream: upstream, root: root}
}

// ticket reads one ticket.
func (a *Adapter) ticket(ctx context.Context, id int64) (zdTicket, error) {
	var out struct {
		Ticket zdTicket `json:"ticket"`
	}
	if _, err := a.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodGet, URL: a.url(fmt.Sprintf("/tickets/%d", id)), Op: "read ticket"}, nil, &out); err != nil {
		return zdTicket{}, err
	}
	return out.Ticket, nil
}

// Resolve reads the ticket ref names and, when it is part of a follow-up
// chain, the whole chain.
func (v vendor) Resolve(ctx context.Context, ref adapters.Ref) (chain, error) {
	a := v.Adapter
	id, err := saas.ParseRef(Name, ref)
	if err != nil {
		return chain{}, err
	}
	t, err := a.ticket(ctx, id)
	if err != nil {
		return chain{}, err
	}
	upstream, ok := strings.CutPrefix(t.externalID(), externalPrefix)
	if !ok || upstream == "" {
		return chain{}, fmt.Errorf("ticket %d mirrors no guest request (its external_id is %q): %w", id, t.externalID(), adapters.ErrNotFound)
	}
	if t.Status != statusClosed && len(t.FollowupIDs) == 0 && !t.followUp() {
		return chain{ref: ref, upstream: upstream, tickets: []zdTicket{t}}, nil
	}
	ts, err := a.chainTickets(ctx, upstream)
	if err != nil {
		return chain{}, err
	}
	if !slices.ContainsFunc(ts, func(x zdTicket) bool { return x.ID == t.ID }) {
		ts = append(ts, t)
		slices.SortFunc(ts, func(x, y zdTicket) int { return cmp.Compare(x.ID, y.ID) })
	}
	return chain{ref: ref, upstream: upstream, tickets: ts}, nil
}

// byExternalID lists the tickets whose external_id names upstreamID,
// oldest first, through the external_id filter of List Tickets.
func (a *Adapter) byExternalID(ctx context.Context, upstreamID string) ([]zdTicket, error) {
	ext := externalPrefix + upstreamID
	var out []zdTicket
	err := pages(ctx, a, "/tickets", []string{"external_id", ext}, "tickets", "list tickets by external id", func(t zdTicket) bool {
		if t.externalID() == ext {
			out = append(out, t)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(x, y zdTicket) int { return cmp.Compare(x.ID, y.ID) })
	return out, nil
}

// searchExternalID finds the tickets whose external_id names upstreamID
// through the Search API, which, unlike List Tickets, includes archived
// tickets (Zendesk archives a ticket some 120 days after it was closed),
// but lags behind writes by up to a few minutes. It reads offset pages,
// asking for each on the adapter's own address.
func (a *Adapter) searchExternalID(ctx context.Context, upstreamID string) ([]zdTicket, error) {
	ext := externalPrefix + upstreamID
	var out []zdTicket
	for page := 1; page <= maxSearchPages; page++ {
		var ans struct {
			Results  []zdTicket `json:"results"`
			NextPage *string    `json:"next_page"`
		}
		u := a.url("/search", "query", `type:ticket external_id:"`+ext+`"`, "page", strconv.Itoa(page), "per_page", idString(int64(a.cfg.PageSize)))
		if _, err := a.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodGet, URL: u, Op: "search tickets by external id"}, nil, &ans); err != nil {
			return nil, err
		}
		for _, t := range ans.Results {
			if t.externalID() == ext {
				out = append(out, t)
			}
		}
		if ans.NextPage == nil || *ans.NextPage == "" || len(ans.Results) == 0 {
			return out, nil
		}
	}
	return out, nil
}

// maxSearchPages is how many pages the Search API serves: 1000 results.
const maxSearchPages = 10

// chainTickets lists every ticket whose external_id names upstreamID,
// archived ones included, oldest first: List Tickets (no lag) and the
// Search API (archived tickets) together.
func (a *Adapter) chainTickets(ctx context.Context, upstreamID string) ([]zdTicket, error) {
	listed, err := a.byExternalID(ctx, upstreamID)
	if err != nil {
		return nil, err
	}
	found, err := a.searchExternalID(ctx, upstreamID)
	if err != nil {
		return nil, err
	}
	for _, t := range found {
		if !slices.ContainsFunc(listed, func(x zdTicket) bool { return x.ID == t.ID }) {
			listed = append(listed, t)
		}
	}
	slices.SortFunc(listed, func(x, y zdTicket) int { return cmp.Compare(x.ID, y.ID) })
	return listed, nil
}

// comments lists a ticket's comments, oldest first.
func (a *Adapter) comments(ctx context.Context, id int64) ([]zdComment, error) {
	var out []zdComment
	err := pages(ctx, a, fmt.Sprintf("/tickets/%d/comments", id), nil, "comments", "list comments", func(c zdComment) bool {
		out = append(out, c)
		return true
	})
	return out, err
}

// maxListPages bounds a cursor-paged listing, against a server that never
// says it is done.
const maxListPages = 1000

// pages reads every page of a cursor-paginated list (page[size] and
// page[after]), handing each item of the page's array key to each, until
// the last page or until each returns false. The next page is asked for
// with the after_cursor on the adapter's own address, never by following
// the links.next the answer holds, so credentials go to the configured
// host only.
func pages[T any](ctx context.Context, a *Adapter, path string, query []string, key, op string, each func(T) bool) error {
	after := ""
	for range maxListPages {
		q := append(slices.Clone(query), "page[size]", idString(int64(a.cfg.PageSize)))
		if after != "" {
			q = append(q, "page[after]", after)
		}
		var page map[string]json.RawMessage
		if _, err := a.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodGet, URL: a.url(path, q...), Op: op}, nil, &page); err != nil {
			return err
		}
		var items []T
		var meta zdMeta
		for _, f := range []struct {
			key  string
			into any
		}{{key, &items}, {"meta", &meta}} {
			if raw, ok := page[f.key]; ok {
				if err := json.Unmarshal(raw, f.into); err != nil {
					return fmt.Errorf("decode %s: %w", op, err)
				}
			}
		}
		for _, it := range items {
			if !each(it) {
				return nil
			}
		}
		if !meta.HasMore {
			return nil
		}
		if meta.AfterCursor == "" || meta.AfterCursor == after {
			return fmt.Errorf("%s: Zendesk said there is more but gave no new cursor", op)
		}
		after = meta.AfterCursor
	}
	return fmt.Errorf("%s: more than %d pages", op, maxListPages)
}

// Comments lists the comments of every ticket of the chain, each with the
// event Changes makes of it.
func (v vendor) Comments(ctx context.Context, c chain) ([]saas.Comment, error) {
	var out []saas.Comment
	for _, t := range c.tickets {
		cs, err := v.comments(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		for _, cm := range cs {
			sc := saas.Comment{ID: idString(cm.ID), Author: cm.AuthorID, Text: cm.Body}
			if ev, files, ok := commentEvent(cm, c.root().ID, c.upstream, "", t.UpdatedAt); ok {
				sc.Event, sc.Files = &ev, files
			}
			out = append(out, sc)
		}
	}
	return out, nil
}

// AuthorName returns the name Changes gives the author of c.
func (v vendor) AuthorName(ctx context.Context, c saas.Comment) (string, error) {
	names, err := v.userNames(ctx, []int64{c.Author})
	if err != nil {
		return "", err
	}
	return names[c.Author], nil
}
