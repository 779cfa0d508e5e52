package zammadfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// serve routes one request. It writes to a recorder, never to the wire.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, body []byte) {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(r.URL.Path, "/"), "/api/v1/")
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("No route matches [%s] %s", r.Method, r.URL.Path))
		return
	}
	uid, ok := s.authenticate(r)
	if !ok {
		if r.Header.Get("Authorization") == "" {
			writeError(w, http.StatusUnauthorized, "Authentication required")
		} else {
			writeError(w, http.StatusUnauthorized, "Invalid token!")
		}
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	parts := strings.Split(rest, "/")
	q := r.URL.Query()
	expand := q.Get("expand") == "true"
	get, post, put := r.Method == http.MethodGet, r.Method == http.MethodPost, r.Method == http.MethodPut

	if get && rest == "users/me" {
		writeJSON(w, http.StatusOK, s.userJSON(s.users[uid], expand))
		return
	}
	if rest == "object_manager_attributes" && get {
		if !s.permitted(PermAdminObject) {
			writeError(w, http.StatusForbidden, "Not authorized")
			return
		}
		writeJSON(w, http.StatusOK, s.attributesJSON())
		return
	}
	if !s.permitted(PermTicketAgent) {
		writeError(w, http.StatusForbidden, "Not authorized")
		return
	}
	switch {
	case get && len(parts) == 2 && parts[0] == "users":
		u, ok := s.users[mustID(parts[1])]
		if !ok {
			notFound(w, "User", parts[1])
			return
		}
		writeJSON(w, http.StatusOK, s.userJSON(u, expand))
	case get && rest == "ticket_states":
		out := []map[string]any{}
		for _, st := range defaultStates {
			var next any
			if st.NextID != 0 {
				next = st.NextID
			}
			out = append(out, map[string]any{"id": st.ID, "state_type_id": st.TypeID, "name": st.Name, "next_state_id": next,
				"default_create": st.Create, "default_follow_up": st.FollowUp, "active": st.Active, "note": nil})
		}
		writeJSON(w, http.StatusOK, out)
	case get && rest == "tickets":
		s.listTickets(w, q, expand)
	case get && rest == "tickets/search":
		s.searchTickets(w, q, expand)
	case get && len(parts) == 2 && parts[0] == "tickets":
		t, ok := s.readable(w, parts[1], uid)
		if ok {
			writeJSON(w, http.StatusOK, s.ticketJSON(t, expand, false))
		}
	case post && rest == "tickets":
		s.createTicket(w, body, uid, expand)
	case put && len(parts) == 2 && parts[0] == "tickets":
		t, ok := s.readable(w, parts[1], uid)
		if ok {
			s.updateTicket(w, t, body, uid, expand)
		}
	case get && len(parts) == 3 && parts[0] == "ticket_articles" && parts[1] == "by_ticket":
		t, ok := s.readable(w, parts[2], uid)
		if !ok {
			return
		}
		out := []map[string]any{}
		for _, id := range t.articles {
			out = append(out, s.articleJSON(s.articles[id]))
		}
		writeJSON(w, http.StatusOK, out)
	case get && len(parts) == 2 && parts[0] == "ticket_articles":
		a, ok := s.articles[mustID(parts[1])]
		if !ok {
			notFound(w, "Ticket::Article", parts[1])
			return
		}
		if _, ok := s.readable(w, strconv.FormatInt(a.TicketID, 10), uid); ok {
			writeJSON(w, http.StatusOK, s.articleJSON(a))
		}
	case post && rest == "ticket_articles":
		s.createArticle(w, body, uid)
	case get && len(parts) == 2 && parts[0] == "ticket_history":
		t, ok := s.readable(w, parts[1], uid)
		if !ok {
			return
		}
		list := []map[string]any{}
		for _, h := range s.historyOf(t.id) {
			list = append(list, historyJSON(h))
		}
		writeJSON(w, http.StatusOK, map[string]any{"history": list, "assets": map[string]any{}})
	default:
		writeError(w, http.StatusNotFound, fmt.Sprintf("No route matches [%s] %s", r.Method, r.URL.Path))
	}
}

func mustID(s string) int64 {
	id, ok := parseID(s)
	if !ok {
		return -1
	}
	return id
}

// readable finds ticket idStr and checks the user's group access, writing
// the error when it fails. The caller holds mu.
func (s *Server) readable(w http.ResponseWriter, idStr string, uid int64) (*ticket, bool) {
	t, ok := s.tickets[mustID(idStr)]
	if !ok {
		notFound(w, "Ticket", idStr)
		return nil, false
	}
	g, _ := s.groupByID(t.groupID)
	if uid == s.apiUser && s.noAccess[g.name] {
		writeError(w, http.StatusForbidden, "Not authorized")
		return nil, false
	}
	return t, true
}

// paging reads page and per_page (limit as an older synonym), capped at
// max and Options.MaxPerPage.
func (s *Server) paging(q url.Values, def, max int) (offset, limit int) {
	if s.opts.MaxPerPage > 0 && s.opts.MaxPerPage < max {
		max = s.opts.MaxPerPage
	}
	page, _ := strconv.Atoi(q.Get("page"))
	if page < 1 {
		page = 1
	}
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per < 1 {
		if l, err := strconv.Atoi(q.Get("limit")); err == nil && l > 0 {
			per = l
		} else {
			per = def
		}
	}
	per = min(per, max)
	return (page - 1) * per, per
}

func (s *Server) listTickets(w http.ResponseWriter, q url.Values, expand bool) {
	offset, limit := s.paging(q, MaxIndexPerPage, MaxIndexPerPage)
	ids := s.visibleIDs()
	slices.Sort(ids)
	out := []map[string]any{}
	for i := offset; i < len(ids) && i < offset+limit; i++ {
		out = append(out, s.ticketJSON(s.tickets[ids[i]], expand, false))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) visibleIDs() []int64 {
	var ids []int64
	for id, t := range s.tickets {
		g, _ := s.groupByID(t.groupID)
		if !s.noAccess[g.name] {
			ids = append(ids, id)
		}
	}
	return ids
}

// condition is one entry of a search's condition.
type condition struct {
	attr  string // the ticket column
	op    string
	value []string
}

var condKey = regexp.MustCompile(`^condition\[([^\]]+)\]\[(operator|value)\](\[\])?$`)

func parseConditions(q url.Values) (map[string]*condition, error) {
	out := map[string]*condition{}
	for k, vs := range q {
		m := condKey.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		c := out[m[1]]
		if c == nil {
			c = &condition{}
			out[m[1]] = c
		}
		if m[2] == "operator" {
			c.op = vs[0]
		} else {
			c.value = append(c.value, vs...)
		}
	}
	for key, c := range out {
		obj, attr, ok := strings.Cut(key, ".")
		if !ok || obj != "ticket" {
			return nil, fmt.Errorf("unknown condition %q", key)
		}
		c.attr = attr
	}
	return out, nil
}

// column returns the value of ticket column attr as a string, with ok false
// for NULL, and known false when the ticket table has no such column.
func (s *Server) column(t *ticket, attr string) (v string, ok, known bool) {
	switch attr {
	case "id":
		return strconv.FormatInt(t.id, 10), true, true
	case "number":
		return t.number, true, true
	case "title":
		return t.title, true, true
	case "group_id":
		return strconv.FormatInt(t.groupID, 10), true, true
	case "state_id":
		return strconv.FormatInt(t.stateID, 10), true, true
	case "customer_id":
		return strconv.FormatInt(t.customerID, 10), true, true
	case "owner_id":
		return strconv.FormatInt(t.ownerID, 10), true, true
	case "created_at":
		return zmTime(t.createdAt), true, true
	case "updated_at":
		return zmTime(t.updatedAt), true, true
	case "pending_time":
		if t.pendingTime == nil {
			return "", false, true
		}
		return zmTime(*t.pendingTime), true, true
	}
	if a, found := s.attrs[attr]; found && !a.Pending {
		if p := t.attrs[attr]; p != nil {
			return *p, true, true
		}
		return "", false, true
	}
	return "", false, false
}

var errUnknownColumn = fmt.Errorf("unknown column")

func (s *Server) matches(t *ticket, conds map[string]*condition) (bool, error) {
	for _, c := range conds {
		v, set, known := s.column(t, c.attr)
		if !known {
			return false, errUnknownColumn
		}
		switch c.op {
		case "is":
			if !set || !slices.Contains(c.value, v) {
				return false, nil
			}
		case "after (absolute)", "before (absolute)":
			if len(c.value) != 1 {
				return false, fmt.Errorf("need one value")
			}
			limit, err := time.Parse(time.RFC3339Nano, c.value[0])
			if err != nil {
				return false, err
			}
			at, err := time.Parse(time.RFC3339Nano, v)
			if !set || err != nil {
				return false, nil
			}
			if c.op == "after (absolute)" && !at.After(limit) || c.op == "before (absolute)" && !at.Before(limit) {
				return false, nil
			}
		default:
			return false, fmt.Errorf("unknown operator %q", c.op)
		}
	}
	return true, nil
}

// indexed reports whether the search index has caught up with t.
func (s *Server) indexed(t *ticket) bool {
	return !s.now().Before(t.updatedAt.Add(s.opts.SearchLag))
}

// matchQuery is a small full-text search: every term must be in the title,
// the number or an article body, or, as attribute:value, equal a custom
// attribute.
func (s *Server) matchQuery(t *ticket, query string) bool {
	for _, term := range strings.Fields(query) {
		if attr, val, ok := strings.Cut(term, ":"); ok {
			if _, known := s.attrs[attr]; known {
				v, set, _ := s.column(t, attr)
				if !set || v != strings.Trim(val, `"`) {
					return false
				}
				continue
			}
		}
		term = strings.ToLower(term)
		hit := strings.Contains(strings.ToLower(t.title), term) || strings.Contains(t.number, term)
		for _, id := range t.articles {
			hit = hit || strings.Contains(strings.ToLower(s.articles[id].Body), term)
		}
		if !hit {
			return false
		}
	}
	return true
}

func (s *Server) searchTickets(w http.ResponseWriter, q url.Values, expand bool) {
	conds, err := parseConditions(q)
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	for _, c := range conds {
		if _, _, known := s.column(&ticket{}, c.attr); !known {
			// The database refuses a column it does not have, whatever
			// the rows; Zammad hides the cause from non-admins behind an
			// error id.
			writeError(w, http.StatusUnprocessableEntity, "Error ID f4K3xZ: Please contact your administrator.")
			return
		}
	}
	query := strings.ReplaceAll(q.Get("query"), "*", "")
	var list []*ticket
	for _, id := range s.visibleIDs() {
		t := s.tickets[id]
		if query != "" && (!s.indexed(t) || !s.matchQuery(t, query)) {
			continue
		}
		ok, err := s.matches(t, conds)
		if err != nil {
			// A bad operator or value fails in the database too.
			writeError(w, http.StatusUnprocessableEntity, "Error ID f4K3xZ: Please contact your administrator.")
			return
		}
		if ok {
			list = append(list, t)
		}
	}
	sortBy, orderBy := q.Get("sort_by"), strings.ToLower(q.Get("order_by"))
	if sortBy == "" {
		sortBy = "updated_at"
	}
	if orderBy != "asc" {
		orderBy = "desc"
	}
	if _, _, known := s.column(&ticket{}, sortBy); !known {
		writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf("Sorting by %q is not possible.", sortBy))
		return
	}
	slices.SortFunc(list, func(a, b *ticket) int {
		c := compareColumn(s, a, b, sortBy)
		if orderBy == "desc" {
			c = -c
		}
		if c == 0 {
			c = compareInt(a.id, b.id)
		}
		return c
	})
	offset, limit := s.paging(q, DefaultSearchPerPage, MaxSearchPerPage)
	var page []*ticket
	if offset < len(list) {
		page = list[offset:min(len(list), offset+limit)]
	}
	if expand {
		out := []map[string]any{}
		for _, t := range page {
			out = append(out, s.ticketJSON(t, true, false))
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	ids := []int64{}
	assets := map[string]any{}
	for _, t := range page {
		ids = append(ids, t.id)
		assets[strconv.FormatInt(t.id, 10)] = s.ticketJSON(t, false, false)
	}
	writeJSON(w, http.StatusOK, map[string]any{"tickets": ids, "tickets_count": len(ids), "assets": map[string]any{"Ticket": assets}})
}

func compareColumn(s *Server, a, b *ticket, col string) int {
	switch col {
	case "id", "group_id", "state_id", "customer_id", "owner_id":
		x, _, _ := s.column(a, col)
		y, _, _ := s.column(b, col)
		xi, _ := strconv.ParseInt(x, 10, 64)
		yi, _ := strconv.ParseInt(y, 10, 64)
		return compareInt(xi, yi)
	}
	x, _, _ := s.column(a, col)
	y, _, _ := s.column(b, col)
	return strings.Compare(x, y)
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// fields is a decoded request body.
type fields map[string]json.RawMessage

func (f fields) str(k string) (string, bool, error) {
	v, ok := f[k]
	if !ok || string(v) == "null" {
		return "", false, nil
	}
	var out string
	if err := json.Unmarshal(v, &out); err != nil {
		var n json.Number
		if err := json.Unmarshal(v, &n); err != nil {
			return "", true, fmt.Errorf("%s: want a string", k)
		}
		out = n.String()
	}
	return out, true, nil
}

func (f fields) boolean(k string) (bool, error) {
	v, ok := f[k]
	if !ok || string(v) == "null" {
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return false, fmt.Errorf("%s: want true or false", k)
	}
	return b, nil
}

// change is a validated ticket write, applied after every check passed.
type change struct {
	title       *string
	group       *group
	state       *state
	pendingTime *time.Time
	customerID  int64
	attrs       map[string]*string
	article     *Article
	newCustomer *User
}

var emailRE = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[^@\s]+$`)

// parseTicket checks a create (t == nil) or update body. The caller holds
// mu. A non-empty message is the 422 to answer.
func (s *Server) parseTicket(f fields, t *ticket) (change, string) {
	var c change
	if title, ok, err := f.str("title"); err != nil {
		return c, err.Error()
	} else if ok || t == nil {
		if strings.TrimSpace(title) == "" {
			return c, "Title can't be blank"
		}
		if utf8.RuneCountInString(title) > 200 {
			return c, "Title is too long (maximum is 200 characters)"
		}
		c.title = &title
	}
	name, byName, err := f.str("group")
	if err != nil {
		return c, err.Error()
	}
	idStr, byID, err := f.str("group_id")
	if err != nil {
		return c, err.Error()
	}
	switch {
	case byName:
		g, ok := s.groupByName(name)
		if !ok {
			return c, fmt.Sprintf("No lookup value found for 'group': %q", name)
		}
		c.group = &g
	case byID:
		g, ok := s.groupByID(mustID(idStr))
		if !ok {
			return c, fmt.Sprintf("No lookup value found for 'group_id': %q", idStr)
		}
		c.group = &g
	case t == nil:
		return c, "Group can't be blank"
	}
	if t == nil {
		cust, byID, err := f.str("customer_id")
		if err != nil {
			return c, err.Error()
		}
		login, byName, err := f.str("customer")
		if err != nil {
			return c, err.Error()
		}
		switch {
		case byID && strings.HasPrefix(cust, "guess:"):
			email := strings.TrimPrefix(cust, "guess:")
			if !emailRE.MatchString(email) {
				return c, fmt.Sprintf("Invalid email '%s' of customer", email)
			}
			if _, err := mail.ParseAddress(email); err != nil {
				return c, fmt.Sprintf("Invalid email '%s' of customer", email)
			}
			if u := s.userByKey(email); u != nil {
				c.customerID = u.ID
			} else {
				c.newCustomer = &User{Login: strings.ToLower(email), Email: strings.ToLower(email), Roles: []string{"Customer"}}
			}
		case byID:
			id := mustID(cust)
			if _, ok := s.users[id]; !ok {
				return c, fmt.Sprintf("No lookup value found for 'customer_id': %q", cust)
			}
			c.customerID = id
		case byName:
			u := s.userByKey(login)
			if u == nil {
				return c, fmt.Sprintf("No lookup value found for 'customer': %q", login)
			}
			c.customerID = u.ID
		default:
			return c, "Customer can't be blank"
		}
	}
	stName, byName, err := f.str("state")
	if err != nil {
		return c, err.Error()
	}
	stID, byID, err := f.str("state_id")
	if err != nil {
		return c, err.Error()
	}
	var st state
	var haveState bool
	switch {
	case byName:
		st, haveState = stateByName(stName)
		if !haveState || !st.Active {
			return c, fmt.Sprintf("No lookup value found for 'state': %q", stName)
		}
	case byID:
		st, haveState = stateByID(mustID(stID))
		if !haveState || !st.Active {
			return c, fmt.Sprintf("No lookup value found for 'state_id': %q", stID)
		}
	}
	if haveState {
		allowed := append([]int64{1}, agentEditStates...) // the create screen also offers new
		if t != nil {
			allowed = append([]int64{t.stateID}, agentEditStates...)
		}
		if !slices.Contains(allowed, st.ID) {
			return c, fmt.Sprintf("The state %q is not a valid value for this ticket.", st.Name)
		}
		c.state = &st
	}
	if pt, ok, err := f.str("pending_time"); err != nil {
		return c, err.Error()
	} else if ok {
		at, err := time.Parse(time.RFC3339Nano, pt)
		if err != nil {
			return c, fmt.Sprintf("pending_time %q is not a date and time", pt)
		}
		at = at.UTC()
		c.pendingTime = &at
	}
	if c.state != nil && c.state.pending() && c.pendingTime == nil && (t == nil || t.pendingTime == nil || t.stateID != c.state.ID) {
		return c, "Missing required value for field 'pending_time'!"
	}
	c.attrs = map[string]*string{}
	for name, a := range s.attrs {
		if a.Pending {
			continue // no column yet: the parameter cleanup drops it
		}
		v, ok, err := f.str(name)
		if err != nil {
			return c, err.Error()
		}
		if !ok {
			if _, present := f[name]; present {
				c.attrs[name] = nil
			}
			continue
		}
		if utf8.RuneCountInString(v) > a.MaxLength {
			return c, fmt.Sprintf("%s is too long (maximum is %d characters)", a.Display, a.MaxLength)
		}
		c.attrs[name] = &v
	}
	if raw, ok := f["article"]; ok && string(raw) != "null" {
		var af fields
		if err := json.Unmarshal(raw, &af); err != nil {
			return c, "article: want an object"
		}
		a, msg := parseArticle(af)
		if msg != "" {
			return c, msg
		}
		c.article = &a
	}
	return c, ""
}

// parseArticle checks an article body; ticket_id is read by the caller.
func parseArticle(f fields) (Article, string) {
	var a Article
	body, _, err := f.str("body")
	if err != nil {
		return a, err.Error()
	}
	if strings.TrimSpace(body) == "" {
		return a, "Need at least an article body!"
	}
	a.Body = body
	if a.ContentType, _, err = f.str("content_type"); err != nil {
		return a, err.Error()
	}
	if a.ContentType == "" {
		a.ContentType = "text/plain"
	}
	if a.ContentType != "text/plain" && a.ContentType != "text/html" {
		return a, fmt.Sprintf("content_type %q: want text/plain or text/html", a.ContentType)
	}
	if a.Type, _, err = f.str("type"); err != nil {
		return a, err.Error()
	}
	if a.Type == "" {
		a.Type = "note"
	}
	if _, ok := articleTypes[a.Type]; !ok {
		return a, fmt.Sprintf("No lookup value found for 'type': %q", a.Type)
	}
	if a.Internal, err = f.boolean("internal"); err != nil {
		return a, err.Error()
	}
	if a.Subject, _, err = f.str("subject"); err != nil {
		return a, err.Error()
	}
	a.Sender = SenderAgent
	return a, ""
}

func decode(w http.ResponseWriter, body []byte) (fields, bool) {
	var f fields
	if err := json.Unmarshal(body, &f); err != nil || f == nil {
		writeError(w, http.StatusBadRequest, "The request body is not a JSON object.")
		return nil, false
	}
	return f, true
}

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
	if s.noAccess[c.group.name] {
		writeError(w, http.StatusForbidden, "Not authorized")
		return
	}
	if c.newCustomer != nil {
		c.customerID = s.addUser(*c.newCustomer)
	}
	now := s.stamp()
	s.nextTk++
	t := &ticket{
		id: s.nextTk, number: strconv.FormatInt(31000+s.nextTk, 10), title: *c.title, groupID: c.group.id,
		stateID: 1, customerID: c.customerID, ownerID: 1, attrs: map[string]*string{},
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
	s.tickets[t.id] = t
	s.addHistory(HistoryEntry{Type: "created", Object: "Ticket", OID: t.id, CreatedByID: uid, CreatedAt: now})
	if c.article != nil {
		s.newArticle(t, *c.article, uid)
	}
	writeJSON(w, http.StatusCreated, s.ticketJSON(t, expand, true))
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
	if c.group != nil && s.noAccess[c.group.name] {
		writeError(w, http.StatusForbidden, "Not authorized")
		return
	}
	changed := false
	if c.title != nil && *c.title != t.title {
		t.title, changed = *c.title, true
	}
	if c.group != nil && c.group.id != t.groupID {
		t.groupID, changed = c.group.id, true
	}
	for k, v := range c.attrs {
		old := t.attrs[k]
		if (old == nil) != (v == nil) || old != nil && *old != *v {
			t.attrs[k], changed = v, true
		}
	}
	if changed {
		t.updatedAt = s.stamp()
		t.updatedBy = uid
	}
	if c.state != nil {
		s.setState(t, *c.state, c.pendingTime, uid)
	}
	if c.article != nil {
		s.newArticle(t, *c.article, uid)
	}
	writeJSON(w, http.StatusOK, s.ticketJSON(t, expand, true))
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
	writeJSON(w, http.StatusCreated, s.articleJSON(s.newArticle(t, a, uid)))
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
			"data_option": map[string]any{"type": "text", "maxlength": a.MaxLength, "null": true}})
	}
	// An attribute of another object with a colliding name must not
	// pass for a ticket attribute.
	id++
	out = append(out, map[string]any{"id": id, "name": "department", "display": "Department", "data_type": "input", "object": "User",
		"active": true, "editable": false, "to_create": false, "to_migrate": false, "data_option": map[string]any{"maxlength": 200}})
	return out
}
