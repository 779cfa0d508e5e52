package sync_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/memory"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
)

// The simulator's fields: the console staff change the platform's fields
// of a request (move it to another department, reword it, set, move or
// clear its due date, set, change or clear the card's comment, rate it
// once it is closed), agents edit the helpdesk's copy of some of them
// (retitle the ticket, move it to another queue, set or clear its due
// date), and the end check (simFields.check) says what each ticket must
// hold after the run settled.

// simDepartments are the departments requests move among.
var simDepartments = []string{"housekeeping", "front_desk", "maintenance", "concierge"}

// The rates of the field activity, per round of activity (activity.step).
const (
	simPlatformFieldRate = 0.2 // the console changes one field of one request
	simAgentFieldRate    = 0.1 // an agent edits one field of one mirrored ticket
)

// simAgentFields are the fields an agent edits in the sim.
var simAgentFields = []adapters.Field{adapters.FieldTitle, adapters.FieldDepartment, adapters.FieldDue}

// simFields is the field part of an activity.
type simFields struct {
	a *activity
	// changes counts, per request and field, the platform's changes.
	changes map[string]map[adapters.Field]int
	// edits holds, per request and field, the agents' last edit.
	edits map[string]map[adapters.Field]simEdit
	// served holds, per request, the marker ids of the ratings and
	// comments the platform gave in answers to single reads of it.
	served map[string]map[adapters.Marker]bool
}

// simEdit is an agent's edit of one field of a ticket.
type simEdit struct {
	value adapters.Fields // the field's value the agent left
	// changes is how many platform changes of the field preceded it.
	changes int
	// settled: when the agent edited, the platform's value, the
	// helpdesk's value and the value state records as carried were one,
	// and no update of the field was in doubt: nothing of the field was
	// on its way to the helpdesk.
	settled bool
	carried adapters.Fields // that one value, when settled
}

func newSimFields(a *activity) *simFields {
	return &simFields{a: a, changes: map[string]map[adapters.Field]int{},
		edits: map[string]map[adapters.Field]simEdit{}, served: map[string]map[adapters.Marker]bool{}}
}

// step is the field part of a round of activity, drawn from the
// activity's random source after the rest of the round.
func (f *simFields) step() {
	a := f.a
	if a.rnd.Float64() < simPlatformFieldRate {
		f.platformChange(a.ids[a.rnd.IntN(len(a.ids))])
	}
	if a.rnd.Float64() < simAgentFieldRate {
		id := a.ids[a.rnd.IntN(len(a.ids))]
		fld := simAgentFields[a.rnd.IntN(len(simAgentFields))]
		f.agentEdit(id, fld)
	}
}

// platformChange has the console change one field of request id.
func (f *simFields) platformChange(id string) {
	a, e := f.a, f.a.e
	srv := e.ts.Server
	v := e.upstream(id).Ticket
	var (
		fld  adapters.Field
		err  error
		what string
	)
	a.seq++
	switch a.rnd.IntN(5) {
	case 0:
		fld = adapters.FieldDepartment
		d := otherDepartment(v.Department, a.rnd.IntN(len(simDepartments)-1))
		err, what = srv.SetDepartment(id, d), "department "+d
	case 1:
		fld = adapters.FieldTitle
		d := fmt.Sprintf("request reworded %d", a.seq)
		err, what = srv.SetDescription(id, d), fmt.Sprintf("description %q", d)
	case 2:
		fld = adapters.FieldDue
		if v.TargetDueAt != nil && a.rnd.IntN(3) == 0 {
			err, what = srv.SetDue(id, nil), "due date cleared"
			break
		}
		due := e.clock.Now().Add(time.Duration(1+a.rnd.IntN(48*4)) * 15 * time.Minute).Truncate(time.Minute)
		err, what = srv.SetDue(id, &due), "due "+due.Format(time.RFC3339)
	case 3:
		fld = adapters.FieldComment
		if v.Comments != nil && a.rnd.IntN(4) == 0 {
			err, what = srv.SetComment(id, nil), "comment cleared"
			break
		}
		c := fmt.Sprintf("console comment %d", a.seq)
		err, what = srv.SetComment(id, &c), fmt.Sprintf("comment %q", c)
	default:
		fld = adapters.FieldRating
		switch v.Status {
		case guestapi.StatusDone, guestapi.StatusCompleted, guestapi.StatusConfirmed:
		default:
			return // a guest rates a closed request only
		}
		r := float64(a.rnd.IntN(21)) / 2
		err, what = srv.RateTicket(id, &r), "rating "+adapters.FormatRating(r)
	}
	if err != nil {
		e.t.Fatal(err)
	}
	byField := f.changes[id]
	if byField == nil {
		byField = map[adapters.Field]int{}
		f.changes[id] = byField
	}
	byField[fld]++
	a.noted("  console sets %s of %s", what, id)
}

// otherDepartment returns the i-th of the sim's departments other than d.
func otherDepartment(d string, i int) string {
	for _, o := range simDepartments {
		if o == d {
			continue
		}
		if i == 0 {
			return o
		}
		i--
	}
	return simDepartments[0]
}

// agentEdit has an agent edit field fld of request id's helpdesk ticket,
// if it is mirrored.
func (f *simFields) agentEdit(id string, fld adapters.Field) {
	a, e := f.a, f.a.e
	refs := e.backend.Find(id)
	if len(refs) == 0 {
		return // not mirrored yet
	}
	snap, _ := e.backend.Ticket(refs[0])
	p := e.platform(id)
	rec := e.record(id)
	c := carriedOf(rec.Carried)
	a.seq++
	var v adapters.Fields
	switch fld {
	case adapters.FieldTitle:
		v.Title = fmt.Sprintf("retitled by agent %d", a.seq)
	case adapters.FieldDepartment:
		v.Department = otherDepartment(snap.Fields.Department, a.rnd.IntN(len(simDepartments)-1))
	case adapters.FieldDue:
		if a.rnd.IntN(3) != 0 {
			v.Due = e.clock.Now().Add(time.Duration(1+a.rnd.IntN(96)) * 30 * time.Minute).Truncate(time.Minute)
		}
	}
	set := adapters.FieldSet(0).With(fld)
	if err := e.backend.EditFields(refs[0], "Agent", set, v); err != nil {
		e.t.Fatal(err)
	}
	// An update of the field whose outcome the bridge does not know is on
	// its way still: the bridge sets the field again (state.Fields.Unsure).
	inDoubt := adapters.FieldSet(rec.Carried.Unsure)&set != 0
	settled := rec.Carried.Known() && !inDoubt && adapters.Diff(p, snap.Fields)&set == 0 && adapters.Diff(p, c)&set == 0
	byField := f.edits[id]
	if byField == nil {
		byField = map[adapters.Field]simEdit{}
		f.edits[id] = byField
	}
	byField[fld] = simEdit{value: v, changes: f.changes[id][fld], settled: settled, carried: c}
	a.noted("  agent edits %s of %s (settled %t)", fld, refs[0], settled)
}

// String sums the field activity up: how many changes on each side.
func (f *simFields) String() string {
	changes, edits, settled := 0, 0, 0
	for _, byField := range f.changes {
		for _, n := range byField {
			changes += n
		}
	}
	for _, byField := range f.edits {
		for _, ed := range byField {
			edits++
			if ed.settled {
				settled++
			}
		}
	}
	return fmt.Sprintf("%d platform field changes, %d fields edited by agents (%d settled at their last edit)", changes, edits, settled)
}

// carriedOf returns what state records as carried, as adapter fields.
func carriedOf(c state.Fields) adapters.Fields {
	f := adapters.Fields{Department: c.Department, Title: c.Title, Due: c.Due, Comment: c.Comment}
	if c.Rated {
		r := c.Rating
		f.Rating = &r
	}
	return f
}

// read records, from the reference server's answer body to a single read
// of a request, the rating and comment it gave.
func (f *simFields) read(body []byte) {
	var th struct {
		Ticket struct {
			ID          string   `json:"id"`
			GuestRating *float64 `json:"guest_rating"`
			Comments    *string  `json:"comments"`
		} `json:"ticket"`
	}
	if json.Unmarshal(body, &th) != nil || th.Ticket.ID == "" {
		return
	}
	served := f.served[th.Ticket.ID]
	if served == nil {
		served = map[adapters.Marker]bool{}
		f.served[th.Ticket.ID] = served
	}
	if r := th.Ticket.GuestRating; r != nil {
		_, m := adapters.RatingNote(*r)
		served[m] = true
	}
	c := ""
	if th.Ticket.Comments != nil {
		c = *th.Ticket.Comments
	}
	_, m := adapters.CommentNote(c)
	served[m] = true
}

// check is the fields' end-state promise, after the run has settled. For
// every request and its one helpdesk ticket:
//
//  1. The guest's rating and the card's comment, which only the platform
//     changes, are the platform's current ones.
//  2. A field no agent edited (department, title, due date) is the
//     platform's current one.
//  3. A field an agent edited is judged by the agent's last edit of it.
//     The edit was settled when the platform's value, the helpdesk's and
//     the one state records as carried were one value, c, as the agent
//     edited: nothing of that field was on its way to the helpdesk. After
//     a settled edit, if the platform did not change the field since, the
//     ticket holds the agent's value (the bridge does not fight the
//     agent); else if the platform's value now differs from c, the ticket
//     holds the platform's (its next change overwrites the agent's); else
//     (the platform changed it and came back to c) either, as the bridge
//     may have carried the value in between and then c again, or seen
//     neither. An edit that was not settled (it crossed a platform change
//     not carried yet, or an update whose outcome the bridge had not
//     recorded) may end as the agent left it or as the platform holds it,
//     since the bridge cannot order the two writes; as nothing else.
//  4. Each rating and comment note (found by its marker) is there at most
//     once, and is of a value the platform gave in an answer to a single
//     read of the request (a value held only between two reads is never
//     seen, so never noted). The current rating and the current comment,
//     when set and other than the ones the ticket was created with (which
//     its first message shows), have their note.
//  5. Nothing of the fields went upstream: every message the bridge
//     posted there is an agent's, and none is a field's note.
func (f *simFields) check() {
	e := f.a.e
	t := e.t
	t.Helper()
	agentBodies := map[string]bool{}
	for _, bodies := range f.a.agent {
		for _, b := range bodies {
			agentBodies[b] = true
		}
	}
	for _, id := range f.a.ids {
		refs := e.backend.Find(id)
		if len(refs) != 1 {
			continue // checkAllDelivered says so
		}
		snap, _ := e.backend.Ticket(refs[0])
		held, p := snap.Fields, e.platform(id)
		if d := adapters.Diff(p, held) & adapters.FieldSet(adapters.FieldRating|adapters.FieldComment); d != 0 {
			t.Errorf("ticket %s: the helpdesk's %s differ from the platform's: %s, want %s", id, d, showFields(held, d), showFields(p, d))
		}
		for _, fld := range simAgentFields {
			set := adapters.FieldSet(0).With(fld)
			isPlatform := adapters.Diff(p, held)&set == 0
			ed, edited := f.edits[id][fld]
			isAgent := edited && adapters.Diff(ed.value, held)&set == 0
			var ok bool
			var want string
			switch {
			case !edited:
				ok, want = isPlatform, "the platform's "+showFields(p, set)+": no agent edited it"
			case !ed.settled:
				ok, want = isPlatform || isAgent, fmt.Sprintf("the platform's %s or the agent's %s", showFields(p, set), showFields(ed.value, set))
			case f.changes[id][fld] == ed.changes:
				ok, want = isAgent, "the agent's "+showFields(ed.value, set)+": the platform did not change it since"
			case adapters.Diff(p, ed.carried)&set != 0:
				ok, want = isPlatform, "the platform's "+showFields(p, set)+": the platform changed it after the agent's edit"
			default:
				ok, want = isPlatform || isAgent, fmt.Sprintf("the platform's %s or the agent's %s", showFields(p, set), showFields(ed.value, set))
			}
			if !ok {
				t.Errorf("ticket %s: the helpdesk's %s, want %s", id, showFields(held, set), want)
			}
		}
		f.checkNotes(id, snap.Messages, snap.Ticket, p)
		for _, m := range e.upstream(id).Messages {
			if !m.External {
				continue
			}
			if !agentBodies[m.Body] || strings.Contains(m.Body, "Guest rated") || strings.Contains(m.Body, "Console comment") {
				t.Errorf("ticket %s: the bridge posted %q upstream, which is no agent's message", id, m.Body)
			}
		}
	}
}

// checkNotes checks the rating and comment notes of request id's ticket
// (see check); created is what the ticket was created with, p the
// platform's fields now.
func (f *simFields) checkNotes(id string, msgs []memory.MessageSnapshot, created adapters.Ticket, p adapters.Fields) {
	t := f.a.e.t
	t.Helper()
	count := map[adapters.Marker]int{}
	for _, m := range msgs {
		if !m.ByBridge || m.UpstreamID != "" {
			continue
		}
		mk, ok := adapters.ParseMarker(m.Body)
		if !ok || (mk.Kind != adapters.MarkerRating && mk.Kind != adapters.MarkerComment) {
			continue
		}
		count[mk]++
		if count[mk] == 2 {
			t.Errorf("ticket %s: the note %q is there twice or more", id, firstLine(m.Body))
		}
		if !f.served[id][mk] {
			t.Errorf("ticket %s: the note %q is of a value no read of the request gave", id, firstLine(m.Body))
		}
	}
	if r := p.Rating; r != nil && (created.GuestRating == nil || *created.GuestRating != *r) {
		if _, mk := adapters.RatingNote(*r); count[mk] == 0 {
			t.Errorf("ticket %s: no note of the guest's rating %s", id, adapters.FormatRating(*r))
		}
	}
	if c := p.Comment; c != "" && c != created.Comments {
		if _, mk := adapters.CommentNote(c); count[mk] == 0 {
			t.Errorf("ticket %s: no note of the console comment %q", id, c)
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// showFields writes the fields of set of f.
func showFields(f adapters.Fields, set adapters.FieldSet) string {
	var parts []string
	for _, fld := range set.Fields() {
		var v string
		switch fld {
		case adapters.FieldDepartment:
			v = f.Department
		case adapters.FieldTitle:
			v = f.Title
		case adapters.FieldDue:
			v = "none"
			if !f.Due.IsZero() {
				v = f.Due.UTC().Format(time.RFC3339)
			}
		case adapters.FieldRating:
			v = "none"
			if f.Rating != nil {
				v = adapters.FormatRating(*f.Rating)
			}
		case adapters.FieldComment:
			v = f.Comment
		}
		parts = append(parts, fmt.Sprintf("%s %q", fld, v))
	}
	return strings.Join(parts, ", ")
}
