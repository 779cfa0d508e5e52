package zammadfake

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/saas/saasfake"
)

func (s *Server) listTickets(w http.ResponseWriter, q url.Values, expand bool) {
	offset, limit := s.paging(q, MaxIndexPerPage, MaxIndexPerPage)
	ids := s.visibleIDs()
	slices.Sort(ids)
	out := []map[string]any{}
	for i := offset; i < len(ids) && i < offset+limit; i++ {
		out = append(out, s.ticketJSON(s.tickets[ids[i]], expand, false))
	}
	saasfake.WriteJSON(w, http.StatusOK, out)
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
			c = cmp.Compare(a.id, b.id)
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
		saasfake.WriteJSON(w, http.StatusOK, out)
		return
	}
	ids := []int64{}
	assets := map[string]any{}
	for _, t := range page {
		ids = append(ids, t.id)
		assets[strconv.FormatInt(t.id, 10)] = s.ticketJSON(t, false, false)
	}
	saasfake.WriteJSON(w, http.StatusOK, map[string]any{"tickets": ids, "tickets_count": len(ids), "assets": map[string]any{"Ticket": assets}})
}

func compareColumn(s *Server, a, b *ticket, col string) int {
	switch col {
	case "id", "group_id", "state_id", "customer_id", "owner_id":
		x, _, _ := s.column(a, col)
		y, _, _ := s.column(b, col)
		xi, _ := strconv.ParseInt(x, 10, 64)
		yi, _ := strconv.ParseInt(y, 10, 64)
		return cmp.Compare(xi, yi)
	}
	x, _, _ := s.column(a, col)
	y, _, _ := s.column(b, col)
	return strings.Compare(x, y)
}
