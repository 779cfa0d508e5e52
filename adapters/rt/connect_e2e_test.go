package rt_test

import (
	"strings"
	"testing"
)

// TestEndToEndConnect: on the real RT, a request is connected, before the
// bridge made a ticket of its own, to a ticket an agent made by hand:
// the bridge mirrors the guest's message there once and makes no other
// ticket; the agent's reply written before the connect is set aside, not
// sent; one written after goes up once.
func TestEndToEndConnect(t *testing.T) {
	r := needRT(t)
	l := newRTLoop(t, r, r.queue(t, "connect"))
	g := r.agent()
	g.queue = l.queue
	ref, err := g.MakeTicket(t.Context(), "Towels (phoned in)", "The guest called for towels.")
	if err != nil {
		t.Fatal(err)
	}
	const before, after, guest = "Called the guest back.", "Blue towels are on the way.", "Could they be blue?"
	if err := g.Reply(t.Context(), ref, "", before); err != nil {
		t.Fatal(err)
	}
	id := l.Request("housekeeping", "Two towels to room 214")
	l.Guest(id, guest)
	l.Connect(id, string(ref))
	l.Settle()
	if got := l.ref(id); got != ref {
		t.Fatalf("request %s is mirrored in RT ticket %s, want %s, the one made by hand", id, got, ref)
	}
	n := 0
	for _, m := range g.thread(t, ref) {
		if strings.Contains(m.text, guest) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the guest's message is %d times in the ticket, want 1", n)
	}
	if err := g.Reply(t.Context(), ref, "", after); err != nil {
		t.Fatal(err)
	}
	l.Settle()
	sent := map[string]int{}
	for _, m := range l.Upstream(id).Messages {
		sent[m.Body]++
	}
	if sent[before] != 0 || sent[after] != 1 {
		t.Errorf("upstream holds the reply before the connect %d times (want 0), the one after %d times (want 1)", sent[before], sent[after])
	}
}
