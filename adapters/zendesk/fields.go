package zendesk

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

var _ adapters.Updater = (*Adapter)(nil)

// originTag is the tag of origin o (see [saas.OriginTagPrefix]); "" for
// none.
func originTag(o guestapi.Origin) string {
	if o == "" || strings.ContainsAny(string(o), " \t\r\n,") {
		return ""
	}
	return saas.OriginTagPrefix + string(o)
}

// ticketUpdates is Zendesk's budget of updates of one ticket by one user
// (the Update Ticket row of the rate limits page).
var ticketUpdates = saas.Budget{N: 30, Window: 10 * time.Minute, Why: "Zendesk allows 30 updates of a ticket in 10 minutes"}

// Update keeps the platform's fields current in the ticket (see
// [adapters.Updater]; [saas.Helpdesk.UpdateFields] does the common part),
// on the ticket of the chain that takes writes (a follow-up of a closed
// one; a closed ticket is left as it is):
//
//   - department: the group it routes to, as at creation
//     (TICKETBRIDGE_ZENDESK_GROUPS, else TICKETBRIDGE_ZENDESK_GROUP; a
//     department routed to neither leaves the group as it is);
//   - title: the subject, "[department] first line" as at creation;
//   - due: the custom date field TICKETBRIDGE_ZENDESK_DUE_FIELD, the due
//     date's day in UTC, emptied when the request has none (Zendesk's
//     due_at is for task tickets only); not carried without the setting;
//   - rating: the tag guest_rating_<rating> (4.5 is guest_rating_4_5),
//     replacing the one before, plus an internal note per distinct rating;
//   - comment: an internal note per distinct text;
//   - priority: Zendesk's priority of the same name (low, normal, high,
//     urgent); none leaves it alone;
//   - origin: the tag origin_<origin>, set at creation.
//
// The fields go in one ticket update, and only those that differ from
// what the ticket holds: a repeat writes nothing. Field changes are not
// among the events Changes reports, and the notes are the API user's,
// which it leaves out. Every update of a ticket (messages, notes, status,
// fields) spends Zendesk's budget of 30 updates of a ticket in ten
// minutes, which the adapter counts: when it is spent, or Zendesk answers
// 429, Update returns an [*adapters.WaitError] naming when the next
// update is allowed.
func (a *Adapter) Update(ctx context.Context, ref adapters.Ref, u adapters.FieldUpdate) error {
	return a.UpdateFields(ctx, ref, u)
}

// Held reads what the chain's active ticket holds; a closed ticket takes
// no write.
func (v vendor) Held(c chain) (saas.Values, bool) {
	t := c.active()
	if t.Status == statusClosed {
		return saas.Values{}, false
	}
	h := saas.Values{Title: t.Subject, Rating: saas.RatingOf(t.Tags)}
	if t.GroupID != nil {
		h.Group = idString(*t.GroupID)
	}
	if t.Priority != nil {
		h.Priority = *t.Priority
	}
	if v.cfg.DueField != 0 {
		h.Due = t.field(v.cfg.DueField)
	}
	return h, true
}

// Want is what the ticket is to hold for f.
func (v vendor) Want(held saas.Values, f adapters.Fields) saas.Values {
	w := saas.Values{
		Title:    subject(adapters.Ticket{Department: f.Department, TaskDescription: f.Title}),
		Group:    held.Group,
		Priority: string(f.Priority),
	}
	if g := saas.Group(v.groups, f.Department, v.cfg.Group); g != 0 {
		w.Group = idString(g)
	}
	if v.cfg.DueField != 0 && !f.Due.IsZero() {
		w.Due = f.Due.UTC().Format(time.DateOnly)
	}
	if f.Rating != nil {
		w.Rating = saas.RatingText(*f.Rating)
	}
	return w
}

// SetFields writes the fields in which in one update of the chain's
// active ticket.
func (v vendor) SetFields(ctx context.Context, c chain, which adapters.FieldSet, val saas.Values) error {
	t := c.active()
	var in zdFieldsIn
	if which.Has(adapters.FieldDepartment) {
		g, err := strconv.ParseInt(val.Group, 10, 64)
		if err != nil {
			return fmt.Errorf("group %q is not a group id: %w", val.Group, adapters.ErrInvalid)
		}
		in.GroupID = &g
	}
	if which.Has(adapters.FieldTitle) {
		in.Subject = &val.Title
	}
	if which.Has(adapters.FieldPriority) {
		in.Priority = &val.Priority
	}
	if which.Has(adapters.FieldDue) {
		due := json.RawMessage("null") // clears the field (assumed: Zendesk documents no way to clear a date field)
		if val.Due != "" {
			due, _ = json.Marshal(val.Due)
		}
		in.CustomFields = []zdFieldValue{{ID: v.cfg.DueField, Value: due}}
	}
	if which.Has(adapters.FieldRating) {
		tags := saas.WithRating(t.Tags, val.Rating)
		in.Tags = &tags
		in.SafeUpdate, in.UpdatedStamp = true, t.UpdatedAt.UTC().Format(time.RFC3339)
	}
	if _, err := v.put(ctx, c.ref, t.ID, in, "update fields", http.StatusTooManyRequests); err != nil {
		return fmt.Errorf("zendesk ticket %d: %w", t.ID, v.closedMeanwhile(ctx, t.ID, err))
	}
	return nil
}

// put sends one update of ticket id, spending one of its budget's
// updates first ([*adapters.WaitError] when it is spent). With 429 in
// accept, Zendesk's 429 is returned at once as an *adapters.WaitError
// (Update's), else the client waits it out as for any request; accept
// may list other statuses to answer with rather than fail (see
// [adapters.HTTPRequest]).
func (a *Adapter) put(ctx context.Context, ref adapters.Ref, id int64, in any, op string, accept ...int) (*adapters.HTTPResponse, error) {
	return a.putWith(ctx, a.http, ref, id, in, op, nil, accept...)
}

// putWith is put through client c, decoding the answer into out (nil:
// none).
func (a *Adapter) putWith(ctx context.Context, c *adapters.HTTPClient, ref adapters.Ref, id int64, in any, op string, out any, accept ...int) (*adapters.HTTPResponse, error) {
	if err := a.budget.Take(id, ref); err != nil {
		return nil, err
	}
	resp, err := c.JSON(ctx, adapters.HTTPRequest{
		Method: http.MethodPut, URL: a.url(fmt.Sprintf("/tickets/%d", id)), Op: op, Accept: accept,
	}, map[string]any{"ticket": in}, out)
	if w, ok := saas.TooMany(resp, "Zendesk answered 429 Too Many Requests"); err == nil && ok {
		w.Ref = ref
		a.budget.Block(id, w.Until)
		return resp, w
	}
	return resp, err
}
