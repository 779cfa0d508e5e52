package freshdesk

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
)

// cursor is the adapter's position in the stream of the helpdesk's
// changes: every event up to at has been handed out, except that the
// events of the last minute before at are named one by one in seen (with
// their times), because they are listed again.
type cursor struct {
	at   time.Time
	seen map[string]int64 // event id -> unix time of the event
}

const cursorPrefix = "fd1:"

func (c cursor) String() string {
	ids := make([]string, 0, len(c.seen))
	for id := range c.seen {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for i, id := range ids {
		ids[i] = id + "@" + strconv.FormatInt(c.seen[id], 10)
	}
	return string(saas.Cursor{Head: c.at.Unix(), Items: ids}.Format(cursorPrefix))
}

func parseCursor(s adapters.Cursor, since time.Time) (cursor, error) {
	sc, ok, err := saas.ParseCursor(s, cursorPrefix, Name)
	if err != nil || !ok {
		return cursor{at: since, seen: map[string]int64{}}, err
	}
	c := cursor{at: time.Unix(sc.Head, 0).UTC(), seen: map[string]int64{}}
	for _, part := range sc.Items {
		id, tStr, ok := strings.Cut(part, "@")
		t, err := strconv.ParseInt(tStr, 10, 64)
		if !ok || err != nil || !validToken(id) {
			return cursor{}, saas.BadCursor(s, Name)
		}
		c.seen[id] = t
	}
	return c, nil
}

// Events reports, oldest first, what agents did on tickets that mirror a
// guest request since the cursor: replies (a reply, or a public note) and
// private notes by anybody but the API agent, with the names of their
// files, and status changes.
//
// It lists the tickets updated since the cursor's time less a minute
// (see [Adapter.scan]), and reads the conversations of each that mirrors a
// guest request. A status change is the ticket's status differing from the
// one the status field records as the bridge's, when the two map to
// different upstream statuses; only the status at the time of the listing
// is seen, so several changes between two calls come as one. Its event id
// names the field's generation, which MarkSent and SetStatus move on, so it
// is stable until the change is delivered and never reused.
func (v vendor) Events(ctx context.Context, cur adapters.Cursor, me int64) ([]adapters.Event, map[string][]string, adapters.Cursor, error) {
	a := v.Adapter
	c, err := parseCursor(cur, a.since)
	if err != nil {
		return nil, nil, cur, err
	}
	from := c.at.Add(-overlap)
	if from.Before(a.since) {
		from = a.since
	}
	convs := map[string]adapters.Event{}
	files := map[string][]string{}
	statuses := map[int64]adapters.Event{}
	newest, err := a.scan(ctx, from, "list changed tickets", func(t fdTicket) error {
		upstream := t.field(a.cfg.IDField)
		if !validToken(upstream) {
			return nil
		}
		ref := saas.RefOf(t.ID)
		delete(statuses, t.ID) // a newer version of the ticket decides
		if ev, ok := a.statusEvent(t, upstream); ok {
			statuses[t.ID] = ev
		}
		cs, err := a.conversations(ctx, t)
		if errors.Is(err, adapters.ErrNotFound) {
			// Deleted since it was listed: it has nothing more to say.
			a.log.LogAttrs(ctx, slog.LevelInfo, "freshdesk ticket gone while reading changes",
				slog.String("ticket", upstream), slog.String("op", "read changes"), slog.Int64("freshdesk_ticket", t.ID))
			return nil
		}
		if err != nil {
			return fmt.Errorf("read conversations of ticket %d: %w", t.ID, err)
		}
		for _, cv := range cs {
			if cv.UserID == me || cv.Incoming || cv.CreatedAt.Before(from) {
				continue
			}
			ev, ok := conversationEvent(cv, ref, upstream)
			if !ok {
				continue // forwards, e-mails and the like are not agent work for the guest
			}
			if _, dup := convs[ev.ID]; dup {
				continue
			}
			if names := cv.files(); len(names) > 0 {
				files[ev.ID] = names
			} else if strings.TrimSpace(ev.Body) == "" {
				a.log.LogAttrs(ctx, slog.LevelInfo, "freshdesk conversation without text not carried upstream",
					slog.String("ticket", upstream), slog.String("op", "read changes"), slog.Int64("conversation", cv.ID))
				continue
			}
			if ev.AuthorName, err = a.agentName(ctx, cv.UserID); err != nil {
				return err
			}
			convs[ev.ID] = ev
		}
		return nil
	})
	if err != nil {
		return nil, nil, cur, fmt.Errorf("read freshdesk changes since %s: %w", from.Format(time.RFC3339), err)
	}

	var out []adapters.Event
	for _, ev := range convs {
		out = append(out, ev)
	}
	for _, ev := range statuses {
		out = append(out, ev)
	}
	out = slices.DeleteFunc(out, func(ev adapters.Event) bool {
		_, seen := c.seen[ev.ID]
		return seen || ev.At.Before(from)
	})
	slices.SortFunc(out, func(x, y adapters.Event) int {
		return cmp.Or(x.At.Compare(y.At), cmp.Compare(eventRank(x), eventRank(y)), cmp.Compare(eventSeq(x), eventSeq(y)), cmp.Compare(x.ID, y.ID))
	})

	next := cursor{at: c.at, seen: map[string]int64{}}
	if newest.After(next.at) {
		next.at = newest.UTC().Truncate(time.Second)
	}
	keep := next.at.Add(-overlap).Unix()
	for id, t := range c.seen {
		if t >= keep {
			next.seen[id] = t
		}
	}
	for _, ev := range out {
		if t := ev.At.Unix(); t >= keep {
			next.seen[ev.ID] = t
		}
	}
	return out, files, adapters.Cursor(next.String()), nil
}

// conversationEvent is the event of conversation cv of ticket ref, which
// mirrors upstream, without its author's name: a reply or a public note
// is a reply, a private note a note. ok is false for a conversation that
// is not an agent's work for the guest (a guest's, a forward, an e-mail).
// Changes and Lookup both make it here, so that the two report the same
// event.
func conversationEvent(cv fdConversation, ref adapters.Ref, upstream string) (ev adapters.Event, ok bool) {
	var kind adapters.EventKind
	switch {
	case cv.Incoming:
		return adapters.Event{}, false
	case cv.Source == sourceReply:
		kind = adapters.EventReply
	case cv.Source == sourceNote && cv.Private:
		kind = adapters.EventNote
	case cv.Source == sourceNote:
		kind = adapters.EventReply // a public note: the requester sees it
	default:
		return adapters.Event{}, false
	}
	return adapters.Event{
		ID: conversationEventID(cv.ID), Ref: ref, UpstreamTicketID: upstream, Kind: kind,
		Body: strings.TrimRight(cv.text(), " \t\n"), At: cv.CreatedAt.UTC(),
	}, true
}

// statusEvent reports the status change ticket t shows, if any.
func (a *Adapter) statusEvent(t fdTicket, upstream string) (adapters.Event, bool) {
	b := parseBaseline(t.field(a.cfg.StatusField))
	if !b.ok || t.Status == b.status {
		return adapters.Event{}, false
	}
	to, ok := a.up(t.Status)
	if !ok {
		return adapters.Event{}, false
	}
	if from, ok := a.up(b.status); ok && from == to {
		return adapters.Event{}, false
	}
	return adapters.Event{
		ID: statusEventID(t.ID, b.gen, t.Status), Ref: saas.RefOf(t.ID), UpstreamTicketID: upstream,
		Kind: adapters.EventStatus, Status: to, At: t.UpdatedAt.UTC(),
	}, true
}

// eventRank orders events of the same second: conversations before status
// changes.
func eventRank(ev adapters.Event) int {
	if ev.Kind == adapters.EventStatus {
		return 1
	}
	return 0
}

// eventSeq orders events of the same second and rank: conversations by id
// (Freshdesk numbers them in order), status changes by ticket.
func eventSeq(ev adapters.Event) int64 {
	if id, ok := strings.CutPrefix(ev.ID, "conv-"); ok {
		n, _ := strconv.ParseInt(id, 10, 64)
		return n
	}
	n, _ := strconv.ParseInt(string(ev.Ref), 10, 64)
	return n
}
