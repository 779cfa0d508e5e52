package freshdeskfake

import (
	"encoding/json"
	"time"
)

// Due times, as Freshdesk's API v2 sets them (#update_ticket, #create_ticket:
// due_by, when the ticket is due to be resolved, and fr_due_by, when the
// first response is due; any of the reference's date-time forms, UTC when
// no zone is given). Every ticket has both: the SLA policy computes them
// from the creation time and the priority, and computes them again when
// the priority changes, until one is set through the API, after which the
// SLA leaves both alone (Freshdesk's help article on changing the due
// date: a manual due date is not recalculated when properties change).
// A value the rules refuse is a 400 validation error naming the field:
//
//   - before the ticket's creation (on create: before now): invalid_value;
//   - due_by before fr_due_by (the one sent, or the ticket's): invalid_value
//     on the field sent;
//   - either one while the ticket's status (the one sent, or the ticket's)
//     stops the SLA clock, pending, resolved or closed: incompatible_field,
//     the reference's code for a field the record's state does not allow
//     (the pairing is the fake's pick: the reference names no code);
//   - on create, one without the other: missing_field;
//   - null, or no date-time: datatype_mismatch or invalid_value. The
//     reference offers no way to clear a due time; the fake refuses null
//     (its pick) so that a client cannot rely on clearing.
//
// The SLA policy is the fake's pick, in calendar hours (the business hours
// of a real account are not modelled): by priority 1 to 4, first response
// in 24, 8, 4, 1 hours and resolution in 72, 24, 8, 4. The clock does not
// pause while a ticket is pending.

// slaTargets are the fake SLA policy's first-response and resolution
// times by priority.
var slaTargets = map[int][2]time.Duration{
	1: {24 * time.Hour, 72 * time.Hour},
	2: {8 * time.Hour, 24 * time.Hour},
	3: {4 * time.Hour, 8 * time.Hour},
	4: {time.Hour, 4 * time.Hour},
}

// slaDue sets t's due times from its priority, unless one was set
// through the API.
func slaDue(t *Ticket) {
	if t.DueSet {
		return
	}
	target, ok := slaTargets[t.Priority]
	if !ok {
		target = slaTargets[1]
	}
	t.FrDueBy, t.DueBy = t.CreatedAt.Add(target[0]), t.CreatedAt.Add(target[1])
}

// parseDue reads a due time of a request body.
func parseDue(k string, raw json.RawMessage) (*time.Time, *fieldError) {
	var v string
	if json.Unmarshal(raw, &v) != nil || isNull(raw) {
		return nil, &fieldError{Field: k, Message: "Value set is of type " + jsonType(raw) + ".It should be a/an date time", Code: "datatype_mismatch"}
	}
	t, err := parseTime(v)
	if err != nil {
		return nil, &fieldError{Field: k, Message: "It should be in the 'valid date time' format", Code: "invalid_value"}
	}
	return &t, nil
}

// stopsSLA reports whether status stops the SLA clock.
func stopsSLA(status int) bool {
	return status == StatusPending || status == StatusResolved || status == StatusClosed
}

// checkDue returns what Freshdesk refuses of in's due times for ticket t
// (nil on create, made at now).
func checkDue(t *Ticket, in ticketInput, now time.Time) []fieldError {
	if in.dueBy == nil && in.frDueBy == nil {
		return nil
	}
	status, created := StatusOpen, now
	var due, fr time.Time
	if t != nil {
		status, created, due, fr = t.Status, t.CreatedAt, t.DueBy, t.FrDueBy
	}
	if in.status != nil {
		status = *in.status
	}
	var errs []fieldError
	if t == nil && (in.dueBy == nil) != (in.frDueBy == nil) {
		k := "due_by"
		if in.dueBy == nil {
			k = "fr_due_by"
		}
		return append(errs, fieldError{Field: k, Message: "due_by and fr_due_by should be given together", Code: "missing_field"})
	}
	for _, d := range []struct {
		k string
		v *time.Time
	}{{"due_by", in.dueBy}, {"fr_due_by", in.frDueBy}} {
		switch {
		case d.v == nil:
		case stopsSLA(status):
			errs = append(errs, fieldError{Field: d.k, Message: "It cannot be set while the status stops the SLA timer (pending, resolved or closed)", Code: "incompatible_field"})
		case d.v.Before(created):
			errs = append(errs, fieldError{Field: d.k, Message: "It should be a date time after created_at", Code: "invalid_value"})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if in.dueBy != nil {
		due = *in.dueBy
	}
	if in.frDueBy != nil {
		fr = *in.frDueBy
	}
	if due.Before(fr) {
		k := "due_by"
		if in.frDueBy != nil {
			k = "fr_due_by"
		}
		errs = append(errs, fieldError{Field: k, Message: "due_by should be a date time after fr_due_by", Code: "invalid_value"})
	}
	return errs
}

// applyDue sets the due times in sets on t, or computes them again when
// its priority changed (from before) and none was ever set.
func applyDue(t *Ticket, in ticketInput, before int) {
	if in.dueBy != nil {
		t.DueBy, t.DueSet = *in.dueBy, true
	}
	if in.frDueBy != nil {
		t.FrDueBy, t.DueSet = *in.frDueBy, true
	}
	if t.Priority != before || t.DueBy.IsZero() {
		slaDue(t)
	}
}
