package zammad

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

var (
	_ adapters.Updater       = (*Adapter)(nil)
	_ saas.Fielder[zmTicket] = vendor{}
)

// originTag is the tag of origin o (see [saas.OriginTagPrefix]); "" for
// none. Zammad's ticket creation takes its tags as one comma-separated
// text, so a comma cannot be in one.
func originTag(o guestapi.Origin) string {
	if o == "" || strings.ContainsAny(string(o), ",\r\n") {
		return ""
	}
	return saas.OriginTagPrefix + string(o)
}

// Priority ids of Zammad's seeded priorities ("1 low", "2 normal", "3
// high"). Ids rather than names, so that a priority an admin renamed is
// still found. Zammad seeds no urgent priority: urgent is high.
var priorityIDs = map[adapters.Priority]int64{
	adapters.PriorityLow: 1, adapters.PriorityNormal: 2, adapters.PriorityHigh: 3, adapters.PriorityUrgent: 3,
}

// Update keeps the platform's fields current in the ticket (see
// [adapters.Updater]; [saas.Helpdesk.UpdateFields] does the common part):
//
//   - department: the group it routes to, as at creation
//     (TICKETBRIDGE_ZAMMAD_GROUPS, else TICKETBRIDGE_ZAMMAD_GROUP);
//   - title: the title, "[department] first line" as at creation;
//   - due: the Date & Time attribute TICKETBRIDGE_ZAMMAD_DUE_ATTRIBUTE
//     (Zammad has no due date of its own), null when the request has
//     none; not carried without the setting;
//   - rating: the tag guest_rating_<rating> (4.5 is guest_rating_4_5),
//     added with Zammad's tags API after the one before is removed, plus
//     an internal note per distinct rating;
//   - comment: an internal note per distinct text;
//   - priority: Zammad's seeded priority of that level (priority_id 1
//     low, 2 normal, 3 high); Zammad has no urgent, so urgent is high;
//     none leaves the ticket's alone;
//   - origin: the tag origin_<origin>, set at creation.
//
// Group, title, due date and priority go in one ticket update, and only
// those that differ from what the ticket holds; the rating's tag costs a
// read of the ticket's tags when the rating is to be set and, when the tag
// changes, one request per tag removed or added. A repeat writes nothing. Changes reports none of it:
// it reads state changes and articles from others than the API user.
//
// Zammad's REST API has no rate limit of its own, but a proxy in front of
// it may answer 429: Update then returns an [*adapters.WaitError] at its
// Retry-After.
//
// A due date an attribute refuses is [adapters.ErrInvalid] naming the
// attribute: Zammad refuses a past date in an attribute whose "Allow
// past" is off, and then every update of a ticket whose value there has
// passed, whatever it changes (its state included), so the attribute
// wants "Allow past" on ([Adapter.Check] says so). Zammad drops an
// attribute it does not have without a word; Update reads its answer and
// fails with ErrInvalid when the due date did not stay.
func (a *Adapter) Update(ctx context.Context, ref adapters.Ref, u adapters.FieldUpdate) error {
	return a.UpdateFields(ctx, ref, u)
}

// unknownRating is the rating Held reports: Zammad's ticket answers hold
// no tags, so what the ticket holds is read (GET /tags) by SetFields, and
// only when the rating is to be set. No rating is written so.
const unknownRating = "?"

// readTags reads the tags of ticket id.
func (a *Adapter) readTags(ctx context.Context, id int64) ([]string, error) {
	var out struct {
		Tags []string `json:"tags"`
	}
	q := url.Values{"object": {"Ticket"}, "o_id": {idString(id)}}
	if _, err := a.get(ctx, "/tags", q, "read tags", &out); err != nil {
		return nil, fmt.Errorf("read tags of zammad ticket %d: %w", id, err)
	}
	return out.Tags, nil
}

// Held reads what the ticket holds, but for its rating tag (see
// unknownRating). A merged ticket lives on in another one and takes no
// write.
func (v vendor) Held(t zmTicket) (saas.Values, bool) {
	if t.State == "merged" {
		return saas.Values{}, false
	}
	h := saas.Values{Group: t.Group, Title: t.Title, Rating: unknownRating}
	if t.PriorityID != 0 {
		h.Priority = idString(t.PriorityID)
	}
	if v.cfg.DueAttribute != "" {
		h.Due = v.due(t)
	}
	return h, true
}

// due is the due date t holds in the attribute, in Want's form
// (timeValue); "" for none. A value that is not a time is returned as it
// is, which differs from any due date and so is written over.
func (v vendor) due(t zmTicket) string {
	raw, _ := t.attr(v.cfg.DueAttribute)
	if raw == "" {
		return ""
	}
	at, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return raw
	}
	return timeValue(at)
}

// Want is what the ticket is to hold for f.
func (v vendor) Want(held saas.Values, f adapters.Fields) saas.Values {
	w := saas.Values{
		Group: saas.Group(v.groups, f.Department, v.cfg.Group),
		Title: title(adapters.Ticket{Department: f.Department, TaskDescription: f.Title}),
	}
	if id, ok := priorityIDs[f.Priority]; ok {
		w.Priority = idString(id)
	}
	if v.cfg.DueAttribute != "" && !f.Due.IsZero() {
		w.Due = timeValue(f.Due)
	}
	if f.Rating != nil {
		w.Rating = saas.RatingText(*f.Rating)
	}
	return w
}

// SetFields writes the group, title, due date and priority in which in
// one ticket update, then, when the rating is in which, the rating's tag
// where the ticket's tags (read first) do not hold it already.
func (v vendor) SetFields(ctx context.Context, t zmTicket, which adapters.FieldSet, val saas.Values) error {
	in := map[string]any{}
	if which.Has(adapters.FieldDepartment) {
		in["group"] = val.Group
	}
	if which.Has(adapters.FieldTitle) {
		in["title"] = val.Title
	}
	if which.Has(adapters.FieldPriority) {
		id, err := strconv.ParseInt(val.Priority, 10, 64)
		if err != nil {
			return fmt.Errorf("priority %q is not a priority id: %w", val.Priority, adapters.ErrInvalid)
		}
		in["priority_id"] = id
	}
	if which.Has(adapters.FieldDue) {
		in[v.cfg.DueAttribute] = nil // null clears it (the validators pass a blank value)
		if val.Due != "" {
			in[v.cfg.DueAttribute] = val.Due
		}
	}
	if len(in) > 0 {
		if err := v.putFields(ctx, t.ID, in, which.Has(adapters.FieldDue) && val.Due != ""); err != nil {
			return err
		}
	}
	if !which.Has(adapters.FieldRating) {
		return nil
	}
	tags, err := v.readTags(ctx, t.ID)
	if err != nil {
		return err
	}
	want := ""
	if val.Rating != "" {
		want = saas.RatingTagPrefix + val.Rating
	}
	for _, tag := range tags {
		if strings.HasPrefix(tag, saas.RatingTagPrefix) && tag != want {
			if err := v.tag(ctx, http.MethodDelete, "/tags/remove", t.ID, tag); err != nil {
				return err
			}
		}
	}
	if want != "" && !slices.Contains(tags, want) {
		return v.tag(ctx, http.MethodPost, "/tags/add", t.ID, want)
	}
	return nil
}

// putFields sends one update of ticket id. A 429 is a WaitError at its
// Retry-After; the answer must hold the due date when one was sent.
func (v vendor) putFields(ctx context.Context, id int64, in map[string]any, due bool) error {
	var out zmTicket
	resp, err := v.http.JSON(ctx, adapters.HTTPRequest{
		Method: http.MethodPut, URL: v.url("/tickets/"+idString(id), url.Values{"expand": {"true"}}), Op: "update fields",
		Accept: []int{http.StatusTooManyRequests},
	}, in, &out)
	if w, ok := saas.TooMany(resp, "Zammad answered 429 Too Many Requests"); err == nil && ok {
		err = w
	}
	if err != nil {
		if errors.Is(err, adapters.ErrInvalid) && v.cfg.DueAttribute != "" && in[v.cfg.DueAttribute] != nil {
			return fmt.Errorf("update zammad ticket %d: %w (does the attribute %s of %sDUE_ATTRIBUTE allow past dates? Zammad refuses them, and any update of a ticket whose date there has passed, unless \"Allow past\" is on)",
				id, err, v.cfg.DueAttribute, EnvPrefix)
		}
		return fmt.Errorf("update zammad ticket %d: %w", id, err)
	}
	if _, present := out.attr(v.cfg.DueAttribute); due && !present {
		return fmt.Errorf("update zammad ticket %d: Zammad did not keep the due date: it has no ticket attribute %q (%sDUE_ATTRIBUTE): create it in Admin > System > Objects > Ticket, format Date & Time with Allow past on, and apply it with Update Database: %w",
			id, v.cfg.DueAttribute, EnvPrefix, adapters.ErrInvalid)
	}
	return nil
}

// tag adds (POST /tags/add) or removes (DELETE /tags/remove) a tag of
// ticket id; both do nothing more when the ticket holds it, or does not.
func (v vendor) tag(ctx context.Context, method, path string, id int64, tag string) error {
	resp, err := v.http.JSON(ctx, adapters.HTTPRequest{
		Method: method, URL: v.url(path, nil), Op: "set rating tag", Idempotent: true,
		Accept: []int{http.StatusTooManyRequests},
	}, tagIn{Item: tag, Object: "Ticket", OID: id}, nil)
	if w, ok := saas.TooMany(resp, "Zammad answered 429 Too Many Requests"); err == nil && ok {
		err = w
	}
	if err != nil {
		return fmt.Errorf("%s tag %q of zammad ticket %d: %w", strings.TrimPrefix(path, "/tags/"), tag, id, err)
	}
	return nil
}
