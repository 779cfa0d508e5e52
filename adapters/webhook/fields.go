package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

var _ adapters.Updater = (*Adapter)(nil)

// TicketUpdated is the body of a ticket.updated delivery: the request's
// fields changed on the platform.
type TicketUpdated struct {
	ID       string `json:"id"`
	Type     string `json:"type"` // "ticket.updated"
	TicketID string `json:"ticket_id"`
	// Changed names the fields that changed, by their API names
	// (department, task_description, target_due_at, guest_rating,
	// comments, priority), in that order.
	Changed []string `json:"changed"`
	// Ticket holds every field's current value.
	Ticket FieldsInfo `json:"ticket"`
	// Previous holds the changed fields' values before, as far as the
	// bridge knows them: the values of the last ticket.updated delivered,
	// else those the bridge last carried; a field it does not know is
	// left out (after the bridge's state and the webhook directory were
	// lost, for example).
	Previous map[string]any `json:"previous"`
}

// FieldsInfo is the platform's fields of a request in a ticket.updated
// delivery.
type FieldsInfo struct {
	Department      string   `json:"department"`
	TaskDescription string   `json:"task_description"`
	TargetDueAt     *string  `json:"target_due_at"` // null when none
	GuestRating     *float64 `json:"guest_rating"`  // null while unrated
	Comments        *string  `json:"comments"`      // the console card's internal comment; null when none
	Priority        *string  `json:"priority"`      // the bridge's derived priority; null when none
}

// apiNames are the fields' names in events, by adapters.Field.
var apiNames = map[adapters.Field]string{
	adapters.FieldDepartment: "department", adapters.FieldTitle: "task_description", adapters.FieldDue: "target_due_at",
	adapters.FieldRating: "guest_rating", adapters.FieldComment: "comments", adapters.FieldPriority: "priority",
}

func fieldsInfo(f adapters.Fields) FieldsInfo {
	fi := FieldsInfo{Department: f.Department, TaskDescription: f.Title, GuestRating: f.Rating}
	if !f.Due.IsZero() {
		s := guestapi.FormatTime(f.Due)
		fi.TargetDueAt = &s
	}
	if f.Comment != "" {
		c := f.Comment
		fi.Comments = &c
	}
	if f.Priority != "" {
		p := string(f.Priority)
		fi.Priority = &p
	}
	return fi
}

// value returns the field's value in fi, as the event shows it.
func (fi FieldsInfo) value(f adapters.Field) any {
	switch f {
	case adapters.FieldDepartment:
		return fi.Department
	case adapters.FieldTitle:
		return fi.TaskDescription
	case adapters.FieldDue:
		return fi.TargetDueAt
	case adapters.FieldRating:
		return fi.GuestRating
	case adapters.FieldComment:
		return fi.Comments
	}
	return fi.Priority
}

// same reports whether fi and gi hold the same value of field f.
func (fi FieldsInfo) same(gi FieldsInfo, f adapters.Field) bool {
	a, _ := json.Marshal(fi.value(f))
	b, _ := json.Marshal(gi.value(f))
	return string(a) == string(b)
}

// Update delivers a ticket.updated event with the fields of u.Changed
// whose values differ from the last ticket.updated delivered (all of
// u.Changed before the first; the others keep their delivered values), when TICKETBRIDGE_WEBHOOK_EVENTS asks for
// it; otherwise it sends nothing. The delivery id derives from the ticket
// and the values delivered, so a repeat after a lost answer is the same
// delivery, and a value already delivered is not delivered again. The
// receiver holds the fields: the adapter writes no notes.
func (a *Adapter) Update(ctx context.Context, ref adapters.Ref, u adapters.FieldUpdate) error {
	rec, err := a.record(ref)
	if err != nil {
		return fmt.Errorf("update: %w", err)
	}
	if !a.cfg.sends(EventTicketUpdated) {
		return nil
	}
	now, old := fieldsInfo(u.New), fieldsInfo(u.Old)
	if rec.Fields != nil {
		// The fields outside Changed are left as delivered.
		now = merge(*rec.Fields, now, u.Changed)
	}
	ev := TicketUpdated{Type: EventTicketUpdated, TicketID: string(ref), Ticket: now, Previous: map[string]any{}}
	for _, f := range u.Changed.Fields() {
		name := apiNames[f]
		switch {
		case f == adapters.FieldPriority && u.New.Priority == "":
			continue // no priority rule: nothing to say
		case rec.Fields != nil && rec.Fields.same(now, f):
			continue // delivered already
		case rec.Fields != nil:
			ev.Previous[name] = rec.Fields.value(f)
		case known(u.Old, f):
			ev.Previous[name] = old.value(f)
		}
		ev.Changed = append(ev.Changed, name)
	}
	if len(ev.Changed) == 0 {
		return nil
	}
	body, err := json.Marshal(struct {
		Changed []string   `json:"changed"`
		Ticket  FieldsInfo `json:"ticket"`
	}{ev.Changed, now})
	if err != nil {
		return fmt.Errorf("update: encode: %w", err)
	}
	ev.ID = deliveryID(EventTicketUpdated, string(ref), string(body))
	if err := a.deliver(ctx, EventTicketUpdated, ev.ID, ev); err != nil {
		return err
	}
	if err := a.update(ctx, ref, func(r *ticketRecord) { r.Fields = &now }); err != nil {
		return fmt.Errorf("record delivered fields: %w", err)
	}
	a.log.LogAttrs(ctx, slog.LevelInfo, "fields delivered", slog.String("ticket", string(ref)),
		slog.String("fields", fmt.Sprint(ev.Changed)), slog.String("delivery", ev.ID))
	return nil
}

// merge returns base with the fields of set taken from nw.
func merge(base, nw FieldsInfo, set adapters.FieldSet) FieldsInfo {
	if set.Has(adapters.FieldDepartment) {
		base.Department = nw.Department
	}
	if set.Has(adapters.FieldTitle) {
		base.TaskDescription = nw.TaskDescription
	}
	if set.Has(adapters.FieldDue) {
		base.TargetDueAt = nw.TargetDueAt
	}
	if set.Has(adapters.FieldRating) {
		base.GuestRating = nw.GuestRating
	}
	if set.Has(adapters.FieldComment) {
		base.Comments = nw.Comments
	}
	if set.Has(adapters.FieldPriority) && nw.Priority != nil {
		base.Priority = nw.Priority
	}
	return base
}

// known reports whether old, what the bridge last carried, says anything
// of field f: a zero value may be "unknown" (a lost state) as well as
// "none", so only a set value counts.
func known(old adapters.Fields, f adapters.Field) bool {
	return slices.Contains(adapters.Diff(old, adapters.Fields{}).Fields(), f)
}
