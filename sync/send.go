package sync

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/state"
)

// sendOutcome is what happened to one journal entry in this cycle.
type sendOutcome struct {
	en      state.Entry // updated
	sent    bool        // confirmed upstream (or nothing to send)
	request bool        // a request was made and confirmed
	failed  bool        // refused for good
	unknown bool        // the request failed with its outcome unknown: reconcile the ticket next cycle
}

// send carries pending journal entries upstream, oldest first, in order
// per ticket, and then records the deliveries in the helpdesk.
func (c *cycle) send() {
	e := c.e
	var order []string
	byTicket := map[string][]state.Entry{}
	tickets := map[string]state.Ticket{}
	group := func(ps []state.Entry, ticket func(id string) (state.Ticket, bool, error)) error {
		for _, p := range ps {
			if _, ok := byTicket[p.TicketID]; !ok {
				order = append(order, p.TicketID)
				t, ok, err := ticket(p.TicketID)
				if err != nil {
					return err
				}
				if !ok {
					t = state.Ticket{ID: p.TicketID}
				}
				tickets[p.TicketID] = t
			}
			byTicket[p.TicketID] = append(byTicket[p.TicketID], p)
		}
		return nil
	}
	var err error
	if ws, ok := c.fresh(); ok {
		err = group(ws.pending, ws.ticket)
	} else {
		err = e.st.View(c.ctx, func(tx *state.Tx) error {
			ps, err := tx.PendingJournal()
			if err != nil && !errors.Is(err, state.ErrCorrupt) {
				return err
			}
			return group(ps, tx.Ticket)
		})
	}
	if err != nil {
		c.stop(fmt.Errorf("read journal: %w", err))
		return
	}

	if len(order) > 0 {
		out := make([][]sendOutcome, len(order))
		idx := make([]int, len(order))
		for i := range idx {
			idx[i] = i
		}
		forEach(c.ctx, e.workers, e.cfg.Concurrency, idx, func(i int) {
			id := order[i]
			out[i] = c.sendTicket(tickets[id], byTicket[id])
		})
		c.storeSent(out)
	}
	c.markSent()
}

// sendTicket sends the pending entries of one ticket in order. It stops at
// the first entry that must wait (a backoff, a temporary failure), so later
// entries never overtake it. A paused ticket's entries wait, untouched,
// until it is resumed (see commands.go).
func (c *cycle) sendTicket(t state.Ticket, entries []state.Entry) []sendOutcome {
	e := c.e
	if !t.Paused.IsZero() {
		return nil
	}
	var out []sendOutcome
	upstream := guestapi.Status(t.UpstreamStatus)
	c.mu.Lock()
	readFailed := c.readFail[t.ID]
	c.mu.Unlock()
	for _, en := range entries {
		if c.stopped() || en.NextAttempt.After(c.now) {
			break
		}
		if en.State != state.Pending {
			continue // only pending entries are ever sent (never an abandoned one)
		}
		if en.Kind == state.KindStatus && (readFailed || t.Attempts > 0) {
			// The ticket could not be read, in this cycle or (backing off)
			// in an earlier one: its upstream status might be newer.
			break
		}
		var (
			msgID string
			err   error
			skip  string // set: nothing to send, for this reason
			perm  error  // set: refused for good without a request
		)
		switch {
		case !t.Deleted.IsZero():
			perm = errors.New("the request was deleted on the platform: nothing can be sent to it")
		case en.Kind == state.KindStatus && !t.Unlinked.IsZero():
			// Journaled by a cycle that read the helpdesk before the
			// unlink: the sides no longer agree on a status.
			skip = "set aside: the request was unlinked, and its helpdesk status no longer crosses"
		case !e.cfg.up.sends(en.Kind):
			// Journaled before TICKETBRIDGE_UPSTREAM left it out.
			perm = e.cfg.up.refusal(en.Kind)
		case en.Kind == state.KindReply, en.Kind == state.KindNote:
			var res guestapi.PostMessageResult
			res, err = e.api.PostMessage(c.ctx, t.ID, guestapi.NewMessage{
				Body: en.Payload.Body, VisibleToGuest: en.Payload.Visible, AuthorName: en.Payload.AuthorName,
			}, en.IdempotencyKey)
			msgID = res.MessageID
		case en.Kind == state.KindStatus:
			s := guestapi.Status(en.Payload.Status)
			switch {
			case !s.Settable():
				perm = fmt.Errorf("status %q cannot be set through the API (settable: %s)", s, settableList())
			case en.CreatedAt.Before(t.HelpdeskEventAt):
				// Seen late: the helpdesk's status changed again after it.
				skip = "superseded: the helpdesk's status changed again after this change"
			case s == upstream:
				skip = "the upstream ticket already has this status"
			default:
				_, err = e.api.SetStatus(c.ctx, t.ID, s, en.IdempotencyKey)
			}
		default:
			perm = fmt.Errorf("journal entry of unknown kind %q", en.Kind)
		}

		o := sendOutcome{en: en}
		switch {
		case perm != nil:
			o.en.State, o.en.LastError, o.failed = state.Failed, perm.Error(), true
			c.failure(t.ID, en.EventID, "send "+en.Kind, perm)
			out = append(out, o)
			continue
		case err != nil:
			if c.apiFatal(err) || c.interrupted(err) {
				return out
			}
			o.en.Attempts++
			o.en.LastError = err.Error()
			c.failure(t.ID, en.EventID, "send "+en.Kind, err)
			if permanent(err) {
				o.en.State, o.failed = state.Failed, true
				out = append(out, o)
				continue
			}
			o.en.NextAttempt = c.now.Add(e.pol.backoff(o.en.Attempts))
			o.unknown = true
			out = append(out, o)
			return out // later entries wait behind this one
		}
		if skip == "" {
			o.en.Attempts++
			o.request = true
		}
		o.en.State, o.en.SentAt, o.en.UpstreamMessageID, o.en.LastError, o.en.NextAttempt = state.Sent, e.now(), msgID, skip, time.Time{}
		o.sent = true
		if en.Kind == state.KindStatus {
			upstream = guestapi.Status(en.Payload.Status)
		}
		e.log.LogAttrs(c.ctx, slog.LevelInfo, "sent "+en.Kind+" upstream",
			slog.String("op", "send"), slog.String("ticket", t.ID), slog.String("message", en.EventID), slog.String("upstream_message", msgID))
		out = append(out, o)
	}
	return out
}

// storeSent records the outcomes in one transaction: the entries, the
// ticket's own posts and the upstream status the bridge set.
func (c *cycle) storeSent(out [][]sendOutcome) {
	e := c.e
	sent, requests, failed := 0, 0, 0
	n := 0
	for _, os := range out {
		n += len(os)
	}
	if n == 0 {
		return // every entry waits: a commit would cost two fsyncs for nothing
	}
	err := e.st.Update(c.keep(), func(tx *state.Tx) error {
		for _, os := range out {
			for _, o := range os {
				if !o.sent && abandonedMeanwhile(tx, o.en.EventID) {
					continue // an operator set it aside during the cycle: it stays so
				}
				if _, err := tx.PutJournal(o.en); err != nil {
					return err
				}
				if err := tx.AppendAudit(sendAudit(o, e.now())); err != nil {
					return err
				}
				if o.unknown {
					if err := reconcileSoon(tx, o.en.TicketID); err != nil {
						return err
					}
				}
				if !o.sent {
					continue
				}
				switch {
				case o.en.UpstreamMessageID == "":
				case !validID(o.en.UpstreamMessageID):
					// Refusing the whole transaction would lose every
					// confirmed send of the cycle and post them all again.
					// The sent mark is stored; the post is only not known
					// as the bridge's own (refresh skips its odd id).
					e.log.LogAttrs(c.ctx, slog.LevelWarn, fmt.Sprintf("the API returned a message id that cannot be stored (%q): the post is recorded as sent but not as the bridge's own", o.en.UpstreamMessageID),
						slog.String("op", "send"), slog.String("ticket", o.en.TicketID), slog.String("message", o.en.EventID))
				default:
					if err := tx.MarkOwn(o.en.TicketID, o.en.UpstreamMessageID, o.en.EventID, o.en.SentAt, ownInfo(o.en)); err != nil {
						return err
					}
				}
				if o.en.Kind == state.KindReply {
					if err := noteAnswered(tx, o.en); err != nil {
						return err
					}
				}
				if o.en.Kind == state.KindStatus {
					t, ok, err := tx.Ticket(o.en.TicketID)
					if err != nil {
						return err
					}
					if ok {
						t.UpstreamStatus = o.en.Payload.Status
						// The helpdesk's change, now on both sides as far as
						// the bridge knows; the helpdesk may have moved on
						// since the change was made (a write of the bridge's
						// own crossed it), so the next cycle's reconcile
						// checks it.
						t.AgreedStatus, t.AgreedAt, t.ReconcileSoon = o.en.Payload.Status, e.now(), true
						if err := putTicket(tx, t); err != nil {
							return err
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		c.stop(fmt.Errorf("store sent entries: %w", err))
		return
	}
	c.observeToGuest(out)
	for _, os := range out {
		for _, o := range os {
			switch {
			case o.request:
				requests++
			case o.sent:
				sent++
			case o.failed:
				failed++
			}
		}
	}
	c.count(func(r *Report) {
		r.Sent += requests
		r.Skipped += sent
		r.Failed += failed
		for _, os := range out {
			for _, o := range os {
				if o.request {
					r.touch(o.en.TicketID)
				}
			}
		}
	})
}

// noteAnswered records on its ticket that reply en, sent, answered the
// guest (state.Ticket.AnsweredAt, read by the deadline warnings).
func noteAnswered(tx *state.Tx, en state.Entry) error {
	t, ok, err := tx.Ticket(en.TicketID)
	if err != nil || !ok || !en.SentAt.After(t.AnsweredAt) {
		return err
	}
	t.NoteAnswered(en.SentAt)
	return putTicket(tx, t)
}

// reconcileSoon asks for a reconcile of ticket id in the next cycle.
func reconcileSoon(tx *state.Tx, id string) error {
	t, ok, err := tx.Ticket(id)
	if err != nil || !ok || t.ReconcileSoon {
		return err
	}
	t.ReconcileSoon = true
	return putTicket(tx, t)
}

// abandonedMeanwhile reports whether the stored entry of eventID was
// abandoned (see SkipEntry) after the cycle read it. A send that went
// through is still stored as sent: that is what happened.
func abandonedMeanwhile(tx *state.Tx, eventID string) bool {
	cur, ok, err := tx.JournalEntry(eventID)
	return err == nil && ok && cur.State == state.Abandoned
}

// pausedOf returns the paused tickets of entries (nil when none).
func (c *cycle) pausedOf(entries []state.Entry) (map[string]bool, error) {
	var paused map[string]bool
	note := func(ticket func(id string) (state.Ticket, bool, error)) error {
		for _, en := range entries {
			t, ok, err := ticket(en.TicketID)
			if err != nil {
				return err
			}
			if ok && !t.Paused.IsZero() {
				if paused == nil {
					paused = map[string]bool{}
				}
				paused[en.TicketID] = true
			}
		}
		return nil
	}
	if ws, ok := c.fresh(); ok {
		return paused, note(ws.ticket)
	}
	err := c.e.st.View(c.ctx, func(tx *state.Tx) error { return note(tx.Ticket) })
	return paused, err
}

// markSent tells the helpdesk which events were delivered, so that a
// lookup after a lost state file finds them. A failure never fails the
// cycle: one the adapter calls permanent (ErrNotFound, ErrInvalid) is
// logged and given up, any other is retried after a backoff.
func (c *cycle) markSent() {
	if c.stopped() {
		return
	}
	e := c.e
	var unmarked []state.Entry
	if ws, ok := c.fresh(); ok {
		unmarked = slices.Clone(ws.unmarked)
	} else if err := e.st.View(c.ctx, func(tx *state.Tx) error {
		var err error
		unmarked, err = tx.UnmarkedJournal()
		if errors.Is(err, state.ErrCorrupt) {
			err = nil
		}
		return err
	}); err != nil {
		c.stop(fmt.Errorf("read journal: %w", err))
		return
	}
	unmarked = slices.DeleteFunc(unmarked, func(en state.Entry) bool { return en.NextAttempt.After(c.now) })
	if len(unmarked) == 0 {
		return
	}
	paused, err := c.pausedOf(unmarked)
	if err != nil {
		c.stop(fmt.Errorf("read state: %w", err))
		return
	}
	// Nothing is written in the helpdesk for a paused ticket.
	unmarked = slices.DeleteFunc(unmarked, func(en state.Entry) bool { return paused[en.TicketID] })
	if len(unmarked) == 0 {
		return
	}
	errs := make([]error, len(unmarked))
	done := make([]bool, len(unmarked))
	// One ticket's entries go one after the other, in journal order, as
	// the Helpdesk contract promises; tickets go on in parallel.
	forEach(c.ctx, e.workers, e.cfg.Concurrency, byTicket(unmarked), func(idx []int) {
		for _, i := range idx {
			en := unmarked[i]
			err := e.hd.MarkSent(c.ctx, adapters.Ref(en.Ref), en.EventID, en.UpstreamMessageID)
			if err != nil && (c.hdFatal(err) || c.interrupted(err)) {
				return
			}
			done[i], errs[i] = true, err
		}
	})
	if !slices.Contains(done, true) {
		return
	}
	now := e.now()
	err = e.st.Update(c.keep(), func(tx *state.Tx) error {
		for i, en := range unmarked {
			if !done[i] {
				continue
			}
			switch err := errs[i]; {
			case err == nil:
				en.MarkedAt, en.NextAttempt = now, time.Time{}
			case errors.Is(err, adapters.ErrNotFound) || errors.Is(err, adapters.ErrInvalid):
				e.log.LogAttrs(c.ctx, slog.LevelWarn, "record delivery in the helpdesk failed for good; given up", slog.Any("error", err),
					slog.String("op", "mark sent"), slog.String("ticket", en.TicketID), slog.String("message", en.EventID))
				en.MarkedAt, en.NextAttempt = now, time.Time{}
				en.LastError = "record delivery in the helpdesk given up: " + err.Error()
			default:
				var prev time.Duration
				if !en.NextAttempt.IsZero() {
					prev = en.NextAttempt.Sub(en.UpdatedAt)
				}
				wait := min(max(2*prev, e.pol.interval), e.pol.quietMax)
				e.log.LogAttrs(c.ctx, slog.LevelWarn, fmt.Sprintf("record delivery in the helpdesk failed; retried in %s: %s", wait, err),
					slog.String("op", "mark sent"), slog.String("ticket", en.TicketID), slog.String("message", en.EventID))
				en.NextAttempt = now.Add(wait)
				en.LastError = "record delivery in the helpdesk: " + err.Error()
			}
			if _, err := tx.PutJournal(en); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		c.stop(fmt.Errorf("store marked entries: %w", err))
	}
}

// permanent reports whether an API error cannot go away by repeating the
// request: an answer the shared retry policy calls permanent (400
// body_required, invalid_status, 404 not_found, ...). A 401 or 403 stops
// the cycle before this is asked.
func permanent(err error) bool {
	var ae *guestapi.Error
	return errors.As(err, &ae) && httpretry.StatusClass(ae.StatusCode) == httpretry.Permanent
}

func settableList() string {
	var parts []string
	for _, s := range guestapi.SettableStatuses() {
		parts = append(parts, string(s))
	}
	return strings.Join(parts, ", ")
}

// byTicket groups the indexes of entries by ticket, keeping their order
// within each ticket and the order in which tickets first appear.
func byTicket(entries []state.Entry) [][]int {
	var groups [][]int
	at := map[string]int{}
	for i, en := range entries {
		g, ok := at[en.TicketID]
		if !ok {
			g = len(groups)
			at[en.TicketID] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}
