package rt_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/rt"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// connectTicket is an upstream ticket for the connect tests.
func connectTicket(desc string) adapters.Ticket {
	return adapters.Ticket{UpstreamID: uuid.NewString(), Department: "housekeeping", Status: guestapi.StatusNew,
		TaskDescription: desc, Origin: guestapi.OriginGuest}
}

// drainRT calls Changes until it reports nothing new and returns the
// events and the cursor.
func drainRT(t *testing.T, a *rt.Adapter, cur adapters.Cursor) ([]adapters.Event, adapters.Cursor) {
	t.Helper()
	var out []adapters.Event
	for range 50 {
		evs, next, err := a.Changes(t.Context(), cur)
		if err != nil {
			t.Fatalf("Changes: %v", err)
		}
		out = append(out, evs...)
		if len(evs) == 0 && next == cur {
			return out, cur
		}
		cur = next
	}
	t.Fatal("Changes did not run dry")
	return nil, ""
}

// TestConnectSeenByAnotherReplica: a replica that read the team's work
// on a ticket made by hand before another replica connected it reports
// the team's replies on it from then on. Each adapter remembers which
// request a ticket mirrors; a ticket that mirrored none must not stay
// "none" in that memory.
func TestConnectSeenByAnotherReplica(t *testing.T) {
	r := needRT(t)
	queue := r.queue(t, "connect-replica")
	over := map[string]string{"TICKETBRIDGE_RT_QUEUE": queue, "TICKETBRIDGE_RT_QUEUES": ""}
	a, b := r.open(t, over), r.open(t, over)
	g := r.agent()
	g.queue = queue
	// A mirrored ticket first: Changes starts at the oldest one.
	if _, err := a.EnsureTicket(t.Context(), connectTicket("Mirrored before [connect replica]")); err != nil {
		t.Fatalf("EnsureTicket: %v", err)
	}
	ref, err := g.MakeTicket(t.Context(), "Towels [connect replica]", "The guest called.")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Reply(t.Context(), ref, "", "Before the connect."); err != nil {
		t.Fatal(err)
	}
	_, cur := drainRT(t, b, "")
	tk := connectTicket("Towels [connect replica]")
	if err := a.Connect(t.Context(), ref, tk); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	if err := g.Reply(t.Context(), ref, "", "After the connect."); err != nil {
		t.Fatal(err)
	}
	evs, _ := drainRT(t, b, cur)
	var got []string
	for _, ev := range evs {
		if ev.Ref == ref {
			got = append(got, ev.UpstreamTicketID+": "+ev.Body)
		}
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], tk.UpstreamID+": After the connect.") {
		t.Errorf("the other replica's Changes on the connected ticket: %q; want the reply after the connect, with upstream id %s", got, tk.UpstreamID)
	}
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
