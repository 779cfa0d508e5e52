package files

import (
	"context"
	"fmt"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
)

var _ adapters.Updater = (*Adapter)(nil)

// Update sets the fields of u.Changed in the ticket's ticket.json and
// thread.md's header: Department, the request's text (task_description,
// the page's title), Due (target_due_at; the line is left out when none),
// Guest rating, Priority and the console comment. The folder keeps its
// name: a department move shows in the header, as the department the
// ticket was created with does. A new rating or comment also becomes one
// internal note of the thread, written once per distinct value (ticket.json
// keeps its marker). Setting what the ticket holds writes nothing, and
// Changes never reports what Update wrote: it reports the outbox only.
func (a *Adapter) Update(ctx context.Context, ref adapters.Ref, u adapters.FieldUpdate) error {
	if err := a.writable("update"); err != nil {
		return err
	}
	nw := u.New
	for _, fv := range [][2]string{{"department", nw.Department}, {"task description", nw.Title}, {"comments", nw.Comment}, {"priority", string(nw.Priority)}} {
		if err := checkText(fv[0], fv[1]); err != nil {
			return fmt.Errorf("update %s: %w", ref, err)
		}
	}
	err := a.do(ctx, func() error {
		t, err := a.load(ref)
		if err != nil {
			return err
		}
		if !t.apply(u) {
			return nil
		}
		return a.saveGrouped(t)
	})
	if err != nil {
		return fmt.Errorf("update %s: %w", ref, err)
	}
	return nil
}

// apply sets u's changed fields in t and adds the notes not yet there; it
// reports whether anything changed.
func (t *ticketFile) apply(u adapters.FieldUpdate) bool {
	nw, changed := u.New, false
	set := func(dst *string, v string) {
		if *dst != v {
			*dst, changed = v, true
		}
	}
	if u.Changed.Has(adapters.FieldDepartment) {
		set(&t.Department, nw.Department)
	}
	if u.Changed.Has(adapters.FieldTitle) {
		set(&t.TaskDescription, nw.Title)
	}
	if u.Changed.Has(adapters.FieldPriority) && nw.Priority != "" {
		set(&t.Priority, string(nw.Priority))
	}
	if u.Changed.Has(adapters.FieldDue) {
		var due *time.Time
		if !nw.Due.IsZero() {
			d := nw.Due.UTC()
			due = &d
		}
		if (due == nil) != (t.DueAt == nil) || (due != nil && !due.Equal(*t.DueAt)) {
			t.DueAt, changed = due, true
		}
	}
	if u.Changed.Has(adapters.FieldRating) {
		if adapters.Diff(adapters.Fields{Rating: t.GuestRating}, adapters.Fields{Rating: nw.Rating}) != 0 {
			t.GuestRating, changed = nw.Rating, true
		}
		if nw.Rating != nil && t.noteOnce(adapters.RatingNote(*nw.Rating)) {
			changed = true
		}
	}
	if u.Changed.Has(adapters.FieldComment) {
		set(&t.Comments, nw.Comment)
		if (nw.Comment != "" || u.Old.Comment != "") && t.noteOnce(adapters.CommentNote(nw.Comment)) {
			changed = true
		}
	}
	return changed
}

// noteOnce adds the bridge's internal note text with marker m unless the
// thread holds one with that marker; it reports whether it added one.
func (t *ticketFile) noteOnce(text string, m adapters.Marker) bool {
	line := m.Line()
	for _, e := range t.Thread {
		if e.Source == sourceBridge && e.Marker == line {
			return false
		}
	}
	t.Thread = append(t.Thread, entry{ID: t.nextID(), Kind: kindNote, Source: sourceBridge, AuthorName: "ticketbridge",
		Body: text, Marker: line, At: time.Now().UTC()})
	return true
}
