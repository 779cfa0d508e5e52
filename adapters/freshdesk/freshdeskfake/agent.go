package freshdeskfake

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters/saas/saasfake"
)

// ErrNoTicket is returned by the agent-side methods for an unknown ticket.
var ErrNoTicket = errors.New("freshdeskfake: no such ticket")

// ErrNoAgent is returned by the agent-side methods for an unknown agent.
var ErrNoAgent = errors.New("freshdeskfake: no such agent")

// APIAgentID returns the id of the agent the API key belongs to.
func (s *Server) APIAgentID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.apiAgent
}

// AddAgent adds an agent with global ticket scope called name and returns
// its id.
func (s *Server) AddAgent(name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	email := strings.ToLower(strings.Join(strings.Fields(name), ".")) + "@example.com"
	return s.addAgentLocked(name, email, ScopeGlobal)
}

func (s *Server) addAgentLocked(name, email string, scope int) int64 {
	id := s.newID()
	s.agents[id] = &Agent{ID: id, Name: name, Email: email, TicketScope: scope}
	return id
}

// AddGroup adds a group and returns its id.
func (s *Server) AddGroup(name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.newID()
	s.groups[id] = name
	return id
}

// CreateTicket makes a ticket as agent would in the agent interface (a
// new ticket for a phone call): requested by the agent, status open,
// priority low, no group and no custom field, with text typed into the
// editor as its description; it returns the ticket's id.
func (s *Server) CreateTicket(agent int64, subject, text string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.agents[agent] == nil {
		return 0, fmt.Errorf("create ticket: agent %d: %w", agent, ErrNoAgent)
	}
	now := s.now()
	t := &Ticket{
		ID: s.nextTicket, Subject: subject, Status: StatusOpen, Priority: 1, Source: TicketSourcePhone,
		RequesterID: agent, CustomFields: map[string]string{}, CreatedAt: now, UpdatedAt: now,
	}
	s.nextTicket++
	t.Description = textHTML(text)
	t.DescriptionText = htmlText(t.Description)
	slaDue(t)
	s.tickets[t.ID] = t
	return t.ID, nil
}

// Reply adds a public reply by agent to ticket id, with text typed into
// the editor; it returns the conversation's id.
func (s *Server) Reply(id, agent int64, text string) (int64, error) {
	return s.converse(id, agent, text, SourceReply, false, nil)
}

// Note adds a note by agent to ticket id, private or public; it returns
// the conversation's id.
func (s *Server) Note(id, agent int64, text string, private bool) (int64, error) {
	return s.converse(id, agent, text, SourceNote, private, nil)
}

// ReplyWithFiles is Reply with files attached (their names; the fake
// keeps no content). text may be empty: the agent sent the files alone.
func (s *Server) ReplyWithFiles(id, agent int64, text string, files []string) (int64, error) {
	return s.converse(id, agent, text, SourceReply, false, files)
}

// NoteWithFiles is Note with files attached, as ReplyWithFiles.
func (s *Server) NoteWithFiles(id, agent int64, text string, private bool, files []string) (int64, error) {
	return s.converse(id, agent, text, SourceNote, private, files)
}

func (s *Server) converse(id, agent int64, text string, source int, private bool, files []string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tickets[id]
	if t == nil || t.Deleted || t.Archived {
		return 0, fmt.Errorf("add conversation to ticket %d: %w", id, ErrNoTicket)
	}
	if s.agents[agent] == nil {
		return 0, fmt.Errorf("add conversation to ticket %d: agent %d: %w", id, agent, ErrNoAgent)
	}
	now := s.now()
	body := textHTML(text)
	c := Conversation{
		ID: s.newID(), UserID: agent, Body: body, BodyText: s.bodyText(body), Private: private,
		Source: source, CreatedAt: now, UpdatedAt: now,
	}
	for _, name := range files {
		ctype, size := saasfake.File(name)
		c.Attachments = append(c.Attachments, Attachment{ID: s.newID(), Name: name, ContentType: ctype, Size: size, CreatedAt: now})
	}
	t.Conversations = append(t.Conversations, c)
	t.UpdatedAt = now
	return c.ID, nil
}

// SetStatus changes the status of ticket id as agent would.
func (s *Server) SetStatus(id, agent int64, status int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tickets[id]
	if t == nil || t.Deleted || t.Archived {
		return fmt.Errorf("set status of ticket %d: %w", id, ErrNoTicket)
	}
	if s.agents[agent] == nil {
		return fmt.Errorf("set status of ticket %d: agent %d: %w", id, agent, ErrNoAgent)
	}
	if status < StatusOpen || status > StatusClosed {
		return fmt.Errorf("set status of ticket %d: %d is not a status", id, status)
	}
	t.Status = status
	t.UpdatedAt = s.now()
	return nil
}

// SetField sets custom field name of ticket id as an agent would in the
// ticket's properties; "" clears it.
func (s *Server) SetField(id int64, name, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tickets[id]
	if t == nil || t.Deleted {
		return fmt.Errorf("set field of ticket %d: %w", id, ErrNoTicket)
	}
	if _, ok := s.customField(name); !ok {
		return fmt.Errorf("set field of ticket %d: no custom field %q", id, name)
	}
	if value == "" {
		delete(t.CustomFields, name)
	} else {
		t.CustomFields[name] = value
	}
	t.UpdatedAt = s.now()
	return nil
}

// Delete moves ticket id to the trash: lists leave it out, a view shows
// "deleted": true, writes answer 404.
func (s *Server) Delete(id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tickets[id]
	if t == nil {
		return fmt.Errorf("delete ticket %d: %w", id, ErrNoTicket)
	}
	t.Deleted = true
	t.UpdatedAt = s.now()
	return nil
}

// Archive archives closed ticket id, as Freshdesk does with tickets
// closed and untouched for 120 days: the ticket endpoints and the list no
// longer see it (404), GET /tickets/archived/{id} and its conversations
// do, and nothing can change it.
func (s *Server) Archive(id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tickets[id]
	if t == nil || t.Deleted {
		return fmt.Errorf("archive ticket %d: %w", id, ErrNoTicket)
	}
	if t.Status != StatusClosed {
		return fmt.Errorf("archive ticket %d: only closed tickets are archived, its status is %d", id, t.Status)
	}
	t.Archived = true
	return nil
}

// Ticket returns a snapshot of ticket id.
func (s *Server) Ticket(id int64) (Ticket, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return saasfake.Lookup(s.tickets, id, (*Ticket).clone)
}

// Tickets returns snapshots of every ticket, by id.
func (s *Server) Tickets() []Ticket {
	s.mu.Lock()
	defer s.mu.Unlock()
	return saasfake.Sorted(s.tickets, (*Ticket).clone)
}

// Agent returns agent id.
func (s *Server) Agent(id int64) (Agent, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return saasfake.Lookup(s.agents, id, func(a *Agent) Agent { return *a })
}

// Fault is an answer the fake gives instead of serving a request; its
// Body defaults to {"code":"injected_fault",...}.
type Fault = saasfake.Fault

// Inject adds f; faults hit matching requests in the order they were added.
func (s *Server) Inject(f Fault) { s.AddFault(f, f.Method, f.Path, f.Times) }
