package sync

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/memory"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
)

// The planners decide from what was read, without I/O: these tests feed
// them values and look at the plan.

var planNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func planEngine(t *testing.T, backfill string) *Engine {
	t.Helper()
	cfg := DefaultConfig()
	var err error
	if cfg.Backfill, err = ParseBackfill(backfill); err != nil {
		t.Fatal(err)
	}
	p, err := cfg.parse()
	if err != nil {
		t.Fatal(err)
	}
	pol := newPolicy(p)
	return &Engine{cfg: p, pol: pol, hd: memory.New(memory.NewBackend(), memory.Options{})}
}

func TestPlanDiscover(t *testing.T) {
	e := planEngine(t, "assigned")
	id := func(c byte) string { return "0000000" + string(c) + "-0000-4000-8000-000000000000" }
	old := planNow.Add(-48 * time.Hour)
	updated := planNow.Add(-time.Hour)
	in := discoverInput{
		now: planNow, importSince: planNow.Add(-24 * time.Hour),
		tracked: []state.Ticket{
			{ID: id('a'), Ref: "1", UpstreamStatus: "assigned", UpstreamUpdatedAt: updated, NextDue: planNow.Add(time.Minute), DueReason: DueFull},
			{ID: id('b'), Ref: "2", UpstreamStatus: "assigned", UpstreamUpdatedAt: updated, NextDue: planNow.Add(time.Minute), DueReason: DueFull},
			{ID: id('c'), Ref: "3", UpstreamStatus: "done", UpstreamUpdatedAt: updated, NextDue: planNow.Add(20 * time.Hour), DueReason: DueRetired, Retired: true},
			{ID: id('d'), Ref: "4", UpstreamStatus: "new", UpstreamUpdatedAt: updated, NextDue: planNow.Add(2 * time.Hour), DueReason: DueQuiet},
			{ID: id('x'), Ref: "5", UpstreamStatus: "assigned", UpstreamUpdatedAt: updated, NextDue: planNow.Add(time.Minute), DueReason: DueFull},
		},
		listed: byID([]guestapi.Ticket{
			{ID: id('a'), Status: "assigned", UpdatedAt: updated},                  // unchanged
			{ID: id('b'), Status: "in_progress", UpdatedAt: updated},               // status moved, updated_at did not
			{ID: id('c'), Status: "done", UpdatedAt: planNow.Add(-time.Minute)},    // a guest wrote on a retired one
			{ID: id('e'), Status: "new", CreatedAt: old},                           // new: imported
			{ID: id('f'), Status: "assigned", CreatedAt: old},                      // a backfill status: imported
			{ID: id('g'), Status: "done", CreatedAt: old},                          // old and closed: left alone
			{ID: id('h'), Status: "cancelled", CreatedAt: planNow.Add(-time.Hour)}, // made since the start: imported
			{ID: "bad/id", Status: "new"},
		}),
		listOK: true,
	}
	p := e.planDiscover(in)
	if want := []string{id('e'), id('f'), id('h')}; !slices.Equal(p.imports, want) {
		t.Errorf("imports %v, want %v", p.imports, want)
	}
	if want := []string{id('b'), id('c')}; !slices.Equal(p.woken, want) {
		t.Errorf("woken %v, want %v (a list shows them changed)", p.woken, want)
	}
	if !slices.Equal(p.refused, []string{"bad/id"}) {
		t.Errorf("refused %v", p.refused)
	}
	puts := map[string]state.Ticket{}
	for _, tk := range p.puts {
		puts[tk.ID] = tk
	}
	if c := puts[id('c')]; c.Retired || !c.NextDue.Equal(planNow) || c.DueReason != DueUpdated {
		t.Errorf("the retired ticket a list shows changed: %+v", c)
	}
	if d, ok := puts[id('d')]; !ok || d.DueReason != DueFull || d.NextDue.After(planNow.Add(e.cfg.FullReadInterval+e.pol.slack())) {
		t.Errorf("an open ticket due beyond its full-read slot is not brought forward: %+v", d)
	}
	if _, ok := puts[id('a')]; ok {
		t.Error("an unchanged ticket is written")
	}
	if _, ok := puts[id('x')]; ok {
		t.Error("absence from the lists changed a ticket")
	}
	if !p.importSince.IsZero() {
		t.Error("import_since written again")
	}

	in.first, in.importSince = true, time.Time{}
	if p := e.planDiscover(in); !p.importSince.Equal(planNow) || slices.Contains(p.imports, id('h')) {
		t.Errorf("first cycle: import since %s, imports %v", p.importSince, p.imports)
	}
	in.listOK = false
	if p := e.planDiscover(in); !p.importSince.IsZero() {
		t.Error("import_since recorded although a list failed")
	}
}

func TestPlanThread(t *testing.T) {
	at := func(m int) time.Time { return planNow.Add(time.Duration(m) * time.Minute) }
	tk := state.Ticket{ID: "t", Ref: "r", UpstreamStatus: "assigned", HelpdeskStatus: "assigned", UpstreamUpdatedAt: at(0)}
	th := &guestapi.Thread{
		Ticket: guestapi.TicketDetail{ID: "t", Status: "assigned", UpdatedAt: at(5)},
		Messages: []guestapi.Message{
			{ID: "m1", AuthorType: guestapi.AuthorGuest, Body: "old", CreatedAt: at(-10)},
			{ID: "m2", AuthorType: guestapi.AuthorGuest, Body: "new", CreatedAt: at(5)},
			{ID: "m3", AuthorType: guestapi.AuthorStaff, Body: "On my way", VisibleToGuest: true, CreatedAt: at(5)},
			{ID: "m/4", AuthorType: guestapi.AuthorGuest, Body: "bad id", CreatedAt: at(5)},
		},
	}
	pend := []state.Entry{{Kind: state.KindReply, Payload: state.Payload{Body: "On my way ", Visible: true}}}
	p := planThread(tk, th, map[string]bool{"m1": true}, pend)
	if len(p.append) != 1 || p.append[0].UpstreamID != "m2" {
		t.Errorf("append %+v, want m2 only", p.append)
	}
	if !p.held || !slices.Equal(p.refused, []string{"m/4"}) || p.setStatus != "" || !p.active || p.unsignalled {
		t.Errorf("plan %+v", p)
	}

	// The same message while updated_at stayed: no list could show it.
	th.Ticket.UpdatedAt = at(0)
	if p := planThread(tk, th, map[string]bool{"m1": true}, nil); !p.unsignalled {
		t.Error("a new message without a new updated_at is not counted as unsignalled")
	}
	// The first read finds old news.
	first := tk
	first.UpstreamStatus = ""
	if p := planThread(first, th, nil, nil); p.active || p.unsignalled {
		t.Errorf("first read: %+v", p)
	}

	// Status: the newer change wins.
	th.Ticket.Status, th.Ticket.UpdatedAt = "done", at(5)
	hd := []state.Entry{{Kind: state.KindStatus, CreatedAt: at(1), Payload: state.Payload{Status: "in_progress"}}}
	if p := planThread(tk, &guestapi.Thread{Ticket: th.Ticket}, nil, hd); p.setStatus != "done" || len(p.supersede) != 1 {
		t.Errorf("an upstream change after the helpdesk's: %+v", p)
	}
	hd[0].CreatedAt = at(9)
	if p := planThread(tk, &guestapi.Thread{Ticket: th.Ticket}, nil, hd); p.setStatus != "" || len(p.supersede) != 0 {
		t.Errorf("a helpdesk change after the upstream one: %+v", p)
	}
}

func TestPlanCollect(t *testing.T) {
	e := planEngine(t, "")
	e.cfg.up.Notes = false
	known := &state.Ticket{ID: "k", Ref: "R1", NextDue: planNow.Add(time.Hour)}
	in := collectInput{
		now: planNow,
		events: []adapters.Event{
			{ID: "e1", UpstreamTicketID: "k", Kind: adapters.EventReply, Body: "hello"},
			{ID: "e2", UpstreamTicketID: "k", Kind: adapters.EventNote, Body: "internal"},
			{ID: "e3", UpstreamTicketID: "k", Kind: adapters.EventStatus, Status: "done", At: planNow.Add(-time.Minute)},
			{ID: "e4", UpstreamTicketID: "lost", Kind: adapters.EventReply, Body: "after a state loss"},
			{ID: "e5", UpstreamTicketID: "lost", Kind: adapters.EventReply, Body: "delivered before"},
			{ID: "e6", UpstreamTicketID: "failed", Kind: adapters.EventReply, Body: "lookup failed"},
			{ID: "e7", UpstreamTicketID: "k", Kind: "weird"},
			{ID: "e0", UpstreamTicketID: "k", Kind: adapters.EventReply, Body: "journaled already"},
		},
		tickets:   map[string]*state.Ticket{"k": known, "lost": nil, "failed": nil},
		journaled: map[string]bool{"e0": true},
		adoptions: map[string]adoption{"lost": {found: true, ref: "R2", f: adapters.Found{Ref: "R2", Sent: map[string]string{"e5": "m5"}}}},
	}
	p := e.planCollect(in)
	var ids []string
	for _, en := range p.entries {
		ids = append(ids, en.EventID)
		if en.IdempotencyKey != IdempotencyKey("memory", adapters.Ref(en.Ref), en.EventID) {
			t.Errorf("entry %s: key %s", en.EventID, en.IdempotencyKey)
		}
	}
	if !slices.Equal(ids, []string{"e1", "e3", "e4"}) {
		t.Errorf("entries %v, want e1 e3 e4 (the note is off, e5 was delivered, e6 waits, e7 is malformed, e0 journaled)", ids)
	}
	if p.complete || p.skipped != 1 || p.adopted != 1 || len(p.refused) != 1 {
		t.Errorf("plan: complete %v, skipped %d, adopted %d, refused %v", p.complete, p.skipped, p.adopted, p.refused)
	}
	byID := map[string]state.Ticket{}
	for _, tk := range p.puts {
		byID[tk.ID] = tk
	}
	if k := byID["k"]; k.HelpdeskStatus != "done" || !k.NextDue.Equal(planNow) || k.DueReason != DueEvent {
		t.Errorf("ticket k after its events: %+v", k)
	}
	if l := byID["lost"]; l.Ref != "R2" {
		t.Errorf("the lost ticket is not adopted: %+v", l)
	}
	if _, ok := byID["failed"]; ok {
		t.Error("a ticket whose lookup failed is written")
	}
	if known.NextDue.Equal(planNow) {
		t.Error("the plan changed what was read")
	}
}

// TestByIDKeepsTheLaterUpdate: a ticket that changed between two list
// requests shows twice; the lists of a cycle keep its later update, and
// of two listings of one update the one listed last.
func TestByIDKeepsTheLaterUpdate(t *testing.T) {
	t1, t2 := planNow.Add(-time.Hour), planNow
	got := byID([]guestapi.Ticket{
		{ID: "b", Status: "new", UpdatedAt: t2},
		{ID: "a", Status: "assigned", UpdatedAt: t2},
		{ID: "c", Status: "new", UpdatedAt: t1},
		{ID: "a", Status: "new", UpdatedAt: t1},
		{ID: "c", Status: "done", UpdatedAt: t1},
	})
	want := []guestapi.Ticket{
		{ID: "a", Status: "assigned", UpdatedAt: t2},
		{ID: "b", Status: "new", UpdatedAt: t2},
		{ID: "c", Status: "done", UpdatedAt: t1},
	}
	if !slices.EqualFunc(got, want, func(x, y guestapi.Ticket) bool {
		return x.ID == y.ID && x.Status == y.Status && x.UpdatedAt.Equal(y.UpdatedAt)
	}) {
		t.Errorf("byID = %+v, want %+v", got, want)
	}
	if l, ok := findListed(got, "b"); !ok || l.Status != "new" {
		t.Errorf("findListed(b) = %+v, %v", l, ok)
	}
	if _, ok := findListed(got, "d"); ok {
		t.Error("findListed found d, which no list showed")
	}
}

// TestPlanReads checks which tickets a cycle reads and in what order:
// imports first, then the longest waiting, by id at a tie. It also
// checks that picking six tickets of a hundred copies each record once,
// into a slice of their number: grown by appending, the records were
// copied over and over (four slices for six records).
func TestPlanReads(t *testing.T) {
	e := planEngine(t, "assigned")
	later := planNow.Add(time.Hour)
	var tracked []state.Ticket
	for i := range 100 {
		tracked = append(tracked, state.Ticket{ID: fmt.Sprintf("t-%03d", i), Ref: "r", NextDue: later})
	}
	tracked[90].NextDue = planNow.Add(-time.Minute) // due
	tracked[40].NextDue = planNow.Add(-time.Hour)   // due, waited longest
	tracked[70].Ref = ""                            // to import
	tracked[70].NextDue = planNow
	tracked[10].NextDue = planNow.Add(-time.Minute) // due, ties with 90
	waiting := map[string]bool{"t-020": true, "t-030": true}
	tracked[30].Attempts = 1 // backing off: its status change waits
	recon := map[string]bool{"t-050": true}

	due := planReads(tracked, waiting, recon, e.pol, planNow)
	var got []string
	for _, d := range due {
		got = append(got, d.ID)
	}
	want := []string{"t-070", "t-040", "t-010", "t-090", "t-020", "t-050"}
	if !slices.Equal(got, want) {
		t.Fatalf("planReads = %v, want %v", got, want)
	}
	if due[0].Ref != "" || !due[1].NextDue.Equal(planNow.Add(-time.Hour)) {
		t.Errorf("planReads returned records other than the tracked ones: %+v", due[:2])
	}
	// Its capacity says how the slice was made (counting allocations
	// would count those of other tests' goroutines too): grown by
	// appending, six records had room for eight.
	if cap(due) != len(due) {
		t.Errorf("planReads returned %d records in room for %d: want a slice of their number, each copied once", len(due), cap(due))
	}
	if due := planReads(tracked[:0], nil, nil, e.pol, planNow); due != nil {
		t.Errorf("planReads of no tickets = %v, want nil", due)
	}
}
