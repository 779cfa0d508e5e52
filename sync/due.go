package sync

import (
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
)

// Reasons a ticket is due, stored in state.Ticket.DueReason and shown by
// `ticketbridge status`.
const (
	DueNew      = "new"      // discovered, not yet read
	DueActive   = "active"   // something changed lately: read every cycle
	DueQuiet    = "quiet"    // nothing changed: read less and less often
	DueClosed   = "closed"   // closed upstream: read at the closed interval
	DueRetry    = "retry"    // the last try failed: read again after a backoff
	DueUpdated  = "updated"  // a list showed another status or updated_at
	DueFull     = "full"     // the full-read safety net: read at least every full-read interval
	DueEvent    = "event"    // the helpdesk reported an event on it
	DueRetired  = "retired"  // closed for longer than the grace: read at the retired interval
	DueHeld     = "held"     // the helpdesk holds a change until the team acts: tried again every few minutes
	DueMoved    = "moved"    // missing from a whole list of its status and department: read to see where it went
	DueUnlinked = "unlinked" // an operator unlinked it: its helpdesk ticket gets one note, and nothing more
)

// DueText says when ticket t is read next, relative to now, for `status`
// and the status page.
func (t TicketStatus) DueText(now time.Time) string {
	switch {
	case !t.Unlinked.IsZero():
		return "never (unlinked by " + t.UnlinkedBy + "; connect links it again)"
	case !t.Paused.IsZero():
		return "when resumed (paused by " + t.PausedBy + ")"
	case !t.Deleted.IsZero():
		return "never (deleted on the platform)"
	case t.Retired:
		return "never (retired)"
	case t.NextDue.IsZero() || !t.NextDue.After(now):
		return "next cycle"
	}
	return "in " + t.NextDue.Sub(now).Round(time.Second).String()
}

// DueReasonText says in words why a ticket is read next, for `status`.
func DueReasonText(reason string) string {
	switch reason {
	case DueNew:
		return "new: to be imported"
	case DueActive:
		return "active: something changed lately, read every cycle"
	case DueQuiet:
		return "quiet: nothing changed lately, read less and less often; a list showing it changed makes it due at once"
	case DueClosed:
		return "closed: read at TICKETBRIDGE_CLOSED_INTERVAL; a list showing it changed makes it due at once"
	case DueRetry:
		return "retry: the last try failed, backing off"
	case DueUpdated:
		return "changed: a list showed another status or updated_at"
	case DueFull:
		return "full read: the safety net reads every open ticket at least every full-read interval; a list showing it changed makes it due at once"
	case DueEvent:
		return "event: the helpdesk reported a change on it"
	case DueMoved:
		return "moved: it left the list of its status and department (closed, perhaps); read to see where it went"
	case DueHeld:
		return "held: the helpdesk holds a change until the team does what it asks (see the ticket's last error); tried again every few minutes"
	case DueWait:
		return "wait: a field update waits for the helpdesk's rate budget"
	case DuePriority:
		return "priority: its due date comes within a threshold of TICKETBRIDGE_PRIORITY then, which changes its priority"
	case DueAsked:
		return "asked: an operator asked to read it now"
	case DueUnlinked:
		return "unlinked: an operator unlinked it from its helpdesk ticket; the ticket gets one note saying so, and nothing of the request crosses until it is connected again"
	case DueDeleted:
		return "deleted: the request was deleted on the platform (the API answered 404 for it while the hotel's other requests read fine); not read any more"
	case DueRetired:
		return "retired: closed for longer than TICKETBRIDGE_CLOSED_GRACE, read at TICKETBRIDGE_RETIRED_INTERVAL; a list showing it changed makes it due at once"
	case "":
		return "-"
	}
	return reason
}

// policy decides when a tracked ticket is read again.
//
//   - While the lists show every change (no read has found one they did
//     not), an open ticket is read when a list shows it changed, when the
//     helpdesk reports an event on it, and at its full-read slot (below).
//   - Once a read found a change no list showed (the API did not move
//     updated_at), recent activity is polled too: activity (new messages,
//     a status change, a helpdesk event) makes a ticket due on the next
//     cycle, and a quiet read doubles the wait, starting from twice the
//     schedule's interval, up to QuietMax or the full-read slot. The first
//     read of a ticket (its import) counts as quiet: what it found is old.
//   - An open ticket is never left unread for longer than the full-read
//     interval F: its next read is at the latest at its next full-read
//     slot, a time the ticket's id places in each period of F (a hash of
//     the id), so that the tickets' safety reads are spread evenly over
//     the cycles instead of coming in bursts. Between two slots, the lists
//     make a changed ticket due (see wake).
//   - A closed ticket (done, completed, confirmed, cancelled) is read every
//     ClosedInterval for ClosedGrace after it was first seen closed, then
//     retired: it is read only every RetiredInterval (a guest may still
//     write on it without a list showing it updated), or at once when a
//     list shows it updated or the helpdesk reports an event on it.
//   - A failure backs off from one interval, doubling with Attempts, up to
//     QuietMax.
type policy struct {
	interval time.Duration
	quietMax time.Duration
	fullRead time.Duration // the effective full-read interval (see FullRead)
	// listsShowAll says that no read has found a change the lists did not
	// show: a read that finds nothing new waits for its full-read slot, and
	// a change is left to the lists. Otherwise recent activity is polled:
	// an active ticket is read every cycle, then less and less often.
	listsShowAll   bool
	closedInterval time.Duration
	closedGrace    time.Duration
	retired        time.Duration
	reconcile      time.Duration // TICKETBRIDGE_RECONCILE_INTERVAL (see reconcile.go)
}

func newPolicy(p parsed) policy {
	return policy{interval: p.interval, quietMax: p.QuietMax, fullRead: p.FullReadInterval, listsShowAll: true,
		closedInterval: p.ClosedInterval, closedGrace: p.ClosedGrace, retired: p.RetiredInterval, reconcile: p.ReconcileInterval}
}

// fullReadSlot returns the first full-read slot of ticket id after now
// and its slack (a ticket read a little before its slot is not due again
// at that slot): the time in each period of fullRead that the id's hash
// names.
func (p policy) fullReadSlot(id string, now time.Time) time.Time {
	f := int64(p.fullRead)
	if f <= 0 {
		return now
	}
	now = now.Add(p.slack())
	phase := int64(slotHash("", id) % uint64(f))
	n := now.UnixNano()
	since := ((n-phase)%f + f) % f // time since the last slot
	return now.Add(time.Duration(f - since))
}

// slotHash is the 64-bit FNV-1a hash of prefix followed by id, the
// number hash/fnv's New64a gives for those bytes (so that no ticket's
// slots move), computed without allocating: it is asked for every
// tracked ticket in every cycle, where the hasher and the bytes it was
// given were 4 KB a cycle of 100 requests.
func slotHash(prefix, id string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := range len(prefix) {
		h = (h ^ uint64(prefix[i])) * prime
	}
	for i := range len(id) {
		h = (h ^ uint64(id[i])) * prime
	}
	return h
}

// capFull brings an open ticket's next read forward to its next full-read
// slot when it is later; it reports whether it did. Tickets not read since
// the interval was shortened, or stored before it existed, come in this way.
func (p policy) capFull(t *state.Ticket, now time.Time) bool {
	if guestapi.Status(t.UpstreamStatus).Closed() || t.Ref == "" || t.Attempts > 0 || !t.Deleted.IsZero() {
		return false
	}
	slot := p.fullReadSlot(t.ID, now)
	if !t.NextDue.After(slot) {
		return false
	}
	t.NextDue, t.DueReason, t.Retired = slot, DueFull, false
	return true
}

// slack is how early a due time may be and still count at a cycle's start:
// schedules round to the second and cycles start a little late or early.
func (p policy) slack() time.Duration {
	return min(p.interval/4, 5*time.Second)
}

// due reports whether t should be read in the cycle that started at now.
func (p policy) due(t *state.Ticket, now time.Time) bool {
	return !t.NextDue.After(now.Add(p.slack()))
}

// backoff returns the schedule's interval doubled n-1 times, capped at
// quietMax: 1, 2, 4, ... intervals.
func (p policy) backoff(n int) time.Duration {
	d := p.interval
	for i := 1; i < n && d < p.quietMax; i++ {
		d *= 2
	}
	return min(d, p.quietMax)
}

// afterRead sets t's next due time after a successful read at now: active
// says whether anything changed on either side.
func (p policy) afterRead(t *state.Ticket, now time.Time, active bool) {
	t.LastError, t.Attempts = "", 0
	closed := guestapi.Status(t.UpstreamStatus).Closed()
	switch {
	case !closed:
		t.ClosedAt = time.Time{}
	case t.ClosedAt.IsZero():
		t.ClosedAt = now
	}
	if active {
		t.QuietStreak = 0
		t.LastActivity = now
		t.Retired = false
		if !p.listsShowAll {
			t.NextDue, t.DueReason = now, DueActive
			return
		}
	} else {
		t.QuietStreak++
	}
	if closed {
		if now.Sub(t.ClosedAt) >= p.closedGrace {
			t.NextDue, t.DueReason, t.Retired = now.Add(p.retired), DueRetired, true
			return
		}
		t.NextDue, t.DueReason = now.Add(p.closedInterval), DueClosed
		return
	}
	if p.listsShowAll || t.LastActivity.IsZero() || now.Sub(t.LastActivity) >= p.quietMax {
		t.NextDue, t.DueReason, t.Retired = p.fullReadSlot(t.ID, now), DueFull, false
		return
	}
	t.NextDue, t.DueReason = now.Add(p.backoff(t.QuietStreak+1)), DueQuiet
	p.capFull(t, now)
}

// afterError records a failed try at now and backs the ticket off.
func (p policy) afterError(t *state.Ticket, now time.Time, msg string) {
	t.Attempts++
	t.LastError = msg
	wait := p.backoff(t.Attempts)
	if p.fullRead > 0 && !guestapi.Status(t.UpstreamStatus).Closed() {
		wait = min(wait, p.fullRead) // the safety net holds for failing tickets too
	}
	t.NextDue, t.DueReason, t.Retired = now.Add(wait), DueRetry, false
}

// wake makes t due at once, for reason; a retired ticket comes back. A
// ticket backing off after an error stays backed off.
func (p policy) wake(t *state.Ticket, now time.Time, reason string) {
	t.Retired = false
	if t.Attempts > 0 && t.NextDue.After(now) {
		return
	}
	if t.NextDue.IsZero() || t.NextDue.After(now) {
		t.NextDue = now
	}
	t.DueReason = reason
}
