package sync

import (
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
)

// TestDeferredTimesAsStored: what a quiet read keeps in memory carries its
// times as state would store them: in UTC, without the monotonic clock
// reading of the cycle's time (two times that both carry one compare by
// it, and the monotonic and the wall clock drift apart).
func TestDeferredTimesAsStored(t *testing.T) {
	now := time.Now() // with a monotonic reading
	var tk state.Ticket
	deferredOf(state.Ticket{NextDue: now.Add(time.Minute), ReconciledAt: now}).apply(&tk)
	for name, v := range map[string]time.Time{"NextDue": tk.NextDue, "ReconciledAt": tk.ReconciledAt} {
		if v != v.Round(0).UTC() {
			t.Errorf("%s kept as %#v, want it in UTC without a monotonic reading", name, v)
		}
	}
}
