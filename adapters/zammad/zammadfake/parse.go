package zammadfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/mail"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

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
	priority    *priority
	tags        []string // of a creation
	attrs       map[string]*string
	article     *Article
	newCustomer *User
}

var emailRE = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[^@\s]+$`)

// parseTicket checks a create (t == nil) or update body. The caller holds
// mu. A non-empty message is the 422 to answer.
func (s *Server) parseTicket(f fields, t *ticket) (c change, msg string) {
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
		v, msg := attrValue(a, v)
		if msg != "" {
			return c, msg
		}
		c.attrs[name] = &v
	}
	if c.priority, msg = parsePriority(f); msg != "" {
		return c, msg
	}
	if t == nil {
		c.tags, _ = parseTags(f)
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
