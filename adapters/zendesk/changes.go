package zendesk

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
)

// cursor is the adapter's position in the incremental ticket event export:
// the start_time of the next request and the ids of the events at that
// second already handed out. The export is time-based, and its next page
// starts at the second of the previous page's last event, so the events of
// that second come again and are skipped by id. A page that starts and
// ends at one second cannot be paged past; [Adapter.secondEvents] reads
// the rest of that second and the cursor moves to the next.
type cursor struct {
	start int64
	skip  []int64 // sorted
}

const cursorPrefix = "zd1:"

func (c cursor) String() string {
	ids := make([]string, len(c.skip))
	for i, id := range c.skip {
		ids[i] = idString(id)
	}
	return string(saas.Cursor{Head: c.start, Items: ids}.Format(cursorPrefix))
}

func parseCursor(s adapters.Cursor, since int64) (cursor, error) {
	sc, ok, err := saas.ParseCursor(s, cursorPrefix, Name)
	if err != nil || !ok {
		return cursor{start: since}, err
	}
	c := cursor{start: sc.Head}
	for _, part := range sc.Items {
		id, err := strconv.ParseInt(part, 10, 64)
		if err != nil {
			return cursor{}, saas.BadCursor(s, Name)
		}
		c.skip = append(c.skip, id)
	}
	slices.Sort(c.skip)
	return c, nil
}

// next is the cursor after page p was read from c.
func (c cursor) next(p zdEventPage) cursor {
	end := c.start
	if p.EndTime != nil && *p.EndTime > c.start {
		end = *p.EndTime
	}
	n := cursor{start: end}
	if end == c.start {
		n.skip = slices.Clone(c.skip)
	}
	for _, te := range p.TicketEvents {
		if te.Timestamp == end && !slices.Contains(n.skip, te.ID) {
			n.skip = append(n.skip, te.ID)
		}
	}
	slices.Sort(n.skip)
	return n
}

// Events reads the incremental ticket event export (with the
// comment_events sideload) from the cursor and reports, oldest first, the
// public comments (replies), private comments (notes) and status changes
// made by anyone but the API user on tickets that mirror a guest request,
// and the names of the files attached to the comments.
// It reads whole pages, at most Options.EventPages of them while they hold
// nothing for the bridge, and stops at the first that does. A second with
// more events than a page is read whole through the ticket audits.
//
// Zendesk leaves the last minute out of the export, so an agent's reply
// reaches the guest a minute or more after it was written.
func (v vendor) Events(ctx context.Context, cur adapters.Cursor, me int64) ([]adapters.Event, map[string][]string, adapters.Cursor, error) {
	a := v.Adapter
	c, err := parseCursor(cur, a.since)
	if err != nil {
		return nil, nil, cur, err
	}
	var out []adapters.Event
	files := map[string][]string{}
	for range a.maxPages {
		if time.Now().Add(-minExportAge).Unix() < c.start {
			// Zendesk refuses (400) a start_time less than a minute
			// old: nothing can be read from it yet.
			break
		}
		var p zdEventPage
		_, err := a.http.JSON(ctx, adapters.HTTPRequest{
			Method: http.MethodGet,
			URL:    a.url("/incremental/ticket_events", "start_time", strconv.FormatInt(c.start, 10), "include", "comment_events"),
			Op:     "read ticket events",
		}, nil, &p)
		if err != nil {
			return nil, nil, cur, fmt.Errorf("read zendesk ticket events since %s: %w", time.Unix(c.start, 0).UTC().Format(time.RFC3339), err)
		}
		n := c.next(p)
		if !p.EndOfStream && n.start == c.start {
			// The page starts and ends at the second it was asked for:
			// the second holds more events than a page, and the export,
			// whose next page starts at end_time, would bring the same
			// page again. Read the rest of the second from the tickets'
			// audits and go on at the next second.
			a.log.LogAttrs(ctx, slog.LevelInfo, "zendesk ticket event export holds more events in one second than a page: reading that second from the ticket audits",
				slog.String("op", "read ticket events"), slog.Int64("start_time", c.start), slog.Int("page", len(p.TicketEvents)))
			rest, err := a.secondEvents(ctx, c.start, n.skip)
			if err != nil {
				return nil, nil, cur, err
			}
			p.TicketEvents = append(p.TicketEvents, rest...)
			n = cursor{start: c.start + 1}
		}
		evs, err := a.events(ctx, p.TicketEvents, c, me, files)
		if err != nil {
			return nil, nil, cur, err
		}
		out = append(out, evs...)
		c = n
		if p.EndOfStream || len(out) > 0 {
			break
		}
	}
	return out, files, adapters.Cursor(c.String()), nil
}

// secondEvents returns the ticket events of second sec on mirrored tickets
// that are not in seen, in the form of the export, read from the audits of
// every mirrored ticket updated at or after sec: List Tickets newest first
// (no delay, unlike the exports) down to the first ticket last updated
// before sec, then List Audits for a Ticket. It is how the adapter passes
// a second that holds more ticket events than an export page, which the
// time-based export cannot page through. List Tickets leaves out archived
// tickets, which Zendesk archives months after they were closed and which
// cannot change, so it misses only a ticket updated in sec and archived
// since.
func (a *Adapter) secondEvents(ctx context.Context, sec int64, seen []int64) ([]zdTicketEvent, error) {
	var ids []int64
	err := pages(ctx, a, "/tickets", []string{"sort", "-updated_at"}, "tickets", "read tickets updated in a second", func(t zdTicket) bool {
		if t.UpdatedAt.Unix() < sec {
			return false
		}
		if strings.HasPrefix(t.externalID(), externalPrefix) {
			ids = append(ids, t.ID)
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("read zendesk ticket events of %s: %w", time.Unix(sec, 0).UTC().Format(time.RFC3339), err)
	}
	var out []zdTicketEvent
	for _, id := range ids {
		err := pages(ctx, a, "/tickets/"+idString(id)+"/audits", nil, "audits", "read ticket audits", func(au zdAudit) bool {
			if au.CreatedAt.Unix() == sec && !slices.Contains(seen, au.ID) {
				out = append(out, au.ticketEvent())
			}
			return true
		})
		if err != nil {
			return nil, fmt.Errorf("read zendesk ticket events of %s: %w", time.Unix(sec, 0).UTC().Format(time.RFC3339), err)
		}
	}
	slices.SortFunc(out, func(x, y zdTicketEvent) int { return cmp.Compare(x.ID, y.ID) })
	return out, nil
}

// minExportAge is how old the start_time of an export request must be:
// Zendesk answers 400 to one less than a minute old, and leaves the last
// minute out of every page. A second more allows for clocks that differ.
const minExportAge = time.Minute + time.Second

// candidate is a child event that may become an Event.
type candidate struct {
	te     zdTicketEvent
	ch     child
	kind   adapters.EventKind
	author int64
}

// events turns one export page into the events the bridge carries up,
// and records in files the names of the files each comment carried.
func (a *Adapter) events(ctx context.Context, page []zdTicketEvent, c cursor, me int64, files map[string][]string) ([]adapters.Event, error) {
	var cands []candidate
	for _, te := range page {
		if te.Timestamp == c.start && slices.Contains(c.skip, te.ID) {
			continue
		}
		var comments, statuses []candidate
		for _, raw := range te.ChildEvents {
			ch := parseChild(raw)
			switch {
			case ch.EventType == "Comment" && ch.Comment != nil && ch.Comment.AuthorID != me:
				kind := adapters.EventNote
				if ch.Comment.Public {
					kind = adapters.EventReply
				}
				comments = append(comments, candidate{te: te, ch: ch, kind: kind, author: ch.Comment.AuthorID})
			case ch.EventType == "Change" && ch.Field == "status" && te.UpdaterID != me:
				if _, ok := a.status.Up(ch.Value); ok {
					statuses = append(statuses, candidate{te: te, ch: ch, kind: adapters.EventStatus, author: te.UpdaterID})
				}
			}
		}
		cands = append(cands, comments...)
		cands = append(cands, statuses...)
	}
	if len(cands) == 0 {
		return nil, nil
	}
	var userIDs []int64
	latest := map[int64]int64{} // ticket -> second of its latest event here
	for _, cd := range cands {
		latest[cd.te.TicketID] = max(latest[cd.te.TicketID], cd.te.Timestamp)
		userIDs = append(userIDs, cd.author)
	}
	infos, err := a.ticketInfos(ctx, latest)
	if err != nil {
		return nil, err
	}
	names, err := a.userNames(ctx, userIDs)
	if err != nil {
		return nil, err
	}
	var out []adapters.Event
	for _, cd := range cands {
		info, ok := infos[cd.te.TicketID]
		if !ok || info.upstream == "" {
			continue
		}
		ev := adapters.Event{
			Ref:              saas.RefOf(info.root),
			UpstreamTicketID: info.upstream,
			Kind:             cd.kind,
			AuthorName:       names[cd.author],
			At:               cd.te.CreatedAt,
		}
		if cd.kind == adapters.EventStatus {
			ev.ID = "status-" + idString(cd.ch.ID)
			ev.Status, _ = a.status.Up(cd.ch.Value)
		} else {
			at := cd.te.CreatedAt
			if at.IsZero() {
				at = time.Unix(cd.te.Timestamp, 0).UTC()
			}
			var attached []string
			var ok bool
			if ev, attached, ok = commentEvent(*cd.ch.Comment, info.root, info.upstream, ev.AuthorName, at); !ok {
				continue // nothing to carry
			}
			if len(attached) > 0 {
				files[ev.ID] = attached
			}
		}
		if ev.At.IsZero() {
			ev.At = time.Unix(cd.te.Timestamp, 0).UTC()
		}
		out = append(out, ev)
	}
	return out, nil
}

// commentEvent is the event of comment cm, by someone other than the
// bridge, on a ticket of the chain whose first ticket is root and which
// mirrors upstream: a reply if public, else a note, by the user named
// name, at the comment's time (at when it gives none). Changes and Lookup
// both make it here, so that the two report the same event. It returns
// the names of the comment's files too; ok is false when the comment has
// nothing to carry (no text and no file).
func commentEvent(cm zdComment, root int64, upstream, name string, at time.Time) (ev adapters.Event, files []string, ok bool) {
	ev = adapters.Event{
		ID: "comment-" + idString(cm.ID), Ref: saas.RefOf(root), UpstreamTicketID: upstream,
		Kind: adapters.EventNote, Body: cm.Body, AuthorName: name, At: at,
	}
	if cm.Public {
		ev.Kind = adapters.EventReply
	}
	if !cm.CreatedAt.IsZero() {
		ev.At = cm.CreatedAt
	}
	files = cm.files()
	if len(files) == 0 && strings.TrimSpace(ev.Body) == "" {
		return adapters.Event{}, nil, false
	}
	return ev, files, true
}

// showManyLimit is how many ids one show_many request takes.
const showManyLimit = 100

// ticketInfos returns what each ticket of latest (ticket id -> the second
// of its latest event to report) mirrors, asking Zendesk about the
// tickets the adapter has not met: show_many for their external ids, and
// the external_id list for the first ticket of each chain. A ticket
// that mirrored nothing when it was read is asked about again for an
// event at or after the second it had last changed then: an operator may
// have connected it since (see [Adapter.Connect]), through another
// instance. A ticket Zendesk no longer has (deleted) is left out.
func (a *Adapter) ticketInfos(ctx context.Context, latest map[int64]int64) (map[int64]ticketInfo, error) {
	out := map[int64]ticketInfo{}
	var unknown []int64
	a.mu.Lock()
	for id, at := range latest {
		if info, ok := a.tickets[id]; ok && (info.upstream != "" || at < info.read) {
			out[id] = info
		} else {
			unknown = append(unknown, id)
		}
	}
	a.mu.Unlock()
	slices.Sort(unknown)
	for chunk := range slices.Chunk(unknown, showManyLimit) {
		var page struct {
			Tickets []zdTicket `json:"tickets"`
		}
		q := make([]string, len(chunk))
		for i, id := range chunk {
			q[i] = idString(id)
		}
		if _, err := a.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodGet, URL: a.url("/tickets/show_many", "ids", strings.Join(q, ",")), Op: "read tickets"}, nil, &page); err != nil {
			return nil, fmt.Errorf("read zendesk tickets of events: %w", err)
		}
		for _, t := range page.Tickets {
			upstream, ok := strings.CutPrefix(t.externalID(), externalPrefix)
			if !ok || upstream == "" {
				out[t.ID] = ticketInfo{}
				a.mu.Lock()
				a.tickets[t.ID] = ticketInfo{root: t.ID, read: t.UpdatedAt.Unix()}
				a.mu.Unlock()
				continue
			}
			root := t.ID
			chainTs, err := a.chainTickets(ctx, upstream)
			if err != nil {
				return nil, fmt.Errorf("read zendesk tickets of events: %w", err)
			}
			if len(chainTs) > 0 && chainTs[0].ID < root {
				root = chainTs[0].ID
			}
			for _, x := range chainTs {
				a.remember(x.ID, upstream, root)
				if slices.Contains(chunk, x.ID) {
					out[x.ID] = ticketInfo{upstream: upstream, root: root}
				}
			}
			a.remember(t.ID, upstream, root)
			out[t.ID] = ticketInfo{upstream: upstream, root: root}
		}
	}
	return out, nil
}

// userNames returns the names of the users, asking Zendesk about those the
// adapter has not met. A user Zendesk no longer has gets "".
func (a *Adapter) userNames(ctx context.Context, ids []int64) (map[int64]string, error) {
	out := map[int64]string{}
	var unknown []int64
	for _, id := range ids {
		switch name, ok := a.names.Known(id); {
		case ok:
			out[id] = name
		case id <= 0:
			out[id] = "Zendesk"
		case !slices.Contains(unknown, id):
			unknown = append(unknown, id)
		}
	}
	for chunk := range slices.Chunk(unknown, showManyLimit) {
		var page struct {
			Users []zdUser `json:"users"`
		}
		q := make([]string, len(chunk))
		for i, id := range chunk {
			q[i] = idString(id)
		}
		if _, err := a.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodGet, URL: a.url("/users/show_many", "ids", strings.Join(q, ",")), Op: "read users"}, nil, &page); err != nil {
			return nil, fmt.Errorf("read zendesk users of events: %w", err)
		}
		for _, u := range page.Users {
			a.names.Set(u.ID, u.Name)
			out[u.ID] = u.Name
		}
	}
	return out, nil
}
