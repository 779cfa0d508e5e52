package sync

import (
	"fmt"
	"hash/fnv"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
)

// TestReconcileSpread: on a fake clock stepping by the schedule's
// interval, 100 open tickets are each reconciled once per reconcile
// interval, the reconciles spread over the cycles instead of coming in a
// burst; an adapter's pace bounds a cycle's reconciles.
func TestReconcileSpread(t *testing.T) {
	e := planEngine(t, "")
	pol := e.pol // 30s cycles, a reconcile interval of 1h
	tickets := make([]state.Ticket, 100)
	for i := range tickets {
		tickets[i] = state.Ticket{ID: fmt.Sprintf("%08x-0000-4000-8000-%012d", i*7919, i), Ref: "r", UpstreamStatus: "new",
			AgreedStatus: "new", CreatedAt: planNow}
	}
	last := map[string]time.Time{}
	most, total := 0, 0
	const cycles = 3 * 120 // three hours
	for c := range cycles {
		now := planNow.Add(time.Duration(c+1) * pol.interval)
		picked := pickReconciles(tickets, pol, now, 0)
		most, total = max(most, len(picked)), total+len(picked)
		for i := range tickets {
			tk := &tickets[i]
			if !picked[tk.ID] {
				continue
			}
			if prev, ok := last[tk.ID]; ok && (now.Sub(prev) > pol.reconcile+pol.interval || now.Sub(prev) < pol.reconcile-pol.interval) {
				t.Errorf("ticket %s reconciled %s after its last, want about %s", tk.ID, now.Sub(prev), pol.reconcile)
			}
			last[tk.ID] = now
			tk.ReconciledAt = now
		}
	}
	if len(last) != len(tickets) {
		t.Fatalf("%d of %d tickets reconciled", len(last), len(tickets))
	}
	if total > 3*len(tickets) {
		t.Errorf("%d reconciles in three hours, want about %d", total, 3*len(tickets))
	}
	if most > 6 {
		t.Errorf("up to %d reconciles in one cycle: not spread", most)
	}
	t.Logf("%d reconciles over %d cycles of %s, at most %d in one", total, cycles, pol.interval, most)

	// Every ticket due at once (a reconcile asked for each): the pace
	// bounds the cycle, the asked-for ones first.
	for i := range tickets {
		tickets[i].ReconcileSoon = i%2 == 0
	}
	picked := pickReconciles(tickets, pol, planNow, 5)
	if len(picked) != 5 {
		t.Fatalf("%d reconciles within a budget of 5", len(picked))
	}
	for id := range picked {
		for _, tk := range tickets {
			if tk.ID == id && !tk.ReconcileSoon {
				t.Errorf("ticket %s picked before the ones asked for", id)
			}
		}
	}
}

// TestMergeStatus: the three-way decision.
func TestMergeStatus(t *testing.T) {
	m := adapters.StatusMap{
		ToHelpdesk:   map[guestapi.Status]string{"new": "new", "assigned": "open", "in_progress": "working", "done": "solved", "completed": "solved", "confirmed": "solved", "cancelled": "cancelled"},
		FromHelpdesk: map[string]guestapi.Status{"new": "new", "open": "assigned", "working": "in_progress", "solved": "done", "cancelled": "cancelled"},
	}
	t0, t1 := planNow, planNow.Add(time.Minute)
	hd := func(s string, at time.Time) adapters.FoundStatus { return m.Current(s, at) }
	for _, c := range []struct {
		name             string
		agreed, upstream guestapi.Status
		upAt             time.Time
		hd               adapters.FoundStatus
		want             statusMerge
	}{
		{"in sync", "assigned", "assigned", t0, hd("open", t0), statusMerge{outcome: ReconcileInSync}},
		{"a shared helpdesk status", "completed", "completed", t0, hd("solved", t1), statusMerge{outcome: ReconcileInSync}},
		{"helpdesk moved", "new", "new", t0, hd("working", t1), statusMerge{outcome: ReconcileCarriedUp, up: "in_progress"}},
		{"upstream moved", "new", "assigned", t1, hd("new", t0), statusMerge{outcome: ReconcileCarriedDown, down: "assigned"}},
		{"both alike", "new", "in_progress", t1, hd("working", t0), statusMerge{outcome: ReconcileAgreed, agreed: "in_progress"}},
		{"helpdesk later", "new", "assigned", t0, hd("working", t1), statusMerge{outcome: ReconcileConflict, up: "in_progress", conflict: true}},
		{"upstream later", "new", "cancelled", t1, hd("working", t0), statusMerge{outcome: ReconcileConflict, down: "cancelled", conflict: true}},
		{"first, alike", "", "assigned", t0, hd("open", t0), statusMerge{outcome: ReconcileAgreed, agreed: "assigned"}},
		{"first, apart: nothing done", "", "assigned", t0, hd("working", t1), statusMerge{outcome: ReconcileUnknown}},
		{"helpdesk cannot tell", "new", "assigned", t1, adapters.NoStatus(), statusMerge{outcome: ReconcileInSync}},
		{"unmapped helpdesk status", "new", "new", t0, hd("on hold", t1), statusMerge{outcome: ReconcileInSync}},
	} {
		if got := mergeStatus(c.agreed, time.Time{}, c.upstream, c.upAt, c.hd); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	// An agreement recorded at t1 (the agent's change carried upstream):
	// a helpdesk status stamped a second or more before it is the
	// bridge's own write that crossed the change, and the agreed status
	// goes back there; one stamped in the agreement's second, or after
	// it, is a move: helpdesks stamp whole seconds, so an agent's change
	// made just after the agreement may carry its second.
	for _, c := range []struct {
		name string
		hd   adapters.FoundStatus
		want statusMerge
	}{
		{"helpdesk older than the agreement", hd("open", t0), statusMerge{outcome: ReconcileCarriedDown, down: "done"}},
		{"helpdesk a second older than the agreement", hd("open", t1.Add(-time.Second)), statusMerge{outcome: ReconcileCarriedDown, down: "done"}},
		{"helpdesk stamped in the agreement's second", hd("open", t1), statusMerge{outcome: ReconcileCarriedUp, up: "assigned"}},
		{"helpdesk moved after the agreement", hd("open", t1.Add(time.Second)), statusMerge{outcome: ReconcileCarriedUp, up: "assigned"}},
		{"helpdesk agrees", hd("solved", t0), statusMerge{outcome: ReconcileInSync}},
	} {
		if got := mergeStatus("done", t1, "done", t1, c.hd); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	// An agreement recorded within the second the helpdesk stamped.
	if got, want := mergeStatus("done", t1.Add(900*time.Millisecond), "done", t1, hd("open", t1)), (statusMerge{outcome: ReconcileCarriedUp, up: "assigned"}); got != want {
		t.Errorf("helpdesk stamped in the second of the agreement, recorded late in it: %+v, want %+v", got, want)
	}
	// Upstream moved to where the helpdesk, older than the agreement,
	// already is: agreed, nothing to write.
	if got, want := mergeStatus("in_progress", t1, "assigned", t1, hd("open", t0)), (statusMerge{outcome: ReconcileAgreed, agreed: "assigned"}); got != want {
		t.Errorf("upstream moved to the stale helpdesk's status: %+v, want %+v", got, want)
	}
}

// TestSlotHashIsFNV: the full-read and reconcile slots hash a ticket's id
// as hash/fnv's New64a did, so that no ticket's slots move; pinned on ids
// of every shape the API has, and on a few fixed answers.
func TestSlotHashIsFNV(t *testing.T) {
	ids := []string{"", "a", "3f2b8c1e-9d4a-4c6b-8e2f-1a7d5c9b0e34", "TKT-000001", "ü\x00\xff", strings.Repeat("x", 300)}
	for _, prefix := range []string{"", "reconcile\x00"} {
		for _, id := range ids {
			h := fnv.New64a()
			h.Write([]byte(prefix + id))
			if got, want := slotHash(prefix, id), h.Sum64(); got != want {
				t.Errorf("slotHash(%q, %q) = %#x, want %#x (hash/fnv)", prefix, id, got, want)
			}
		}
	}
	if got := slotHash("reconcile\x00", "TKT-000001"); got != 0xadfd98bd02493cb0 {
		t.Errorf("slotHash(reconcile, TKT-000001) = %#x: a ticket's reconcile slot moved", got)
	}
}
