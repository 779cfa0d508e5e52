package freshdeskfake

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/saas/saasfake"
)

// ---- agents, groups, fields ----

func (s *Server) agentJSON(a *Agent) map[string]any {
	return map[string]any{
		"id": a.ID, "available": true, "occasional": false, "ticket_scope": a.TicketScope,
		"type": "support_agent", "signature": nil, "group_ids": []int64{}, "role_ids": []int64{},
		"created_at": fdTime(s.now()), "updated_at": fdTime(s.now()),
		"contact": map[string]any{
			"active": true, "email": a.Email, "name": a.Name, "language": "en", "time_zone": "UTC",
			"job_title": nil, "mobile": nil, "phone": nil,
		},
	}
}

func (s *Server) showAgent(w http.ResponseWriter, idStr string) {
	id, err := strconv.ParseInt(idStr, 10, 64)
	a := s.agents[id]
	if err != nil || a == nil {
		writeNotFound(w)
		return
	}
	saasfake.WriteJSON(w, http.StatusOK, s.agentJSON(a))
}

func (s *Server) showGroup(w http.ResponseWriter, idStr string) {
	id, err := strconv.ParseInt(idStr, 10, 64)
	name, ok := s.groups[id]
	if err != nil || !ok {
		writeNotFound(w)
		return
	}
	saasfake.WriteJSON(w, http.StatusOK, map[string]any{
		"id": id, "name": name, "description": nil, "agent_ids": []int64{},
		"created_at": fdTime(s.now()), "updated_at": fdTime(s.now()),
	})
}

func (s *Server) ticketFields() []map[string]any {
	field := func(id int64, name, label, typ string, def bool) map[string]any {
		return map[string]any{
			"id": id, "name": name, "label": label, "description": nil, "position": id,
			"required_for_closure": false, "required_for_agents": false, "type": typ, "default": def,
			"customers_can_edit": false, "label_for_customers": label, "required_for_customers": false,
			"displayed_to_customers": false, "created_at": fdTime(s.now()), "updated_at": fdTime(s.now()),
		}
	}
	out := []map[string]any{
		field(1, "requester", "Search a requester", "default_requester", true),
		field(2, "subject", "Subject", "default_subject", true),
		field(3, "ticket_type", "Type", "default_ticket_type", true),
		field(4, "source", "Source", "default_source", true),
		field(5, "status", "Status", "default_status", true),
		field(6, "priority", "Priority", "default_priority", true),
		field(7, "group", "Group", "default_group", true),
		field(8, "agent", "Agent", "default_agent", true),
		field(9, "description", "Description", "default_description", true),
	}
	out[4]["choices"] = map[string][]string{
		"2": {"Open", "Open"}, "3": {"Pending", "Awaiting your Reply"},
		"4": {"Resolved", "This ticket has been Resolved"}, "5": {"Closed", "This ticket has been Closed"},
	}
	for i, f := range s.opts.Fields {
		out = append(out, field(int64(100+i), f.Name, f.Label, f.Type, false))
	}
	return out
}

func (s *Server) customField(name string) (Field, bool) {
	for _, f := range s.opts.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// ---- tickets ----

func (s *Server) ticketJSON(t *Ticket, withDescription bool) map[string]any {
	cf := map[string]any{}
	for _, f := range s.opts.Fields {
		if v, ok := t.CustomFields[f.Name]; ok {
			cf[f.Name] = v
		} else {
			cf[f.Name] = nil
		}
	}
	var group any
	if t.GroupID != 0 {
		group = t.GroupID
	}
	tags := t.Tags
	if tags == nil {
		tags = []string{}
	}
	m := map[string]any{
		"id": t.ID, "subject": t.Subject, "status": t.Status, "priority": t.Priority, "source": t.Source,
		"requester_id": t.RequesterID, "responder_id": nil, "group_id": group, "company_id": nil,
		"type": nil, "tags": tags, "custom_fields": cf, "spam": t.Spam, "is_escalated": false,
		"fr_escalated": false, "cc_emails": []string{}, "fwd_emails": []string{}, "reply_cc_emails": []string{},
		"to_emails": nil, "product_id": nil, "email_config_id": nil,
		"due_by": fdTime(t.DueBy), "fr_due_by": fdTime(t.FrDueBy),
		"created_at": fdTime(t.CreatedAt), "updated_at": fdTime(t.UpdatedAt),
	}
	if withDescription {
		m["description"] = t.Description
		m["description_text"] = t.DescriptionText
		m["attachments"] = []any{}
	}
	if t.Deleted {
		m["deleted"] = true
	}
	return m
}

// ticket returns the ticket idStr names, archived or not as archived
// says, or nil: the ticket endpoints do not see archived tickets, and
// those of the archive see only them.
func (s *Server) ticket(idStr string, archived bool) *Ticket {
	id, err := strconv.ParseInt(idStr, 10, 64)
	if err != nil {
		return nil
	}
	if t := s.tickets[id]; t != nil && t.Archived == archived {
		return t
	}
	return nil
}

// showArchived serves GET /tickets/archived/{id}.
func (s *Server) showArchived(w http.ResponseWriter, idStr string) {
	t := s.ticket(idStr, true)
	if t == nil {
		writeNotFound(w)
		return
	}
	m := s.ticketJSON(t, true)
	m["archived"] = true
	saasfake.WriteJSON(w, http.StatusOK, m)
}

func (s *Server) showTicket(w http.ResponseWriter, r *http.Request, idStr string) {
	if inc := r.URL.Query().Get("include"); inc != "" {
		writeValidation(w, fieldError{Field: "include", Message: "include is not implemented by this fake", Code: "invalid_field"})
		return
	}
	t := s.ticket(idStr, false)
	if t == nil {
		writeNotFound(w)
		return
	}
	saasfake.WriteJSON(w, http.StatusOK, s.ticketJSON(t, true))
}

// listTickets serves GET /tickets: updated_since, order_by, order_type,
// page and per_page.
func (s *Server) listTickets(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k := range q {
		switch k {
		case "updated_since", "order_by", "order_type", "page", "per_page":
		case "filter", "requester_id", "email", "company_id", "include":
			writeValidation(w, fieldError{Field: k, Message: k + " is not implemented by this fake", Code: "invalid_field"})
			return
		default:
			writeValidation(w, fieldError{Field: k, Message: "Unexpected/invalid field in request", Code: "invalid_field"})
			return
		}
	}
	page, perPage, ok := s.paging(w, q)
	if !ok {
		return
	}
	if page > s.opts.MaxPages {
		writeValidation(w, fieldError{Field: "page", Code: "invalid_value",
			Message: fmt.Sprintf("You cannot access tickets beyond the %dth page. Please provide a smaller page number.", s.opts.MaxPages)})
		return
	}
	now := s.now()
	var since time.Time
	hasSince := false
	if v := q.Get("updated_since"); v != "" {
		t, err := parseTime(v)
		if err != nil {
			writeValidation(w, fieldError{Field: "updated_since", Message: "It should be in the 'valid date time' format", Code: "invalid_value"})
			return
		}
		since, hasSince = t, true
	}
	orderBy := cmp.Or(q.Get("order_by"), "created_at")
	switch orderBy {
	case "created_at", "updated_at", "status":
	case "due_by":
		writeValidation(w, fieldError{Field: "order_by", Message: "due_by is not implemented by this fake", Code: "invalid_value"})
		return
	default:
		writeValidation(w, fieldError{Field: "order_by", Message: "It should be one of these values: 'created_at,due_by,updated_at,status'", Code: "invalid_value"})
		return
	}
	orderType := cmp.Or(q.Get("order_type"), "desc")
	if orderType != "asc" && orderType != "desc" {
		writeValidation(w, fieldError{Field: "order_type", Message: "It should be one of these values: 'asc,desc'", Code: "invalid_value"})
		return
	}

	var list []*Ticket
	for _, t := range s.tickets {
		if t.Deleted || t.Spam || t.Archived {
			continue
		}
		if hasSince {
			if t.UpdatedAt.Before(since) {
				continue
			}
		} else if now.Sub(t.CreatedAt) > DefaultListWindow {
			continue
		}
		list = append(list, t)
	}
	key := func(t *Ticket) int64 {
		switch orderBy {
		case "updated_at":
			return t.UpdatedAt.Unix()
		case "status":
			return int64(t.Status)
		}
		return t.CreatedAt.Unix()
	}
	slices.SortFunc(list, func(a, b *Ticket) int {
		c := cmp.Or(cmp.Compare(key(a), key(b)), cmp.Compare(a.ID, b.ID))
		if orderType == "desc" {
			return -c
		}
		return c
	})
	out := []map[string]any{}
	from := (page - 1) * perPage
	for i := from; i < len(list) && i < from+perPage; i++ {
		out = append(out, s.ticketJSON(list[i], false))
	}
	if from+perPage < len(list) {
		setNext(w, r, page)
	}
	saasfake.WriteJSON(w, http.StatusOK, out)
}

// paging reads page and per_page, answering 400 for a bad value.
func (s *Server) paging(w http.ResponseWriter, q url.Values) (page, perPage int, ok bool) {
	page, perPage = 1, s.opts.PerPage
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeValidation(w, fieldError{Field: "page", Message: "It should be a Positive Number", Code: "invalid_value"})
			return 0, 0, false
		}
		page = n
	}
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > s.opts.MaxPerPage {
			writeValidation(w, fieldError{Field: "per_page", Code: "invalid_value",
				Message: fmt.Sprintf("It should be a Positive Number less than or equal to %d", s.opts.MaxPerPage)})
			return 0, 0, false
		}
		perPage = n
	}
	return page, perPage, true
}

// setNext sets the Link header to the next page of r.
func setNext(w http.ResponseWriter, r *http.Request, page int) {
	w.Header().Set("Link", "<"+saasfake.Link(r, "page", strconv.Itoa(page+1))+`>; rel="next"`)
}

func parseTime(v string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("not a time: %q", v)
}

// ticketInput is a create or update body, validated field by field.
type ticketInput struct {
	subject, description     *string
	email, name              *string
	requesterID              *int64
	status, priority, source *int
	groupID                  *int64
	groupNull                bool
	tags                     []string
	tagsSet                  bool
	customFields             map[string]*string
	customFieldsSet          bool
	dueBy, frDueBy           *time.Time // see fields.go
}

// decodeObject reads body as a JSON object, answering 400 when it is not.
func decodeObject(w http.ResponseWriter, body []byte) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&m); err != nil || m == nil {
		writeValidation(w, fieldError{Field: "", Message: "Request body has invalid json format", Code: "invalid_json"})
		return nil, false
	}
	return m, true
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// parseTicketInput validates a ticket body; create says which fields are
// required.
func (s *Server) parseTicketInput(m map[string]json.RawMessage, create bool) (ticketInput, []fieldError) {
	var in ticketInput
	var errs []fieldError
	mismatch := func(k, want string) {
		errs = append(errs, fieldError{Field: k, Message: "Value set is of type " + jsonType(m[k]) + ".It should be a/an " + want, Code: "datatype_mismatch"})
	}
	str := func(k string) *string {
		var v string
		if json.Unmarshal(m[k], &v) != nil || isNull(m[k]) {
			mismatch(k, "String")
			return nil
		}
		return &v
	}
	integer := func(k string) *int64 {
		var v int64
		if json.Unmarshal(m[k], &v) != nil || isNull(m[k]) {
			mismatch(k, "Positive Integer")
			return nil
		}
		return &v
	}
	small := func(k string, allowed []int) *int {
		v := integer(k)
		if v == nil {
			return nil
		}
		if !slices.Contains(allowed, int(*v)) {
			parts := make([]string, len(allowed))
			for i, a := range allowed {
				parts[i] = strconv.Itoa(a)
			}
			errs = append(errs, fieldError{Field: k, Message: "It should be one of these values: '" + strings.Join(parts, ",") + "'", Code: "invalid_value"})
			return nil
		}
		n := int(*v)
		return &n
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch k {
		case "subject":
			in.subject = str(k)
			if in.subject != nil && len([]rune(*in.subject)) > maxTextField {
				errs = append(errs, fieldError{Field: k, Message: fmt.Sprintf("Has %d characters, it can have maximum of %d characters", len([]rune(*in.subject)), maxTextField), Code: "invalid_value"})
			}
		case "description":
			in.description = str(k)
		case "email":
			if !create {
				errs = append(errs, fieldError{Field: k, Message: "Unexpected/invalid field in request", Code: "invalid_field"})
				continue
			}
			in.email = str(k)
			if in.email != nil && !validEmail(*in.email) {
				errs = append(errs, fieldError{Field: k, Message: "It should be in the 'valid email address' format", Code: "invalid_value"})
			}
		case "name":
			in.name = str(k)
		case "requester_id":
			in.requesterID = integer(k)
		case "status":
			in.status = small(k, []int{StatusOpen, StatusPending, StatusResolved, StatusClosed})
		case "priority":
			in.priority = small(k, []int{1, 2, 3, 4})
		case "source":
			in.source = small(k, []int{1, 2, 3, 7, 9, 10})
		case "group_id":
			if isNull(m[k]) {
				in.groupNull = true
				continue
			}
			in.groupID = integer(k)
			if in.groupID != nil {
				if _, ok := s.groups[*in.groupID]; !ok {
					errs = append(errs, fieldError{Field: k, Message: "There is no group matching the given group_id", Code: "invalid_value"})
				}
			}
		case "due_by", "fr_due_by":
			d, ferr := parseDue(k, m[k])
			if ferr != nil {
				errs = append(errs, *ferr)
			} else if k == "due_by" {
				in.dueBy = d
			} else {
				in.frDueBy = d
			}
		case "tags":
			if json.Unmarshal(m[k], &in.tags) != nil || isNull(m[k]) {
				mismatch(k, "Array")
				continue
			}
			in.tagsSet = true
		case "custom_fields":
			var cf map[string]json.RawMessage
			if json.Unmarshal(m[k], &cf) != nil || cf == nil {
				mismatch(k, "key/value pair")
				continue
			}
			in.customFields, in.customFieldsSet = map[string]*string{}, true
			names := make([]string, 0, len(cf))
			for name := range cf {
				names = append(names, name)
			}
			slices.Sort(names)
			for _, name := range names {
				if _, ok := s.customField(name); !ok {
					errs = append(errs, fieldError{Field: name, Message: "Unexpected/invalid field in request", Code: "invalid_field"})
					continue
				}
				if isNull(cf[name]) {
					in.customFields[name] = nil
					continue
				}
				var v string
				if json.Unmarshal(cf[name], &v) != nil {
					errs = append(errs, fieldError{Field: name, Message: "Value set is of type " + jsonType(cf[name]) + ".It should be a/an String", Code: "datatype_mismatch"})
					continue
				}
				if len([]rune(v)) > maxTextField {
					errs = append(errs, fieldError{Field: name, Message: fmt.Sprintf("Has %d characters, it can have maximum of %d characters", len([]rune(v)), maxTextField), Code: "invalid_value"})
					continue
				}
				in.customFields[name] = &v
			}
		default:
			errs = append(errs, fieldError{Field: k, Message: "Unexpected/invalid field in request", Code: "invalid_field"})
		}
	}
	if create {
		if _, ok := m["subject"]; !ok {
			errs = append(errs, fieldError{Field: "subject", Message: "It should be a/an String", Code: "missing_field"})
		}
		if _, ok := m["description"]; !ok {
			errs = append(errs, fieldError{Field: "description", Message: "It should be a/an String", Code: "missing_field"})
		}
		_, hasEmail := m["email"]
		_, hasRequester := m["requester_id"]
		if !hasEmail && !hasRequester {
			errs = append(errs, fieldError{Field: "requester_id", Message: "Please fill at least 1 of requester_id, phone, email, twitter_id, facebook_id, unique_external_id fields", Code: "missing_field"})
		}
	}
	if in.requesterID != nil {
		if _, isContact := s.contactByID(*in.requesterID); !isContact && s.agents[*in.requesterID] == nil {
			errs = append(errs, fieldError{Field: "requester_id", Message: "There is no contact matching the given requester_id", Code: "invalid_value"})
		}
	}
	return in, errs
}

func (s *Server) contactByID(id int64) (string, bool) {
	for email, cid := range s.contacts {
		if cid == id {
			return email, true
		}
	}
	return "", false
}

func jsonType(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	switch {
	case len(b) == 0 || string(b) == "null":
		return "Null"
	case b[0] == '"':
		return "String"
	case b[0] == '{':
		return "key/value pair"
	case b[0] == '[':
		return "Array"
	case string(b) == "true" || string(b) == "false":
		return "Boolean"
	}
	return "Number"
}

func validEmail(s string) bool {
	local, domain, ok := strings.Cut(s, "@")
	return ok && local != "" && strings.Contains(domain, ".") && !strings.ContainsAny(s, " \t\r\n,;<>")
}

func (s *Server) createTicket(w http.ResponseWriter, body []byte) {
	m, ok := decodeObject(w, body)
	if !ok {
		return
	}
	in, errs := s.parseTicketInput(m, true)
	now := s.now()
	if len(errs) == 0 {
		errs = checkDue(nil, in, now)
	}
	if len(errs) > 0 {
		writeValidation(w, errs...)
		return
	}
	t := &Ticket{
		ID: s.nextTicket, Status: StatusOpen, Priority: 1, Source: 2,
		CustomFields: map[string]string{}, CreatedAt: now, UpdatedAt: now,
	}
	s.nextTicket++
	if in.requesterID != nil {
		t.RequesterID = *in.requesterID
	} else {
		email := strings.ToLower(*in.email)
		id, ok := s.contacts[email]
		if !ok {
			id = s.newID()
			s.contacts[email] = id
		}
		t.RequesterID = id
	}
	s.apply(t, in)
	applyDue(t, in, 0)
	s.tickets[t.ID] = t
	w.Header().Set("Location", fmt.Sprintf("/api/v2/tickets/%d", t.ID))
	saasfake.WriteJSON(w, http.StatusCreated, s.ticketJSON(t, true))
}

// apply sets the fields in gives on t.
func (s *Server) apply(t *Ticket, in ticketInput) {
	if in.subject != nil {
		t.Subject = *in.subject
	}
	if in.description != nil {
		t.Description = sanitize(*in.description)
		t.DescriptionText = htmlText(t.Description)
	}
	if in.status != nil {
		t.Status = *in.status
	}
	if in.priority != nil {
		t.Priority = *in.priority
	}
	if in.source != nil {
		t.Source = *in.source
	}
	if in.groupID != nil {
		t.GroupID = *in.groupID
	}
	if in.groupNull {
		t.GroupID = 0
	}
	if in.tagsSet {
		t.Tags = slices.Clone(in.tags)
	}
	for name, v := range in.customFields {
		if v == nil {
			delete(t.CustomFields, name)
		} else {
			t.CustomFields[name] = *v
		}
	}
}

func (s *Server) updateTicket(w http.ResponseWriter, idStr string, body []byte) {
	t := s.ticket(idStr, false)
	if t == nil || t.Deleted {
		writeNotFound(w)
		return
	}
	m, ok := decodeObject(w, body)
	if !ok {
		return
	}
	in, errs := s.parseTicketInput(m, false)
	if len(errs) == 0 {
		errs = checkDue(t, in, s.now())
	}
	if len(errs) > 0 {
		writeValidation(w, errs...)
		return
	}
	before := t.Priority
	s.apply(t, in)
	applyDue(t, in, before)
	t.UpdatedAt = s.now()
	saasfake.WriteJSON(w, http.StatusOK, s.ticketJSON(t, true))
}

// ---- conversations ----

func conversationJSON(ticketID int64, c Conversation) map[string]any {
	return map[string]any{
		"id": c.ID, "body": c.Body, "body_text": c.BodyText, "incoming": c.Incoming, "private": c.Private,
		"user_id": c.UserID, "support_email": nil, "source": c.Source, "ticket_id": ticketID,
		"to_emails": []string{}, "from_email": nil, "cc_emails": []string{}, "bcc_emails": []string{},
		"attachments": attachmentsJSON(c.Attachments), "created_at": fdTime(c.CreatedAt), "updated_at": fdTime(c.UpdatedAt),
	}
}

// attachmentsJSON is the "attachments" list of a conversation, each as
// Freshdesk's API v2 shows an attachment: id, name, content_type, size,
// attachment_url, thumb_url and its times.
func attachmentsJSON(as []Attachment) []map[string]any {
	out := make([]map[string]any, 0, len(as))
	for _, at := range as {
		link := fmt.Sprintf("https://fake-attachments.freshdesk.com/data/helpdesk/attachments/production/%d/original/%s", at.ID, url.PathEscape(at.Name))
		out = append(out, map[string]any{
			"id": at.ID, "name": at.Name, "content_type": at.ContentType, "size": at.Size,
			"attachment_url": link, "thumb_url": link, "created_at": fdTime(at.CreatedAt), "updated_at": fdTime(at.CreatedAt),
		})
	}
	return out
}

func (s *Server) listConversations(w http.ResponseWriter, r *http.Request, t *Ticket) {
	if t == nil || t.Deleted {
		writeNotFound(w)
		return
	}
	q := r.URL.Query()
	for k := range q {
		if k != "page" && k != "per_page" {
			writeValidation(w, fieldError{Field: k, Message: "Unexpected/invalid field in request", Code: "invalid_field"})
			return
		}
	}
	page, perPage, ok := s.paging(w, q)
	if !ok {
		return
	}
	out := []map[string]any{}
	from := (page - 1) * perPage
	for i := from; i < len(t.Conversations) && i < from+perPage; i++ {
		out = append(out, conversationJSON(t.ID, t.Conversations[i]))
	}
	if from+perPage < len(t.Conversations) {
		setNext(w, r, page)
	}
	saasfake.WriteJSON(w, http.StatusOK, out)
}

// addConversation serves POST /tickets/{id}/notes (source SourceNote) and
// /reply (SourceReply).
func (s *Server) addConversation(w http.ResponseWriter, idStr string, body []byte, source int) {
	t := s.ticket(idStr, false)
	if t == nil || t.Deleted {
		writeNotFound(w)
		return
	}
	m, ok := decodeObject(w, body)
	if !ok {
		return
	}
	c := Conversation{UserID: s.apiAgent, Source: source, Private: source == SourceNote}
	var errs []fieldError
	text := ""
	for k, raw := range m {
		switch {
		case k == "body":
			if json.Unmarshal(raw, &text) != nil || isNull(raw) {
				errs = append(errs, fieldError{Field: k, Message: "Value set is of type " + jsonType(raw) + ".It should be a/an String", Code: "datatype_mismatch"})
			}
		case k == "user_id":
			var id int64
			if json.Unmarshal(raw, &id) != nil || s.agents[id] == nil {
				errs = append(errs, fieldError{Field: k, Message: "There is no agent matching the given user_id", Code: "invalid_value"})
				continue
			}
			c.UserID = id
		case (k == "private" || k == "incoming") && source == SourceNote:
			var b bool
			if json.Unmarshal(raw, &b) != nil || isNull(raw) {
				errs = append(errs, fieldError{Field: k, Message: "Value set is of type " + jsonType(raw) + ".It should be a/an Boolean", Code: "datatype_mismatch"})
				continue
			}
			if k == "private" {
				c.Private = b
			} else {
				c.Incoming = b
			}
		case k == "notify_emails" && source == SourceNote, (k == "cc_emails" || k == "bcc_emails" || k == "from_email") && source == SourceReply:
			// accepted; the fake sends no mail
		default:
			errs = append(errs, fieldError{Field: k, Message: "Unexpected/invalid field in request", Code: "invalid_field"})
		}
	}
	if _, ok := m["body"]; !ok {
		errs = append(errs, fieldError{Field: "body", Message: "It should be a/an String", Code: "missing_field"})
	} else if len(errs) == 0 && strings.TrimSpace(htmlText(text)) == "" {
		errs = append(errs, fieldError{Field: "body", Message: "It should not be blank as this is a mandatory field", Code: "invalid_value"})
	}
	if len(errs) > 0 {
		slices.SortFunc(errs, func(a, b fieldError) int { return cmp.Compare(a.Field, b.Field) })
		writeValidation(w, errs...)
		return
	}
	now := s.now()
	c.ID = s.newID()
	c.Body = sanitize(text)
	c.BodyText = s.bodyText(c.Body)
	c.CreatedAt, c.UpdatedAt = now, now
	t.Conversations = append(t.Conversations, c)
	t.UpdatedAt = now
	saasfake.WriteJSON(w, http.StatusCreated, conversationJSON(t.ID, c))
}
