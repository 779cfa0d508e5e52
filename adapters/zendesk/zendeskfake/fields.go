package zendeskfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The platform's fields as the API sets them on a ticket: subject,
// group_id, priority, tags (which replace the ticket's tags; additional_tags
// add to them) and custom_fields, each from the Tickets page's JSON format
// (https://developer.zendesk.com/api-reference/ticketing/tickets/tickets/).
// A value a field refuses is a 422 RecordInvalid whose details.base names
// the field ("<title> is not valid", error InvalidValue, ticket_field_id
// and ticket_field_type), the shape seen in the issue trackers of Zendesk
// API clients (facetoe/zenpy#425). Where the pages leave a detail open the
// fake picks one: a custom field id the account does not have is refused
// the same way, a date field takes "YYYY-MM-DD" only, and null empties
// any field.

// priorities are Zendesk's ticket priorities.
var priorities = []string{"low", "normal", "high", "urgent"}

// fieldIn is one custom field's value in a request.
type fieldIn struct {
	ID    int64           `json:"id"`
	Value json.RawMessage `json:"value"`
}

// fieldType names Zendesk's field types as the errors name them.
var fieldType = map[string]string{"date": "FieldDate", "decimal": "FieldDecimal", "integer": "FieldInteger", "": "FieldText", "text": "FieldText"}

// field returns the account's custom field id.
func (s *Server) field(id int64) (Field, bool) {
	for _, f := range slices.Concat(s.opts.TicketFields, s.opts.RequiredOnSolve) {
		if f.ID == id {
			return f, true
		}
	}
	return Field{}, false
}

// fieldValue returns what field f keeps of raw, and false when f refuses
// it; "" empties the field.
func fieldValue(f Field, raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	var text string
	if json.Unmarshal(raw, &text) != nil {
		var n json.Number
		if json.Unmarshal(raw, &n) != nil {
			return "", false
		}
		text = n.String()
	}
	switch f.Type {
	case "date":
		_, err := time.Parse(time.DateOnly, text)
		return text, err == nil
	case "decimal":
		_, err := strconv.ParseFloat(text, 64)
		return text, err == nil
	case "integer":
		_, err := strconv.ParseInt(text, 10, 64)
		return text, err == nil
	}
	return text, true
}

// badField is one refused value, for writeInvalidFields.
type badField struct {
	field Field
	desc  string
}

// checkFields returns the values of u that Zendesk refuses.
func (s *Server) checkFields(u update) []badField {
	var bad []badField
	if u.priority != nil && *u.priority != "" && !slices.Contains(priorities, *u.priority) {
		bad = append(bad, badField{Field{Title: "Priority"}, fmt.Sprintf("Priority: %s is not valid", *u.priority)})
	}
	for _, in := range u.fields {
		f, ok := s.field(in.ID)
		if !ok {
			bad = append(bad, badField{Field{ID: in.ID, Title: strconv.FormatInt(in.ID, 10)}, fmt.Sprintf("Ticket field %d is not valid", in.ID)})
			continue
		}
		if _, ok := fieldValue(f, in.Value); !ok {
			bad = append(bad, badField{f, f.Title + " is not valid"})
		}
	}
	return bad
}

func writeInvalidFields(w http.ResponseWriter, bad []badField) {
	var base []map[string]any
	for _, b := range bad {
		e := map[string]any{"description": b.desc, "error": "InvalidValue"}
		if b.field.ID != 0 {
			e["ticket_field_id"], e["ticket_field_type"] = b.field.ID, fieldType[b.field.Type]
		}
		base = append(base, e)
	}
	writeError(w, http.StatusUnprocessableEntity, "RecordInvalid", "Record validation errors", map[string]any{"base": base})
}

// applyFields sets what u sets of the fields (checked by checkFields) on
// t, with a Change event in a for each value that changes.
func (s *Server) applyFields(t *ticket, a *audit, u update) {
	change := func(field, from, to string) {
		a.Events = append(a.Events, auditEvent{ID: s.newID(), Type: "Change", Field: field, Value: to, Previous: from})
	}
	if u.subject != nil && *u.subject != t.Subject {
		change("subject", t.Subject, *u.subject)
		t.Subject = *u.subject
	}
	if u.priority != nil && *u.priority != t.Priority {
		change("priority", t.Priority, *u.priority)
		t.Priority = *u.priority
	}
	for _, in := range u.fields {
		f, _ := s.field(in.ID)
		v, _ := fieldValue(f, in.Value)
		if v == t.Fields[in.ID] {
			continue
		}
		change(strconv.FormatInt(in.ID, 10), t.Fields[in.ID], v)
		if t.Fields == nil {
			t.Fields = map[int64]string{}
		}
		if v == "" {
			delete(t.Fields, in.ID)
		} else {
			t.Fields[in.ID] = v
		}
	}
	if u.setTags != nil {
		before := strings.Join(t.Tags, " ")
		if after := dedupTags(*u.setTags); strings.Join(after, " ") != before {
			t.Tags = after
			change("tags", before, strings.Join(after, " "))
		}
	}
}

// fieldsJSON is a ticket's "custom_fields": every field of the account,
// null where empty.
func (s *Server) fieldsJSON(t *ticket) []map[string]any {
	out := []map[string]any{}
	for _, f := range slices.Concat(s.opts.TicketFields, s.opts.RequiredOnSolve) {
		out = append(out, map[string]any{"id": f.ID, "value": nullable(t.Fields[f.ID])})
	}
	return out
}

// nullable is s, or nil (JSON null) for "".
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func derefTags(tags *[]string) []string {
	if tags == nil {
		return nil
	}
	return *tags
}
