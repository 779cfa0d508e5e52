package sync_test

import (
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
)

// TestHelpdeskClockBehindLosesNoStatusChange: a helpdesk whose clock is
// five minutes behind the bridge's stamps an agent's status change, made
// after the bridge set the ticket's status, with a time before that. The
// change still goes upstream: which of the helpdesk's changes is newer is
// judged by the helpdesk's times alone, never against the bridge's clock.
func TestHelpdeskClockBehindLosesNoStatusChange(t *testing.T) {
	e := newEnv(t)
	e.backend.SetClock(func() time.Time { return e.clock.Now().Add(-5 * time.Minute) })
	id := e.newTicket("Kettle broken")
	e.cycle()
	if err := e.ts.Server.SetStatus(id, guestapi.StatusAssigned); err != nil { // the front desk takes it
		t.Fatal(err)
	}
	if r := e.tick(); r.StatusDown != 1 {
		t.Fatalf("the bridge did not set the helpdesk's status: %s", r)
	}
	e.clock.Advance(time.Minute)
	if err := e.backend.SetStatus(e.ref(id), "Agent", "solved"); err != nil {
		t.Fatal(err)
	}
	e.tick()
	if got := e.upstream(id).Ticket.Status; got != guestapi.StatusDone {
		t.Errorf("upstream status %s after the agent solved the ticket, want done", got)
	}
}
