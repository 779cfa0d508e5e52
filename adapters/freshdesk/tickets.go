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

// thread is what mirrors one upstream ticket in Freshdesk: the ticket a
// Ref names and, when that one is archived, its follow-up, where writes go
// (see archived.go).
type thread struct {
	t        fdTicket
	upstream string
	f        fdTicket // the follow-up of an archived t
	hasF     bool     // f is set
}

// live returns the ticket that takes writes: t, or the follow-up of an
// archived t (ok false when it has none yet).
func (th thread) live() (fdTicket, bool) {
	if th.t.Archived {
		return th.f, th.hasF
	}
	return th.t, true
}

// Current reports the status of the ticket that takes writes, or of the
// archived ticket when it has no follow-up yet. Freshdesk keeps no time of
// the last status change on the ticket: its updated_at stands for it.
func (v vendor) Current(th thread) adapters.FoundStatus {
	t, ok := th.live()
	if !ok {
		t = th.t
	}
	return saas.Current(v.status, strconv.Itoa(t.Status), t.UpdatedAt, "", "")
}

// Find returns the Ref of the ticket whose id field holds upstreamID
// (see Thread).
func (v vendor) Find(ctx context.Context, upstreamID string) (adapters.Ref, bool, error) {
	_, ref, ok, err := v.Thread(ctx, upstreamID)
	return ref, ok, err
}

// Create makes the ticket of t: requested by the configured requester,
// with the request as its description, the department's group, the tags
// (the configured one, the origin's, the rating's), the mapped status and
// both custom fields. The priority is Freshdesk's default (low) until
// Update sets the one a priority rule derives. Freshdesk has no idempotency
// key: a creation is sent once, and when its outcome is unknown the call
// fails and the engine's next call finds the ticket if it was made.
func (v vendor) Create(ctx context.Context, t adapters.Ticket) (adapters.Ref, error) {
	a := v.Adapter
	status, err := a.down(t.Status)
	if err != nil {
		return "", err
	}
	in := fdTicketIn{
		Subject:     subject(t),
		Description: textHTML(descriptionText(t)),
		Email:       a.cfg.Requester,
		Name:        requesterName,
		Status:      status,
		GroupID:     saas.Group(a.groups, t.Department, a.cfg.Group),
		Tags:        saas.CreateTags(a.tags, originTag(t.Origin), t.GuestRating),
		CustomFields: map[string]string{
			a.cfg.IDField:     t.UpstreamID,
			a.cfg.StatusField: baseline{}.next(status),
		},
	}
	out, err := a.create(ctx, in, t.UpstreamID, "create ticket")
	if err != nil {
		return "", err
	}
	return saas.RefOf(out.ID), nil
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

// Prepare readies the ticket for the messages it does not hold yet: an
// archived ticket cannot change, so they go to its follow-up, made now
// when it has none; a guest's public message on a pending, resolved or
// closed ticket first reopens it.
func (v vendor) Prepare(ctx context.Context, th thread, fresh []adapters.Message) (thread, error) {
	if len(fresh) == 0 {
		return th, nil
	}
	if th.t.Archived && !th.hasF {
		f, err := v.followUp(ctx, th.t, th.upstream)
		if err != nil {
			return th, fmt.Errorf("append to archived freshdesk ticket %d: %w", th.t.ID, err)
		}
		th.f, th.hasF = f, true
	}
	t, _ := th.live()
	if slices.ContainsFunc(fresh, guestPublic) && (t.Status == statusPending || t.Status == statusResolved || t.Status == statusClosed) {
		b := parseBaseline(t.field(v.cfg.StatusField))
		in := fdTicketIn{Status: statusOpen, CustomFields: map[string]string{v.cfg.StatusField: b.next(statusOpen)}}
		if err := v.update(ctx, t.ID, in, "reopen ticket"); err != nil {
			return th, fmt.Errorf("reopen freshdesk ticket %d for a guest message: %w", t.ID, err)
		}
	}
	return th, nil
}

// Comment adds m as one note by the API agent: public (private false)
// after visible_to_guest, so that nothing is e-mailed to anybody. Notes
// are sent once, never repeated: when an outcome is unknown the engine
// calls Append again, which finds the note by its marker if it was made.
func (v vendor) Comment(ctx context.Context, th thread, m adapters.Message) (thread, string, error) {
	t, _ := th.live()
	c, err := v.note(ctx, t.ID, saas.MessageText(m), !m.Public, "append message")
	if err != nil {
		return th, "", fmt.Errorf("append message %s to freshdesk ticket %d: %w", m.UpstreamID, t.ID, err)
	}
	return th, idString(c.ID), nil
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

// Status sets the Freshdesk status s maps to, and records it in the
// status field in the same update, so that Changes knows it for the
// bridge's own. Nothing is written when the ticket's status already maps
// to s (an agent's pending stays for in_progress) or is the one s maps to.
// An archived ticket is closed for good: a closing status goes to its
// follow-up if it has one, any other makes one.
func (v vendor) Status(ctx context.Context, th thread, s guestapi.Status) error {
	target, err := v.down(s)
	if err != nil {
		return fmt.Errorf("set status of freshdesk ticket %d: %w: %w", th.t.ID, err, adapters.ErrInvalid)
	}
	t, ok := th.live()
	if !ok {
		if target == statusResolved || target == statusClosed {
			return nil
		}
		if t, err = v.followUp(ctx, th.t, th.upstream); err != nil {
			return fmt.Errorf("set status of archived freshdesk ticket %d: %w", th.t.ID, err)
		}
	}
	if _, ok := saas.Target(v.status, strconv.Itoa(t.Status), s, "", ""); !ok {
		return nil
	}
	b := parseBaseline(t.field(v.cfg.StatusField))
	in := fdTicketIn{Status: target, CustomFields: map[string]string{v.cfg.StatusField: b.next(target)}}
	if err := v.update(ctx, t.ID, in, "set status"); err != nil {
		return fmt.Errorf("set status of freshdesk ticket %d to %d: %w", t.ID, target, err)
	}
	return nil
}

// MarkSent records the delivery of helpdesk event eventID. A reply or
// note gets a private note ending in a sent marker (see
// [saas.Helpdesk.MarkSent]). A status change moves the status field to
// the status the event carried, in the next generation, unless the field
// moved on since the event was read (the bridge set a status meanwhile,
// or the delivery was recorded already).
func (a *Adapter) MarkSent(ctx context.Context, ref adapters.Ref, eventID, upstreamMessageID string) error {
	ticket, gen, status, ok := parseStatusEventID(eventID)
	if !ok {
		return a.Helpdesk.MarkSent(ctx, ref, eventID, upstreamMessageID)
	}
	if err := a.Input().Sent(ref, eventID, upstreamMessageID); err != nil {
		return err
	}
	th, err := vendor{a}.Resolve(ctx, ref)
	if err != nil {
		return fmt.Errorf("mark event %s sent on freshdesk ticket %s: %w", eventID, ref, err)
	}
	t, ok := th.live()
	if !ok {
		return nil // events come from the follow-up: without one, the delivery goes unrecorded
	}
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

// Note adds text as a private note to the ticket that takes writes; an
// archived ticket without a follow-up takes none, and the note (a
// delivery record, which the engine's state still holds; the files not
// sent) goes unwritten.
func (v vendor) Note(ctx context.Context, th thread, op, text string) error {
	t, ok := th.live()
	if !ok {
		return nil
	}
	if _, err := v.note(ctx, t.ID, text, true, op); err != nil {
		return fmt.Errorf("write note on freshdesk ticket %d: %w", t.ID, err)
	}
	return nil
}

// Thread finds the ticket whose id field holds upstreamID, as the index
// knows it, and the follow-up of an archived one or the archived ticket a
// follow-up follows (which then stands for it: Refs name the archived
// ticket). The index may name a ticket an agent deleted since it was
// listed: it is forgotten, and EnsureTicket makes a new one.
func (v vendor) Thread(ctx context.Context, upstreamID string) (thread, adapters.Ref, bool, error) {
	id, err := v.find(ctx, upstreamID)
	if err != nil || id == 0 {
		return thread{}, "", false, err
	}
	t, upstream, err := v.resolve(ctx, saas.RefOf(id))
	if errors.Is(err, adapters.ErrNotFound) || (err == nil && upstream != upstreamID) {
		v.forget(upstreamID, id)
		return thread{}, "", false, nil
	}
	if err != nil {
		return thread{}, "", false, err
	}
	th := thread{t: t, upstream: upstreamID}
	if t.Archived {
		th.f, th.hasF, err = v.liveFollowUp(ctx, t, upstreamID)
	} else if root, ok, rerr := v.archivedRoot(ctx, t, upstreamID); ok {
		th = thread{t: root, upstream: upstreamID, f: t, hasF: true} // the Ref names the archived ticket
	} else {
		err = rerr
	}
	if err != nil {
		return thread{}, "", false, err
	}
	return th, saas.RefOf(th.t.ID), true, nil
}

// Resolve reads the ticket ref names and, when it is archived, its
// follow-up.
func (v vendor) Resolve(ctx context.Context, ref adapters.Ref) (thread, error) {
	t, upstream, err := v.resolve(ctx, ref)
	if err != nil {
		return thread{}, err
	}
	th := thread{t: t, upstream: upstream}
	if t.Archived {
		if th.f, th.hasF, err = v.liveFollowUp(ctx, t, upstream); err != nil {
			return thread{}, err
		}
	}
	return th, nil
}

// Comments lists the conversations of the thread's tickets; an incoming
// one (the requester's e-mail) is nobody's the bridge knows.
func (v vendor) Comments(ctx context.Context, th thread) ([]saas.Comment, error) {
	ts := []fdTicket{th.t}
	if th.hasF {
		ts = append(ts, th.f)
	}
	var out []saas.Comment
	for _, t := range ts {
		cs, err := v.conversations(ctx, t)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			cm := saas.Comment{ID: idString(c.ID), Author: c.UserID}
			if c.Incoming {
				cm.Author = 0
			}
			if mk, ok := c.marker(); ok {
				cm.Text = mk.Line()
			}
			if ev, ok := conversationEvent(c, saas.RefOf(t.ID), th.upstream); ok {
				cm.Event, cm.Files = &ev, c.files()
			}
			out = append(out, cm)
		}
	}
	return out, nil
}

// AuthorName returns the name Changes gives the author of c.
func (v vendor) AuthorName(ctx context.Context, c saas.Comment) (string, error) {
	return v.agentName(ctx, c.Author)
}

// resolve reads the ticket ref names and the upstream id it mirrors. A
// deleted ticket, or one that mirrors nothing, is not found.
func (a *Adapter) resolve(ctx context.Context, ref adapters.Ref) (fdTicket, string, error) {
	t, err := a.read(ctx, ref)
	if err != nil {
		return fdTicket{}, "", err
	}
	upstream := t.field(a.cfg.IDField)
	if upstream == "" {
		return fdTicket{}, "", fmt.Errorf("ticket %d mirrors no guest request (its field %s is empty): %w", t.ID, a.cfg.IDField, adapters.ErrNotFound)
	}
	return t, upstream, nil
}

// read reads the ticket ref names, from the archive when the ticket
// endpoints no longer see it. A deleted ticket is not found.
func (a *Adapter) read(ctx context.Context, ref adapters.Ref) (fdTicket, error) {
	id, err := saas.ParseRef(Name, ref)
	if err != nil {
		return fdTicket{}, err
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
		return fdTicket{}, err
	}
	if t.ID != id {
		return fdTicket{}, fmt.Errorf("read ticket %d: the answer names ticket %d", id, t.ID)
	}
	if t.Deleted {
		return fdTicket{}, fmt.Errorf("ticket %d is deleted: %w", id, adapters.ErrNotFound)
	}
	return t, nil
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
