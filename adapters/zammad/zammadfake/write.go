package zammadfake

import (
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/ticketbridge/ticketbridge/adapters/saas/saasfake"
)

func (s *Server) createTicket(w http.ResponseWriter, body []byte, uid int64, expand bool) {
	f, ok := decode(w, body)
	if !ok {
		return
	}
	c, msg := s.parseTicket(f, nil)
	if msg != "" {
		writeError(w, http.StatusUnprocessableEntity, msg)
		return
	}
	if uid == s.apiUser && s.noAccess[c.group.name] {
		writeError(w, http.StatusForbidden, "Not authorized")
		return
	}
	if msg := s.checkDates(c.attrs); msg != "" {
		writeError(w, http.StatusUnprocessableEntity, msg)
		return
	}
	if c.newCustomer != nil {
		c.customerID = s.addUser(*c.newCustomer)
	}
	now := s.stamp()
	s.nextTk++
	t := &ticket{
		id: s.nextTk, number: strconv.FormatInt(31000+s.nextTk, 10), title: *c.title, groupID: c.group.id,
		stateID: 1, priorityID: defaultPriority, customerID: c.customerID, ownerID: 1, attrs: map[string]*string{}, tags: c.tags,
		createdBy: uid, updatedBy: uid, createdAt: now, updatedAt: now,
	}
	if c.state != nil {
		t.stateID = c.state.ID
		if c.state.pending() {
			t.pendingTime = c.pendingTime
		}
	}
	for k, v := range c.attrs {
		t.attrs[k] = v
	}
	if c.priority != nil {
		t.priorityID = c.priority.id
	}
	s.tickets[t.id] = t
	s.addHistory(HistoryEntry{Type: "created", Object: "Ticket", OID: t.id, CreatedByID: uid, CreatedAt: now})
	if c.article != nil {
		s.newArticle(t, *c.article, uid)
	}
	saasfake.WriteJSON(w, http.StatusCreated, s.ticketJSON(t, expand, true))
}

func (s *Server) updateTicket(w http.ResponseWriter, t *ticket, body []byte, uid int64, expand bool) {
	f, ok := decode(w, body)
	if !ok {
		return
	}
	c, msg := s.parseTicket(f, t)
	if msg != "" {
		writeError(w, http.StatusUnprocessableEntity, msg)
		return
	}
	if c.group != nil && uid == s.apiUser && s.noAccess[c.group.name] {
		writeError(w, http.StatusForbidden, "Not authorized")
		return
	}
	// What the write changes, each as its history entry: attribute,
	// from, to.
	var changes [][3]string
	if c.title != nil && *c.title != t.title {
		changes = append(changes, [3]string{"title", t.title, *c.title})
	}
	if c.group != nil && c.group.id != t.groupID {
		from, _ := s.groupByID(t.groupID)
		changes = append(changes, [3]string{"group", from.name, c.group.name})
	}
	if c.priority != nil && c.priority.id != t.priorityID {
		from, _ := priorityByID(t.priorityID)
		changes = append(changes, [3]string{"priority", from.name, c.priority.name})
	}
	attrs := maps.Clone(t.attrs)
	for k, v := range c.attrs {
		old := t.attrs[k]
		if (old == nil) != (v == nil) || old != nil && *old != *v {
			changes = append(changes, [3]string{k, deref(old), deref(v)})
			attrs[k] = v
		}
	}
	stateChange := c.state != nil && c.state.ID != t.stateID
	if len(changes) > 0 || stateChange {
		if msg := s.checkDates(attrs); msg != "" {
			writeError(w, http.StatusUnprocessableEntity, msg)
			return
		}
	}
	if len(changes) > 0 {
		now := s.stamp()
		if c.title != nil {
			t.title = *c.title
		}
		if c.group != nil {
			t.groupID = c.group.id
		}
		if c.priority != nil {
			t.priorityID = c.priority.id
		}
		t.attrs = attrs
		t.updatedAt, t.updatedBy = now, uid
		for _, ch := range changes {
			s.changed(t, ch[0], ch[1], ch[2], uid, now)
		}
	}
	if c.state != nil {
		s.setState(t, *c.state, c.pendingTime, uid)
	}
	if c.article != nil {
		s.newArticle(t, *c.article, uid)
	}
	saasfake.WriteJSON(w, http.StatusOK, s.ticketJSON(t, expand, true))
}

func (s *Server) createArticle(w http.ResponseWriter, body []byte, uid int64) {
	f, ok := decode(w, body)
	if !ok {
		return
	}
	idStr, ok, err := f.str("ticket_id")
	if err != nil || !ok {
		writeError(w, http.StatusUnprocessableEntity, "Need ticket_id!")
		return
	}
	t, ok := s.readable(w, idStr, uid)
	if !ok {
		return
	}
	a, msg := parseArticle(f)
	if msg != "" {
		writeError(w, http.StatusUnprocessableEntity, msg)
		return
	}
	saasfake.WriteJSON(w, http.StatusCreated, s.articleJSON(s.newArticle(t, a, uid)))
}

// attributesJSON lists the ticket attributes of the object manager: a few
// of Zammad's own and the custom ones.
func (s *Server) attributesJSON() []map[string]any {
	own := []struct{ name, display, typ string }{
		{"title", "Title", "input"}, {"customer_id", "Customer", "user_autocompletion"}, {"group_id", "Group", "select"},
		{"owner_id", "Owner", "select"}, {"state_id", "State", "select"}, {"pending_time", "Pending till", "datetime"},
		{"priority_id", "Priority", "select"},
	}
	var out []map[string]any
	id := int64(0)
	for _, a := range own {
		id++
		out = append(out, map[string]any{"id": id, "name": a.name, "display": a.display, "data_type": a.typ, "object": "Ticket",
			"active": true, "editable": false, "to_create": false, "to_migrate": false, "data_option": map[string]any{}})
	}
	names := make([]string, 0, len(s.attrs))
	for n := range s.attrs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		a := s.attrs[n]
		id++
		out = append(out, map[string]any{"id": id, "name": a.Name, "display": a.Display, "data_type": a.DataType, "object": "Ticket",
			"active": !a.Inactive, "editable": true, "to_create": a.Pending, "to_migrate": false,
			"data_option": a.dataOption()})
	}
	// An attribute of another object with a colliding name must not
	// pass for a ticket attribute.
	id++
	out = append(out, map[string]any{"id": id, "name": "department", "display": "Department", "data_type": "input", "object": "User",
		"active": true, "editable": false, "to_create": false, "to_migrate": false, "data_option": map[string]any{"maxlength": 200}})
	return out
}

// deref is *p, or "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
