package sync_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/memory"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// platform returns the platform's fields of ticket id as the helpdesk
// should hold them.
func (e *env) platform(id string) adapters.Fields {
	e.t.Helper()
	v := e.upstream(id).Ticket
	f := adapters.Fields{Department: v.Department, Title: v.TaskDescription, Rating: v.GuestRating, Origin: v.Origin}
	if v.TargetDueAt != nil {
		f.Due = *v.TargetDueAt
	}
	if v.Comments != nil {
		f.Comment = *v.Comments
	}
	return f
}

// held returns the helpdesk's copy of ticket id.
func (e *env) held(id string) memory.TicketSnapshot {
	e.t.Helper()
	s, ok := e.backend.Ticket(e.ref(id))
	if !ok {
		e.t.Fatalf("no helpdesk ticket for %s", id)
	}
	return s
}

// bridgeNotes counts the bridge's notes on ticket id that contain text.
func (e *env) bridgeNotes(id, text string) int {
	n := 0
	for _, m := range e.held(id).Messages {
		if m.ByBridge && m.UpstreamID == "" && strings.Contains(m.Body, text) {
			n++
		}
	}
	return n
}

// record returns ticket id's state record.
func (e *env) record(id string) state.Ticket {
	e.t.Helper()
	var t state.Ticket
	if err := e.store.View(e.t.Context(), func(tx *state.Tx) error {
		var err error
		t, _, err = tx.Ticket(id)
		return err
	}); err != nil {
		e.t.Fatal(err)
	}
	return t
}

func ptr[T any](v T) *T { return &v }

// TestFieldsReachTheHelpdeskOnce: each field changed on the platform
// reaches the helpdesk in the next cycle, as one update, and the cycles
// after it write nothing; the rating and comment notes are written once;
// nothing comes back upstream.
func TestFieldsReachTheHelpdeskOnce(t *testing.T) {
	e := newEnv(t)
	due0 := start.Add(5 * time.Hour)
	tv, err := e.ts.Server.CreateTicket(e.ts.Org, refserver.NewTicket{Department: "housekeeping", TaskDescription: "Kettle broken, room 12", TargetDueAt: &due0})
	if err != nil {
		t.Fatal(err)
	}
	id := tv.ID
	e.quiesce()
	if got := e.held(id).Fields; adapters.Diff(got, e.platform(id)) != 0 {
		t.Fatalf("after import the helpdesk holds %+v, want %+v", got, e.platform(id))
	}
	posts := e.posts()
	steps := []struct {
		name string
		do   func() error
		note string
	}{
		{"department", func() error { return e.ts.Server.SetDepartment(id, "maintenance") }, ""},
		{"description", func() error { return e.ts.Server.SetDescription(id, "Kettle and toaster broken, room 12") }, ""},
		{"due date", func() error { return e.ts.Server.SetDue(id, ptr(start.Add(30*time.Hour))) }, ""},
		{"due date cleared", func() error { return e.ts.Server.SetDue(id, nil) }, ""},
		{"rating", func() error { return e.ts.Server.RateTicket(id, ptr(4.0)) }, "Guest rated 4."},
		{"comment", func() error { return e.ts.Server.SetComment(id, ptr("Guest is a regular.")) }, "Guest is a regular."},
	}
	for _, s := range steps {
		e.clock.Advance(time.Second)
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		before := e.held(id).Updates
		r := e.tick()
		if r.FieldsUpdated != 1 || r.Errors != 0 {
			t.Errorf("%s: the next cycle: %s; want one ticket's fields updated", s.name, r)
		}
		got := e.held(id)
		if d := adapters.Diff(got.Fields, e.platform(id)); d != 0 {
			t.Errorf("%s: the helpdesk differs from the platform in %v: %+v", s.name, d, got.Fields)
		}
		if got.Updates != before+1 {
			t.Errorf("%s: %d updates of the helpdesk ticket, want 1", s.name, got.Updates-before)
		}
		for range 3 {
			if r := e.tick(); r.FieldsUpdated != 0 {
				t.Errorf("%s: a later cycle updated fields again: %s", s.name, r)
			}
		}
		if n := e.held(id).Updates; n != before+1 {
			t.Errorf("%s: later cycles made %d more updates", s.name, n-before-1)
		}
		if s.note != "" {
			if n := e.bridgeNotes(id, s.note); n != 1 {
				t.Errorf("%s: %d notes say %q, want 1", s.name, n, s.note)
			}
		}
	}
	if got := e.posts(); got != posts {
		t.Errorf("carrying fields made %d POSTs upstream, want none (nothing echoed)", got-posts)
	}
	e.checkExactlyOnce()
}

// TestFieldsLostState: with the state file lost, the bridge carries each
// ticket's fields once more, which writes nothing where the helpdesk holds
// them already, and the fields changed meanwhile land with their new
// values; no note is written twice.
func TestFieldsLostState(t *testing.T) {
	e := newEnv(t)
	a, b := e.newTicket("Extra pillow"), e.newTicket("Late checkout")
	e.quiesce()
	for _, id := range []string{a, b} {
		if err := e.ts.Server.RateTicket(id, ptr(5.0)); err != nil {
			t.Fatal(err)
		}
		if err := e.ts.Server.SetComment(id, ptr("VIP")); err != nil {
			t.Fatal(err)
		}
	}
	e.quiesce()
	updates := map[string]int{a: e.held(a).Updates, b: e.held(b).Updates}

	e.store.Close()
	e.store = nil
	if err := os.Remove(e.path); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	if err := e.ts.Server.SetDepartment(b, "front_office"); err != nil {
		t.Fatal(err)
	}
	e.open()
	e.quiesce()
	for _, id := range []string{a, b} {
		got := e.held(id)
		if d := adapters.Diff(got.Fields, e.platform(id)); d != 0 {
			t.Errorf("ticket %s after the state was lost: the helpdesk differs in %v: %+v", id, d, got.Fields)
		}
		if n := got.Updates - updates[id]; n > 1 {
			t.Errorf("ticket %s: the lost state cost %d updates, want at most 1", id, n)
		}
		for _, text := range []string{"Guest rated 5.", "VIP"} {
			if n := e.bridgeNotes(id, text); n != 1 {
				t.Errorf("ticket %s: %d notes say %q, want 1", id, n, text)
			}
		}
	}
	if n := e.held(a).Updates - updates[a]; n != 0 {
		t.Errorf("ticket %s, unchanged: the lost state cost %d updates, want none", a, n)
	}
	e.checkExactlyOnce()
}

// TestFieldsHelpdeskEditLeftAlone: a field the team edits in the
// helpdesk stays as they set it, through reads and reconciles, until the
// platform changes that very field; a change of another field does not
// undo it.
func TestFieldsHelpdeskEditLeftAlone(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("Noise from room 301")
	e.quiesce()
	ref := e.ref(id)
	mine := adapters.Fields{Title: "NOISE 301 (call security)"}
	if err := e.backend.EditFields(ref, "Anna", adapters.FieldSet(adapters.FieldTitle), mine); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		e.clock.Advance(time.Hour) // reads and reconciles come by
		e.cycle()
	}
	if got := e.held(id).Fields.Title; got != mine.Title {
		t.Fatalf("the team's title became %q, want it left as %q", got, mine.Title)
	}
	e.clock.Advance(time.Second)
	if err := e.ts.Server.SetDue(id, ptr(start.Add(48*time.Hour))); err != nil {
		t.Fatal(err)
	}
	e.tick()
	if got := e.held(id).Fields; got.Title != mine.Title || !got.Due.Equal(start.Add(48*time.Hour)) {
		t.Fatalf("after a due date change: title %q, due %v; want the team's title and the new date", got.Title, got.Due)
	}
	e.clock.Advance(time.Second)
	if err := e.ts.Server.SetDescription(id, "Noise from room 303"); err != nil {
		t.Fatal(err)
	}
	e.tick()
	if got := e.held(id).Fields.Title; got != "Noise from room 303" {
		t.Errorf("after the platform changed the description the title is %q, want the platform's", got)
	}
}

// TestFieldsWaitForTheBudget: an update the helpdesk's budget puts off
// (adapters.WaitError) is neither a failure nor backed off: the ticket is
// due at the wait's end, and the change lands then.
func TestFieldsWaitForTheBudget(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("Crib for room 118")
	e.quiesce()
	// The wait ends before the ticket's schedule would read it again.
	until := e.clock.Now().Add(45 * time.Second)
	e.backend.Inject(memory.Fault{Op: memory.OpUpdate, Nth: 1, WaitUntil: until})
	if err := e.ts.Server.SetDepartment(id, "maintenance"); err != nil {
		t.Fatal(err)
	}
	r := e.tick()
	if r.Errors != 0 || r.FieldsUpdated != 0 {
		t.Fatalf("a cycle whose update waits: %s; want no error, nothing updated", r)
	}
	rec := e.record(id)
	// Due at the wait's end, unless its schedule (a full read's slot,
	// which the ticket's id places) reads it sooner.
	waits := rec.NextDue.Equal(until) && rec.DueReason == tbsync.DueWait
	if rec.LastError != "" || rec.Attempts != 0 || !(waits || rec.NextDue.Before(until)) {
		t.Fatalf("the waiting ticket's record: error %q, attempts %d, due %s (%s); want no failure, due by %s",
			rec.LastError, rec.Attempts, rec.NextDue, rec.DueReason, until)
	}
	if got := e.held(id).Fields.Department; got != "housekeeping" {
		t.Fatalf("the helpdesk moved to %q while the budget was spent", got)
	}
	for e.clock.Now().Before(until) {
		e.tick()
	}
	e.tick()
	if got := e.held(id).Fields.Department; got != "maintenance" {
		t.Errorf("after the wait the helpdesk ticket is in %q, want maintenance", got)
	}
	if rec := e.record(id); rec.LastError != "" || rec.Attempts != 0 {
		t.Errorf("after the wait: error %q, attempts %d", rec.LastError, rec.Attempts)
	}
}

// frozenUpdates shows every ticket as never updated, listed and read: a
// platform that does not move updated_at when a field changes.
type frozenUpdates struct{ tbsync.API }

func (a frozenUpdates) ListTickets(ctx context.Context, opt guestapi.ListOptions) ([]guestapi.Ticket, error) {
	ts, err := a.API.ListTickets(ctx, opt)
	for i := range ts {
		ts[i].UpdatedAt = ts[i].CreatedAt
	}
	return ts, err
}

func (a frozenUpdates) GetTicket(ctx context.Context, id string) (*guestapi.Thread, error) {
	th, err := a.API.GetTicket(ctx, id)
	if th != nil {
		th.Ticket.UpdatedAt = th.Ticket.CreatedAt
	}
	return th, err
}

// TestFieldsSeenFromTheListsAlone: a field the lists show changed reaches
// the helpdesk in the next cycle even when updated_at did not move, and
// the cycles after it read nothing for it.
func TestFieldsSeenFromTheListsAlone(t *testing.T) {
	e := newEnv(t)
	e.wrapAPI = func(a tbsync.API) tbsync.API { return frozenUpdates{a} }
	id := e.newTicket("Baby cot, room 7")
	e.quiesce()
	due := start.Add(72 * time.Hour)
	if err := e.ts.Server.SetDue(id, &due); err != nil {
		t.Fatal(err)
	}
	if r := e.tick(); r.FieldsUpdated != 1 || r.Signalled != 1 {
		t.Fatalf("the cycle after a due date change no updated_at showed: %s; want the ticket signalled and updated", r)
	}
	if got := e.held(id).Fields.Due; !got.Equal(due) {
		t.Fatalf("the helpdesk's due date is %v, want %v", got, due)
	}
	for range 3 {
		if r := e.tick(); r.Signalled != 0 || r.FieldsUpdated != 0 {
			t.Errorf("a later cycle: %s; want nothing signalled or updated", r)
		}
	}
}
