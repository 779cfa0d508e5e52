package sync

import (
	"errors"
	"log/slog"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
)

// The platform's fields (department, task_description, target_due_at,
// guest_rating, the console comment) are kept current in a helpdesk whose
// adapter is an adapters.Updater.
//
// State keeps, per ticket, what was last carried (state.Ticket.Carried).
// Detection costs nothing extra: discover compares the lists it reads
// anyway with it (planDiscover, listDiffers) and makes a ticket whose
// listed fields differ due now; every read of a ticket (refreshTicket)
// then compares the platform's values with it and calls Update with the
// fields that differ (carryFields). Nothing compares with what the
// helpdesk holds: an edit the team makes there is left alone until the
// platform changes that field again, and reconcile (which reads the
// helpdesk) does not look at fields either.
//
// target_due_at is only in the lists (the single read leaves it out): the
// cycle keeps, in cycle.dues, the listed due date of each ticket whose
// date may differ from the one carried, and a read of a ticket without one
// takes the carried date for current. A ticket never carried (a record
// older than this, a lost state) is carried whole once, by an adapter
// that writes nothing where the ticket holds the value already, as soon
// as a list has shown its due date; until then discover does not take the
// lists for agreeing with state (see listmemo.go), so that the next cycle
// reads them again.

// DueWait is the due reason of a ticket whose field update waits for the
// helpdesk's rate budget (adapters.WaitError).
const DueWait = "wait"

// updater returns the helpdesk as an adapters.Updater; nil when it is
// none.
func updater(hd adapters.Helpdesk) adapters.Updater {
	u, _ := hd.(adapters.Updater)
	return u
}

// listedDue returns the due date of a listed ticket; zero for none.
func listedDue(lt guestapi.Ticket) time.Time {
	if lt.TargetDueAt == nil {
		return time.Time{}
	}
	return lt.TargetDueAt.UTC()
}

// listDiffers reports whether the fields the list shows of lt differ
// from those carried.
func listDiffers(lt guestapi.Ticket, c state.Fields) bool { return listDiff(lt, c) != 0 }

// listDiff returns the fields the list item lt shows otherwise than those
// carried, c.
func listDiff(lt guestapi.Ticket, c state.Fields) adapters.FieldSet {
	var s adapters.FieldSet
	if lt.Department != c.Department {
		s = s.With(adapters.FieldDepartment)
	}
	if lt.TaskDescription != c.Title {
		s = s.With(adapters.FieldTitle)
	}
	if !listedDue(lt).Equal(c.Due) {
		s = s.With(adapters.FieldDue)
	}
	if (lt.GuestRating != nil) != c.Rated || (lt.GuestRating != nil && *lt.GuestRating != c.Rating) {
		s = s.With(adapters.FieldRating)
	}
	return s
}

// markUnsure records, in the record discover wakes t with, the fields the
// lists show changed: the read it wakes t for updates them, and a crash
// between the helpdesk's write and the record's would otherwise leave
// state believing the old values carried (see state.Fields.Unsure). A
// list older than the record's last read (a lagging replica of the API)
// shows old values, not changes: it marks nothing, or a field a team
// member edited since would be overwritten with no platform change.
func markUnsure(t *state.Ticket, lt guestapi.Ticket) {
	if t.Carried.Known() && !lt.UpdatedAt.Before(t.UpstreamUpdatedAt) {
		t.Carried.Unsure |= uint8(listDiff(lt, t.Carried))
	}
}

// planFields is planDiscover's part for fields: for tracked ticket t,
// listed as lt with the status and updated_at its record holds, it
// records the listed due date where it may matter and reports whether
// the lists differ from state (the ticket is then woken, unless its
// update waits for the helpdesk's budget: wake).
func (e *Engine) planFields(p *discoverPlan, t *state.Ticket, lt guestapi.Ticket, now time.Time) (wake bool) {
	if e.up == nil || !t.Deleted.IsZero() {
		return false
	}
	if _, out := e.cfg.scope.leaves(lt.Department, lt.Origin); out {
		return false // its fields are not carried (see rules.go)
	}
	if t.UpstreamStatus == "" || t.Ref == "" || !t.Carried.Known() {
		p.due(lt)
		if t.Ref != "" && !t.Carried.Known() && !t.Retired {
			// In the helpdesk but never carried: the lists are read
			// again, not replayed, until a read carried it.
			p.agree = false
		}
		return false
	}
	if !listDiffers(lt, t.Carried) && !e.cfg.Priority.listedPriorityDiffers(lt, t.Carried.Priority, now) {
		return false
	}
	p.due(lt)
	p.agree = false
	markUnsure(t, lt)
	return t.DueReason != DueWait || !t.NextDue.After(now)
}

// due records lt's due date for the reads of the cycle.
func (p *discoverPlan) due(lt guestapi.Ticket) {
	if p.dues == nil {
		p.dues = map[string]time.Time{}
	}
	p.dues[lt.ID] = listedDue(lt)
}

// platformFields returns the fields of the platform's request d, with due
// its due date.
func platformFields(d guestapi.TicketDetail, due time.Time) adapters.Fields {
	f := adapters.Fields{Department: d.Department, Title: d.TaskDescription, Due: due, Rating: d.GuestRating, Origin: d.Origin}
	if d.Comments != nil {
		f.Comment = *d.Comments
	}
	return f
}

// carriedFields returns what state says was carried, as adapter fields.
func carriedFields(c state.Fields) adapters.Fields {
	f := adapters.Fields{Department: c.Department, Title: c.Title, Due: c.Due, Comment: c.Comment, Priority: adapters.Priority(c.Priority)}
	if c.Rated {
		r := c.Rating
		f.Rating = &r
	}
	return f
}

// toCarried returns f as state keeps it, carried at at.
func toCarried(f adapters.Fields, at time.Time) state.Fields {
	c := state.Fields{At: at.UTC(), Department: f.Department, Title: f.Title, Due: f.Due.UTC(), Comment: f.Comment, Priority: string(f.Priority)}
	if f.Due.IsZero() {
		c.Due = time.Time{}
	}
	if f.Rating != nil {
		c.Rated, c.Rating = true, *f.Rating
	}
	return c
}

// carryFields makes the helpdesk's copy of the platform's fields of r's
// ticket current, after its read d: Update with the fields that differ
// from those carried (every field when none were: a lost state), then
// records them as carried. A ticket just created carries what
// EnsureTicket wrote, its due date aside (which Update then sets). A field update waiting for the
// helpdesk's budget leaves Carried, and the ticket due at the wait's end
// (see afterFields); any other error is the ticket's, as a failed status
// change is. It reports false when it recorded an error on r.
func (c *cycle) carryFields(r *refreshResult, ref adapters.Ref, d guestapi.TicketDetail) bool {
	e := c.e
	if e.up == nil {
		return true
	}
	known := r.t.Carried.Known()
	due, listed := c.dues[r.t.ID]
	switch {
	case r.created && listed:
		cr := platformFields(d, time.Time{})
		r.t.Carried, known = toCarried(cr, c.now), true
	case !listed && !known:
		// Carried once a list shows its due date: a ticket created
		// without one known is carried whole at its next read.
		return true
	case !listed:
		due = r.t.Carried.Due
	}
	nw := platformFields(d, due)
	nw.Priority = e.cfg.Priority.of(d.Department, due, c.now) // see priority.go
	var old adapters.Fields
	changed := adapters.AllFields
	if known {
		old = carriedFields(r.t.Carried)
		if d.Status.Closed() {
			nw.Priority = old.Priority // a closed request keeps the priority carried
		}
		// The fields whose last update's outcome is unknown are set
		// again, even where the platform is back to the value carried.
		changed = adapters.Diff(old, nw) | adapters.FieldSet(r.t.Carried.Unsure)
	}
	if nw.Priority == "" {
		changed &^= adapters.FieldSet(adapters.FieldPriority) // no rule: leave the helpdesk's alone
	}
	if changed == 0 {
		return true
	}
	err := e.up.Update(c.ctx, ref, adapters.FieldUpdate{UpstreamID: r.t.ID, Changed: changed, New: nw, Old: old})
	var wait *adapters.WaitError
	switch {
	case errors.As(err, &wait):
		r.wait = wait
		e.log.LogAttrs(c.ctx, slog.LevelInfo, "field update waits for the helpdesk's rate budget", slog.String("op", "update"),
			slog.String("ticket", r.t.ID), slog.String("fields", changed.String()), slog.Time("until", wait.Until))
		return true
	case err != nil:
		if known && !errors.Is(err, adapters.ErrInvalid) {
			// The helpdesk may have applied it: set them again next time.
			r.t.Carried.Unsure |= uint8(changed)
		}
		c.audit(r, state.Audit{Kind: "fields", Fields: fieldNames(changed), Outcome: state.AuditRetrying, Detail: err.Error()})
		*r = c.ticketError(unknownOutcome(*r, err), "update helpdesk fields", err)
		return false
	}
	r.t.Carried = toCarried(nw, c.now)
	r.fields = changed
	c.audit(r, state.Audit{Kind: "fields", Fields: fieldNames(changed), Outcome: state.AuditOK})
	e.log.LogAttrs(c.ctx, slog.LevelDebug, "updated helpdesk fields", slog.String("op", "update"),
		slog.String("ticket", r.t.ID), slog.String("fields", changed.String()))
	return true
}

// afterFields makes a ticket whose field update waits due at the wait's
// end, unless its schedule reads it sooner: no failure, no backoff.
func (c *cycle) afterFields(r *refreshResult) {
	if r.wait == nil {
		return
	}
	until := r.wait.Until
	if until.Before(c.now) {
		until = c.now
	}
	if until.Before(r.t.NextDue) || r.t.NextDue.IsZero() {
		r.t.NextDue, r.t.DueReason = until, DueWait
	}
}

func toAdapterTicket(d guestapi.TicketDetail) adapters.Ticket {
	comments := ""
	if d.Comments != nil {
		comments = *d.Comments
	}
	return adapters.Ticket{
		UpstreamID: d.ID, Department: d.Department, Status: d.Status, TaskDescription: d.TaskDescription,
		Origin: d.Origin, Comments: comments, GuestRating: d.GuestRating, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt,
	}
}
