package sync

import (
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
)

// Reasons a ticket is due, stored in state.Ticket.DueReason and shown by
// `ticketbridge status`.
const (
	DueNew     = "new"     // discovered, not yet read
	DueActive  = "active"  // something changed lately: read every cycle
	DueQuiet   = "quiet"   // nothing changed: read less and less often
	DueClosed  = "closed"  // closed upstream: read at the closed interval
	DueRetry   = "retry"   // the last try failed: read again after a backoff
	DueUpdated = "updated" // a list showed a newer updated_at
	DueEvent   = "event"   // the helpdesk reported an event on it
	DueRetired = "retired" // closed for longer than the grace: read at the retired interval
)

// policy decides when a tracked ticket is read again.
//
//   - Activity (new messages, a status change, a helpdesk event) makes a
//     ticket due on the next cycle.
//   - A quiet read doubles the wait, starting from twice the schedule's
//     interval (a quiet ticket skips a cycle), up to QuietMax. The first
//     read of a ticket (its import) counts as quiet: what it found is old.
//   - A closed ticket (done, completed, confirmed, cancelled) is read every
//     ClosedInterval for ClosedGrace after it was first seen closed, then
//     retired: it is read only every RetiredInterval (a guest may still
//     write on it without a list showing it updated), or at once when a
//     list shows it updated or the helpdesk reports an event on it.
//   - A failure backs off from one interval, doubling with Attempts, up to
//     QuietMax.
type policy struct {
	interval       time.Duration
	quietMax       time.Duration
	closedInterval time.Duration
	closedGrace    time.Duration
	retired        time.Duration
}

func newPolicy(p parsed) policy {
	return policy{interval: p.interval, quietMax: p.QuietMax, closedInterval: p.ClosedInterval, closedGrace: p.ClosedGrace, retired: p.RetiredInterval}
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
		t.NextDue, t.DueReason, t.Retired = now, DueActive, false
		return
	}
	t.QuietStreak++
	if closed {
		if now.Sub(t.ClosedAt) >= p.closedGrace {
			t.NextDue, t.DueReason, t.Retired = now.Add(p.retired), DueRetired, true
			return
		}
		t.NextDue, t.DueReason = now.Add(p.closedInterval), DueClosed
		return
	}
	t.NextDue, t.DueReason = now.Add(p.backoff(t.QuietStreak+1)), DueQuiet
}

// afterError records a failed try at now and backs the ticket off.
func (p policy) afterError(t *state.Ticket, now time.Time, msg string) {
	t.Attempts++
	t.LastError = msg
	t.NextDue, t.DueReason, t.Retired = now.Add(p.backoff(t.Attempts)), DueRetry, false
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
