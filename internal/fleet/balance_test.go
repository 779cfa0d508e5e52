package fleet

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/lease"
	"github.com/ticketbridge/ticketbridge/state"
)

// decide hands over, takes, or leaves each hotel of a database by what
// this replica sees of it, one case per branch.
func TestDecide(t *testing.T) {
	const ttl = 30 * time.Second
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	orphaned := 2 * lease.Tick(ttl) // free long enough for anyone to take
	mine := func(name string) hotelView { return hotelView{name: name, owner: "me", wanted: true} }
	theirs := func(name string) hotelView { return hotelView{name: name, owner: "b", wanted: true} }
	with := func(h hotelView, set func(*hotelView)) hotelView { set(&h); return h }

	cases := []struct {
		name    string
		one     bool // a fleet of one
		hotels  []hotelView
		holders []holderView
		want    plan
	}{{
		name:   "mine, not running: taken",
		hotels: []hotelView{mine("alpha")},
		want:   plan{take: []string{"alpha"}},
	}, {
		name:   "mine and running: left as it is",
		hotels: []hotelView{with(mine("alpha"), func(h *hotelView) { h.here = true })},
	}, {
		name:   "another's and running here: handed over",
		hotels: []hotelView{with(theirs("alpha"), func(h *hotelView) { h.here = true })},
		want: plan{
			handOver:  []handover{{hotel: "alpha", to: "b"}},
			elsewhere: map[string]string{"alpha": "handed over to replica b"},
		},
	}, {
		name:   "mine but its file is gone: handed over",
		hotels: []hotelView{with(mine("alpha"), func(h *hotelView) { h.here, h.wanted = true, false })},
		want: plan{
			handOver:  []handover{{hotel: "alpha", to: "me"}},
			elsewhere: map[string]string{"alpha": "handed over to replica me"},
		},
	}, {
		name:   "not running, its file gone: nothing",
		hotels: []hotelView{with(mine("alpha"), func(h *hotelView) { h.wanted = false })},
	}, {
		name:   "another's, stopping here, lease not taken over yet",
		hotels: []hotelView{with(theirs("alpha"), func(h *hotelView) { h.handing = true })},
		want:   plan{elsewhere: map[string]string{"alpha": "handed over to replica b"}},
	}, {
		name:    "another's, stopping here, its replica took it over",
		hotels:  []hotelView{with(theirs("alpha"), func(h *hotelView) { h.handing = true })},
		holders: []holderView{{Owner: state.Owner{Hotel: "alpha", Replica: "b", Live: true}}},
		want: plan{
			elsewhere:   map[string]string{"alpha": "synced by replica b"},
			clearBroken: []string{"alpha"},
		},
	}, {
		name:    "another's, held by it",
		hotels:  []hotelView{theirs("alpha")},
		holders: []holderView{{Owner: state.Owner{Hotel: "alpha", Replica: "b", Live: true}}},
		want: plan{
			elsewhere:   map[string]string{"alpha": "synced by replica b"},
			clearBroken: []string{"alpha"},
		},
	}, {
		name:   "another's, never held: left to it",
		hotels: []hotelView{theirs("alpha")},
		want:   plan{elsewhere: map[string]string{"alpha": "waiting for a replica to take its lease"}},
	}, {
		name:    "another's, free only a moment: left to it",
		hotels:  []hotelView{theirs("alpha")},
		holders: []holderView{{Owner: state.Owner{Hotel: "alpha", Replica: "b", Free: orphaned - time.Second}}},
		want:    plan{elsewhere: map[string]string{"alpha": "waiting for a replica to take its lease"}},
	}, {
		name:    "another's, orphaned: taken",
		hotels:  []hotelView{theirs("alpha")},
		holders: []holderView{{Owner: state.Owner{Hotel: "alpha", Replica: "b", Free: orphaned}}},
		want:    plan{take: []string{"alpha"}},
	}, {
		name:   "mine, still stopping here: not taken yet",
		hotels: []hotelView{with(mine("alpha"), func(h *hotelView) { h.handing = true })},
		want:   plan{elsewhere: map[string]string{"alpha": "handing over"}},
	}, {
		name:   "mine, failed to start a moment ago: left to the others",
		hotels: []hotelView{with(mine("alpha"), func(h *hotelView) { h.backoff = now.Add(time.Minute) })},
		want:   plan{elsewhere: map[string]string{"alpha": "could not start on this replica; left to the others until 12:01:00"}},
	}, {
		name:   "mine, failed to start long ago: taken",
		hotels: []hotelView{with(mine("alpha"), func(h *hotelView) { h.backoff = now })},
		want:   plan{take: []string{"alpha"}},
	}, {
		name:    "mine, another still holds it: waits for its handover",
		hotels:  []hotelView{mine("alpha")},
		holders: []holderView{{Owner: state.Owner{Hotel: "alpha", Replica: "b", Live: true}}},
		want: plan{
			elsewhere:   map[string]string{"alpha": "synced by replica b"},
			clearBroken: []string{"alpha"},
		},
	}, {
		name:    "mine, its lease lapsed: taken",
		hotels:  []hotelView{mine("alpha")},
		holders: []holderView{{Owner: state.Owner{Hotel: "alpha", Replica: "b"}}},
		want:    plan{take: []string{"alpha"}},
	}, {
		name:    "held here by this replica: no start failure cleared",
		hotels:  []hotelView{with(mine("alpha"), func(h *hotelView) { h.here = true })},
		holders: []holderView{{Owner: state.Owner{Hotel: "alpha", Replica: "me", Live: true}, here: true}},
	}, {
		name:    "running here while another's lease shows live: no start failure cleared",
		hotels:  []hotelView{with(mine("alpha"), func(h *hotelView) { h.here = true })},
		holders: []holderView{{Owner: state.Owner{Hotel: "alpha", Replica: "b", Live: true}, here: true}},
	}, {
		name:   "several: each decided on its own, in the order given",
		hotels: []hotelView{mine("alpha"), with(theirs("bravo"), func(h *hotelView) { h.here = true }), theirs("charlie"), mine("delta")},
		holders: []holderView{
			{Owner: state.Owner{Hotel: "charlie", Replica: "b", Live: true}},
			{Owner: state.Owner{Hotel: "bravo", Replica: "me", Live: true}, here: true},
		},
		want: plan{
			take:     []string{"alpha", "delta"},
			handOver: []handover{{hotel: "bravo", to: "b"}},
			elsewhere: map[string]string{
				"bravo":   "handed over to replica b",
				"charlie": "synced by replica b",
			},
			clearBroken: []string{"charlie"},
		},
	}, {
		// A fleet of one: the hotel is the live holder's, else this
		// replica's, whatever the share-out says.
		name:    "one: assigned to a replica that joined, held here: kept",
		one:     true,
		hotels:  []hotelView{with(theirs("alpha"), func(h *hotelView) { h.here = true })},
		holders: []holderView{{Owner: state.Owner{Hotel: "alpha", Replica: "me", Live: true}, here: true}},
	}, {
		name:    "one: another daemon holds it: stands by",
		one:     true,
		hotels:  []hotelView{mine("alpha")},
		holders: []holderView{{Owner: state.Owner{Hotel: "alpha", Replica: "b", Live: true}}},
		want: plan{
			elsewhere:   map[string]string{"alpha": "synced by replica b"},
			clearBroken: []string{"alpha"},
			standBy:     "b",
		},
	}, {
		name:   "one: assigned to another, free: taken at once",
		one:    true,
		hotels: []hotelView{theirs("alpha")},
		want:   plan{take: []string{"alpha"}},
	}, {
		name:    "one: its holder stopped a moment ago: taken at once",
		one:     true,
		hotels:  []hotelView{theirs("alpha")},
		holders: []holderView{{Owner: state.Owner{Hotel: "alpha", Replica: "b", Free: time.Second}}},
		want:    plan{take: []string{"alpha"}},
	}, {
		name:    "one: running here while another took the lease over: handed to it",
		one:     true,
		hotels:  []hotelView{with(mine("alpha"), func(h *hotelView) { h.here = true })},
		holders: []holderView{{Owner: state.Owner{Hotel: "alpha", Replica: "b", Live: true}, here: true}},
		want: plan{
			handOver:  []handover{{hotel: "alpha", to: "b"}},
			elsewhere: map[string]string{"alpha": "handed over to replica b"},
			standBy:   "b",
		},
	}, {
		name:    "one: lost here and still stopping: stands by",
		one:     true,
		hotels:  []hotelView{with(mine("alpha"), func(h *hotelView) { h.handing = true })},
		holders: []holderView{{Owner: state.Owner{Hotel: "alpha", Replica: "b", Live: true}}},
		want: plan{
			elsewhere:   map[string]string{"alpha": "synced by replica b"},
			clearBroken: []string{"alpha"},
			standBy:     "b",
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := decide(view{me: "me", hotels: tc.hotels, holders: tc.holders, now: now, ttl: ttl, one: tc.one})
			if !slices.Equal(got.take, tc.want.take) {
				t.Errorf("take %q, want %q", got.take, tc.want.take)
			}
			if !slices.Equal(got.handOver, tc.want.handOver) {
				t.Errorf("hand over %v, want %v", got.handOver, tc.want.handOver)
			}
			if got.elsewhere == nil {
				t.Error("elsewhere is nil; nil tells the keeper the fleet is stopping")
			}
			if !maps.Equal(got.elsewhere, tc.want.elsewhere) {
				t.Errorf("elsewhere %q, want %q", got.elsewhere, tc.want.elsewhere)
			}
			if !slices.Equal(got.clearBroken, tc.want.clearBroken) {
				t.Errorf("clear broken %q, want %q", got.clearBroken, tc.want.clearBroken)
			}
			if got.standBy != tc.want.standBy {
				t.Errorf("stand by for %q, want %q", got.standBy, tc.want.standBy)
			}
		})
	}
}
