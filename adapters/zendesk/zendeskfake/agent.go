package zendeskfake

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/saas/saasfake"
)

// ErrNoTicket is returned by the agent-side methods for an unknown ticket.
var ErrNoTicket = errors.New("zendeskfake: no such ticket")

// APIUserID returns the id of the API user the credentials belong to.
func (s *Server) APIUserID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.apiUser
}

// AddUser adds a user with role admin, agent or end-user and returns its id.
func (s *Server) AddUser(name, email, role string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addUserLocked(name, email, role)
}

func (s *Server) addUserLocked(name, email, role string) int64 {
	id := s.newID()
	s.users[id] = &User{ID: id, Name: name, Email: email, Role: role}
	return id
}

// AddAgent adds an agent called name and returns its id.
func (s *Server) AddAgent(name string) int64 {
	return s.AddUser(name, strings.ToLower(strings.ReplaceAll(name, " ", "."))+"@example.com", "agent")
}

// AddGroup adds a group and returns its id.
func (s *Server) AddGroup(name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.newID()
	s.groups[id] = name
	return id
}

// AgentUpdate is what an agent submits on a ticket in the agent interface:
// a comment (public reply or private note) and/or a status.
type AgentUpdate struct {
	Body   string // "" for none
	Public bool
	Status string // "" for none
	// Attachments are the names of files attached to the comment; with
	// them the comment may have no text, as in the agent interface.
	Attachments []string
}

// CreateTicket makes a ticket as agent would in the agent interface, with
// body as its first (public) comment and externalID ("" for none); it
// returns the ticket's id.
func (s *Server) CreateTicket(agent int64, subject, body, externalID string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	t := &ticket{Ticket: Ticket{
		ID: s.nextTicket, ExternalID: externalID, Subject: subject, Status: "new",
		RequesterID: agent, SubmitterID: agent, CreatedAt: now, UpdatedAt: now,
	}, externalAt: now, updates: map[int64][]time.Time{}}
	s.nextTicket++
	a := &audit{ID: s.newID(), TicketID: t.ID, AuthorID: agent, CreatedAt: now, Via: "web"}
	b := normalizeBody(body)
	c := &Comment{ID: s.newID(), AuditID: a.ID, AuthorID: agent, Body: b, HTMLBody: renderHTML(b), Public: true, CreatedAt: now}
	t.Comments = append(t.Comments, *c)
	a.Events = append(a.Events, auditEvent{ID: c.ID, Type: "Comment", Comment: c},
		auditEvent{ID: s.newID(), Type: "Create", Field: "status", Value: "new"})
	s.tickets[t.ID] = t
	s.audits = append(s.audits, a)
	return t.ID
}

// Update applies u as agent on ticket id, as one audit, and returns the new
// comment's id (0 when u has none). Agent updates are not rate limited.
// Updating a closed ticket fails as it does through the API.
func (s *Server) Update(id, agent int64, u AgentUpdate) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tickets[id]
	if t == nil {
		return 0, fmt.Errorf("update ticket %d: %w", id, ErrNoTicket)
	}
	up := update{status: u.Status, files: u.Attachments}
	if u.Body != "" || len(u.Attachments) > 0 {
		body, public := u.Body, u.Public
		up.comment = &commentIn{Body: &body, Public: &public}
	}
	a, field, text := s.apply(t, agent, up)
	if field != "" {
		return 0, fmt.Errorf("update ticket %d: %s", id, text)
	}
	if a != nil {
		for _, e := range a.Events {
			if e.Comment != nil {
				return e.Comment.ID, nil
			}
		}
	}
	return 0, nil
}

// SetField sets custom field field of ticket id, as an agent filling it
// in.
func (s *Server) SetField(id, field int64, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tickets[id]
	if t == nil {
		return fmt.Errorf("set field of ticket %d: %w", id, ErrNoTicket)
	}
	if t.Fields == nil {
		t.Fields = map[int64]string{}
	}
	t.Fields[field] = value
	return nil
}

// Archive archives closed ticket id, as Zendesk does some 120 days after
// a ticket was closed: List Tickets leaves it out from then on, while
// Show Ticket, its comments and the Search API still have it.
func (s *Server) Archive(id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tickets[id]
	if t == nil {
		return fmt.Errorf("archive ticket %d: %w", id, ErrNoTicket)
	}
	if t.Status != "closed" {
		return fmt.Errorf("archive ticket %d: only closed tickets are archived, it is %s", id, t.Status)
	}
	t.archived = true
	return nil
}

// Reply adds a public comment by agent to ticket id.
func (s *Server) Reply(id, agent int64, body string) (int64, error) {
	return s.Update(id, agent, AgentUpdate{Body: body, Public: true})
}

// Note adds a private comment (an internal note) by agent to ticket id.
func (s *Server) Note(id, agent int64, body string) (int64, error) {
	return s.Update(id, agent, AgentUpdate{Body: body})
}

// SetStatus changes the status of ticket id as agent.
func (s *Server) SetStatus(id, agent int64, status string) error {
	_, err := s.Update(id, agent, AgentUpdate{Status: status})
	return err
}

// Close closes ticket id as Zendesk's automation does with solved tickets
// after some days; the change is made by [SystemUserID].
func (s *Server) Close(id int64) error {
	return s.SetStatus(id, SystemUserID, "closed")
}

// Ticket returns a snapshot of ticket id.
func (s *Server) Ticket(id int64) (Ticket, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return saasfake.Lookup(s.tickets, id, snapshot)
}

// Tickets returns snapshots of every ticket, by id.
func (s *Server) Tickets() []Ticket {
	s.mu.Lock()
	defer s.mu.Unlock()
	return saasfake.Sorted(s.tickets, snapshot)
}

func snapshot(t *ticket) Ticket {
	c := t.Ticket
	c.Tags = slices.Clone(t.Tags)
	c.FollowupIDs = slices.Clone(t.FollowupIDs)
	c.Comments = slices.Clone(t.Comments)
	c.Fields = maps.Clone(t.Fields)
	return c
}

// Fault is an answer injected instead of the fake's own; its Body
// defaults to {"error":"InjectedFault",...}.
type Fault = saasfake.Fault

// Inject adds f; faults hit matching requests in the order they were
// added. A ".json" ending of f.Path is ignored.
func (s *Server) Inject(f Fault) {
	s.AddFault(f, f.Method, strings.TrimSuffix(f.Path, ".json"), f.Times)
}
