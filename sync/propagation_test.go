package sync_test

import (
	"testing"
	"time"

	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

func TestHistogram(t *testing.T) {
	var h tbsync.Histogram
	if _, ok := h.Quantile(0.5); ok || h.Count() != 0 {
		t.Fatal("an empty histogram has a quantile")
	}
	for _, d := range []time.Duration{-time.Second, 500 * time.Millisecond, 3 * time.Second, 90 * time.Second, 48 * time.Hour} {
		h.Observe(d)
	}
	if h.Count() != 5 || h.Counts[0] != 2 || h.Counts[1] != 1 || h.Counts[5] != 1 || h.Counts[len(tbsync.PropagationBuckets)] != 1 {
		t.Fatalf("counts %v", h.Counts)
	}
	if q, ok := h.Quantile(0.5); !ok || q != 5*time.Second {
		t.Errorf("median bound %s %t, want 5s", q, ok)
	}
	if q, ok := h.Quantile(1); ok || q != 24*time.Hour {
		t.Errorf("max bound %s %t, want 24h and not exact", q, ok)
	}
	var m tbsync.Histogram
	m.Merge(h)
	m.Merge(h)
	if m.Count() != 10 || m.Sum != 2*h.Sum {
		t.Errorf("merged %v sum %s", m.Counts, m.Sum)
	}
}

// TestPropagationMeasured: the engine measures each direction from the
// message's or event's own time to the receiver's confirmation, and leaves
// a ticket's first read (a possible backfill) out.
func TestPropagationMeasured(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("heating")
	e.clock.Advance(time.Hour)
	if r := e.cycle(); !r.Propagation.IsZero() {
		t.Fatalf("the first read was measured: %+v", r.Propagation)
	}
	e.guest(id, "still cold")
	e.backend.Reply(e.ref(id), "Ana", "A technician is coming.")
	e.clock.Advance(90 * time.Second)
	r := e.cycle()
	if r.Mirrored != 1 || r.Sent != 1 {
		t.Fatalf("cycle: %s", r)
	}
	for name, h := range map[string]tbsync.Histogram{"to helpdesk": r.Propagation.ToHelpdesk, "to guest": r.Propagation.ToGuest} {
		if q, ok := h.Quantile(1); h.Count() != 1 || !ok || q != 2*time.Minute || h.Sum != 90*time.Second {
			t.Errorf("%s: %v sum %s, bound %s; want one of 90s", name, h.Counts, h.Sum, q)
		}
	}
}
