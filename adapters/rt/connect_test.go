package rt_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// connectTicket is an upstream ticket for the connect tests.
func connectTicket(desc string) adapters.Ticket {
	return adapters.Ticket{UpstreamID: uuid.NewString(), Department: "housekeeping", Status: guestapi.StatusNew,
		TaskDescription: desc, Origin: guestapi.OriginGuest}
}

// TestConnectQueueNotFollowed: a ticket made by hand in a queue the
// bridge does not follow is refused, naming the queues it follows, and
// left as it was: Changes would never read the team's replies there.
func TestConnectQueueNotFollowed(t *testing.T) {
	r := needRT(t)
	followed, other := r.queue(t, "connect-followed"), r.queue(t, "connect-other")
	a := r.open(t, map[string]string{"TICKETBRIDGE_RT_QUEUE": followed, "TICKETBRIDGE_RT_QUEUES": ""})
	g := r.agent()
	g.queue = other
	ref, err := g.MakeTicket(t.Context(), "Towels [connect other queue]", "The guest called.")
	if err != nil {
		t.Fatal(err)
	}
	tk := connectTicket("Towels [connect other queue]")
	err = a.Connect(t.Context(), ref, tk)
	if !errors.Is(err, adapters.ErrInvalid) || !strings.Contains(err.Error(), followed) {
		t.Fatalf("Connect of a ticket in another queue: %v; want ErrInvalid naming the queue %s", err, followed)
	}
	if _, found, err := r.open(t, map[string]string{"TICKETBRIDGE_RT_QUEUE": other, "TICKETBRIDGE_RT_QUEUES": ""}).Lookup(t.Context(), tk.UpstreamID); err != nil || found {
		t.Errorf("after the refusal, Lookup found %v, %v; want nothing written", found, err)
	}
}
