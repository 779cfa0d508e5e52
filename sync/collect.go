package sync

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	gosync "sync"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/state"
)

// collect reads the helpdesk's changes since the stored cursor and journals
// them: it reads what state holds of the events, looks up the tickets state
// lost, plans (planCollect) and stores the plan in one transaction. The
// cursor is not moved when an event could not be journaled (it comes again
// next cycle).
func (c *cycle) collect() {
	e := c.e
	name := e.hd.Name()
	var cursor string
	if ws, ok := c.fresh(); ok && ws.cursorOK {
		cursor = ws.cursor
	} else if err := e.st.View(c.ctx, func(tx *state.Tx) error {
		var err error
		cursor, err = tx.Cursor(name)
		return err
	}); err != nil {
		c.stop(fmt.Errorf("read cursor: %w", err))
		return
	}
	events, next, err := e.hd.Changes(c.ctx, adapters.Cursor(cursor))
	if err != nil {
		if !c.hdFatal(err) && !c.interrupted(err) {
			c.failure("", "", "read helpdesk changes", err)
		}
		return
	}
	if len(events) == 0 {
		if string(next) != cursor {
			if err := e.st.Update(c.keep(), func(tx *state.Tx) error { return tx.SetCursor(name, string(next)) }); err != nil {
				c.stop(fmt.Errorf("store cursor: %w", err))
			}
		}
		return
	}

	in := collectInput{now: c.now, events: events, tickets: map[string]*state.Ticket{}, journaled: map[string]bool{}, ignored: map[string]bool{}}
	if err := e.st.View(c.ctx, func(tx *state.Tx) error { return in.read(tx) }); err != nil {
		c.stop(fmt.Errorf("read journal: %w", err))
		return
	}
	// Tickets state holds no mapping of were not created by the bridge:
	// read first, those the API does not show this hotel are not its own
	// (see notours.go), and those whose read failed wait.
	notOurs, unchecked := c.checkUnknown(in.unknown())
	for _, n := range notOurs {
		in.ignored[n.ID] = true
	}
	// Tickets state does not hold, or holds without a helpdesk ticket, are
	// looked up: the helpdesk says what it already holds and what was
	// already sent, so nothing is sent twice after a lost state file.
	in.adoptions = c.lookupAll(slices.DeleteFunc(in.needLookup(), func(id string) bool { return in.ignored[id] || unchecked[id] }))
	if c.stopped() {
		return // a lookup stopped the cycle: no further writes
	}
	p := e.planCollect(in)
	for _, f := range p.refused {
		c.failure(f.Ticket, f.Message, f.Op, errors.New(f.Error))
	}

	err = e.st.Update(c.keep(), func(tx *state.Tx) error {
		for _, n := range notOurs {
			if err := tx.PutNotOurs(n); err != nil {
				return err
			}
		}
		for _, t := range p.puts {
			if err := putTicket(tx, t); err != nil {
				return err
			}
			if a, ok := in.adoptions[t.ID]; ok && a.found {
				if err := putSeeds(tx, name, t.ID, a.ref, a.f, c.now); err != nil {
					return err
				}
			}
		}
		for _, en := range p.entries {
			if _, err := tx.PutJournal(en); errors.Is(err, state.ErrInvalid) {
				// Refused before anything was written; the others go on.
				c.failure(en.TicketID, en.EventID, "journal event", err)
			} else if err != nil {
				return err
			}
		}
		if p.complete {
			return tx.SetCursor(name, string(next))
		}
		return nil
	})
	if err != nil {
		c.stop(fmt.Errorf("store journal: %w", err))
		return
	}
	c.count(func(r *Report) {
		r.Events += len(p.entries)
		r.Skipped += p.skipped
		r.Adopted += p.adopted
	})
	for _, en := range p.entries {
		e.log.LogAttrs(c.ctx, slog.LevelDebug, "journaled helpdesk event",
			slog.String("op", "collect"), slog.String("ticket", en.TicketID), slog.String("message", en.EventID), slog.String("kind", en.Kind))
	}
}

// collectInput is what collect reads before it plans.
type collectInput struct {
	now       time.Time
	events    []adapters.Event
	tickets   map[string]*state.Ticket // the events' tickets; nil: not in state
	journaled map[string]bool          // events already journaled
	adoptions map[string]adoption      // what Lookup found; a failed lookup is absent
	// ignored are the tickets whose events are ignored: not this hotel's
	// (state.NotOurs), deleted on the platform (see notours.go),
	// unlinked, or waiting for a connect (see connect.go: the ticket it
	// names is adopted there, and what was written on it set aside; an
	// older ticket that still holds the request's id is not adopted).
	ignored map[string]bool
}

// read fills in the events' tickets and journal entries from tx.
func (in *collectInput) read(tx *state.Tx) error {
	for _, ev := range in.events {
		if checkEvent(ev) != nil {
			continue
		}
		if _, ok, err := tx.JournalEntry(ev.ID); err != nil {
			return err
		} else if ok {
			in.journaled[ev.ID] = true
		}
		if _, seen := in.tickets[ev.UpstreamTicketID]; seen {
			continue
		}
		t, ok, err := tx.Ticket(ev.UpstreamTicketID)
		if err != nil {
			return err
		}
		if ok {
			in.tickets[t.ID] = &t
			if !t.Deleted.IsZero() || !t.Unlinked.IsZero() || t.ConnectRef != "" {
				in.ignored[t.ID] = true
			}
			continue
		}
		in.tickets[ev.UpstreamTicketID] = nil
		if _, ok, err := tx.NotOurs(ev.UpstreamTicketID); err != nil && !errors.Is(err, state.ErrCorrupt) {
			return err
		} else if ok {
			in.ignored[ev.UpstreamTicketID] = true
		}
	}
	return nil
}

// unknown returns the tickets of the events that state holds no mapping
// of and does not ignore, sorted, and the helpdesk ticket each event
// names.
func (in *collectInput) unknown() ([]string, map[string]string) {
	var ids []string
	refs := map[string]string{}
	for _, ev := range in.events {
		id := ev.UpstreamTicketID
		if t, ok := in.tickets[id]; !ok || t != nil || in.ignored[id] {
			continue
		}
		if _, seen := refs[id]; !seen {
			ids = append(ids, id)
		}
		refs[id] = string(ev.Ref)
	}
	slices.Sort(ids)
	return ids, refs
}

// needLookup returns the tickets to look up in the helpdesk: those state
// does not hold or holds without a helpdesk ticket, sorted.
func (in *collectInput) needLookup() []string {
	var need []string
	for id, t := range in.tickets {
		if t == nil || t.Ref == "" {
			need = append(need, id)
		}
	}
	slices.Sort(need)
	return need
}

// collectPlan is what collect stores.
type collectPlan struct {
	puts     []state.Ticket // tickets woken, adopted or given their helpdesk ticket
	entries  []state.Entry  // journal entries, in the events' order
	refused  []Failure      // events skipped, with why
	skipped  int            // events with nothing to send (notes or status not sent upstream)
	adopted  int            // tickets Lookup found
	complete bool           // every event is journaled or refused: the cursor may move
}

// planCollect decides from what collect read which journal entries to
// write and which tickets to wake. It does no I/O.
//
//   - An event already journaled (or delivered before a state loss, as the
//     lookup says) is not journaled again.
//   - An event on a ticket state lost is journaled on the helpdesk ticket
//     the lookup found, or else the one the event names; when the lookup
//     failed, the event waits (the cursor does not move).
//   - Each event wakes its ticket; a status change records the helpdesk's
//     status and its time (the newer change wins).
//   - A note, or a status change, is not sent when TICKETBRIDGE_UPSTREAM
//     leaves it out; a status change left out does not record the
//     helpdesk's status either, so the next upstream change is set there
//     (see rules.go).
//   - The events of a ticket not this hotel's, deleted on the platform
//     (see notours.go) or unlinked (see commands.go) are ignored.
func (e *Engine) planCollect(in collectInput) collectPlan {
	p := collectPlan{complete: true}
	tickets := make(map[string]*state.Ticket, len(in.tickets))
	for id, t := range in.tickets {
		if t != nil {
			c := *t
			t = &c
		}
		tickets[id] = t
	}
	journaled := maps.Clone(in.journaled)
	for _, a := range in.adoptions {
		for eventID := range a.f.Sent {
			journaled[eventID] = true // delivered before the state was lost
		}
	}
	changed := map[string]bool{}
	for _, id := range slices.Sorted(maps.Keys(in.adoptions)) {
		a := in.adoptions[id]
		if !a.found {
			continue
		}
		p.adopted++
		t := tickets[id]
		if t == nil {
			t = &state.Ticket{ID: id}
			tickets[id] = t
		}
		t.Ref = string(a.ref)
		e.pol.wake(t, in.now, DueEvent)
		changed[id] = true
	}
	for _, ev := range in.events {
		if err := checkEvent(ev); err != nil {
			p.refused = append(p.refused, Failure{Ticket: ev.UpstreamTicketID, Message: ev.ID, Op: "collect", Error: "skip malformed helpdesk event: " + err.Error()})
			continue
		}
		if journaled[ev.ID] {
			continue
		}
		if in.ignored[ev.UpstreamTicketID] {
			p.skipped++ // not this hotel's, or deleted on the platform
			continue
		}
		t := tickets[ev.UpstreamTicketID]
		if t == nil || t.Ref == "" {
			a, ok := in.adoptions[ev.UpstreamTicketID]
			if !ok {
				p.complete = false // the lookup failed: the event comes again
				continue
			}
			// Not found by its upstream id: the event names its ticket.
			if t == nil {
				t = &state.Ticket{ID: ev.UpstreamTicketID}
				tickets[t.ID] = t
			}
			if a.found {
				t.Ref = string(a.ref)
			} else {
				t.Ref = string(ev.Ref)
			}
			if t.Ref == "" {
				p.refused = append(p.refused, Failure{Ticket: ev.UpstreamTicketID, Message: ev.ID, Op: "collect",
					Error: fmt.Sprintf("skip helpdesk event: the helpdesk holds no ticket for upstream ticket %s", ev.UpstreamTicketID)})
				continue
			}
			changed[t.ID] = true
		}
		journaled[ev.ID] = true
		e.pol.wake(t, in.now, DueEvent)
		t.LastActivity = in.now
		changed[t.ID] = true
		if !e.cfg.up.sends(string(ev.Kind)) {
			p.skipped++
			continue
		}
		ref := ev.Ref
		if ref == "" {
			ref = adapters.Ref(t.Ref)
		}
		en := state.Entry{
			EventID:        ev.ID,
			TicketID:       t.ID,
			Ref:            string(ref),
			IdempotencyKey: IdempotencyKey(e.hd.Name(), ref, ev.ID),
			Kind:           string(ev.Kind),
			State:          state.Pending,
			CreatedAt:      ev.At, // the event's time: the newer status change wins
		}
		switch ev.Kind {
		case adapters.EventReply, adapters.EventNote:
			author := ev.AuthorName
			if author == "" {
				author = e.cfg.AuthorName
			}
			en.Payload = state.Payload{Body: ev.Body, AuthorName: author, Visible: ev.Kind == adapters.EventReply}
		case adapters.EventStatus:
			en.Payload = state.Payload{Status: string(ev.Status)}
			// A change seen after a newer one (a helpdesk that commits
			// out of order) is not the helpdesk's status: send skips it.
			if !ev.At.Before(t.HelpdeskEventAt) {
				// The bridge set the helpdesk's status since the last
				// change it read (the times differ only then), and the
				// change read now says another: the two writes' order is
				// unknown, the helpdesk's clock being no measure of the
				// bridge's. The next cycle's reconcile reads which the
				// ticket holds, rather than the full-read slot.
				if !t.HelpdeskStatusAt.Equal(t.HelpdeskEventAt) && t.HelpdeskStatus != string(ev.Status) {
					t.ReconcileSoon = true
				}
				t.HelpdeskStatus, t.HelpdeskStatusAt, t.HelpdeskEventAt = string(ev.Status), ev.At, ev.At
			}
		}
		p.entries = append(p.entries, en)
	}
	for _, id := range slices.Sorted(maps.Keys(changed)) {
		p.puts = append(p.puts, *tickets[id])
	}
	return p
}

// checkEvent refuses an event the engine cannot journal.
func checkEvent(ev adapters.Event) error {
	switch {
	case state.CheckEventID(ev.ID) != nil:
		return state.CheckEventID(ev.ID)
	case !validID(ev.UpstreamTicketID):
		return fmt.Errorf("event %s: upstream ticket id %q is not an upstream id", ev.ID, ev.UpstreamTicketID)
	}
	switch ev.Kind {
	case adapters.EventReply, adapters.EventNote:
	case adapters.EventStatus:
		if ev.Status == "" {
			return fmt.Errorf("event %s: status change without a status", ev.ID)
		}
	default:
		return fmt.Errorf("event %s: kind %q is not reply, note or status", ev.ID, ev.Kind)
	}
	return nil
}

// adoption is what Lookup found of one upstream ticket.
type adoption struct {
	found bool
	ref   adapters.Ref
	f     adapters.Found
}

// lookupAll looks the tickets up in the helpdesk, a pool at a time. A
// ticket whose lookup failed is absent from the result.
func (c *cycle) lookupAll(ids []string) map[string]adoption {
	out := map[string]adoption{}
	var mu gosync.Mutex
	forEach(c.ctx, c.e.workers, c.e.cfg.Concurrency, ids, func(id string) {
		f, ok, err := c.e.hd.Lookup(c.ctx, id)
		if err != nil {
			if !c.hdFatal(err) && !c.interrupted(err) {
				c.failure(id, "", "look up helpdesk ticket", err)
			}
			return
		}
		mu.Lock()
		out[id] = adoption{found: ok, ref: f.Ref, f: f}
		mu.Unlock()
	})
	return out
}

// putSeeds records what Lookup found of ticket id in the helpdesk: the
// upstream messages it holds (mirrored) and the events it delivered (the
// ticket's own posts, and a sent journal entry per event, so the event is
// not sent again when the adapter reports it anew). Events already
// journaled are left as they are. A delivered status change (recorded
// without a message id) gets a sent entry too: the adapter may report it
// again on a later page of Changes, and sent anew it would revert a newer
// upstream status.
func putSeeds(tx *state.Tx, adapterName, id string, ref adapters.Ref, f adapters.Found, now time.Time) error {
	for msgID, hdID := range f.Messages {
		if !validID(msgID) {
			continue
		}
		if err := tx.PutMirrored(id, msgID, hdID, now, state.MessageInfo{}); err != nil {
			return err
		}
	}
	for eventID, msgID := range f.Sent {
		if checkEvent(adapters.Event{ID: eventID, UpstreamTicketID: id, Kind: adapters.EventReply}) != nil {
			continue
		}
		if !validID(msgID) {
			msgID = "" // a status change, or an id that cannot be stored
		}
		if msgID != "" {
			if err := tx.MarkOwn(id, msgID, eventID, now, state.MessageInfo{}); err != nil {
				return err
			}
		}
		if _, ok, err := tx.JournalEntry(eventID); err != nil {
			return err
		} else if ok {
			continue
		}
		// Recorded as a reply without a body: the helpdesk keeps which
		// message the event became (none for a status change), not what
		// it was.
		if _, err := tx.PutJournal(state.Entry{
			EventID:           eventID,
			TicketID:          id,
			Ref:               string(ref),
			IdempotencyKey:    IdempotencyKey(adapterName, ref, eventID),
			Kind:              state.KindReply,
			Payload:           state.Payload{Visible: true},
			State:             state.Sent,
			UpstreamMessageID: msgID,
			LastError:         "adopted: found delivered in the helpdesk after the state was lost",
			SentAt:            now,
			MarkedAt:          now,
		}); err != nil {
			return err
		}
	}
	return nil
}
