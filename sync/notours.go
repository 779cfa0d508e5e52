package sync

// A request that is not this hotel's, or no longer exists.
//
// The API answers 404 for a ticket of another organisation as for one
// that never was (spec part 7: existence is not confirmed). Two causes
// reach the engine:
//
//   - In a helpdesk queue that several hotels share (a hotel group's
//     central desk), the helpdesk reports the events of every ticket in
//     it, another hotel's bridge's tickets too. An event naming an upstream
//     ticket that state holds no mapping of is one the bridge did not
//     create; before it is journaled, that ticket is read: a 404 makes it
//     not this hotel's (state.NotOurs), and its events are ignored from
//     then on. A ticket state does hold but never read with a 200 (the
//     records earlier versions made of such events) is treated the same
//     way when its read answers 404.
//   - A request the bridge did create answers 404 once it is deleted on
//     the platform. It is taken for deleted only when that repeats over
//     deletedAfter reads, each in a cycle in which another request of the
//     hotel read 200: a key of another organisation makes every request
//     404, and must not retire them all. It is then retired (never read
//     again, its helpdesk events ignored) and its helpdesk ticket gets
//     one internal note saying so.
//
// "Another request read 200" is the cycle's witness: a tracked request
// read with a 200 in the cycle, or else one such request read once for
// the purpose (see cycle.witness).

import (
	"errors"
	"fmt"
	"log/slog"
	gosync "sync"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
)

// deletedAfter is how many reads in a row, each in a cycle of its own in
// which another request of the hotel read 200, must answer 404 before a
// request the bridge created is taken for deleted on the platform. One
// 404 could be the platform's passing fault; a key of another
// organisation 404s every request and so never counts (no other request
// reads 200). Three reads are a few minutes of backoff at the default
// schedule.
const deletedAfter = 3

// DueDeleted is the due reason of a request taken for deleted on the
// platform: it is never read again.
const DueDeleted = "deleted"

// witness is what a cycle knows of whether the API shows this hotel's
// requests with the key in use.
type witness int

const (
	witnessUnasked witness = iota
	witnessYes             // a tracked request read 200 in this cycle
	witnessNo              // the request read for the purpose did not read 200
	witnessNone            // no request state holds was ever read with a 200: nothing to ask
)

// witness reports whether a request of this hotel read 200 in this cycle.
// When none did yet, it reads one tracked request that some earlier read
// found and whose last read was no 404 (not one of exclude), once a cycle.
func (c *cycle) witness(tracked []state.Ticket, exclude map[string]bool) witness {
	if c.read200.Load() {
		return witnessYes
	}
	c.witnessMu.Lock()
	defer c.witnessMu.Unlock()
	if c.witnessed != witnessUnasked {
		return c.witnessed
	}
	c.witnessed = witnessNone
	for _, t := range tracked {
		if t.UpstreamStatus == "" || t.Missing > 0 || !t.Deleted.IsZero() || exclude[t.ID] {
			continue
		}
		c.witnessed = witnessNo
		if _, err := c.e.api.GetTicket(c.ctx, t.ID); err == nil {
			c.read200.Store(true)
			c.witnessed = witnessYes
		}
		break
	}
	return c.witnessed
}

// trackedForWitness returns the tickets of the cycle's working set, or
// reads them when discover did not.
func (c *cycle) trackedForWitness() []state.Ticket {
	if c.ws != nil {
		return c.ws.tickets
	}
	var out []state.Ticket
	_ = c.e.st.View(c.ctx, func(tx *state.Tx) error {
		return tx.ForEachTicket(func(t state.Ticket) error {
			out = append(out, t)
			return nil
		})
	})
	return out
}

// checkUnknown reads the upstream tickets of ids, which the helpdesk's
// events name and state holds no mapping of, before their events are
// journaled. It returns those the API does not show this hotel (404, with
// a witness that the key reads this hotel's requests, or no request ever
// read to ask) and those whose check failed: their events wait. The
// others are this hotel's (a state lost): they are looked up and adopted.
func (c *cycle) checkUnknown(ids []string, refs map[string]string) (notOurs []state.NotOurs, failed map[string]bool) {
	failed = map[string]bool{}
	var mu gosync.Mutex
	var missing []string
	forEach(c.ctx, c.e.workers, c.e.cfg.Concurrency, ids, func(id string) {
		_, err := c.e.api.GetTicket(c.ctx, id)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			c.read200.Store(true)
		case errors.Is(err, guestapi.ErrNotFound):
			missing = append(missing, id)
		default:
			failed[id] = true
			if !c.apiFatal(err) && !c.interrupted(err) {
				c.failure(id, "", "read the ticket a helpdesk event names", err)
			}
		}
	})
	if len(missing) == 0 || c.stopped() {
		for _, id := range missing {
			failed[id] = true
		}
		return nil, failed
	}
	exclude := map[string]bool{}
	for _, id := range missing {
		exclude[id] = true
	}
	if c.witness(c.trackedForWitness(), exclude) == witnessNo {
		// The key reads none of this hotel's requests either: the 404
		// says nothing of these tickets. Their events wait.
		for _, id := range missing {
			failed[id] = true
			c.failure(id, "", "read the ticket a helpdesk event names",
				fmt.Errorf("the API answers 404 for it, and for this hotel's other requests too: check that TICKETBRIDGE_API_KEY_FILE holds this hotel's key"))
		}
		return nil, failed
	}
	for _, id := range missing {
		notOurs = append(notOurs, state.NotOurs{ID: id, Ref: refs[id], At: c.now})
		c.e.log.LogAttrs(c.ctx, slog.LevelInfo,
			"the helpdesk reports events on a ticket of a request the API does not show this hotel (404): another hotel's, in a shared queue; its events are ignored",
			slog.String("op", "collect"), slog.String("ticket", id), slog.String("ref", refs[id]))
	}
	c.count(func(r *Report) { r.NotOurs += len(notOurs) })
	return notOurs, failed
}

// settleMissing decides, once every read of the cycle is in, what the
// 404s of tracked tickets (rs) mean, and returns the results to store.
func (c *cycle) settleMissing(tracked []state.Ticket, rs []refreshResult) []refreshResult {
	if len(rs) == 0 {
		return nil
	}
	exclude := map[string]bool{}
	for _, r := range rs {
		exclude[r.t.ID] = true
	}
	w := c.witness(tracked, exclude)
	out := make([]refreshResult, 0, len(rs))
	for _, r := range rs {
		err := r.notFound
		r.notFound = nil
		switch {
		case c.stopped():
			continue // stored by no one: read again next cycle
		case r.t.UpstreamStatus == "" && r.t.Ref != "" && w != witnessNo:
			// Never read with a 200: the bridge did not create its
			// helpdesk ticket; an event did (see the file's comment).
			r.notOurs = &state.NotOurs{ID: r.t.ID, Ref: r.t.Ref, At: c.now}
			c.count(func(rep *Report) { rep.NotOurs++ })
			c.e.log.LogAttrs(c.ctx, slog.LevelInfo, "the API does not show this hotel the request of a helpdesk ticket (404): another hotel's, in a shared queue; no longer tracked",
				slog.String("op", "refresh"), slog.String("ticket", r.t.ID), slog.String("ref", r.t.Ref))
		case w != witnessYes:
			r = c.ticketError(r, "get ticket", err)
		case r.t.Missing+1 < deletedAfter:
			r.t.Missing++
			r = c.ticketError(r, "get ticket", fmt.Errorf("%w (%d of %d such answers, while other requests read fine, before it is taken for deleted on the platform)", err, r.t.Missing, deletedAfter))
		default:
			r = c.retireDeleted(r)
		}
		out = append(out, r)
	}
	return out
}

// retireDeleted takes r's ticket for deleted on the platform: its helpdesk
// ticket gets one note saying so (Append is idempotent by the note's id,
// the marker every adapter writes), and it is never read again.
func (c *cycle) retireDeleted(r refreshResult) refreshResult {
	r.t.Missing = deletedAfter
	if r.t.Ref != "" {
		if _, err := c.e.hd.Append(c.ctx, adapters.Ref(r.t.Ref), []adapters.Message{deletedNote(r.t.ID, c.now)}); err != nil {
			return c.ticketError(r, "note the request deleted on the platform", err)
		}
	}
	r.t.Deleted, r.t.Retired, r.t.NextDue, r.t.DueReason = c.now, true, time.Time{}, DueDeleted
	r.t.LastError, r.t.Attempts, r.t.ReconcileSoon = "", 0, false
	c.count(func(rep *Report) { rep.Deleted++ })
	c.e.log.LogAttrs(c.ctx, slog.LevelInfo, fmt.Sprintf("request deleted on the platform: the API answered 404 %d times while other requests read fine; no longer synced", deletedAfter),
		slog.String("op", "refresh"), slog.String("ticket", r.t.ID), slog.String("ref", r.t.Ref))
	return r
}

// deletedNote is the internal note left on the helpdesk ticket of a
// request deleted on the platform; its id is the same for the same
// request, so a repeat does not write it twice.
func deletedNote(ticketID string, now time.Time) adapters.Message {
	return adapters.Message{UpstreamID: "deleted-upstream-" + ticketID, AuthorType: guestapi.AuthorSystem, AuthorName: "ticketbridge",
		Body:   fmt.Sprintf("This guest request was deleted on the platform: the Guest Requests API answered 404 for it %d times while the hotel's other requests read fine. ticketbridge no longer syncs this ticket; replies written here do not reach the guest.", deletedAfter),
		Public: false, CreatedAt: now}
}

// putNotOurs stores that r's ticket is not this hotel's: its record, the
// messages state kept of it and its journal entries go (none was ever
// delivered: the API never showed it this hotel).
func putNotOurs(tx *state.Tx, n state.NotOurs) error {
	if err := tx.PutNotOurs(n); err != nil {
		return err
	}
	es, err := tx.JournalForTicket(n.ID)
	if err != nil && !errors.Is(err, state.ErrCorrupt) {
		return err
	}
	for _, en := range es {
		if err := tx.DeleteJournal(en.EventID); err != nil {
			return err
		}
	}
	return tx.DeleteTicket(n.ID)
}
