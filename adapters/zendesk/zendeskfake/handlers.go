package zendeskfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/saas/saasfake"
)

// statuses are the ticket statuses of Zendesk Support.
var statuses = []string{"new", "open", "pending", "hold", "solved", "closed"}

type commentIn struct {
	Body     *string `json:"body"`
	HTMLBody *string `json:"html_body"`
	Public   *bool   `json:"public"`
	AuthorID *int64  `json:"author_id"`
}

type ticketIn struct {
	Subject             *string    `json:"subject"`
	Comment             *commentIn `json:"comment"`
	ExternalID          *string    `json:"external_id"`
	Status              *string    `json:"status"`
	GroupID             *int64     `json:"group_id"`
	Tags                *[]string  `json:"tags"`
	AdditionalTags      []string   `json:"additional_tags"`
	Priority            *string    `json:"priority"`
	CustomFields        []fieldIn  `json:"custom_fields"`
	RequesterID         *int64     `json:"requester_id"`
	ViaFollowupSourceID *int64     `json:"via_followup_source_id"`
	SafeUpdate          bool       `json:"safe_update"`
	UpdatedStamp        *string    `json:"updated_stamp"`
}

func decodeTicket(w http.ResponseWriter, body []byte) (*ticketIn, bool) {
	var in struct {
		Ticket *ticketIn `json:"ticket"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		writeError(w, http.StatusBadRequest, "InvalidJSON", "The request body is not valid JSON: "+err.Error(), nil)
		return nil, false
	}
	if in.Ticket == nil {
		writeError(w, http.StatusBadRequest, "InvalidValue", "The request body must hold a ticket object", nil)
		return nil, false
	}
	return in.Ticket, true
}

// commentText returns the body and html_body a comment is stored with.
func commentText(c *commentIn) (body, htmlBody string) {
	switch {
	case c.Body != nil:
		body = normalizeBody(*c.Body)
		return body, renderHTML(body)
	case c.HTMLBody != nil:
		return normalizeBody(stripHTML(*c.HTMLBody)), *c.HTMLBody
	}
	return "", ""
}

func (s *Server) createTicket(w http.ResponseWriter, r *http.Request, user int64, body []byte) {
	key := r.Header.Get("Idempotency-Key")
	now := s.Now()
	if key != "" {
		if e, ok := s.idem[key]; ok && now.Sub(e.at) < s.opts.IdempotencyTTL {
			if e.hash != bodyHash(body) {
				w.Header().Set("x-idempotency-lookup", "hit")
				writeError(w, http.StatusBadRequest, "IdempotentRequestError", "The request does not match the original request made with this Idempotency-Key", nil)
				return
			}
			w.Header().Set("x-idempotency-lookup", "hit")
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(e.status)
			_, _ = w.Write(e.body)
			return
		}
	}
	in, ok := decodeTicket(w, body)
	if !ok {
		return
	}
	if in.Comment == nil {
		writeInvalid(w, "description", "Description: cannot be blank")
		return
	}
	cbody, chtml := commentText(in.Comment)
	if strings.TrimSpace(cbody) == "" {
		writeInvalid(w, "description", "Description: cannot be blank")
		return
	}
	status := "new"
	if in.Status != nil {
		if !slices.Contains(statuses, *in.Status) {
			writeInvalid(w, "status", fmt.Sprintf("Status: %s is not valid", *in.Status))
			return
		}
		status = *in.Status
	}
	var group int64
	if in.GroupID != nil && *in.GroupID != 0 {
		if _, ok := s.groups[*in.GroupID]; !ok {
			writeInvalid(w, "group_id", fmt.Sprintf("Group: %d is invalid", *in.GroupID))
			return
		}
		group = *in.GroupID
	}
	requester := user
	if in.RequesterID != nil {
		if _, ok := s.users[*in.RequesterID]; !ok {
			writeInvalid(w, "requester_id", "Requester: is invalid")
			return
		}
		requester = *in.RequesterID
	}
	var source *ticket
	if in.ViaFollowupSourceID != nil {
		src, ok := s.tickets[*in.ViaFollowupSourceID]
		if !ok || src.Status != "closed" {
			writeInvalid(w, "via_followup_source_id", "Follow-up source: must be a closed ticket")
			return
		}
		source = src
	}
	author := user
	if in.Comment.AuthorID != nil {
		if _, ok := s.users[*in.Comment.AuthorID]; ok {
			author = *in.Comment.AuthorID
		}
	}
	public := true
	if in.Comment.Public != nil {
		public = *in.Comment.Public
	}
	subject := ""
	if in.Subject != nil {
		subject = *in.Subject
	}
	if subject == "" {
		subject = firstLine(cbody)
	}
	t := &ticket{Ticket: Ticket{
		ID: s.nextTicket, Subject: subject, Status: status, GroupID: group, Tags: dedupTags(derefTags(in.Tags)),
		RequesterID: requester, SubmitterID: user, CreatedAt: now, UpdatedAt: now,
	}, updates: map[int64][]time.Time{}}
	s.nextTicket++
	if in.ExternalID != nil {
		t.ExternalID, t.externalAt = *in.ExternalID, now
	}
	if source != nil {
		t.ViaFollowupSourceID = source.ID
		source.FollowupIDs = append(source.FollowupIDs, t.ID)
	}
	a := &audit{ID: s.newID(), TicketID: t.ID, AuthorID: user, CreatedAt: now, Via: "api"}
	c := &Comment{ID: s.newID(), AuditID: a.ID, AuthorID: author, Body: cbody, HTMLBody: chtml, Public: public, CreatedAt: now}
	t.Comments = append(t.Comments, *c)
	a.Events = append(a.Events, auditEvent{ID: c.ID, Type: "Comment", Comment: c})
	for _, kv := range [][2]string{{"status", status}, {"subject", subject}} {
		a.Events = append(a.Events, auditEvent{ID: s.newID(), Type: "Create", Field: kv[0], Value: kv[1]})
	}
	if group != 0 {
		a.Events = append(a.Events, auditEvent{ID: s.newID(), Type: "Create", Field: "group_id", Value: strconv.FormatInt(group, 10)})
	}
	s.tickets[t.ID] = t
	s.audits = append(s.audits, a)

	out, _ := json.Marshal(map[string]any{"ticket": s.ticketJSON(t), "audit": auditJSON(a)})
	if key != "" {
		s.idem[key] = idemEntry{hash: bodyHash(body), status: http.StatusCreated, body: out, at: now}
		w.Header().Set("x-idempotency-lookup", "miss")
	}
	w.Header().Set("Location", fmt.Sprintf("/api/v2/tickets/%d.json", t.ID))
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(out)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(line); len(r) > 80 {
		line = string(r[:80])
	}
	return line
}

func dedupTags(tags []string) []string {
	var out []string
	for _, t := range tags {
		t = strings.ToLower(strings.TrimSpace(t))
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// show answers the record of m (a ticket, a user) whose id is idStr, as
// js writes it, under key; 404 when m holds none.
func show[V any](w http.ResponseWriter, m map[int64]*V, idStr, key string, js func(*V) map[string]any) {
	id, ok := parseID(idStr)
	v := m[id]
	if !ok || v == nil {
		writeError(w, http.StatusNotFound, "RecordNotFound", "Not found", nil)
		return
	}
	saasfake.WriteJSON(w, http.StatusOK, map[string]any{key: js(v)})
}

// showMany answers show_many: the records of m among the ids of the query
// (ids=1,2,3), as js writes them, under key, leaving out the ids m does
// not hold.
func showMany[V any](w http.ResponseWriter, r *http.Request, m map[int64]*V, key string, js func(*V) map[string]any) {
	out := []map[string]any{}
	for _, part := range strings.Split(r.URL.Query().Get("ids"), ",") {
		if id, ok := parseID(strings.TrimSpace(part)); ok {
			if v := m[id]; v != nil {
				out = append(out, js(v))
			}
		}
	}
	saasfake.WriteJSON(w, http.StatusOK, map[string]any{key: out, "next_page": nil, "previous_page": nil, "count": len(out)})
}

func (s *Server) listTickets(w http.ResponseWriter, r *http.Request) {
	ext, filter := r.URL.Query()["external_id"]
	var ids []int64
	for id, t := range s.tickets {
		if t.archived {
			continue // List Tickets leaves archived tickets out
		}
		if !filter || t.ExternalID == ext[0] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	switch sort := r.URL.Query().Get("sort"); sort {
	case "", "id":
	case "updated_at", "-updated_at":
		slices.SortStableFunc(ids, func(a, b int64) int {
			c := s.tickets[a].UpdatedAt.Compare(s.tickets[b].UpdatedAt)
			if sort[0] == '-' {
				c = -c
			}
			return c
		})
	default:
		writeError(w, http.StatusBadRequest, "InvalidPaginationParameter", "sort "+sort+" is not supported by this fake", nil)
		return
	}
	s.page(w, r, "tickets", ids, func(id int64) map[string]any { return s.ticketJSON(s.tickets[id]) })
}

// listAudits lists the audits of one ticket, oldest first, archived
// tickets included.
func (s *Server) listAudits(w http.ResponseWriter, r *http.Request, idStr string) {
	id, ok := parseID(idStr)
	if !ok || s.tickets[id] == nil {
		writeError(w, http.StatusNotFound, "RecordNotFound", "Not found", nil)
		return
	}
	byID := map[int64]*audit{}
	var ids []int64
	for _, a := range s.audits {
		if a.TicketID == id {
			byID[a.ID] = a
			ids = append(ids, a.ID)
		}
	}
	slices.Sort(ids)
	s.page(w, r, "audits", ids, func(id int64) map[string]any { return auditJSON(byID[id]) })
}

// search answers the Search API for the one query the adapter asks,
// "type:ticket external_id:<value>" (the value optionally quoted), with
// archived tickets included, in offset pages of "results". Any other
// query is refused with 400, so that a test cannot rely on it by accident.
func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	var ext string
	typed, other := false, false
	for _, term := range strings.Fields(r.URL.Query().Get("query")) {
		switch k, v, _ := strings.Cut(term, ":"); k {
		case "type":
			typed = v == "ticket"
		case "external_id":
			ext = strings.Trim(v, `"`)
		default:
			other = true
		}
	}
	if !typed || ext == "" || other {
		writeError(w, http.StatusBadRequest, "InvalidSearch", "this fake searches only type:ticket external_id:<value>", nil)
		return
	}
	cutoff := s.Now().Add(-s.opts.SearchLag)
	var ids []int64
	for id, t := range s.tickets {
		if t.ExternalID == ext && !t.externalAt.After(cutoff) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	s.page(w, r, "results", ids, func(id int64) map[string]any {
		m := s.ticketJSON(s.tickets[id])
		m["result_type"] = "ticket"
		return m
	})
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request, idStr string) {
	id, ok := parseID(idStr)
	t := s.tickets[id]
	if !ok || t == nil {
		writeError(w, http.StatusNotFound, "RecordNotFound", "Not found", nil)
		return
	}
	byID := map[int64]*Comment{}
	ids := make([]int64, 0, len(t.Comments))
	for i := range t.Comments {
		byID[t.Comments[i].ID] = &t.Comments[i]
		ids = append(ids, t.Comments[i].ID)
	}
	s.page(w, r, "comments", ids, func(id int64) map[string]any { return commentJSON(byID[id]) })
}

func (s *Server) updateTicket(w http.ResponseWriter, idStr string, user int64, body []byte) {
	id, ok := parseID(idStr)
	t := s.tickets[id]
	if !ok || t == nil {
		writeError(w, http.StatusNotFound, "RecordNotFound", "Not found", nil)
		return
	}
	in, ok := decodeTicket(w, body)
	if !ok {
		return
	}
	if t.Status == "closed" {
		writeInvalid(w, "status", "Status: closed prevents ticket update")
		return
	}
	if in.SafeUpdate && in.UpdatedStamp != nil {
		stamp, err := time.Parse(time.RFC3339, *in.UpdatedStamp)
		if err != nil {
			writeInvalid(w, "updated_stamp", "Updated stamp: is not a valid time")
			return
		}
		if t.UpdatedAt.Truncate(time.Second).After(stamp) {
			writeError(w, http.StatusConflict, "UpdateConflict", "Safe Update prevented the update due to outdated ticket data. Please fetch the latest ticket data and try again.", nil)
			return
		}
	}
	limit := s.opts.TicketUpdates
	hits := t.updates[user]
	wait, allowed := s.allow(&hits, limit)
	t.updates[user] = hits
	if !allowed {
		writeRateLimited(w, wait, "TooManyRequests")
		return
	}
	u := update{}
	if in.Status != nil {
		u.status = *in.Status
	}
	if u.status == "solved" || u.status == "closed" {
		var missing []Field
		for _, f := range s.opts.RequiredOnSolve {
			if strings.TrimSpace(t.Fields[f.ID]) == "" {
				missing = append(missing, f)
			}
		}
		if len(missing) > 0 {
			writeRequiredOnSolve(w, missing)
			return
		}
	}
	if in.Comment != nil {
		u.comment = in.Comment
	}
	if in.GroupID != nil {
		u.group = in.GroupID
	}
	u.setTags, u.tags = in.Tags, in.AdditionalTags
	u.subject, u.priority, u.fields = in.Subject, in.Priority, in.CustomFields
	u.externalID = in.ExternalID
	if bad := s.checkFields(u); len(bad) > 0 {
		writeInvalidFields(w, bad)
		return
	}
	a, errField, errText := s.apply(t, user, u)
	if errField != "" {
		writeInvalid(w, errField, errText)
		return
	}
	resp := map[string]any{"ticket": s.ticketJSON(t)}
	if a != nil {
		resp["audit"] = auditJSON(a)
	}
	saasfake.WriteJSON(w, http.StatusOK, resp)
}

type update struct {
	status  string
	comment *commentIn
	files   []string // names of the files attached to the comment, by an agent in the agent interface
	group   *int64
	tags    []string  // added (additional_tags)
	setTags *[]string // the whole new list (tags)
	// subject, priority and custom field values, set by the API
	subject  *string
	priority *string
	fields   []fieldIn
	// externalID replaces the ticket's external_id, set by the API
	externalID *string
}

// apply makes one update of t by user as one audit. It returns the audit
// (nil when nothing changed), or the field and text of a validation error.
func (s *Server) apply(t *ticket, user int64, u update) (*audit, string, string) {
	if t.Status == "closed" {
		return nil, "status", "Status: closed prevents ticket update"
	}
	if u.status != "" {
		if !slices.Contains(statuses, u.status) {
			return nil, "status", fmt.Sprintf("Status: %s is not valid", u.status)
		}
		if u.status == "new" && t.Status != "new" {
			return nil, "status", "Status: new is not valid once a ticket left it"
		}
	}
	var cbody, chtml string
	if u.comment != nil {
		cbody, chtml = commentText(u.comment)
		if strings.TrimSpace(cbody) == "" && len(u.files) == 0 {
			return nil, "comment", "Comment: body cannot be blank"
		}
	}
	if u.group != nil && *u.group != 0 {
		if _, ok := s.groups[*u.group]; !ok {
			return nil, "group_id", fmt.Sprintf("Group: %d is invalid", *u.group)
		}
	}
	now := s.Now()
	a := &audit{ID: s.newID(), TicketID: t.ID, AuthorID: user, CreatedAt: now, Via: "api"}
	if user == SystemUserID {
		a.Via = "rule"
	}
	if u.comment != nil {
		public := true
		if u.comment.Public != nil {
			public = *u.comment.Public
		}
		author := user
		if u.comment.AuthorID != nil {
			if _, ok := s.users[*u.comment.AuthorID]; ok {
				author = *u.comment.AuthorID
			}
		}
		c := &Comment{ID: s.newID(), AuditID: a.ID, AuthorID: author, Body: cbody, HTMLBody: chtml, Public: public, CreatedAt: now}
		for _, name := range u.files {
			c.Attachments = append(c.Attachments, s.attachment(name))
		}
		t.Comments = append(t.Comments, *c)
		a.Events = append(a.Events, auditEvent{ID: c.ID, Type: "Comment", Comment: c})
	}
	if u.status != "" && u.status != t.Status {
		a.Events = append(a.Events, auditEvent{ID: s.newID(), Type: "Change", Field: "status", Value: u.status, Previous: t.Status})
		t.Status = u.status

	}
	if u.group != nil && *u.group != t.GroupID {
		a.Events = append(a.Events, auditEvent{ID: s.newID(), Type: "Change", Field: "group_id", Value: strconv.FormatInt(*u.group, 10), Previous: strconv.FormatInt(t.GroupID, 10)})
		t.GroupID = *u.group
	}
	s.applyFields(t, a, u)
	if added := dedupTags(u.tags); len(added) > 0 {
		before := strings.Join(t.Tags, " ")
		t.Tags = dedupTags(append(slices.Clone(t.Tags), added...))
		if after := strings.Join(t.Tags, " "); after != before {
			a.Events = append(a.Events, auditEvent{ID: s.newID(), Type: "Change", Field: "tags", Value: after, Previous: before})
		}
	}
	// The fake records no audit event of a new external_id (Zendesk's
	// audit events reference names none for it), but the ticket changed.
	extChanged := u.externalID != nil && *u.externalID != t.ExternalID
	if extChanged {
		t.ExternalID, t.externalAt = *u.externalID, now
	}
	if len(a.Events) == 0 {
		if extChanged {
			t.UpdatedAt = now
		}
		return nil, "", ""
	}
	t.UpdatedAt = now
	s.audits = append(s.audits, a)
	return a, "", ""
}

func (s *Server) showGroup(w http.ResponseWriter, idStr string) {
	id, ok := parseID(idStr)
	name, found := s.groups[id]
	if !ok || !found {
		writeError(w, http.StatusNotFound, "RecordNotFound", "Not found", nil)
		return
	}
	saasfake.WriteJSON(w, http.StatusOK, map[string]any{"group": map[string]any{"id": id, "name": name, "deleted": false}})
}

// ticketEvents is the time-based incremental ticket event export.
func (s *Server) ticketEvents(w http.ResponseWriter, r *http.Request, user int64) {
	if s.users[user].Role != "admin" {
		writeError(w, http.StatusForbidden, "Forbidden", "You do not have access to this page. Please contact the account owner of this help desk for further help.", nil)
		return
	}
	q := r.URL.Query()
	startStr := q.Get("start_time")
	start, err := strconv.ParseInt(startStr, 10, 64)
	if startStr == "" || err != nil || start < 0 {
		writeError(w, http.StatusBadRequest, "InvalidValue", "start_time must be a Unix epoch time in seconds", nil)
		return
	}
	if s.opts.ExportDelay > 0 && start > s.Now().Add(-s.opts.ExportDelay).Unix() {
		writeError(w, http.StatusBadRequest, "InvalidValue", "Too recent start_time. Use a start_time older than one minute.", nil)
		return
	}
	if wait, ok := s.allow(&s.exportHits, s.opts.ExportRequests); !ok {
		writeRateLimited(w, wait, "TooManyRequests")
		return
	}
	withComments := slices.Contains(strings.Split(q.Get("include"), ","), "comment_events")
	cutoff := s.Now().Add(-s.opts.ExportDelay)
	var matched []*audit
	for _, a := range s.audits {
		if a.CreatedAt.Unix() >= start && !a.CreatedAt.After(cutoff) {
			matched = append(matched, a)
		}
	}
	slices.SortStableFunc(matched, func(a, b *audit) int {
		if d := a.CreatedAt.Unix() - b.CreatedAt.Unix(); d != 0 {
			if d < 0 {
				return -1
			}
			return 1
		}
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	// A page holds at most EventsPageSize events and may end inside a
	// second, as Zendesk's does: more events in one second than a page
	// holds (a bulk update, an automation) give a page that starts and
	// ends at the same second, and the next page, which starts at
	// end_time, brings the same events again.
	n := min(s.opts.EventsPageSize, len(matched))
	endOfStream := n == len(matched)
	matched = matched[:n]
	endTime := start
	if len(matched) > 0 {
		endTime = matched[len(matched)-1].CreatedAt.Unix()
	}
	events := make([]map[string]any, 0, len(matched))
	for _, a := range matched {
		events = append(events, s.ticketEventJSON(a, withComments))
	}
	saasfake.WriteJSON(w, http.StatusOK, map[string]any{
		"ticket_events": events, "count": len(events), "end_of_stream": endOfStream,
		"end_time": endTime, "next_page": saasfake.Link(r, "start_time", strconv.FormatInt(endTime, 10)),
	})
}

// ticketEventJSON is one audit in the form of the ticket event export:
// the changed field named as a key of its child event, comments in full
// only with the comment_events sideload.
func (s *Server) ticketEventJSON(a *audit, withComments bool) map[string]any {
	children := make([]map[string]any, 0, len(a.Events))
	for _, e := range a.Events {
		child := map[string]any{"id": e.ID, "via": viaName(a.Via), "via_reference_id": nil, "event_type": e.Type}
		switch {
		case e.Comment != nil && withComments:
			c := e.Comment
			child["type"] = "Comment"
			child["author_id"] = c.AuthorID
			child["body"] = c.Body
			child["html_body"] = c.HTMLBody
			child["public"] = c.Public
			child["attachments"] = attachmentsJSON(c.Attachments)
			child["audit_id"] = c.AuditID
			child["created_at"] = zdTime(c.CreatedAt)
		case e.Comment != nil:
			child["comment_present"] = true
			child["comment_public"] = e.Comment.Public
		default:
			child[e.Field] = e.Value
			if e.Type == "Change" {
				child["previous_value"] = e.Previous
			}
		}
		children = append(children, child)
	}
	return map[string]any{
		"id": a.ID, "ticket_id": a.TicketID, "timestamp": a.CreatedAt.Unix(), "created_at": zdTime(a.CreatedAt),
		"updater_id": a.AuthorID, "via": viaName(a.Via), "system": map[string]any{}, "metadata": map[string]any{},
		"event_type": "Audit", "merged_ticket_ids": []int64{}, "child_events": children,
	}
}

func viaName(channel string) string {
	switch channel {
	case "rule":
		return "Rule"
	case "web":
		return "Web form"
	}
	return "Web service"
}
