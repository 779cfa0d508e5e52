package rt_test

import "testing"

// TestSharedQueueTwoHotels: two hotels, each with its own organisation on
// the platform and its own bridge, share one RT queue (a hotel group's
// central desk), and the desk answers both guests there. Each bridge
// syncs only its own request: neither tracks the other's, lists it as
// failing, or journals a reply written on it.
func TestSharedQueueTwoHotels(t *testing.T) {
	r := needRT(t)
	queue := r.queue(t, "shared")
	a, b := newRTLoop(t, r, queue), newRTLoop(t, r, queue)
	g := r.agent()
	ida := a.Request("housekeeping", "Two towels to room 214")
	idb := b.Request("housekeeping", "A pillow to room 118")
	a.Tick()
	b.Tick()
	refa, refb := a.ref(ida), b.ref(idb)
	if err := g.Reply(t.Context(), refa, "", "Towels are on the way."); err != nil {
		t.Fatal(err)
	}
	if err := g.Reply(t.Context(), refb, "", "A pillow is on the way."); err != nil {
		t.Fatal(err)
	}
	a.Settle()
	b.Settle()
	if err := g.Reply(t.Context(), refb, "", "Anything else for room 118?"); err != nil {
		t.Fatal(err)
	}
	a.Settle()
	b.Settle()

	for _, h := range []struct {
		name    string
		l       *rtLoop
		own     string
		replies []string
	}{
		{"A", a, ida, []string{"Towels are on the way."}},
		{"B", b, idb, []string{"A pillow is on the way.", "Anything else for room 118?"}},
	} {
		view := h.l.Upstream(h.own)
		for _, want := range h.replies {
			found := false
			for _, m := range view.Messages {
				found = found || m.Body == want
			}
			if !found {
				t.Errorf("hotel %s: the reply %q did not reach its guest", h.name, want)
			}
		}
		s := h.l.Status()
		if len(s.Tickets) != 1 || s.Tickets[0].ID != h.own {
			t.Errorf("hotel %s tracks %+v, want only %s", h.name, s.Tickets, h.own)
		}
		// Nothing waiting or refused: no reply on the other's ticket journaled.
		if c := s.Counts; c.Failing+c.Pending+c.Failed != 0 {
			t.Errorf("hotel %s: %d failing, %d waiting, %d refused", h.name, c.Failing, c.Pending, c.Failed)
		}
		h.l.checkExactlyOnce(h.own)
	}
	if n := a.Status().Counts.NotOurs; n != 1 {
		t.Errorf("hotel A counts %d helpdesk tickets of another hotel, want 1", n)
	}
	if t.Failed() {
		t.Logf("hotel A's log:\n%s\nhotel B's log:\n%s", a.Logs(), b.Logs())
	}
}
