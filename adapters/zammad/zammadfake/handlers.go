package zammadfake

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters/saas/saasfake"
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
	del := r.Method == http.MethodDelete

	if get && rest == "users/me" {
		saasfake.WriteJSON(w, http.StatusOK, s.userJSON(s.users[uid], expand))
		return
	}
	if rest == "object_manager_attributes" && get {
		if !s.permitted(uid, PermAdminObject) {
			writeError(w, http.StatusForbidden, "Not authorized")
			return
		}
		saasfake.WriteJSON(w, http.StatusOK, s.attributesJSON())
		return
	}
	if !s.permitted(uid, PermTicketAgent) {
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
		saasfake.WriteJSON(w, http.StatusOK, s.userJSON(u, expand))
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
		saasfake.WriteJSON(w, http.StatusOK, out)
	case get && rest == "tickets":
		s.listTickets(w, q, expand)
	case get && rest == "tickets/search":
		s.searchTickets(w, q, expand)
	case get && len(parts) == 2 && parts[0] == "tickets":
		t, ok := s.readable(w, parts[1], uid)
		if ok {
			saasfake.WriteJSON(w, http.StatusOK, s.ticketJSON(t, expand, false))
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
		saasfake.WriteJSON(w, http.StatusOK, out)
	case get && len(parts) == 2 && parts[0] == "ticket_articles":
		a, ok := s.articles[mustID(parts[1])]
		if !ok {
			notFound(w, "Ticket::Article", parts[1])
			return
		}
		if _, ok := s.readable(w, strconv.FormatInt(a.TicketID, 10), uid); ok {
			saasfake.WriteJSON(w, http.StatusOK, s.articleJSON(a))
		}
	case post && rest == "ticket_articles":
		s.createArticle(w, body, uid)
	case get && rest == "tags":
		s.tagsList(w, q.Get("object"), q.Get("o_id"), uid)
	case post && rest == "tags/add":
		s.tagWrite(w, body, uid, true)
	case del && rest == "tags/remove":
		s.tagWrite(w, body, uid, false)
	case get && len(parts) == 2 && parts[0] == "ticket_history":
		t, ok := s.readable(w, parts[1], uid)
		if !ok {
			return
		}
		list := []map[string]any{}
		for _, h := range s.historyOf(t.id) {
			list = append(list, historyJSON(h))
		}
		saasfake.WriteJSON(w, http.StatusOK, map[string]any{"history": list, "assets": map[string]any{}})
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
