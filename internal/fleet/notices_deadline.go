package fleet

// This file finds the deadline warnings of a hotel (notify.Deadline): a
// request whose deadline (the platform's target_due_at, carried into the
// state with its other fields) passed or comes within
// TICKETBRIDGE_NOTIFY_DEADLINE_WARN_BEFORE while it is open and nobody
// answered the guest since the request was made or the guest last wrote
// (state.Ticket.Unanswered). The support team's targets receive them.

import (
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/notify"
	"github.com/ticketbridge/ticketbridge/state"
)

// deadlineFix is what a deadline warning asks for.
const deadlineFix = "answer the guest with a public reply in the helpdesk, close the request if it is done, or move its deadline"

// deadlineOf returns the deadline warning of t at now, warned warnBefore
// ahead: ok is false when none holds. next is when one would begin to
// hold for t as it is (its warning time still ahead), zero for none: a
// watcher that read nothing new since reads the state again only then.
func deadlineOf(t state.Ticket, now time.Time, warnBefore time.Duration) (c notify.Condition, ok bool, next time.Time) {
	due := t.Carried.Due
	if due.IsZero() || t.Retired || !t.ClosedAt.IsZero() || !t.Deleted.IsZero() || !t.Unanswered() {
		return c, false, time.Time{}
	}
	from := due.Add(-warnBefore)
	if now.Before(from) {
		return c, false, from
	}
	since := from
	if t.GuestWroteAt.After(since) {
		since = t.GuestWroteAt
	}
	return notify.Condition{Key: notify.Key{Kind: notify.Deadline, Subject: "request " + t.ID},
		Since: since, Cause: deadlineCause(t), Fix: deadlineFix}, true, time.Time{}
}

// deadlineCause names the request by its short id and description and
// says its deadline: the same words at every cycle, so that an episode
// is written again only when the deadline or the description changes.
func deadlineCause(t state.Ticket) string {
	var b strings.Builder
	b.WriteString("request " + shortID(t.ID))
	if d := t.Carried.Title; d != "" {
		if r := []rune(d); len(r) > 80 {
			d = string(r[:80]) + "…"
		}
		b.WriteString(" “" + d + "”")
	}
	b.WriteString(" is due " + t.Carried.Due.UTC().Format("2006-01-02 15:04 UTC") +
		" and nobody has answered the guest since the request was made or the guest last wrote")
	return b.String()
}

// shortID is the first 8 characters of a request's id, as the status
// page and status show it.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
