package sync_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// TestPriorityConfig: TICKETBRIDGE_PRIORITY is read once, with the
// configuration; unset, empty and off are all off; each error names the
// variable and what is wrong; check's rules line shows the rule when on.
func TestPriorityConfig(t *testing.T) {
	good := []struct{ in, want string }{
		{"", "off"},
		{"off", "off"},
		{" OFF ", "off"},
		{"default=normal", "default=normal"},
		{"due<30m=urgent, default=Normal ,dept:maintenance=high,due<2h=high,", "default=normal,dept:maintenance=high,due<2h=high,due<30m=urgent"},
		{"default=low,due<1h30m=high", "default=low,due<1h30m=high"},
	}
	for _, g := range good {
		c, err := loadRules(t, map[string]string{"TICKETBRIDGE_PRIORITY": g.in})
		if err != nil {
			t.Errorf("%q: %v", g.in, err)
			continue
		}
		if got := c.Priority.String(); got != g.want {
			t.Errorf("%q reads as %q, want %q", g.in, got, g.want)
		}
	}
	if c, err := loadRules(t, nil); err != nil || c.Priority.On() {
		t.Errorf("unset: %v, on %v; want off", err, c.Priority.On())
	}
	bad := []struct{ in, want string }{
		{"due<2h=high", "names no default"},
		{"default=normal,off", "off alone"},
		{"default=medium", `unknown priority "medium"`},
		{"default=normal,default=high", "default twice"},
		{"default=normal,dept:spa=high,dept:spa=low", `department "spa" twice`},
		{"default=normal,dept:=high", "one department code after dept:"},
		{"default=normal,due<2 hours=high", `"2 hours" is not a positive duration`},
		{"default=normal,due<-5m=high", "not a positive duration"},
		{"default=normal,due<2h=high,due<120m=urgent", "due<2h twice"},
		{"default=normal,due>2h=high", `unknown item "due>2h=high"`},
		{"normal", `item "normal" has no '='`},
	}
	for _, b := range bad {
		_, err := loadRules(t, map[string]string{"TICKETBRIDGE_PRIORITY": b.in})
		if err == nil {
			t.Errorf("%q: no error", b.in)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "TICKETBRIDGE_PRIORITY") || !strings.Contains(msg, b.want) {
			t.Errorf("%q: error %q; want it to name TICKETBRIDGE_PRIORITY and say %q", b.in, msg, b.want)
		}
	}
	c := tbsync.DefaultConfig()
	c.Priority = tbsync.MustPriorityRule("default=normal,due<2h=high")
	if got, want := tbsync.RulesText(c), "nothing left out; upstream: replies, notes, status; priority: default=normal,due<2h=high"; got != want {
		t.Errorf("RulesText: %q, want %q", got, want)
	}
}

// newPriorityTicket creates a housekeeping request in Org due at due
// (zero: none) and returns its id.
func (e *env) newPriorityTicket(desc string, due time.Time) string {
	e.t.Helper()
	nt := refserver.NewTicket{Department: "housekeeping", TaskDescription: desc}
	if !due.IsZero() {
		nt.TargetDueAt = &due
	}
	tv, err := e.ts.Server.CreateTicket(e.ts.Org, nt)
	if err != nil {
		e.t.Fatal(err)
	}
	return tv.ID
}

// TestPriorityByDepartment: a department's own priority is set at
// creation and follows the request when the hotel moves it, once.
func TestPriorityByDepartment(t *testing.T) {
	e := newEnv(t)
	e.cfg.Priority = tbsync.MustPriorityRule("default=normal,dept:maintenance=high")
	id := e.newPriorityTicket("Towels, room 12", time.Time{})
	e.quiesce()
	if got := e.held(id).Fields.Priority; got != adapters.PriorityNormal {
		t.Fatalf("a housekeeping request's priority is %q, want the default, normal", got)
	}
	e.clock.Advance(time.Second)
	if err := e.ts.Server.SetDepartment(id, "maintenance"); err != nil {
		t.Fatal(err)
	}
	before := e.held(id).Updates
	if r := e.tick(); r.FieldsUpdated != 1 {
		t.Fatalf("the cycle after a move to maintenance: %s; want its fields updated", r)
	}
	for range 3 {
		e.tick()
	}
	got := e.held(id)
	if got.Fields.Priority != adapters.PriorityHigh || got.Fields.Department != "maintenance" {
		t.Errorf("after the move: department %q, priority %q; want maintenance, high", got.Fields.Department, got.Fields.Priority)
	}
	if n := got.Updates - before; n != 1 {
		t.Errorf("the move made %d updates, want 1 (department and priority together)", n)
	}
}

// TestPriorityRisesAsTheDueDateNears: with no change on the platform, a
// request's priority rises at the first cycle its due date is closer than
// each threshold, once each; the read that carries it is the one the
// threshold made due, and the quiet cycles between write nothing.
func TestPriorityRisesAsTheDueDateNears(t *testing.T) {
	e := newQuietEnv(t)
	rule := "default=normal,due<2h=high,due<30m=urgent"
	e.cfg.Priority = tbsync.MustPriorityRule(rule)
	due := start.Add(3*time.Hour + 17*time.Second) // not on the cycles' grid
	id := e.newPriorityTicket("Late checkout, room 9", due)
	e.quiesce()
	if got := e.held(id).Fields.Priority; got != adapters.PriorityNormal {
		t.Fatalf("three hours before its due date the priority is %q, want normal", got)
	}
	// Read at least once since its import (a full read's slot), the
	// ticket waits for the first threshold: due then, not sooner.
	e.clock.Advance(15 * time.Minute)
	e.cycle()
	if rec := e.record(id); rec.DueReason != tbsync.DuePriority || !rec.NextDue.Equal(due.Add(-2*time.Hour).Truncate(time.Second).Add(time.Second)) {
		// A full read's slot may come first; then the threshold is
		// the one after it.
		if rec.DueReason != tbsync.DueFull || !rec.NextDue.Before(due.Add(-2*time.Hour)) {
			t.Fatalf("the ticket is due %s (%s); want at its first threshold, %s", rec.NextDue, rec.DueReason, due.Add(-2*time.Hour))
		}
	}
	want := func(now time.Time) adapters.Priority {
		switch left := due.Sub(now); {
		case left < 30*time.Minute:
			return adapters.PriorityUrgent
		case left < 2*time.Hour:
			return adapters.PriorityHigh
		}
		return adapters.PriorityNormal
	}
	lastStored := func() time.Time {
		t.Helper()
		var s time.Time
		if err := e.store.View(t.Context(), func(tx *state.Tx) error {
			c, _, err := tx.LastCycle()
			s = c.Start
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	updates, carried, quietChecked := e.held(id).Updates, 0, 0
	prevQuiet := false
	for e.clock.Now().Before(due.Add(10 * time.Minute)) {
		before, stored := e.store.Commits(), lastStored()
		r := e.tick()
		now := e.clock.Now()
		p := want(now)
		if got := e.held(id).Fields.Priority; got != p {
			t.Fatalf("at %s (%s before the due date) the priority is %q, want %q", now, due.Sub(now), got, p)
		}
		if r.FieldsUpdated > 0 {
			carried++
			if p == want(now.Add(-30*time.Second)) {
				t.Errorf("at %s fields were updated with no threshold passed: %s", now, r)
			}
		}
		quiet := r.Refreshed == 0 && len(r.Reconcile) == 0
		if quiet && prevQuiet && lastStored().Equal(stored) {
			quietChecked++
			if n := e.store.Commits() - before; n != 0 {
				t.Fatalf("at %s a quiet cycle after a quiet one committed %d writes: %s", now, n, r)
			}
		}
		prevQuiet = quiet
	}
	if n := e.held(id).Updates - updates; n != 2 || carried != 2 {
		t.Errorf("%d updates of the helpdesk ticket in %d cycles, want 2 (high, then urgent)", n, carried)
	}
	if quietChecked < 100 {
		t.Errorf("only %d quiet cycles checked", quietChecked)
	}
}

// TestPriorityOffLeavesTheHelpdeskAlone: with no rule (the default), the
// helpdesk's priority is never written, whatever the due date, and the
// priority the team set stays through field updates.
func TestPriorityOffLeavesTheHelpdeskAlone(t *testing.T) {
	e := newEnv(t)
	id := e.newPriorityTicket("Iron and board, room 3", start.Add(20*time.Minute))
	e.quiesce()
	if got := e.held(id).Fields.Priority; got != "" {
		t.Fatalf("with no rule the bridge set priority %q", got)
	}
	mine := adapters.Fields{Priority: adapters.PriorityLow}
	if err := e.backend.EditFields(e.ref(id), "Anna", adapters.FieldSet(adapters.FieldPriority), mine); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	if err := e.ts.Server.SetDescription(id, "Iron and board, room 4"); err != nil {
		t.Fatal(err)
	}
	e.tick()
	for range 4 {
		e.clock.Advance(time.Hour)
		e.cycle()
	}
	got := e.held(id).Fields
	if got.Title != "Iron and board, room 4" || got.Priority != adapters.PriorityLow {
		t.Errorf("title %q, priority %q; want the new title and the team's priority, low", got.Title, got.Priority)
	}
}

// TestPriorityAgentsLeftAlone: a priority an agent set by hand stays
// through reads, reconciles and changes of other fields, until the
// derived priority changes; then the derived one is written.
func TestPriorityAgentsLeftAlone(t *testing.T) {
	e := newEnv(t)
	e.cfg.Priority = tbsync.MustPriorityRule("default=normal,due<1h=urgent")
	due := start.Add(6 * time.Hour)
	id := e.newPriorityTicket("Crib, room 118", due)
	e.quiesce()
	mine := adapters.Fields{Priority: adapters.PriorityLow}
	if err := e.backend.EditFields(e.ref(id), "Anna", adapters.FieldSet(adapters.FieldPriority), mine); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.clock.Advance(time.Hour) // reads and reconciles come by
		e.cycle()
	}
	e.clock.Advance(time.Second)
	if err := e.ts.Server.SetComment(id, ptr("Twins: two cribs.")); err != nil {
		t.Fatal(err)
	}
	e.tick()
	if got := e.held(id).Fields; got.Priority != adapters.PriorityLow || got.Comment != "Twins: two cribs." {
		t.Fatalf("before the threshold: priority %q, comment %q; want the agent's low and the new comment", got.Priority, got.Comment)
	}
	for e.clock.Now().Before(due.Add(-time.Hour)) {
		e.tick()
	}
	e.tick()
	if got := e.held(id).Fields.Priority; got != adapters.PriorityUrgent {
		t.Errorf("within the hour before its due date the priority is %q, want urgent", got)
	}
}

// TestPriorityOfAClosedRequestStays: a request closed before its due date
// keeps the priority carried: a deadline passing after the work is done
// writes nothing.
func TestPriorityOfAClosedRequestStays(t *testing.T) {
	e := newEnv(t)
	e.cfg.Priority = tbsync.MustPriorityRule("default=normal,due<1h=urgent")
	due := start.Add(2 * time.Hour)
	id := e.newPriorityTicket("Extra blanket, room 5", due)
	e.quiesce()
	e.clock.Advance(time.Second)
	if err := e.ts.Server.SetStatus(id, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	e.quiesce()
	before := e.held(id).Updates
	for range 4 {
		e.clock.Advance(time.Hour)
		e.cycle()
	}
	if got := e.held(id); got.Fields.Priority != adapters.PriorityNormal || got.Updates != before {
		t.Errorf("closed, past its due date: priority %q after %d updates; want normal, none", got.Fields.Priority, got.Updates-before)
	}
}
