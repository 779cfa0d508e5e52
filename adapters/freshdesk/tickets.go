package freshdesk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// overlap is how far before its last position a listing starts again:
// Freshdesk's timestamps have whole seconds, and a change may become
// visible a little after a later one was listed. Tickets and events met
// twice are told apart by id.
const overlap = time.Minute

// requesterName is the name Freshdesk gives the requester's contact when
// the address is new to it.
const requesterName = "Guest requests"

// EnsureTicket finds the ticket whose id field holds t.UpstreamID, or
// creates it: requested by the configured requester, with the request as
// its description, the department's group, the tag, the mapped status and
// both custom fields. Freshdesk has no idempotency key: a creation is sent
// once, and when its outcome is unknown the call fails and the engine's
// next call finds the ticket if it was made.
func (a *Adapter) EnsureTicket(ctx context.Context, t adapters.Ticket) (adapters.Ref, error) {
	if err := a.in.UpstreamID("ensure", t.UpstreamID); err != nil {
		return "", err
	}
	id, err := a.find(ctx, t.UpstreamID)
	if err != nil {
		return "", fmt.Errorf("ensure freshdesk ticket for %s: %w", t.UpstreamID, err)
	}
	if id != 0 {
		// The index may name a ticket an agent deleted since it was
		// listed: a new one is made then.
		found, upstream, err := a.resolve(ctx, refOf(id))
		switch {
		case err == nil && upstream == t.UpstreamID:
			// A follow-up of an archived ticket stands for it: Refs
			// name the archived ticket.
			if root, ok, err := a.archivedRoot(ctx, found, upstream); err != nil {
				return "", fmt.Errorf("ensure freshdesk ticket for %s: %w", t.UpstreamID, err)
			} else if ok {
				return refOf(root.ID), nil
			}
			return refOf(id), nil
		case err == nil || errors.Is(err, adapters.ErrNotFound):
			a.forget(t.UpstreamID, id)
		default:
			return "", fmt.Errorf("ensure freshdesk ticket for %s: %w", t.UpstreamID, err)
		}
	}
	status, err := a.down(t.Status)
	if err != nil {
		return "", fmt.Errorf("ensure freshdesk ticket for %s: %w", t.UpstreamID, err)
	}
	in := fdTicketIn{
		Subject:     subject(t),
		Description: textHTML(descriptionText(t)),
		Email:       a.cfg.Requester,
		Name:        requesterName,
		Status:      status,
		Priority:    1,
		GroupID:     a.group(t.Department),
		Tags:        a.tags,
		CustomFields: map[string]string{
			a.cfg.IDField:     t.UpstreamID,
			a.cfg.StatusField: baseline{}.next(status),
		},
	}
	out, err := a.create(ctx, in, t.UpstreamID, "create ticket")
	if err != nil {
		return "", fmt.Errorf("create freshdesk ticket for %s: %w", t.UpstreamID, err)
	}
	return refOf(out.ID), nil
}

// create posts a new ticket that mirrors upstream. Freshdesk may have made
// it when the outcome is unknown: the next lookup then lists.
func (a *Adapter) create(ctx context.Context, in fdTicketIn, upstream, op string) (fdTicket, error) {
	var out fdTicket
	if _, err := a.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodPost, URL: a.url("/tickets"), Op: op}, in, &out); err != nil {
		a.mu.Lock()
		a.unsure = true
		a.mu.Unlock()
		return fdTicket{}, err
	}
	if out.ID == 0 {
		return fdTicket{}, errors.New("the answer names no ticket")
	}
	a.remember(out.ID, upstream)
	a.log.LogAttrs(ctx, slog.LevelInfo, "created freshdesk ticket",
		slog.String("ticket", upstream), slog.String("op", op), slog.Int64("freshdesk_ticket", out.ID))
	return out, nil
}

func (a *Adapter) group(dept string) int64 {
	if id, ok := a.groups[dept]; ok {
		return id
	}
	return a.cfg.Group
}

// down returns the Freshdesk status s maps to.
func (a *Adapter) down(s guestapi.Status) (int, error) {
	h := a.status.Down(s)
	n, err := strconv.Atoi(h)
	if err != nil || n < statusOpen {
		return 0, fmt.Errorf("status %s maps to %q, which is not a Freshdesk status number", s, h)
	}
	return n, nil
}

// up returns the upstream status Freshdesk status n maps to.
func (a *Adapter) up(n int) (guestapi.Status, bool) { return a.status.Up(strconv.Itoa(n)) }

// Append adds each message not yet in the ticket as one note by the API
// agent: public (private false) after visible_to_guest, so that nothing is
// e-mailed to anybody. A guest's public message on a pending, resolved or
// closed ticket first reopens it. Notes are sent once, never repeated
// within the call: when an outcome is unknown the engine calls Append
// again, which finds the note by its marker if it was made.
func (a *Adapter) Append(ctx context.Context, ref adapters.Ref, msgs []adapters.Message) ([]adapters.Appended, error) {
	if err := a.in.Messages(ref, msgs); err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return []adapters.Appended{}, nil
	}
	t, upstream, err := a.resolve(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("append to freshdesk ticket %s: %w", ref, err)
	}
	me, err := a.self(ctx)
	if err != nil {
		return nil, err
	}
	h, err := a.held(ctx, t, me.ID)
	if err != nil {
		return nil, fmt.Errorf("append to freshdesk ticket %d: %w", t.ID, err)
	}
	if t.Archived {
		// An archived ticket cannot change: the messages go to its
		// follow-up, made for the first one not yet held.
		f, ok, err := a.liveFollowUp(ctx, t, upstream)
		if err != nil {
			return nil, fmt.Errorf("append to archived freshdesk ticket %s: %w", ref, err)
		}
		if ok {
			fh, err := a.held(ctx, f, me.ID)
			if err != nil {
				return nil, fmt.Errorf("append to freshdesk ticket %d: %w", f.ID, err)
			}
			h.Merge(fh)
		} else if slices.ContainsFunc(msgs, func(m adapters.Message) bool { _, in := h.Messages[m.UpstreamID]; return !in }) {
			if f, err = a.followUp(ctx, t, upstream); err != nil {
				return nil, fmt.Errorf("append to archived freshdesk ticket %s: %w", ref, err)
			}
		}
		t = f
	}
	reopen := false
	for _, m := range msgs {
		if _, ok := h.Messages[m.UpstreamID]; !ok && guestPublic(m) {
			reopen = true
		}
	}
	if reopen && (t.Status == statusPending || t.Status == statusResolved || t.Status == statusClosed) {
		b := parseBaseline(t.field(a.cfg.StatusField))
		in := fdTicketIn{Status: statusOpen, CustomFields: map[string]string{a.cfg.StatusField: b.next(statusOpen)}}
		if err := a.update(ctx, t.ID, in, "reopen ticket"); err != nil {
			return nil, fmt.Errorf("reopen freshdesk ticket %d for a guest message: %w", t.ID, err)
		}
	}
	out := make([]adapters.Appended, 0, len(msgs))
	for _, m := range msgs {
		if id, ok := h.Messages[m.UpstreamID]; ok {
			out = append(out, adapters.Appended{UpstreamID: m.UpstreamID, HelpdeskID: id, Existed: true})
			continue
		}
		c, err := a.note(ctx, t.ID, saas.MessageText(m), !m.Public, "append message")
		if err != nil {
			return out, fmt.Errorf("append message %s to freshdesk ticket %d: %w", m.UpstreamID, t.ID, err)
		}
		h.Messages[m.UpstreamID] = idString(c.ID)
		out = append(out, adapters.Appended{UpstreamID: m.UpstreamID, HelpdeskID: idString(c.ID)})
	}
	return out, nil
}

// note adds a note by the API agent to ticket id. A POST is repeated only
// when Freshdesk certainly did not take it (a 429, a connection that could
// not be opened).
func (a *Adapter) note(ctx context.Context, id int64, text string, private bool, op string) (fdConversation, error) {
	var c fdConversation
	_, err := a.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodPost, URL: a.url("/tickets/" + idString(id) + "/notes"), Op: op},
		fdNoteIn{Body: textHTML(text), Private: private}, &c)
	if err != nil {
		return fdConversation{}, err
	}
	if c.ID == 0 {
		return fdConversation{}, errors.New("the answer names no conversation")
	}
	return c, nil
}

// update sends one ticket update. It sets values, so repeating it is safe.
func (a *Adapter) update(ctx context.Context, id int64, in fdTicketIn, op string) error {
	_, err := a.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodPut, URL: a.url("/tickets/" + idString(id)), Op: op}, in, nil)
	return err
}

// SetStatus sets the Freshdesk status s maps to, and records it in the
// status field in the same update, so that Changes knows it for the
// bridge's own. Nothing is written when the ticket's status already maps
// to s (an agent's pending stays for in_progress) or is the one s maps to.
func (a *Adapter) SetStatus(ctx context.Context, ref adapters.Ref, s guestapi.Status) error {
	if err := a.checkOpen(); err != nil {
		return err
	}
	if !s.Known() {
		return fmt.Errorf("set status of freshdesk ticket %s: unknown status %q: %w", ref, s, adapters.ErrInvalid)
	}
	target, err := a.down(s)
	if err != nil {
		return fmt.Errorf("set status of freshdesk ticket %s: %w: %w", ref, err, adapters.ErrInvalid)
	}
	t, upstream, err := a.resolve(ctx, ref)
	if err != nil {
		return fmt.Errorf("set status of freshdesk ticket %s: %w", ref, err)
	}
	if t.Archived {
		// An archived ticket is closed for good: a closing status goes
		// to its follow-up if it has one, any other makes one.
		f, ok, err := a.liveFollowUp(ctx, t, upstream)
		switch {
		case err != nil:
			return fmt.Errorf("set status of archived freshdesk ticket %s: %w", ref, err)
		case !ok && (target == statusResolved || target == statusClosed):
			return nil
		case !ok:
			if f, err = a.followUp(ctx, t, upstream); err != nil {
				return fmt.Errorf("set status of archived freshdesk ticket %s: %w", ref, err)
			}
		}
		t = f
	}
	if up, ok := a.up(t.Status); (ok && up == s) || t.Status == target {
		return nil
	}
	b := parseBaseline(t.field(a.cfg.StatusField))
	in := fdTicketIn{Status: target, CustomFields: map[string]string{a.cfg.StatusField: b.next(target)}}
	if err := a.update(ctx, t.ID, in, "set status"); err != nil {
		return fmt.Errorf("set status of freshdesk ticket %d to %d: %w", t.ID, target, err)
	}
	return nil
}

// MarkSent records the delivery of helpdesk event eventID. For a reply or
// note it adds a private note ending in a sent marker, unless one records
// it already. For a status change it moves the status field to the status
// the event carried, in the next generation, unless the field moved on
// since the event was read (the bridge set a status meanwhile, or the
// delivery was recorded already).
func (a *Adapter) MarkSent(ctx context.Context, ref adapters.Ref, eventID, upstreamMessageID string) error {
	if err := a.in.Sent(ref, eventID, upstreamMessageID); err != nil {
		return err
	}
	t, upstream, err := a.resolve(ctx, ref)
	if err != nil {
		return fmt.Errorf("mark event %s sent on freshdesk ticket %s: %w", eventID, ref, err)
	}
	if t.Archived {
		// Events come from the follow-up; an archived ticket takes no
		// record, and without a follow-up the delivery goes unrecorded
		// (the engine's state still holds it).
		f, ok, err := a.liveFollowUp(ctx, t, upstream)
		if err != nil || !ok {
			return err
		}
		t = f
	}
	if ticket, gen, status, ok := parseStatusEventID(eventID); ok {
		if ticket != t.ID {
			return fmt.Errorf("mark event %s sent on freshdesk ticket %d: the event belongs to ticket %d: %w", eventID, t.ID, ticket, adapters.ErrInvalid)
		}
		b := parseBaseline(t.field(a.cfg.StatusField))
		if b.ok && b.gen != gen {
			return nil
		}
		if !b.ok {
			b = baseline{gen: gen}
		}
		in := fdTicketIn{CustomFields: map[string]string{a.cfg.StatusField: b.next(status)}}
		if err := a.update(ctx, t.ID, in, "mark sent"); err != nil {
			return fmt.Errorf("mark event %s sent on freshdesk ticket %d: %w", eventID, t.ID, err)
		}
		return nil
	}
	me, err := a.self(ctx)
	if err != nil {
		return err
	}
	h, err := a.held(ctx, t, me.ID)
	if err != nil {
		return fmt.Errorf("mark event %s sent on freshdesk ticket %d: %w", eventID, t.ID, err)
	}
	if _, ok := h.Sent[eventID]; ok {
		return nil
	}
	if _, err := a.note(ctx, t.ID, saas.SentText(eventID, upstreamMessageID), true, "mark sent"); err != nil {
		return fmt.Errorf("mark event %s sent on freshdesk ticket %d: %w", eventID, t.ID, err)
	}
	return nil
}

// Lookup finds the ticket whose id field holds upstreamID and reads the
// markers of the bridge's notes in it.
func (a *Adapter) Lookup(ctx context.Context, upstreamID string) (adapters.Found, bool, error) {
	if err := a.in.UpstreamID("look up", upstreamID); err != nil {
		return adapters.Found{}, false, err
	}
	id, err := a.find(ctx, upstreamID)
	if err != nil {
		return adapters.Found{}, false, fmt.Errorf("look up freshdesk ticket for %s: %w", upstreamID, err)
	}
	if id == 0 {
		return adapters.Found{}, false, nil
	}
	t, upstream, err := a.resolve(ctx, refOf(id))
	if errors.Is(err, adapters.ErrNotFound) || (err == nil && upstream != upstreamID) {
		a.forget(upstreamID, id)
		return adapters.Found{}, false, nil
	}
	if err != nil {
		return adapters.Found{}, false, fmt.Errorf("look up freshdesk ticket for %s: %w", upstreamID, err)
	}
	me, err := a.self(ctx)
	if err != nil {
		return adapters.Found{}, false, err
	}
	h, err := a.held(ctx, t, me.ID)
	if err != nil {
		return adapters.Found{}, false, fmt.Errorf("look up freshdesk ticket for %s: %w", upstreamID, err)
	}
	other, ok := fdTicket{}, false
	if t.Archived {
		other, ok, err = a.liveFollowUp(ctx, t, upstreamID)
	} else if other, ok, err = a.archivedRoot(ctx, t, upstreamID); ok {
		t = other // the Ref names the archived ticket
	}
	if err != nil {
		return adapters.Found{}, false, fmt.Errorf("look up freshdesk ticket for %s: %w", upstreamID, err)
	}
	if ok {
		oh, err := a.held(ctx, other, me.ID)
		if err != nil {
			return adapters.Found{}, false, fmt.Errorf("look up freshdesk ticket for %s: %w", upstreamID, err)
		}
		h.Merge(oh)
	}
	return h.Found(refOf(t.ID)), true, nil
}

// resolve reads the ticket ref names and the upstream id it mirrors. A
// deleted ticket, or one that mirrors nothing, is not found.
func (a *Adapter) resolve(ctx context.Context, ref adapters.Ref) (fdTicket, string, error) {
	id, err := parseRef(ref)
	if err != nil {
		return fdTicket{}, "", err
	}
	var t fdTicket
	_, err = a.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodGet, URL: a.url("/tickets/" + idString(id)), Op: "read ticket"}, nil, &t)
	if errors.Is(err, adapters.ErrNotFound) {
		// The ticket endpoints do not see archived tickets; the
		// archive's own endpoint does (where the plan has it).
		var at fdTicket
		if _, aerr := a.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodGet, URL: a.url("/tickets/archived/" + idString(id)), Op: "read archived ticket"}, nil, &at); aerr == nil {
			t, err = at, nil
			t.Archived = true
		}
	}
	if err != nil {
		return fdTicket{}, "", err
	}
	if t.ID != id {
		return fdTicket{}, "", fmt.Errorf("read ticket %d: the answer names ticket %d", id, t.ID)
	}
	if t.Deleted {
		return fdTicket{}, "", fmt.Errorf("ticket %d is deleted: %w", id, adapters.ErrNotFound)
	}
	upstream := t.field(a.cfg.IDField)
	if upstream == "" {
		return fdTicket{}, "", fmt.Errorf("ticket %d mirrors no guest request (its field %s is empty): %w", id, a.cfg.IDField, adapters.ErrNotFound)
	}
	return t, upstream, nil
}

// maxListPages bounds a paged listing, against a server that never says
// it is done.
const maxListPages = 1000

// conversations lists a ticket's replies and notes, oldest first, asking
// for each next page on the adapter's own address while the Link header
// names one.
func (a *Adapter) conversations(ctx context.Context, t fdTicket) ([]fdConversation, error) {
	id := t.ID
	path := "/tickets/" + idString(id) + "/conversations"
	if t.Archived {
		path = "/tickets/archived/" + idString(id) + "/conversations"
	}
	var out []fdConversation
	for page := 1; page <= maxListPages; page++ {
		var items []fdConversation
		resp, err := a.http.JSON(ctx, adapters.HTTPRequest{
			Method: http.MethodGet,
			URL:    a.url(path, "page", strconv.Itoa(page), "per_page", strconv.Itoa(a.cfg.PageSize)),
			Op:     "list conversations",
		}, nil, &items)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if !hasNext(resp.Header) || len(items) == 0 {
			return out, nil
		}
	}
	return nil, fmt.Errorf("list conversations of ticket %d: more than %d pages", id, maxListPages)
}

// held reads the markers of the API agent's notes in ticket t.
func (a *Adapter) held(ctx context.Context, t fdTicket, me int64) (saas.Held, error) {
	h := saas.NewHeld()
	cs, err := a.conversations(ctx, t)
	if err != nil {
		return saas.Held{}, err
	}
	for _, c := range cs {
		if c.UserID != me || c.Incoming {
			continue
		}
		if mk, ok := c.marker(); ok {
			h.Add(mk, idString(c.ID))
		}
	}
	return h, nil
}

// ---- finding tickets by upstream id ----

// Freshdesk's search (the filter API) could find a ticket by its custom
// field, but its index lags behind writes by minutes: a ticket created just
// before a restart would not be found, and a second one made. The adapter
// lists instead, which shows every write at once: the ticket list filtered
// by updated_since and sorted by updated_at, read once from Config.Since
// when an instance first needs it, and after that only from where the last
// listing ended (less the overlap). The tickets whose id field is set are
// kept in memory, upstream id to ticket id. The first lookup of an instance
// costs one request per PageSize tickets updated since Config.Since; each
// later one a request or two.

// find returns the ticket whose id field holds upstreamID, or 0. It lists
// tickets only when the index cannot answer: on an instance's first call
// (after a restart, or a state loss: one listing then serves every
// lookup), and after a creation whose outcome is unknown. Otherwise the
// index is complete without a listing: only the bridge sets the id field,
// the one instance serving the helpdesk remembers every ticket it made,
// and each Changes call lists what changed since the last. This keeps the
// ticket list, whose budget is the smallest (20 calls a minute on the
// Growth plan), for the listings that need it.
func (a *Adapter) find(ctx context.Context, upstreamID string) (int64, error) {
	a.mu.Lock()
	fresh := a.scanned && !a.unsure
	a.mu.Unlock()
	if !fresh {
		if err := a.refresh(ctx); err != nil {
			return 0, err
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.index[upstreamID], nil
}

// refresh lists the tickets updated since the index's mark.
func (a *Adapter) refresh(ctx context.Context) error {
	a.scanMu.Lock()
	defer a.scanMu.Unlock()
	a.mu.Lock()
	from := a.since
	if a.scanned {
		from = a.mark.Add(-overlap)
	}
	a.mu.Unlock()
	if from.Before(a.since) {
		from = a.since
	}
	maxUpdated, err := a.scan(ctx, from, "list tickets", func(fdTicket) error { return nil })
	if err != nil {
		return fmt.Errorf("list freshdesk tickets updated since %s: %w", from.Format(time.RFC3339), err)
	}
	a.mu.Lock()
	for _, t := range []time.Time{maxUpdated, from} {
		if t.After(a.mark) {
			a.mark = t
		}
	}
	a.scanned = true
	a.unsure = false
	a.mu.Unlock()
	return nil
}

// remember records that ticket id mirrors upstream; of several, the
// oldest counts.
func (a *Adapter) remember(id int64, upstream string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.index[upstream]; !ok || id < old {
		a.index[upstream] = id
	}
}

// forget drops a ticket the index named but Freshdesk no longer shows.
func (a *Adapter) forget(upstream string, id int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.index[upstream] == id {
		delete(a.index, upstream)
	}
}

// maxScanRequests bounds one listing.
const maxScanRequests = 100000

// scan lists every ticket updated at or after from, in the order of
// updated_at, and hands each to f, a ticket again when it shows up later
// with a newer updated_at (it changed during the listing). Tickets whose id
// field is set go into the index. It returns the newest updated_at seen.
//
// It pages by time rather than by page number: the next request starts a
// second before the last ticket of the page, and asks for a further page of
// the same start only while a page holds nothing newer. A ticket updated
// during the listing moves to the end of the order; with page numbers the
// others would shift and one could be skipped. This also keeps a listing
// of any length within Freshdesk's 300 pages.
func (a *Adapter) scan(ctx context.Context, from time.Time, op string, f func(fdTicket) error) (time.Time, error) {
	type version struct {
		id      int64
		updated int64
	}
	done := map[version]bool{}
	since, page := from.UTC().Truncate(time.Second), 1
	var newest time.Time
	for range maxScanRequests {
		if page > a.maxPages {
			return newest, fmt.Errorf("more than %d pages of tickets updated in the second %s", a.maxPages, since.Format(time.RFC3339))
		}
		var items []fdTicket
		resp, err := a.http.JSON(ctx, adapters.HTTPRequest{
			Method: http.MethodGet,
			URL: a.url("/tickets", "updated_since", since.Format(time.RFC3339), "order_by", "updated_at", "order_type", "asc",
				"per_page", strconv.Itoa(a.cfg.PageSize), "page", strconv.Itoa(page)),
			Op: op,
		}, nil, &items)
		if err != nil {
			return newest, err
		}
		for _, t := range items {
			if t.UpdatedAt.After(newest) {
				newest = t.UpdatedAt
			}
			v := version{t.ID, t.UpdatedAt.Unix()}
			if done[v] || t.Deleted || t.Spam {
				continue
			}
			done[v] = true
			if up := t.field(a.cfg.IDField); validToken(up) {
				a.remember(t.ID, up)
			}
			if err := f(t); err != nil {
				return newest, err
			}
		}
		if !hasNext(resp.Header) || len(items) == 0 {
			return newest, nil
		}
		if next := items[len(items)-1].UpdatedAt.UTC().Truncate(time.Second).Add(-time.Second); next.After(since) {
			since, page = next, 1
		} else {
			page++
		}
	}
	return newest, fmt.Errorf("more than %d requests", maxScanRequests)
}
