package zammadfake

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/ticketbridge/ticketbridge/adapters/saas/saasfake"
)

// What the fake follows of Zammad for a ticket's priority, its Date & Time
// attributes and its tags:
//
//   - Priorities are Zammad's seeded ones, "1 low", "2 normal" (the
//     default of a new ticket) and "3 high"
//     (https://github.com/zammad/zammad/blob/develop/db/seeds/ticket_priorities.rb),
//     set by priority_id or by name ("priority"); an unknown one is a 422,
//     as the association lookup of tickets_controller.rb answers.
//   - A datetime attribute takes an ISO 8601 time and answers it in UTC
//     with milliseconds; null clears it. When any attribute of a ticket
//     changes through the API (its title, group, state, priority, a
//     custom attribute), Zammad validates every custom attribute's value
//     the ticket is left with: a datetime attribute with "Allow past" off
//     refuses a value in the past, one with "Allow future" off a value in
//     the future, with 422 and "<Attribute name> does not allow past
//     dates." as error and error_human
//     (app/models/object_manager/attribute/validation.rb and
//     validation/future_past.rb, the message shaped by handles_errors.rb).
//     So a stored value that has passed blocks every later update that
//     changes something, until the same update moves or clears it. A
//     blank value passes. The fake's pick: a value that is not an RFC 3339
//     time is a 422 (Rails would store nothing).
//   - Tags (https://docs.zammad.org/en/latest/api/ticket/tags.html):
//     GET /api/v1/tags?object=Ticket&o_id={id} answers {"tags": [...]};
//     POST /api/v1/tags/add {"item", "object", "o_id"} answers 201 true,
//     and does nothing more when the ticket holds the tag; DELETE
//     /api/v1/tags/remove with the same body answers 200 true. A change
//     touches the ticket and is in its history (type added or removed,
//     attribute tag), as app/models/tag.rb does. A ticket creation takes
//     "tags" as one comma-separated text. The fake's picks: an unknown
//     ticket is a 404, an object other than Ticket a 422.

// priority is one of Zammad's ticket priorities.
type priority struct {
	id   int64
	name string
}

// priorities are Zammad's seeded priorities.
var priorities = []priority{{1, "1 low"}, {2, "2 normal"}, {3, "3 high"}}

// defaultPriority is the priority of a ticket created without one.
const defaultPriority = 2

func priorityByID(id int64) (priority, bool) {
	i := slices.IndexFunc(priorities, func(p priority) bool { return p.id == id })
	if i < 0 {
		return priority{}, false
	}
	return priorities[i], true
}

// parsePriority reads priority_id or priority of f; nil when f sets
// neither. A non-empty message is the 422 to answer.
func parsePriority(f fields) (*priority, string) {
	name, byName, err := f.str("priority")
	if err != nil {
		return nil, err.Error()
	}
	idStr, byID, err := f.str("priority_id")
	if err != nil {
		return nil, err.Error()
	}
	switch {
	case byName:
		i := slices.IndexFunc(priorities, func(p priority) bool { return p.name == name })
		if i < 0 {
			return nil, fmt.Sprintf("No lookup value found for 'priority': %q", name)
		}
		return &priorities[i], ""
	case byID:
		p, ok := priorityByID(mustID(idStr))
		if !ok {
			return nil, fmt.Sprintf("Invalid value for param 'priority_id': %q", idStr)
		}
		return &p, ""
	}
	return nil, ""
}

// attrValue checks value v of attribute a and returns what the ticket
// stores; a non-empty message is the 422 to answer.
func attrValue(a Attribute, v string) (string, string) {
	if a.DataType == "datetime" {
		at, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return "", fmt.Sprintf("%s: %q is not a date and time", a.Display, v)
		}
		return zmTime(at), ""
	}
	if len([]rune(v)) > a.MaxLength {
		return "", fmt.Sprintf("%s is too long (maximum is %d characters)", a.Display, a.MaxLength)
	}
	return v, ""
}

// checkDates is Zammad's validation of the datetime attributes a ticket
// is left with (attrs) by a write that changes it; "" when they pass. The
// caller holds mu.
func (s *Server) checkDates(attrs map[string]*string) string {
	now := s.now()
	names := make([]string, 0, len(s.attrs))
	for n := range s.attrs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		a, v := s.attrs[n], attrs[n]
		if a.DataType != "datetime" || a.Pending || a.Inactive || v == nil || *v == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, *v)
		if err != nil {
			continue
		}
		switch {
		case a.RefusePast && at.Before(now):
			return humanize(a.Name) + " does not allow past dates."
		case a.RefuseFuture && at.After(now):
			return humanize(a.Name) + " does not allow future dates."
		}
	}
	return ""
}

// humanize is Rails' human attribute name: "due_date" is "Due date".
func humanize(name string) string {
	r := []rune(strings.ReplaceAll(strings.TrimSuffix(name, "_id"), "_", " "))
	if len(r) > 0 {
		r[0] = unicode.ToUpper(r[0])
	}
	return string(r)
}

// dataOption is an attribute's data_option as the object manager lists it.
func (a Attribute) dataOption() map[string]any {
	if a.DataType == "datetime" {
		return map[string]any{"future": !a.RefuseFuture, "past": !a.RefusePast, "diff": 24, "null": true}
	}
	return map[string]any{"type": "text", "maxlength": a.MaxLength, "null": true}
}

// parseTags reads the comma-separated tags of a ticket creation.
func parseTags(f fields) ([]string, string) {
	v, ok, err := f.str("tags")
	if err != nil || !ok {
		return nil, ""
	}
	var out []string
	for tag := range strings.SplitSeq(v, ",") {
		if tag = strings.TrimSpace(tag); tag != "" && !slices.Contains(out, tag) {
			out = append(out, tag)
		}
	}
	return out, ""
}

// changed records that attribute attr of t changed from from to to, at
// now. The caller holds mu.
func (s *Server) changed(t *ticket, attr, from, to string, by int64, now time.Time) {
	s.addHistory(HistoryEntry{Type: "updated", Object: "Ticket", OID: t.id, Attribute: attr, ValueFrom: from, ValueTo: to,
		CreatedByID: by, CreatedAt: now})
}

// tagsList answers GET /api/v1/tags. The caller holds mu.
func (s *Server) tagsList(w http.ResponseWriter, object, oid string, uid int64) {
	if object != "Ticket" {
		writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf("object %q: the fake keeps the tags of tickets only", object))
		return
	}
	t, ok := s.readable(w, oid, uid)
	if !ok {
		return
	}
	saasfake.WriteJSON(w, http.StatusOK, map[string]any{"tags": append([]string{}, t.tags...)})
}

// tagWrite answers POST /api/v1/tags/add (add) and DELETE
// /api/v1/tags/remove. The caller holds mu.
func (s *Server) tagWrite(w http.ResponseWriter, body []byte, uid int64, add bool) {
	f, ok := decode(w, body)
	if !ok {
		return
	}
	item, _, err := f.str("item")
	if err != nil || strings.TrimSpace(item) == "" {
		writeError(w, http.StatusUnprocessableEntity, "Need item!")
		return
	}
	item = strings.TrimSpace(item)
	object, _, _ := f.str("object")
	if object != "Ticket" {
		writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf("object %q: the fake keeps the tags of tickets only", object))
		return
	}
	oid, _, _ := f.str("o_id")
	t, ok := s.readable(w, oid, uid)
	if !ok {
		return
	}
	i := slices.Index(t.tags, item)
	switch {
	case add && i < 0:
		t.tags = append(t.tags, item)
		s.tagged(t, "added", item, uid)
	case !add && i >= 0:
		t.tags = slices.Delete(t.tags, i, i+1)
		s.tagged(t, "removed", item, uid)
	}
	status := http.StatusOK
	if add {
		status = http.StatusCreated
	}
	saasfake.WriteJSON(w, status, true)
}

// tagged touches t and records a tag added or removed. The caller holds
// mu.
func (s *Server) tagged(t *ticket, typ, item string, by int64) {
	now := s.stamp()
	t.updatedAt, t.updatedBy = now, by
	s.addHistory(HistoryEntry{Type: typ, Object: "Ticket", OID: t.id, Attribute: "tag", ValueTo: item, CreatedByID: by, CreatedAt: now})
}
