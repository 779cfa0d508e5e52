package zammad

import (
	"cmp"
	"context"
	"errors"
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

// overlap is how far before its watermark a Changes call looks again. It
// covers writes that Zammad committed after a later one (a time stamp is
// taken before the commit), clock differences between Zammad's web and
// application servers, and the Date header's whole seconds. Events in the
// overlap that were already reported are named in the cursor and skipped.
const overlap = 2 * time.Minute

// maxScanRequests bounds the searches of one Changes call, against a
// server whose paging does not move.
const maxScanRequests = 10000

// cursor is the adapter's position in Zammad's changes: every event
// created at or before w minus the overlap has been reported (or left out
// as the bridge's own), and of the later ones those in seen.
type cursor struct {
	w    time.Time
	seen []string // event ids, sorted
}

const cursorPrefix = "zm1:"

func (c cursor) String() string {
	ms := int64(0)
	if !c.w.IsZero() {
		ms = c.w.UnixMilli()
	}
	return string(saas.Cursor{Head: ms, Items: c.seen}.Format(cursorPrefix))
}

func parseCursor(s adapters.Cursor, since time.Time) (cursor, error) {
	sc, ok, err := saas.ParseCursor(s, cursorPrefix, Name)
	if err != nil || !ok {
		return cursor{w: since}, err
	}
	c := cursor{}
	if sc.Head > 0 {
		c.w = time.UnixMilli(sc.Head).UTC()
	}
	for _, id := range sc.Items {
		if !validEventID(id) {
			return cursor{}, saas.BadCursor(s, Name)
		}
		c.seen = append(c.seen, id)
	}
	slices.Sort(c.seen)
	return c, nil
}

// Event ids: "article-<article id>" for replies and notes, "state-<history
// id>" for state changes.
const (
	articlePrefix = "article-"
	statePrefix   = "state-"
)

func validEventID(id string) bool {
	rest, ok := strings.CutPrefix(id, articlePrefix)
	if !ok {
		rest, ok = strings.CutPrefix(id, statePrefix)
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return ok && err == nil && n > 0
}

// candidate is an event before the user names are read.
type candidate struct {
	ev     adapters.Event
	rank   int // 0 for an article, 1 for a state change: a reply comes before the close saved with it
	num    int64
	author int64
	from   string
}

// Events reports, oldest first, the articles and state changes made by
// anyone but the API user on tickets whose attribute holds an upstream id:
// public articles by agents are replies, internal ones notes (with the
// names of their files), and state changes (read from each ticket's
// history, so that every change counts, not only the last) are mapped
// with the status map.
//
// It finds the tickets changed since the cursor with a ticket search on
// updated_at (sorted ascending, paged by time), which Zammad answers from
// its database, so nothing waits for the search index. Each such ticket
// costs two more requests, its articles and its history. The new
// watermark is Zammad's time (the Date header) at the start of the search;
// the cursor carries the ids of the events reported in the overlap.
func (v vendor) Events(ctx context.Context, cur adapters.Cursor, me int64) ([]adapters.Event, map[string][]string, adapters.Cursor, error) {
	a := v.Adapter
	c, err := parseCursor(cur, a.since)
	if err != nil {
		return nil, nil, cur, err
	}
	from := time.Unix(0, 0).UTC()
	if !c.w.IsZero() && c.w.Add(-overlap).After(from) {
		from = c.w.Add(-overlap)
	}
	tickets, serverNow, err := a.scan(ctx, from)
	if err != nil {
		return nil, nil, cur, err
	}
	examined := map[string]time.Time{}
	files := map[string][]string{}
	var cands []candidate
	for _, t := range tickets {
		upstream, _ := t.attr(a.cfg.IDField)
		if upstream == "" {
			continue
		}
		cs, err := a.ticketEvents(ctx, t, upstream, from, me, examined, files)
		if errors.Is(err, adapters.ErrNotFound) {
			// Deleted since the search: it has nothing more to report.
			a.log.LogAttrs(ctx, slog.LevelInfo, "zammad ticket vanished while its changes were read",
				slog.String("ticket", upstream), slog.String("op", "read changes"), slog.Int64("zammad_ticket", t.ID))
			continue
		}
		if err != nil {
			return nil, nil, cur, err
		}
		cands = append(cands, cs...)
	}
	cands = slices.DeleteFunc(cands, func(cd candidate) bool {
		_, done := slices.BinarySearch(c.seen, cd.ev.ID)
		return done
	})
	slices.SortFunc(cands, func(x, y candidate) int {
		if d := x.ev.At.Compare(y.ev.At); d != 0 {
			return d
		}
		if x.rank != y.rank {
			return x.rank - y.rank
		}
		return cmp.Compare(x.num, y.num)
	})
	w := serverNow
	if len(cands) > a.maxEvents {
		cands = cands[:a.maxEvents]
		if last := cands[len(cands)-1].ev.At; last.Before(w) {
			w = last
		}
	}
	if w.Before(c.w) {
		w = c.w
	}
	keep := map[string]bool{}
	for _, id := range c.seen {
		keep[id] = true
	}
	out := make([]adapters.Event, 0, len(cands))
	for _, cd := range cands {
		keep[cd.ev.ID] = true
		ev := cd.ev
		name, err := a.authorName(ctx, cd.author, cd.from)
		if err != nil {
			return nil, nil, cur, err
		}
		ev.AuthorName = name
		out = append(out, ev)
	}
	next := cursor{w: w}
	for id := range keep {
		if at, ok := examined[id]; ok && at.After(w.Add(-overlap)) {
			next.seen = append(next.seen, id)
		}
	}
	slices.Sort(next.seen)
	return out, files, adapters.Cursor(next.String()), nil
}

// scan returns the tickets updated after from, by id, and Zammad's time at
// the start of the scan. It pages by time: each request asks for the
// tickets updated after the last one seen (a millisecond earlier, so that
// tickets sharing that time are not skipped), and falls back to page
// numbers while a whole page shares one time.
func (a *Adapter) scan(ctx context.Context, from time.Time) ([]zmTicket, time.Time, error) {
	found := map[int64]zmTicket{}
	var serverNow time.Time
	after, page := from, 1
	for n := 0; ; n++ {
		if n == maxScanRequests {
			return nil, time.Time{}, fmt.Errorf("read zammad tickets changed since %s: the search did not run dry after %d requests", timeValue(from), n)
		}
		ts, resp, err := a.search(ctx, []cond{{attr: "updated_at", op: "after (absolute)", value: timeValue(after)}}, "updated_at", "asc", page, "read changed tickets")
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("read zammad tickets changed since %s: %w", timeValue(from), err)
		}
		if serverNow.IsZero() {
			serverNow = time.Now().UTC()
			if d, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
				serverNow = d.UTC()
			}
		}
		var last time.Time
		for _, t := range ts {
			found[t.ID] = t
			if t.UpdatedAt.After(last) {
				last = t.UpdatedAt
			}
		}
		if len(ts) < a.cfg.PageSize {
			break
		}
		if next := last.Add(-time.Millisecond); next.After(after) {
			after, page = next, 1
		} else {
			page++
		}
	}
	out := make([]zmTicket, 0, len(found))
	for _, t := range found {
		out = append(out, t)
	}
	slices.SortFunc(out, func(x, y zmTicket) int { return cmp.Compare(x.ID, y.ID) })
	return out, serverNow, nil
}

// ticketEvents reads ticket t's articles and history and returns the
// events created after from that the bridge carries up, recording in
// files the names of the files of each article. Every article and
// state change after from is recorded in examined with its time. On a
// ticket made by hand and then connected ([Adapter.Connect]), what was
// written before the connect is the team's own and is not carried up.
func (a *Adapter) ticketEvents(ctx context.Context, t zmTicket, upstream string, from time.Time, me int64, examined map[string]time.Time, files map[string][]string) ([]candidate, error) {
	arts, err := a.articles(ctx, t.ID)
	if err != nil {
		return nil, fmt.Errorf("read articles of zammad ticket %d: %w", t.ID, err)
	}
	hist, err := a.history(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	connected := a.connectedAt(hist, upstream)
	base := adapters.Event{Ref: saas.RefOf(t.ID), UpstreamTicketID: upstream}
	var out []candidate
	for _, art := range arts {
		if !art.CreatedAt.After(from) {
			continue
		}
		id := articlePrefix + idString(art.ID)
		examined[id] = art.CreatedAt
		if art.CreatedByID == me || !art.CreatedAt.After(connected) {
			continue // the bridge's own, or written before the ticket was connected
		}
		ev, ok := articleEvent(art, base.Ref, upstream)
		if !ok {
			continue
		}
		if names := art.files(); len(names) > 0 {
			files[id] = names
		} else if strings.TrimSpace(ev.Body) == "" {
			a.log.LogAttrs(ctx, slog.LevelInfo, "zammad article without text is not carried up",
				slog.String("ticket", upstream), slog.String("op", "read changes"), slog.Int64("article", art.ID))
			continue
		}
		out = append(out, candidate{ev: ev, rank: 0, num: art.ID, author: art.CreatedByID, from: art.From})
	}
	for _, h := range hist {
		if h.Object != "Ticket" || h.Type != "updated" || h.Attribute != "state" || !h.CreatedAt.After(from) {
			continue
		}
		id := statePrefix + idString(h.ID)
		examined[id] = h.CreatedAt
		if h.CreatedByID == me || !h.CreatedAt.After(connected) {
			continue
		}
		up, ok := a.status.Up(h.ValueTo)
		if !ok {
			continue
		}
		ev := base
		ev.ID, ev.At, ev.Kind, ev.Status = id, h.CreatedAt, adapters.EventStatus, up
		out = append(out, candidate{ev: ev, rank: 1, num: h.ID, author: h.CreatedByID})
	}
	return out, nil
}

// articleEvent is the event of article art of ticket ref, which mirrors
// upstream, without its author's name: an agent's public article is a
// reply, an internal one a note. ok is false for an article not by an
// agent. Changes and Lookup both make it here, so that the two report the
// same event.
func articleEvent(art zmArticle, ref adapters.Ref, upstream string) (ev adapters.Event, ok bool) {
	if !art.fromAgent() {
		return adapters.Event{}, false
	}
	ev = adapters.Event{ID: articlePrefix + idString(art.ID), Ref: ref, UpstreamTicketID: upstream,
		Kind: adapters.EventReply, Body: articleText(art), At: art.CreatedAt}
	if art.Internal {
		ev.Kind = adapters.EventNote
	}
	return ev, true
}

// authorName is the name Changes gives the author of an article: the
// user's, else the one in its from.
func (a *Adapter) authorName(ctx context.Context, author int64, from string) (string, error) {
	name, err := a.userName(ctx, author)
	if err != nil || name != "" {
		return name, err
	}
	return displayFrom(from), nil
}

// displayFrom is the name in an article's from: "Anna Lopez
// <anna@example.com>" gives "Anna Lopez".
func displayFrom(from string) string {
	from = strings.TrimSpace(from)
	if i := strings.Index(from, "<"); i > 0 {
		from = strings.TrimSpace(from[:i])
	}
	return strings.Trim(from, `"`)
}
