package freshdesk

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

var (
	_ adapters.Updater     = (*Adapter)(nil)
	_ saas.Fielder[thread] = vendor{}
)

// maxTag is the most characters a Freshdesk tag holds; no comma can be
// in one either.
const maxTag = 32

// originTag is the tag of origin o (see [saas.OriginTagPrefix]); "" for
// none, or for one Freshdesk would refuse.
func originTag(o guestapi.Origin) string {
	tag := saas.OriginTagPrefix + string(o)
	if o == "" || strings.ContainsAny(string(o), ",\r\n") || len([]rune(tag)) > maxTag {
		return ""
	}
	return tag
}

// priorities are Freshdesk's priorities by the bridge's names: 1 Low,
// 2 Medium, 3 High, 4 Urgent.
var priorities = map[adapters.Priority]int{
	adapters.PriorityLow: 1, adapters.PriorityNormal: 2, adapters.PriorityHigh: 3, adapters.PriorityUrgent: 4,
}

// priorityName is the bridge's name of Freshdesk priority n; "" for
// another number.
func priorityName(n int) string {
	for p, v := range priorities {
		if v == n {
			return string(p)
		}
	}
	return ""
}

// dueForm is how due dates are compared and sent: UTC, whole seconds, as
// Freshdesk keeps them.
const dueForm = time.RFC3339

// dueOf returns t as dueForm writes it; "" for nil.
func dueOf(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(dueForm)
}

// sla reports whether Freshdesk runs the SLA clock of a ticket in status
// s, and so takes a due date: not in pending, resolved or closed, the
// built-in statuses that stop it (Freshdesk refuses due_by in a status
// that stops the clock, "for consistency with the web" where the option
// is offered for such statuses only). A custom status is assumed to run
// it: which custom status stops the clock is set per helpdesk and not
// shown by the API; Freshdesk's refusal is then an error of the update.
func sla(s int) bool {
	return s != statusPending && s != statusResolved && s != statusClosed
}

// Update keeps the platform's fields current in the ticket (see
// [adapters.Updater]; [saas.Helpdesk.UpdateFields] does the common part),
// on the ticket that takes writes (the follow-up of an archived one; an
// archived ticket without one is left as it is):
//
//   - department: the group it routes to, as at creation
//     (TICKETBRIDGE_FRESHDESK_GROUPS, else TICKETBRIDGE_FRESHDESK_GROUP; a
//     department routed to neither leaves the group as it is);
//   - title: the subject, "[department] first line" as at creation;
//   - due: due_by, the ticket's resolution due time, to the second. Three
//     rules of Freshdesk shape it. It cannot be before the ticket's
//     creation: an earlier due time (a request overdue before it was
//     mirrored) is sent as the creation time, which Freshdesk shows as
//     overdue; a past time after the creation is sent as it is. It cannot
//     be before fr_due_by, the first response's due time: fr_due_by is
//     then moved to the due time in the same update. And a ticket whose
//     status stops the SLA clock (pending, resolved, closed) takes none:
//     the due time is then left as it is, and carried with the platform's
//     next change of it. Freshdesk documents no way to clear due_by, which
//     its SLA always sets: a request's due time removed upstream leaves
//     Freshdesk's as it is. A due time set through the API is kept when
//     the priority changes later (Freshdesk's SLA recalculation moves only
//     a due time it computed); on an account of Freshdesk's newest SLA
//     engine, which recalculates due_by after every update, Freshdesk's
//     own may replace it, and the bridge does not fight that;
//   - rating: the tag guest_rating_<rating> (4.5 is guest_rating_4_5),
//     replacing the one before, plus an internal note per distinct
//     rating;
//   - comment: an internal note per distinct text;
//   - priority: Freshdesk's priority (low 1, normal 2 "Medium", high 3,
//     urgent 4); none leaves it alone (a new ticket has Freshdesk's
//     default, low);
//   - origin: the tag origin_<origin>, set at creation.
//
// The fields go in one ticket update, and only those that differ from
// what the ticket holds: a repeat writes nothing. Freshdesk's update
// replaces the ticket's tags with those sent, so the rating's tag is
// written with the tags the ticket held when it was read; an agent's tag
// added between that read and the update is lost (Freshdesk offers no
// conditional update). Field changes are not among the events Changes
// reports (it reports conversations and the status), and the notes are
// the API agent's, which it leaves out. A 429 on the update (Freshdesk's
// per-minute budget of the account or of ticket updates, see
// ratelimit.go) is an [*adapters.WaitError] at its Retry-After, not a
// wait inside Update.
func (a *Adapter) Update(ctx context.Context, ref adapters.Ref, u adapters.FieldUpdate) error {
	return a.UpdateFields(ctx, ref, u)
}

// Held reads what the ticket that takes writes holds; an archived ticket
// without a follow-up takes none.
func (v vendor) Held(th thread) (saas.Values, bool) {
	t, ok := th.live()
	if !ok {
		return saas.Values{}, false
	}
	h := saas.Values{Title: t.Subject, Due: dueOf(t.DueBy), Rating: saas.RatingOf(t.Tags), Priority: priorityName(t.Priority)}
	if t.GroupID != nil {
		h.Group = idString(*t.GroupID)
	}
	return h, true
}

// Want is what the ticket is to hold for f. A due time removed upstream
// keeps the ticket's (Freshdesk cannot clear due_by).
func (v vendor) Want(held saas.Values, f adapters.Fields) saas.Values {
	w := saas.Values{
		Title:    subject(adapters.Ticket{Department: f.Department, TaskDescription: f.Title}),
		Group:    held.Group,
		Due:      held.Due,
		Priority: string(f.Priority),
	}
	if g := saas.Group(v.groups, f.Department, v.cfg.Group); g != 0 {
		w.Group = idString(g)
	}
	if !f.Due.IsZero() {
		w.Due = f.Due.UTC().Truncate(time.Second).Format(dueForm)
	}
	if f.Rating != nil {
		w.Rating = saas.RatingText(*f.Rating)
	}
	return w
}

// SetFields writes the fields in which in one update of the ticket that
// takes writes, shaped by Freshdesk's rules for due_by (see
// [Adapter.Update]). A 429 is an [*adapters.WaitError] at its
// Retry-After.
func (v vendor) SetFields(ctx context.Context, th thread, which adapters.FieldSet, val saas.Values) error {
	t, ok := th.live()
	if !ok {
		return nil
	}
	var in fdFieldsIn
	send := false
	if which.Has(adapters.FieldDepartment) {
		g, err := strconv.ParseInt(val.Group, 10, 64)
		if err != nil {
			return fmt.Errorf("group %q is not a group id: %w", val.Group, adapters.ErrInvalid)
		}
		in.GroupID, send = &g, true
	}
	if which.Has(adapters.FieldTitle) {
		in.Subject, send = &val.Title, true
	}
	if which.Has(adapters.FieldPriority) {
		n, ok := priorities[adapters.Priority(val.Priority)]
		if !ok {
			return fmt.Errorf("priority %q is none of low, normal, high, urgent: %w", val.Priority, adapters.ErrInvalid)
		}
		in.Priority, send = &n, true
	}
	if which.Has(adapters.FieldDue) && val.Due != "" && sla(t.Status) {
		due, err := time.Parse(dueForm, val.Due)
		if err != nil {
			return fmt.Errorf("due time %q: %w: %w", val.Due, err, adapters.ErrInvalid)
		}
		if due.Before(t.CreatedAt) {
			due = t.CreatedAt // Freshdesk refuses a due_by before the ticket's creation
		}
		s := due.UTC().Format(dueForm)
		in.DueBy, send = &s, true
		if t.FrDueBy != nil && due.Before(*t.FrDueBy) {
			in.FrDueBy = &s // Freshdesk refuses a due_by before fr_due_by
		}
	}
	if which.Has(adapters.FieldRating) {
		tags := saas.WithRating(t.Tags, val.Rating)
		in.Tags, send = &tags, true
	}
	if !send {
		return nil
	}
	resp, err := v.http.JSON(ctx, adapters.HTTPRequest{
		Method: http.MethodPut, URL: v.url("/tickets/" + idString(t.ID)), Op: "update fields", Accept: []int{http.StatusTooManyRequests},
	}, in, nil)
	if err != nil {
		return fmt.Errorf("freshdesk ticket %d: %w", t.ID, err)
	}
	if w, ok := saas.TooMany(resp, "Freshdesk answered 429 Too Many Requests (its per-minute budget)"); ok {
		return w
	}
	return nil
}
