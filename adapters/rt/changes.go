package rt

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
)

// changesPages bounds the pages of transactions not yet handled that one
// Changes call reads (pages of transactions handled by an earlier call, in
// the overlap, do not count); the engine calls again on its next cycle.
const changesPages = 5

// systemUser is the RT user RT's scrips act as. Their status changes
// follow from a message (RT reopens a ticket on correspondence) and stay in
// RT: carried upstream, a mirrored guest message would come back as a
// status change.
const systemUser = "RT_System"

// cursor is the adapter's position in RT's transactions: every
// transaction numbered up to floor has been looked at for good, and of the
// later ones those in done (reported, or left out for good). RT numbers a
// transaction when it inserts the row, inside a database transaction that
// may commit after a later one's, so a Changes call reads again the
// transactions created within the overlap (Config.Overlap) and leaves out
// those in done; floor passes a transaction once it is older than the
// overlap, and done holds the ids above floor only.
type cursor struct {
	floor int64
	done  []int64 // sorted, each above floor
}

// cursorPrefix starts a cursor, "rt1:<floor>:<id>,<id>,…". A bare
// transaction id, the cursor of earlier versions, reads as a floor
// without done.
const cursorPrefix = "rt1:"

// String writes c as the engine stores it.
func (c cursor) String() adapters.Cursor {
	items := make([]string, len(c.done))
	for i, id := range c.done {
		items[i] = strconv.FormatInt(id, 10)
	}
	return saas.Cursor{Head: c.floor, Items: items}.Format(cursorPrefix)
}

// parseCursor reads a cursor; the empty one is the beginning.
func parseCursor(s adapters.Cursor) (cursor, error) {
	if s == "" {
		return cursor{}, nil
	}
	if !strings.HasPrefix(string(s), cursorPrefix) {
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil || n < 0 {
			return cursor{}, fmt.Errorf("rt cursor %q is not a transaction id: %w", string(s), adapters.ErrInvalid)
		}
		return cursor{floor: n}, nil
	}
	sc, _, err := saas.ParseCursor(s, cursorPrefix, Name)
	if err != nil {
		return cursor{}, err
	}
	c := cursor{floor: sc.Head}
	for _, item := range sc.Items {
		id, err := strconv.ParseInt(item, 10, 64)
		if err != nil || id <= c.floor {
			return cursor{}, saas.BadCursor(s, Name)
		}
		c.done = append(c.done, id)
	}
	slices.Sort(c.done)
	return c, nil
}

var _ adapters.Peeker = (*Adapter)(nil)

// Changes returns the agents' correspondence (replies), comments (notes,
// unless SendComments is off) and status changes on mirrored tickets after
// cursor, oldest first. See the package doc for how it finds them and
// leaves out the bridge's own writes, and [cursor] for why it never skips
// a transaction RT commits late. A reply or comment with files leaves the
// ticket a comment naming them, once (see [adapters.NoteUnsent]), and
// one with files and no text is not reported.
func (a *Adapter) Changes(ctx context.Context, cur adapters.Cursor) ([]adapters.Event, adapters.Cursor, error) {
	return a.changes(ctx, cur, a.noteUnsent)
}

// PeekChanges is Changes without the comments naming files: it writes
// nothing, for a dry run (see [adapters.Peeker]).
func (a *Adapter) PeekChanges(ctx context.Context, cur adapters.Cursor) ([]adapters.Event, adapters.Cursor, error) {
	return a.changes(ctx, cur, nil)
}

func (a *Adapter) changes(ctx context.Context, cur adapters.Cursor, note func(context.Context, adapters.Event, []string) error) ([]adapters.Event, adapters.Cursor, error) {
	c, err := parseCursor(cur)
	if err != nil {
		return nil, cur, fmt.Errorf("changes: %w", err)
	}
	s, err := a.ready(ctx)
	if err != nil {
		return nil, cur, err
	}
	if c.floor == 0 {
		start, ok, err := a.firstTransaction(ctx, s)
		if err != nil {
			return nil, cur, fmt.Errorf("changes: %w", err)
		}
		if !ok {
			return nil, cur, nil // no mirrored ticket yet: nothing can have changed
		}
		c.floor = start - 1
	}
	done := map[int64]bool{}
	for _, id := range c.done {
		done[id] = true
	}
	var (
		events  []adapters.Event
		files   = map[string][]string{} // event id -> names of its files
		young   time.Time               // transactions created after it are in the overlap
		again   = map[int64]bool{}      // to be read again by a later call
		floor   = c.floor               // the highest id done and older than the overlap
		pending = int64(math.MaxInt64)  // the lowest id in again
		fresh   int                     // pages that held a transaction not yet done
	)
	for pg := 1; ; pg++ {
		txns, more, now, err := a.transactions(ctx, s, c.floor, pg)
		if err != nil {
			return nil, cur, fmt.Errorf("changes: %w", err)
		}
		if young.IsZero() {
			young = now.Add(-a.cfg.Overlap)
		}
		var todo []rtTransaction
		for _, t := range txns {
			if id := int64(t.ID); !done[id] && !again[id] {
				todo = append(todo, t)
			}
		}
		evs, later, err := a.events(ctx, s, todo, young, files)
		if err != nil {
			return nil, cur, fmt.Errorf("changes: %w", err)
		}
		events = append(events, evs...)
		for _, t := range todo {
			if id := int64(t.ID); later[id] {
				again[id] = true
			} else {
				done[id] = true
			}
		}
		for _, t := range txns {
			id := int64(t.ID)
			if again[id] {
				pending = min(pending, id)
				continue
			}
			at, err := rtTime(t.Created)
			if err != nil {
				return nil, cur, fmt.Errorf("changes: %w", err)
			}
			if !at.After(young) {
				floor = max(floor, id)
			}
		}
		if len(todo) > 0 {
			fresh++
		}
		if !more || fresh == changesPages {
			break
		}
	}
	next := cursor{floor: max(c.floor, min(floor, pending-1))}
	for id := range done {
		if id > next.floor {
			next.done = append(next.done, id)
		}
	}
	slices.Sort(next.done)
	events, err = adapters.NoteUnsent(ctx, a.log, events, files, note)
	if err != nil {
		return nil, cur, fmt.Errorf("changes: %w", err)
	}
	return events, next.String(), nil
}

// firstTransaction returns the id of the first transaction of the oldest
// mirrored ticket in the adapter's queues: nothing before it can concern
// the bridge. (Should that ticket be deleted, RT's search skips it and the
// scan starts at the next one; a deleted ticket's later changes are after
// the cursor anyway once the bridge has run.)
func (a *Adapter) firstTransaction(ctx context.Context, s *setup) (int64, bool, error) {
	q := url.Values{
		"query":    {fmt.Sprintf("'CF.{%s}' IS NOT NULL AND (%s)", a.cfg.IDField, a.queueSQL(s, "Queue"))},
		"orderby":  {"id"},
		"order":    {"ASC"},
		"per_page": {"1"},
	}
	var p page[rtTicket]
	if _, err := a.c.get(ctx, "changes", "/tickets", q, &p); err != nil {
		return 0, false, fmt.Errorf("find the first mirrored ticket: %w", err)
	}
	if len(p.Items) == 0 {
		return 0, false, nil
	}
	id := int64(p.Items[0].ID)
	var h page[rtTransaction]
	hq := url.Values{"orderby": {"id"}, "order": {"ASC"}, "per_page": {"1"}}
	if _, err := a.c.get(ctx, "changes", fmt.Sprintf("/ticket/%d/history", id), hq, &h); err != nil {
		return 0, false, fmt.Errorf("read the history of RT ticket %d: %w", id, err)
	}
	if len(h.Items) == 0 {
		return 0, false, nil
	}
	return int64(h.Items[0].ID), true, nil
}

// queueSQL limits a search to the adapter's queues: "field = 1 OR field = 3".
func (a *Adapter) queueSQL(s *setup, field string) string {
	var qs []string
	for _, id := range s.queueIDs {
		qs = append(qs, fmt.Sprintf("%s = %d", field, id))
	}
	slices.Sort(qs)
	return strings.Join(qs, " OR ")
}

// transactions returns page pg of the candidate transactions after id
// after, and RT's time when it answered (see [Adapter.searchTransactions]):
// correspondence, comments and status changes on tickets in the
// configured queues, not the bridge's own. A transaction RT commits
// late joins the pages before the newest; the pages after it then repeat
// one transaction, which [Adapter.Changes] leaves out as done.
func (a *Adapter) transactions(ctx context.Context, s *setup, after int64, pg int) ([]rtTransaction, bool, time.Time, error) {
	where := fmt.Sprintf("id > %d AND (%s)", after, a.queueSQL(s, "TicketQueue"))
	txns, more, now, err := a.searchTransactions(ctx, s, where, true, pg)
	if err != nil {
		return nil, false, time.Time{}, fmt.Errorf("search RT transactions after %d: %w", after, err)
	}
	return txns, more, now, nil
}

// searchTransactions returns page pg of the correspondence, comments
// (unless SendComments is off) and, with statuses, status changes on
// tickets that also match where, not the bridge's own, and RT's time when
// it answered (its Date header, else the adapter's clock).
func (a *Adapter) searchTransactions(ctx context.Context, s *setup, where string, statuses bool, pg int) ([]rtTransaction, bool, time.Time, error) {
	types := []string{"Type = 'Correspond'"}
	if statuses {
		types = append(types, "Type = 'Status'")
	}
	if a.cfg.SendComments {
		types = append(types, "Type = 'Comment'")
	}
	sql := fmt.Sprintf("ObjectType = 'RT::Ticket' AND %s AND (%s) AND Creator != %d", where, strings.Join(types, " OR "), s.meID)
	q := url.Values{
		"query":           {sql},
		"fields":          {"Type,ObjectId,Creator,Created,OldValue,NewValue"},
		"fields[Creator]": {"Name,RealName"},
		"orderby":         {"id"},
		"order":           {"ASC"},
		"per_page":        {strconv.Itoa(perPage)},
		"page":            {strconv.Itoa(pg)},
	}
	var p page[rtTransaction]
	resp, err := a.c.get(ctx, "changes", "/transactions", q, &p)
	if err != nil {
		return nil, false, time.Time{}, err
	}
	now := time.Now().UTC() // RT's clock, when its answer has no Date
	if resp != nil {
		if d, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
			now = d.UTC()
		}
	}
	return p.Items, p.more() && len(p.Items) > 0, now, nil
}

// events turns transactions into events: those on mirrored tickets, with
// their bodies, without the bridge's own; the names of a reply's or
// comment's files go to files. A reply or comment without a body yet
// that was created after young is in later, to be read again: RT inserts
// a message's attachments after its transaction, and may commit them
// after a later transaction's search.
func (a *Adapter) events(ctx context.Context, s *setup, txns []rtTransaction, young time.Time, files map[string][]string) (out []adapters.Event, later map[int64]bool, err error) {
	var withBody []int64
	for _, t := range txns {
		if t.Type == "Correspond" || t.Type == "Comment" {
			withBody = append(withBody, int64(t.ID))
		}
	}
	bodies, err := a.bodies(ctx, withBody)
	if err != nil {
		return nil, nil, err
	}
	later = map[int64]bool{}
	unmirrored := map[int64]bool{} // read in this call, mirroring none
	for _, t := range txns {
		if strings.EqualFold(t.Creator.name(), s.me.name()) {
			continue
		}
		ticket := int64(t.ObjectID)
		if unmirrored[ticket] {
			continue
		}
		up, err := a.upstreamID(ctx, s, ticket)
		if err != nil {
			return nil, nil, err
		}
		if up == "" {
			unmirrored[ticket] = true
			continue // not a mirrored ticket
		}
		at, err := rtTime(t.Created)
		if err != nil {
			return nil, nil, err
		}
		ev := adapters.Event{
			ID:               strconv.FormatInt(int64(t.ID), 10),
			Ref:              refOf(ticket),
			UpstreamTicketID: up,
			AuthorName:       t.Creator.display(),
			At:               at,
		}
		switch t.Type {
		case "Status":
			if strings.EqualFold(t.Creator.name(), systemUser) {
				a.logSkip(ctx, "status change made by RT itself", t)
				continue
			}
			st, ok := a.status.Up(t.NewValue)
			if !ok {
				a.logSkip(ctx, "RT status "+t.NewValue+" maps to no upstream status", t)
				continue
			}
			ev.Kind, ev.Status = adapters.EventStatus, st
		case "Correspond", "Comment":
			b := bodies[int64(t.ID)]
			if ownText(b.text) {
				a.logSkip(ctx, "the bridge's own message, written as another RT user", t)
				continue
			}
			text := b.text
			if len(b.files) > 0 {
				files[ev.ID] = b.files // text or not, noted by Changes
			} else if strings.TrimSpace(text) == "" {
				if at.After(young) {
					later[int64(t.ID)] = true
					a.logSkip(ctx, "no text yet: read again while in the overlap", t)
					continue
				}
				continue // nothing to carry (an empty update)
			}
			ev.Body = text
			ev.Kind = adapters.EventReply
			if t.Type == "Comment" {
				ev.Kind = adapters.EventNote
			}
		default:
			continue
		}
		out = append(out, ev)
	}
	return out, later, nil
}

// upstreamID returns the upstream id ticket mirrors, "" for a ticket that
// mirrors none. A mirrored ticket's id is read once and remembered; a
// ticket that mirrors none is read again by each call, since a
// Connect, by this replica or another, may make it mirror one: events
// reads it once per page of transactions.
func (a *Adapter) upstreamID(ctx context.Context, s *setup, ticket int64) (string, error) {
	a.mu.Lock()
	up, ok := a.tickets[ticket]
	a.mu.Unlock()
	if ok {
		return up, nil
	}
	tk, err := a.getTicket(ctx, "changes", ticket)
	if isNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the guest request of RT ticket %d: %w", ticket, err)
	}
	up = heldID(tk, s)
	if up != "" {
		a.remember(ticket, up)
	}
	return up, nil
}

// body is what a transaction says: its text and the names of its files.
type body struct {
	text  string
	files []string
}

// bodies reads the text of transactions txns: their text/plain part,
// else their text/html part as plain text, and the names of attached
// files. Only text parts are fetched, so a photo an agent attached never
// travels.
func (a *Adapter) bodies(ctx context.Context, txns []int64) (map[int64]body, error) {
	out := map[int64]body{}
	if len(txns) == 0 {
		return out, nil
	}
	conds := make([]searchCond, 0, len(txns)+1)
	for _, id := range txns {
		conds = append(conds, searchCond{Field: "TransactionId", Value: id})
	}
	names := slices.Clone(conds)
	conds = append(conds, searchCond{Field: "ContentType", Operator: "STARTSWITH", Value: "text/"})
	names = append(names, searchCond{Field: "Filename", Operator: "!=", Value: ""})

	type part struct {
		ctype, text string
	}
	parts := map[int64][]part{}
	err := a.eachAttachment(ctx, conds, "TransactionId,ContentType,Filename,Content", func(at rtAttachment) {
		if at.Filename != "" {
			return
		}
		parts[int64(at.TransactionID)] = append(parts[int64(at.TransactionID)], part{strings.ToLower(at.ContentType), at.Content})
	})
	if err != nil {
		return nil, err
	}
	files := map[int64][]string{}
	err = a.eachAttachment(ctx, names, "TransactionId,Filename", func(at rtAttachment) {
		if at.Filename != "" {
			files[int64(at.TransactionID)] = append(files[int64(at.TransactionID)], at.Filename)
		}
	})
	if err != nil {
		return nil, err
	}
	for _, id := range txns {
		var b body
		for _, want := range []string{"text/plain", "text/html"} {
			for _, p := range parts[id] {
				if p.ctype == want && b.text == "" {
					if want == "text/html" {
						b.text = htmlToText(p.text)
					} else {
						b.text = plainBody(p.text)
					}
				}
			}
		}
		b.files = files[id]
		out[id] = b
	}
	return out, nil
}

// eachAttachment runs a JSON attachment search, page by page.
func (a *Adapter) eachAttachment(ctx context.Context, conds []searchCond, fields string, f func(rtAttachment)) error {
	for pg := 1; ; pg++ {
		q := url.Values{
			"fields":   {fields},
			"orderby":  {"id"},
			"order":    {"ASC"},
			"per_page": {strconv.Itoa(perPage)},
			"page":     {strconv.Itoa(pg)},
		}
		var p page[rtAttachment]
		if _, err := a.c.call(ctx, "changes", http.MethodPost, "/attachments", q, conds, &p, true); err != nil {
			return fmt.Errorf("read RT attachments: %w", err)
		}
		for _, at := range p.Items {
			f(at)
		}
		if !p.more() || len(p.Items) == 0 {
			return nil
		}
	}
}

// noteUnsent leaves RT ticket ev.Ref a comment naming the files of event
// ev that the API cannot carry, unless the ticket holds its marker
// already. A comment notifies no requester and leaves the status alone.
func (a *Adapter) noteUnsent(ctx context.Context, ev adapters.Event, files []string) error {
	id, err := parseRef(ev.Ref)
	if err != nil {
		return fmt.Errorf("note the files of transaction %s: %w", ev.ID, err)
	}
	noted := false
	if _, err := a.eachMarker(ctx, id, 0, func(m adapters.Marker, _ int64, _ string) {
		noted = noted || m.Kind == adapters.MarkerUnsent && m.ID == ev.ID
	}); err != nil {
		return fmt.Errorf("note the files of transaction %s: %w", ev.ID, err)
	}
	if noted {
		return nil
	}
	body := map[string]any{"Content": saas.UnsentText(ev, files) + "\n", "ContentType": "text/plain"}
	if _, err := a.c.call(ctx, "note unsent", http.MethodPost, fmt.Sprintf("/ticket/%d/comment", id), nil, body, nil, false); err != nil {
		return fmt.Errorf("note the files of transaction %s on RT ticket %d: %w", ev.ID, id, err)
	}
	a.log.LogAttrs(ctx, slog.LevelInfo, "noted the files not sent upstream", slog.String("op", "note unsent"),
		slog.String("ticket", ev.UpstreamTicketID), slog.String("event", ev.ID), slog.Int64("rt_ticket", id), slog.Int("files", len(files)))
	return nil
}

// logSkip notes, at debug level, an event left out.
func (a *Adapter) logSkip(ctx context.Context, why string, t rtTransaction) {
	a.log.LogAttrs(ctx, slog.LevelDebug, why, slog.String("op", "changes"),
		slog.Int64("rt_ticket", int64(t.ObjectID)), slog.Int64("rt_transaction", int64(t.ID)))
}

// ticketEvents returns the replies and comments of RT ticket id, which
// mirrors upstreamID, as Changes reports them (the same [Adapter.events]
// makes them), oldest first: for Lookup, so that reconcile carries one
// the change feed skipped. One with files keeps its text, one with files
// only is left out (see [adapters.NoteUnsent]); the comment naming the
// files is Changes' to write, Lookup being a read. One without a body yet
// is left out: Changes reads it again while it is in the overlap.
func (a *Adapter) ticketEvents(ctx context.Context, s *setup, id int64, upstreamID string) ([]adapters.Event, error) {
	a.remember(id, upstreamID)
	out := []adapters.Event{}
	files := map[string][]string{}
	for pg := 1; ; pg++ {
		txns, more, _, err := a.searchTransactions(ctx, s, fmt.Sprintf("ObjectId = %d", id), false, pg)
		if err != nil {
			return nil, fmt.Errorf("read the replies of RT ticket %d: %w", id, err)
		}
		evs, _, err := a.events(ctx, s, txns, time.Time{}, files)
		if err != nil {
			return nil, fmt.Errorf("read the replies of RT ticket %d: %w", id, err)
		}
		out = append(out, evs...)
		if !more {
			break
		}
	}
	return adapters.NoteUnsent(ctx, nil, out, files, nil)
}
