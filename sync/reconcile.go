package sync

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
)

// Reconcile is the safety net under the change-driven cycle: whatever path
// of the lists, the helpdesk's feed or the journal went wrong, it compares
// what each side holds now with what they last agreed on and repairs the
// difference.
//
// Each open request is reconciled at least once per
// TICKETBRIDGE_RECONCILE_INTERVAL, at a slot its id places in each period
// (as the full reads are), and in the next cycle after a call on it had an
// unknown outcome (state.Ticket.ReconcileSoon). A reconcile reads the
// ticket upstream (the refresh's read) and looks it up in the helpdesk
// (Lookup), then, three-way against state.Ticket.AgreedStatus:
//
//   - only one side moved: its status is carried to the other, upstream
//     through the journal like any helpdesk status change, down through
//     the adapter;
//   - both moved to the same status: it is recorded as agreed;
//   - both moved to different statuses: the later change wins by the times
//     the sides report (the API's updated_at, the helpdesk's status time);
//     the conflict is logged, counted and noted on the helpdesk ticket;
//   - upstream messages the helpdesk does not hold are appended, and the
//     helpdesk's replies and notes neither delivered nor journaled are
//     journaled.
//
// A ticket without an agreed status (stored before reconcile existed)
// records the agreement at its first reconcile when the sides agree, and
// acts on nothing.

// Reconcile outcomes, counted in Report.Reconcile and shown by `status`.
const (
	ReconcileInSync      = "in_sync"      // nothing to do
	ReconcileAgreed      = "agreed"       // an agreement recorded (both moved alike, or the first reconcile)
	ReconcileCarriedUp   = "carried_up"   // the helpdesk's status carried upstream
	ReconcileCarriedDown = "carried_down" // the upstream status carried to the helpdesk
	ReconcileConflict    = "conflict"     // both moved differently: the later won
	ReconcileUnknown     = "unknown"      // no agreed status yet and the sides differ: nothing done
	ReconcileAppended    = "appended"     // upstream messages the helpdesk lacked, appended
	ReconcileJournaled   = "journaled"    // helpdesk events the feed missed, journaled
)

// ReconcileOutcomes lists the outcomes Report.Reconcile counts, for the
// daemon's ticketbridge_reconcile_total{outcome}.
var ReconcileOutcomes = []string{ReconcileInSync, ReconcileAgreed, ReconcileCarriedUp, ReconcileCarriedDown,
	ReconcileConflict, ReconcileUnknown, ReconcileAppended, ReconcileJournaled}

// reconcileSlotAfter returns the first reconcile slot of ticket id after
// after: the time in each period of the reconcile interval that the id's
// hash names (seeded apart from the full-read slots).
func (p policy) reconcileSlotAfter(id string, after time.Time) time.Time {
	f := int64(p.reconcile)
	if f <= 0 {
		return after
	}
	phase := int64(slotHash("reconcile\x00", id) % uint64(f))
	n := after.UnixNano()
	since := ((n-phase)%f + f) % f
	return after.Add(time.Duration(f - since))
}

// reconcileDue reports whether t is to be reconciled in the cycle that
// started at now: it has a helpdesk ticket and was read once, and either
// a call on it had an unknown outcome (after its backoff, if any) or its
// slot has come since its last reconcile (or since it was stored). A closed
// ticket is reconciled only until a reconcile after the agreement on its
// status confirmed it. A paused or unlinked ticket is not reconciled.
func (p policy) reconcileDue(t *state.Ticket, now time.Time) bool {
	if t.Ref == "" || t.UpstreamStatus == "" || p.reconcile <= 0 || t.Halted() {
		return false
	}
	if t.ReconcileSoon {
		return t.Attempts == 0 || p.due(t, now)
	}
	if t.Retired || (guestapi.Status(t.UpstreamStatus).Closed() && t.AgreedStatus == t.UpstreamStatus && !t.ReconciledAt.Before(t.AgreedAt)) {
		return false
	}
	since := t.ReconciledAt
	if since.IsZero() {
		since = t.CreatedAt
	}
	// A reconcile a little before its slot (within the slack) counts for
	// that slot.
	return !p.reconcileSlotAfter(t.ID, since.Add(p.slack())).After(now.Add(p.slack()))
}

// pickReconciles returns the tickets of tracked to reconcile in this
// cycle: those due, the ones asked for first, then the longest waiting, at
// most budget of them (0: no bound).
func pickReconciles(tracked []state.Ticket, pol policy, now time.Time, budget int) map[string]bool {
	due := pickTickets(tracked, func(t *state.Ticket) bool { return pol.reconcileDue(t, now) })
	slices.SortFunc(due, func(a, b *state.Ticket) int {
		if a.ReconcileSoon != b.ReconcileSoon {
			if a.ReconcileSoon {
				return -1
			}
			return 1
		}
		return cmp.Or(a.ReconciledAt.Compare(b.ReconciledAt), a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	if budget > 0 && len(due) > budget {
		due = due[:budget]
	}
	out := make(map[string]bool, len(due))
	for _, t := range due {
		out[t.ID] = true
	}
	return out
}

// reconcileBudget is how many tickets a cycle may reconcile within the
// adapter's pace (see adapters.Paced); 0 means no bound.
func (e *Engine) reconcileBudget() int {
	p, ok := e.hd.(adapters.Paced)
	if !ok || p.ReconcilePace() <= 0 {
		return 0
	}
	return max(1, int(e.cfg.interval/p.ReconcilePace()))
}

// statusMerge is the three-way decision on a ticket's status.
type statusMerge struct {
	outcome  string
	agreed   guestapi.Status // the status to record as agreed now ("" leaves it)
	up       guestapi.Status // the helpdesk's status to carry upstream
	down     guestapi.Status // the upstream status to carry to the helpdesk
	conflict bool
}

// mergeStatus decides from the agreed status (and when it was recorded),
// the upstream status (and when the upstream ticket last changed) and the
// helpdesk's status. It does no I/O.
//
// The agreement is recorded on what the bridge knows: a status it set, or
// an agent's change it carried upstream. A helpdesk that shows another
// status changed no later than the agreement was recorded did not move
// since: the agreement was wrong about it (the bridge's own write crossed
// an agent's change it had not read yet, or a write whose answer was lost
// landed after it), and the agreed status is set there again. Only a
// change stamped a whole second or more before the agreement is judged so:
// helpdesks stamp changes in whole seconds, and within the second of the
// agreement the order is unknown, so an agent's change made just after it
// is carried, never overwritten.
func mergeStatus(agreed guestapi.Status, agreedAt time.Time, upstream guestapi.Status, upAt time.Time, hd adapters.FoundStatus) statusMerge {
	switch {
	case !hd.Known:
		// The helpdesk cannot tell: its status is left alone, to the
		// change-driven path.
		return statusMerge{outcome: ReconcileInSync}
	case agreed == "":
		if hd.Agrees(upstream) {
			return statusMerge{outcome: ReconcileAgreed, agreed: upstream}
		}
		return statusMerge{outcome: ReconcileUnknown}
	}
	upMoved := upstream != agreed
	differs := !hd.Agrees(agreed)
	stale := differs && !hd.At.IsZero() && !agreedAt.IsZero() && !hd.At.Add(stampResolution).After(agreedAt)
	// A helpdesk status that maps to no upstream status cannot be carried.
	hdMoved := differs && !stale && hd.Up != ""
	switch {
	case !upMoved && !hdMoved && stale:
		return statusMerge{outcome: ReconcileCarriedDown, down: upstream}
	case !upMoved && !hdMoved:
		return statusMerge{outcome: ReconcileInSync}
	case upMoved && hd.Agrees(upstream):
		// Both at the same place, however the helpdesk came there.
		return statusMerge{outcome: ReconcileAgreed, agreed: upstream}
	case upMoved && !hdMoved:
		return statusMerge{outcome: ReconcileCarriedDown, down: upstream}
	case !upMoved:
		if !hd.Up.Settable() {
			return statusMerge{outcome: ReconcileInSync}
		}
		return statusMerge{outcome: ReconcileCarriedUp, up: hd.Up}
	case hd.At.After(upAt) && hd.Up.Settable():
		return statusMerge{outcome: ReconcileConflict, up: hd.Up, conflict: true}
	default:
		return statusMerge{outcome: ReconcileConflict, down: upstream, conflict: true}
	}
}

// stampResolution is the coarsest resolution of a helpdesk's change times
// (Zendesk, Freshdesk and Request Tracker stamp whole seconds): a change
// stamped less than this before the agreement may have come after it.
const stampResolution = time.Second

// reconcileEventID is the event id of a status carried up by reconcile: the
// same change found again (a crash before it was stored) gets the same id,
// and so the same Idempotency-Key.
func reconcileEventID(ticketID string, from, to guestapi.Status, at time.Time) string {
	return fmt.Sprintf("reconcile:%s:%s>%s@%d", ticketID, from, to, at.UnixNano())
}

// conflictNote is the internal note reconcile leaves on the helpdesk
// ticket of a conflict; its id is stable for the same conflict, so a
// repeat does not write it twice.
func conflictNote(ticketID string, agreed, upstream guestapi.Status, upAt time.Time, hd adapters.FoundStatus, m statusMerge, now time.Time) adapters.Message {
	won := fmt.Sprintf("the guest request's status %s (changed %s) is kept and set here", upstream, upAt.UTC().Format(time.RFC3339))
	if m.up != "" {
		won = fmt.Sprintf("this ticket's status (%s, changed %s) is kept and sent to the guest request", hd.Up, hd.At.UTC().Format(time.RFC3339))
	}
	body := fmt.Sprintf("Status conflict: since both sides last agreed on %s, the guest request moved to %s and this ticket to %s. The later change wins: %s.",
		agreed, upstream, hd.Up, won)
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s\x00%s\x00%d\x00%d", ticketID, agreed, upstream, hd.Up, upAt.UnixNano(), hd.At.UnixNano()))
	return adapters.Message{UpstreamID: "reconcile-conflict-" + hex.EncodeToString(sum[:8]), AuthorType: guestapi.AuthorSystem,
		AuthorName: "ticketbridge", Body: body, Public: false, CreatedAt: now}
}

// reconcileFound prepares the reconcile of r's ticket from what Lookup
// found: the messages the helpdesk holds replace what state says it holds
// in known, and the helpdesk's events neither delivered nor journaled are
// journaled on r. It returns the status merge to apply once the upstream
// read is planned.
func (c *cycle) reconcileFound(r *refreshResult, d guestapi.TicketDetail, f adapters.Found, known map[string]bool) (statusMerge, error) {
	e := c.e
	// What the helpdesk really holds, plus the bridge's own posts.
	clear(known)
	for id := range f.Messages {
		known[id] = true
	}
	for _, id := range f.Sent {
		if id != "" {
			known[id] = true
		}
	}
	var evs []adapters.Event
	for _, ev := range f.Events {
		_, delivered := f.Sent[ev.ID]
		if delivered || ev.Kind == adapters.EventStatus || ev.UpstreamTicketID != r.t.ID {
			continue // a status is reconciled by the three-way merge below
		}
		evs = append(evs, ev)
	}
	in := collectInput{now: c.now, events: evs, tickets: map[string]*state.Ticket{}, journaled: map[string]bool{}}
	err := e.st.View(c.ctx, func(tx *state.Tx) error {
		o, err := tx.OwnMessages(r.t.ID)
		for id := range o {
			known[id] = true
		}
		if err != nil {
			return err
		}
		return in.read(tx)
	})
	if err != nil {
		return statusMerge{}, err
	}
	in.tickets[r.t.ID] = &r.t
	p := e.planCollect(in)
	r.journal = p.entries
	agreed := guestapi.Status(r.t.AgreedStatus)
	m := e.cfg.up.keepStatus(mergeStatus(agreed, r.t.AgreedAt, d.Status, d.UpdatedAt, f.Status), d.Status)
	if m.up != "" {
		at := f.Status.At
		if at.IsZero() {
			at = c.now
		}
		id := reconcileEventID(r.t.ID, agreed, m.up, at)
		r.journal = append(r.journal, state.Entry{
			EventID: id, TicketID: r.t.ID, Ref: r.t.Ref, IdempotencyKey: IdempotencyKey(e.hd.Name(), adapters.Ref(r.t.Ref), id),
			Kind: state.KindStatus, State: state.Pending, Payload: state.Payload{Status: string(m.up)}, CreatedAt: at,
		})
		r.t.HelpdeskStatus, r.t.HelpdeskStatusAt = string(m.up), at
	}
	if m.conflict {
		e.log.LogAttrs(c.ctx, slog.LevelWarn, fmt.Sprintf("status conflict: both sides moved since they agreed on %s (upstream to %s at %s, helpdesk to %s at %s); the later wins",
			agreed, d.Status, d.UpdatedAt.UTC().Format(time.RFC3339), f.Status.Up, f.Status.At.UTC().Format(time.RFC3339)),
			slog.String("op", "reconcile"), slog.String("ticket", r.t.ID))
		r.conflictNote = []adapters.Message{conflictNote(r.t.ID, agreed, d.Status, d.UpdatedAt, f.Status, m, c.now)}
	}
	return m, nil
}

// countReconcile adds one reconcile's outcomes to the report.
func (r *Report) countReconcile(res refreshResult) {
	if res.reconciled == "" {
		return
	}
	if r.Reconcile == nil {
		r.Reconcile = map[string]int{}
	}
	r.Reconcile[res.reconciled]++
	if res.recAppended > 0 {
		r.Reconcile[ReconcileAppended] += res.recAppended
	}
	if n := len(res.journal) - btoi(res.recUp); n > 0 {
		r.Reconcile[ReconcileJournaled] += n
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
