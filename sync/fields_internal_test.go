package sync

import (
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// A field update that waits makes its ticket due at the wait's end,
// unless the schedule reads it sooner; a wait already over makes it due
// now. No failure is recorded either way.
func TestAfterFieldsWait(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	c := &cycle{now: now}
	for _, tc := range []struct {
		next, until, want time.Time
		reason            string
	}{
		{now.Add(time.Hour), now.Add(time.Minute), now.Add(time.Minute), DueWait},
		{now.Add(time.Minute), now.Add(time.Hour), now.Add(time.Minute), DueQuiet},
		{now.Add(time.Hour), now.Add(-time.Minute), now, DueWait},
	} {
		r := refreshResult{wait: &adapters.WaitError{Until: tc.until}}
		r.t.NextDue, r.t.DueReason = tc.next, DueQuiet
		c.afterFields(&r)
		if !r.t.NextDue.Equal(tc.want) || r.t.DueReason != tc.reason || r.t.Attempts != 0 || r.t.LastError != "" {
			t.Errorf("next %s, until %s: due %s (%s), attempts %d; want %s (%s)", tc.next, tc.until, r.t.NextDue, r.t.DueReason, r.t.Attempts, tc.want, tc.reason)
		}
	}
}
