package zammadfake

import (
	"errors"
	"fmt"
	"html"
	"strings"
	"time"
)

// ErrNoTicket is returned by agent methods for a ticket the fake does not
// have.
var ErrNoTicket = errors.New("no such ticket")

// AddAgent adds an agent named name (first name, and last name after the
// first space) and returns its id.
func (s *Server) AddAgent(name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	first, last, _ := strings.Cut(strings.TrimSpace(name), " ")
	login := strings.ToLower(strings.ReplaceAll(strings.Join(strings.Fields(name), "."), "@", "")) + "@staff.hotel.example"
	return s.addUser(User{Login: login, Email: login, Firstname: first, Lastname: last, Roles: []string{"Agent"}})
}

// AgentUpdate is what an agent does to a ticket in one save of the ticket
// screen: an optional article and an optional new state.
type AgentUpdate struct {
	Body     string // the article's text; "" writes no article
	Internal bool   // an internal note rather than a public one
	// HTML writes the text as Zammad's editor does (text/html); false
	// writes it as text/plain.
	HTML bool
	// Type is the article type; "" means note.
	Type string
	// Sender is the article's sender; "" means Agent. Customer stands for
	// a mail from the customer, System for an automatic article.
	Sender string
	// State is the new state's name; "" keeps the state.
	State string
	// PendingTime is the pending till of a pending state; zero means a
	// day after now.
	PendingTime time.Time
	// Attachments are the names of files attached to the article (the
	// fake keeps no content); with them the article may have no text.
	Attachments []string
}

// Update applies an agent's save of ticket id and returns the new
// article's id (0 when none).
func (s *Server) Update(id, agent int64, u AgentUpdate) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tickets[id]
	if !ok {
		return 0, fmt.Errorf("agent update of ticket %d: %w", id, ErrNoTicket)
	}
	if _, ok := s.users[agent]; !ok {
		return 0, fmt.Errorf("agent update of ticket %d: no user %d", id, agent)
	}
	var st state
	if u.State != "" {
		var ok bool
		st, ok = stateByName(u.State)
		if !ok || !st.Active {
			return 0, fmt.Errorf("agent update of ticket %d: unknown state %q", id, u.State)
		}
	}
	var artID int64
	if u.Body != "" || len(u.Attachments) > 0 {
		a := Article{Body: u.Body, ContentType: "text/plain", Type: u.Type, Internal: u.Internal, Sender: u.Sender}
		for _, name := range u.Attachments {
			a.Attachments = append(a.Attachments, s.attachment(name))
		}
		if a.Sender == "" {
			a.Sender = SenderAgent
		}
		if _, ok := senderIDs[a.Sender]; !ok {
			return 0, fmt.Errorf("agent update of ticket %d: unknown sender %q", id, u.Sender)
		}
		if u.HTML {
			a.Body, a.ContentType = EditorHTML(u.Body), "text/html"
		}
		if a.Type == "" {
			a.Type = "note"
		}
		artID = s.newArticle(t, a, agent).ID
	}
	if u.State != "" {
		var pt *time.Time
		if st.pending() {
			at := u.PendingTime
			if at.IsZero() {
				at = s.now().Add(24 * time.Hour)
			}
			pt = &at
		}
		s.setState(t, st, pt, agent)
	}
	return artID, nil
}

// Reply adds a public note by agent, written in the editor (text/html).
func (s *Server) Reply(id, agent int64, body string) (int64, error) {
	return s.Update(id, agent, AgentUpdate{Body: body, HTML: true})
}

// Note adds an internal note by agent, written in the editor.
func (s *Server) Note(id, agent int64, body string) (int64, error) {
	return s.Update(id, agent, AgentUpdate{Body: body, Internal: true, HTML: true})
}

// SetState changes the state of ticket id as agent; a pending state gets a
// pending till a day after now.
func (s *Server) SetState(id, agent int64, name string) error {
	_, err := s.Update(id, agent, AgentUpdate{State: name})
	return err
}

// AutoClose moves a ticket in "pending close" whose pending till has
// passed to its next state, as Zammad's scheduler does (as the system
// user). It returns how many tickets it closed.
func (s *Server) AutoClose() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.tickets {
		st, _ := stateByID(t.stateID)
		if st.NextID == 0 || t.pendingTime == nil || s.now().Before(*t.pendingTime) {
			continue
		}
		next, _ := stateByID(st.NextID)
		s.setState(t, next, nil, 1)
		n++
	}
	return n
}

// EditorHTML renders text as Zammad's rich text editor stores it: each
// line in a <div>, an empty line as <div><br></div>, the text escaped,
// and runs of spaces (and a leading space) as &nbsp; so that they survive.
func EditorHTML(text string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if line == "" {
			b.WriteString("<div><br></div>")
			continue
		}
		b.WriteString("<div>")
		esc := html.EscapeString(line)
		var out strings.Builder
		prevSpace := true // a leading space would collapse too
		for _, r := range esc {
			if r == ' ' && prevSpace {
				out.WriteString("&nbsp;")
				continue
			}
			out.WriteRune(r)
			prevSpace = r == ' '
		}
		b.WriteString(out.String())
		b.WriteString("</div>")
	}
	return b.String()
}
