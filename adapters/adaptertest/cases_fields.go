package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// FieldReader is implemented by an [Agent] that can read the helpdesk's
// own copy of a ticket's fields (its queue or group, subject, due date,
// rating field); the case FieldsUpdate then checks that each lands there.
// Without it, the case checks the notes and what Changes reports only.
type FieldReader interface {
	ReadFields(ctx context.Context, ref adapters.Ref) (HeldFields, error)
}

// HeldFields is what a helpdesk holds of the platform's fields in the
// ticket's own fields.
type HeldFields struct {
	// Queue is the queue, group or folder the ticket is in, in the
	// helpdesk's terms: what a department routes to.
	Queue  string
	Title  string
	Due    time.Time
	Rating *float64
	// Holds says which of FieldDepartment (Queue), FieldTitle, FieldDue
	// and FieldRating the helpdesk holds natively, and ReadFields reports.
	Holds adapters.FieldSet
}

// FieldsHarness configures the case FieldsUpdate, which runs for adapters
// that implement [adapters.Updater].
type FieldsHarness struct {
	// AsNote declares that the adapter carries the fields as a note naming
	// what changed (the email helpdesk) rather than in the ticket's own
	// fields: the case then checks that one note names the change, once.
	AsNote bool
	// Departments are two departments that the adapter's routing sends
	// to different queues or groups. Zero means "housekeeping" and
	// "maintenance".
	Departments [2]string
}

func (s *suite) departments() [2]string {
	if s.h.Fields.Departments != ([2]string{}) {
		return s.h.Fields.Departments
	}
	return [2]string{"housekeeping", "maintenance"}
}

// updater returns a fresh instance as an Updater, skipping the case when
// the adapter is none.
func (s *suite) updater(t *testing.T) adapters.Updater {
	t.Helper()
	hd := s.open(t)
	u, ok := hd.(adapters.Updater)
	if !ok {
		t.Skipf("adapter %q does not implement adapters.Updater yet: the platform's fields are not kept current in it", hd.Name())
	}
	return u
}

// testFieldsUpdate checks the contract of adapters.Updater: each field
// changed lands once, a repeat writes nothing, a repeat with the state
// lost (Old zero) writes nothing, the rating and comment notes are written
// once per distinct value, a department move lands where creation routes
// that department, fields not in Changed are left alone, and nothing
// Update writes comes back from Changes.
func (s *suite) testFieldsUpdate(t *testing.T) {
	up := s.updater(t)
	depts := s.departments()
	tk := s.ticket("Fields: broken kettle")
	tk.Department = depts[0]
	a, ref := s.ensure(t, tk)
	// A ticket created in the other department: where its queue is, is
	// where a move must land.
	ctl := s.ticket("Fields: routing control")
	ctl.Department = depts[1]
	_, ctlRef := s.ensure(t, ctl)
	from := s.drain(t, a, s.head)
	before := s.read(t, ref)

	rating := 4.0
	old := adapters.Fields{Department: tk.Department, Title: tk.TaskDescription, Origin: tk.Origin}
	nw := adapters.Fields{
		Department: depts[1],
		Title:      fmt.Sprintf("Fields: kettle replaced [run %s]", s.run),
		Due:        baseTime.Add(26 * time.Hour).Truncate(time.Second),
		Rating:     &rating,
		Comment:    fmt.Sprintf("Guest prefers tea; fields run %s.", s.run),
		Origin:     tk.Origin,
	}
	all := adapters.AllFields &^ adapters.FieldSet(adapters.FieldPriority)
	u := adapters.FieldUpdate{UpstreamID: tk.UpstreamID, Changed: all, New: nw, Old: old}
	if err := up.Update(s.ctx, ref, u); err != nil {
		t.Fatalf("Update(%s, %v): %v", ref, u.Changed, err)
	}
	once := s.read(t, ref)
	s.checkFieldNotes(t, before, once, nw)
	s.checkHeldFields(t, ref, ctlRef, nw)

	// A repeat, from a fresh instance, and one with the state lost.
	if err := s.updater(t).Update(s.ctx, ref, u); err != nil {
		t.Fatalf("Update repeated: %v", err)
	}
	lost := u
	lost.Old = adapters.Fields{}
	if err := s.updater(t).Update(s.ctx, ref, lost); err != nil {
		t.Fatalf("Update with the state lost (Old zero): %v", err)
	}
	if again := s.read(t, ref); len(again.Messages) != len(once.Messages) {
		t.Errorf("repeating an update (and again with Old zero) added %d messages, want none; the ticket holds:\n%s",
			len(again.Messages)-len(once.Messages), dump(again))
	}
	s.checkHeldFields(t, ref, ctlRef, nw)

	// Only Changed is set: a new due date outside it is left alone.
	title := nw
	title.Title = fmt.Sprintf("Fields: kettle replaced twice [run %s]", s.run)
	title.Due = nw.Due.Add(time.Hour)
	if err := up.Update(s.ctx, ref, adapters.FieldUpdate{UpstreamID: tk.UpstreamID, Changed: adapters.FieldSet(adapters.FieldTitle), New: title, Old: nw}); err != nil {
		t.Fatalf("Update of the title alone: %v", err)
	}
	keep := title
	keep.Due = nw.Due
	s.checkHeldFields(t, ref, ctlRef, keep)

	// A new rating: one note of its own, the first one still once.
	five := 5.0
	rated := keep
	rated.Rating = &five
	if err := up.Update(s.ctx, ref, adapters.FieldUpdate{UpstreamID: tk.UpstreamID, Changed: adapters.FieldSet(adapters.FieldRating), New: rated, Old: keep}); err != nil {
		t.Fatalf("Update of the rating: %v", err)
	}
	if !s.h.Fields.AsNote {
		snap := s.read(t, ref)
		four, _ := adapters.RatingNote(4)
		fiveText, _ := adapters.RatingNote(5)
		if n := count(snap, four); n != 1 {
			t.Errorf("%d notes say %q after a second rating, want 1; the ticket holds:\n%s", n, four, dump(snap))
		}
		find(t, snap, fiveText)
	}
	s.checkHeldFields(t, ref, ctlRef, rated)

	evs, _ := s.collect(t, s.open(t), from, []adapters.Ref{ref, ctlRef})
	for _, ev := range evs {
		t.Errorf("Changes reported the bridge's own update as %s event %s: %q (status %q)", ev.Kind, ev.ID, ev.Body, ev.Status)
	}

	unknown := s.h.UnknownRef
	if unknown == "" {
		unknown = adapters.Ref("no-such-ticket-" + s.run)
	}
	if err := up.Update(s.ctx, unknown, u); !errors.Is(err, adapters.ErrNotFound) {
		t.Errorf("Update of an unknown ticket: %v, want adapters.ErrNotFound", err)
	}
}

// checkFieldNotes checks the messages the first update added: the
// rating and comment notes once each, internal; or, for an adapter that
// carries the fields as a note, one message naming the new title.
func (s *suite) checkFieldNotes(t *testing.T, before, after Snapshot, nw adapters.Fields) {
	t.Helper()
	if s.h.Fields.AsNote {
		added := after.Messages[min(len(before.Messages), len(after.Messages)):]
		n := 0
		for _, m := range added {
			if count(Snapshot{Messages: []SnapshotMessage{m}}, nw.Title) > 0 {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d new messages name the new title %q, want 1; the ticket holds:\n%s", n, nw.Title, dump(after))
		}
		return
	}
	rating, _ := adapters.RatingNote(*nw.Rating)
	comment, _ := adapters.CommentNote(nw.Comment)
	for _, text := range []string{rating, comment} {
		i := find(t, after, text)
		if after.Messages[i].Public {
			t.Errorf("the note %q is public, want an internal note", text)
		}
	}
}

// checkHeldFields checks what the helpdesk holds natively against want;
// the department's queue is the control ticket's, which creation routed.
func (s *suite) checkHeldFields(t *testing.T, ref, ctlRef adapters.Ref, want adapters.Fields) {
	t.Helper()
	fr, ok := s.h.Agent.(FieldReader)
	if !ok {
		return
	}
	got, err := fr.ReadFields(s.ctx, ref)
	if err != nil {
		t.Fatalf("Agent.ReadFields(%s): %v", ref, err)
	}
	if got.Holds.Has(adapters.FieldDepartment) {
		ctl, err := fr.ReadFields(s.ctx, ctlRef)
		if err != nil {
			t.Fatalf("Agent.ReadFields(%s): %v", ctlRef, err)
		}
		if got.Queue != ctl.Queue {
			t.Errorf("after the move to department %q the ticket is in %q, want %q, where creation routes that department", want.Department, got.Queue, ctl.Queue)
		}
	}
	if got.Holds.Has(adapters.FieldTitle) && norm(got.Title) != norm(want.Title) {
		t.Errorf("the helpdesk's title is %q, want %q", got.Title, want.Title)
	}
	if got.Holds.Has(adapters.FieldDue) && !got.Due.Equal(want.Due) {
		t.Errorf("the helpdesk's due date is %v, want %v", got.Due, want.Due)
	}
	if got.Holds.Has(adapters.FieldRating) && adapters.Diff(adapters.Fields{Rating: got.Rating}, adapters.Fields{Rating: want.Rating}) != 0 {
		t.Errorf("the helpdesk's rating is %v, want %v", fmtRating(got.Rating), fmtRating(want.Rating))
	}
}

func fmtRating(r *float64) string {
	if r == nil {
		return "none"
	}
	return adapters.FormatRating(*r)
}
