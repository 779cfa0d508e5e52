package freshdeskfake

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/saas/saasfake"
)

// Freshdesk's ticket statuses.
const (
	StatusOpen     = 2
	StatusPending  = 3
	StatusResolved = 4
	StatusClosed   = 5
)

// Conversation sources.
const (
	SourceReply = 0
	SourceNote  = 2
)

// TicketSourcePhone is the source of a ticket an agent made for a phone
// call (Freshdesk's ticket sources: 1 email, 2 portal, 3 phone, 7 chat,
// 9 feedback widget, 10 outbound email).
const TicketSourcePhone = 3

// Ticket scopes of an agent.
const (
	ScopeGlobal     = 1
	ScopeGroup      = 2
	ScopeRestricted = 3
)

// Defaults of [Options], each from Freshdesk's published limits.
const (
	DefaultPerPage    = 30
	DefaultMaxPerPage = 100
	DefaultMaxPages   = 300
	// DefaultListWindow is how far back the ticket list reaches without
	// updated_since: tickets created in the last 30 days.
	DefaultListWindow = 30 * 24 * time.Hour
	// maxTextField is the longest value of a single-line text field.
	maxTextField = 255
)

// Field is a custom ticket field: Name is what the API calls it (cf_...),
// Label what agents see, Type e.g. custom_text.
type Field struct {
	Name, Label, Type string
}

// DefaultFields are the custom fields of a fresh fake helpdesk: the two the
// freshdesk adapter needs, as single-line text.
func DefaultFields() []Field {
	return []Field{
		{Name: "cf_guest_request_id", Label: "Guest request id", Type: "custom_text"},
		{Name: "cf_guest_request_status", Label: "Guest request status", Type: "custom_text"},
	}
}

// Options configure a [Server]. The zero value is usable.
type Options struct {
	// APIKey is the API key of the agent the API answers as; "" means
	// "fake-api-key".
	APIKey string
	// AgentName and AgentEmail describe that agent; "" means "Ticketbridge
	// API" and "api@example.com".
	AgentName, AgentEmail string
	// TicketScope is that agent's ticket scope; 0 means global.
	TicketScope int
	// PerPage is the page size when per_page is absent; 0 means 30.
	PerPage int
	// MaxPerPage is the largest per_page accepted; 0 means 100. Tests
	// shrink it to force paging.
	MaxPerPage int
	// MaxPages is the last page of the ticket list; 0 means 300.
	MaxPages int
	// RateLimit is the budget of requests per minute; 0 means none.
	RateLimit int
	// Fields are the custom ticket fields; nil means [DefaultFields], an
	// empty slice none.
	Fields []Field
	// EndpointLimits are per-minute budgets of single endpoints besides
	// RateLimit, by the names EndpointTicketsList, EndpointTicketCreate
	// and EndpointTicketUpdate; nil means none.
	EndpointLimits map[string]int
	// FlatBodyText runs the lines of a conversation's body_text together,
	// one space between them, the other shape the reference allows (it
	// says only "content in plain text"); body keeps its <br>.
	FlatBodyText bool
}

func (o Options) withDefaults() Options {
	if o.APIKey == "" {
		o.APIKey = "fake-api-key"
	}
	if o.AgentName == "" {
		o.AgentName = "Ticketbridge API"
	}
	if o.AgentEmail == "" {
		o.AgentEmail = "api@example.com"
	}
	if o.TicketScope == 0 {
		o.TicketScope = ScopeGlobal
	}
	if o.PerPage <= 0 {
		o.PerPage = DefaultPerPage
	}
	if o.MaxPerPage <= 0 {
		o.MaxPerPage = DefaultMaxPerPage
	}
	if o.PerPage > o.MaxPerPage {
		o.PerPage = o.MaxPerPage
	}
	if o.MaxPages <= 0 {
		o.MaxPages = DefaultMaxPages
	}
	if o.Fields == nil {
		o.Fields = DefaultFields()
	}
	return o
}

// Agent is an agent of the fake helpdesk.
type Agent struct {
	ID          int64
	Name        string
	Email       string
	TicketScope int
}

// Conversation is a reply or note as the fake holds it.
type Conversation struct {
	ID        int64
	UserID    int64
	Body      string // HTML, as stored
	BodyText  string // what a reader sees
	Private   bool
	Incoming  bool
	Source    int // SourceReply or SourceNote
	CreatedAt time.Time
	UpdatedAt time.Time
	// Attachments are the files an agent attached; the fake keeps no
	// content.
	Attachments []Attachment
}

// Attachment is a file attached to a conversation.
type Attachment struct {
	ID          int64
	Name        string
	ContentType string
	Size        int64
	CreatedAt   time.Time
}

// Ticket is a snapshot of a ticket of the fake helpdesk.
type Ticket struct {
	ID              int64
	Subject         string
	Description     string // HTML
	DescriptionText string
	Status          int
	Priority        int
	Source          int
	RequesterID     int64
	GroupID         int64 // 0: none
	Tags            []string
	CustomFields    map[string]string // set values only
	// DueBy and FrDueBy are when the resolution and the first response
	// are due: computed by the SLA policy until DueSet, when one was set
	// through the API (see fields.go).
	DueBy, FrDueBy time.Time
	DueSet         bool
	Deleted        bool
	Archived       bool // see [Server.Archive]
	Spam           bool
	CreatedAt      time.Time
	UpdatedAt      time.Time
	Conversations  []Conversation
}

func (t *Ticket) clone() Ticket {
	c := *t
	c.Tags = slices.Clone(t.Tags)
	c.CustomFields = make(map[string]string, len(t.CustomFields))
	for k, v := range t.CustomFields {
		c.CustomFields[k] = v
	}
	c.Conversations = slices.Clone(t.Conversations)
	return c
}

// Request is one request the fake received, for assertions.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	Body   []byte
	// Auth is the basic-auth user name sent, for tests that check what a
	// client put on the wire.
	Auth string
}

// Server is the fake helpdesk. It is safe for concurrent use.
type Server struct {
	saasfake.Base[Fault, Request]
	opts Options

	mu         sync.Mutex
	nextID     int64
	nextTicket int64
	apiAgent   int64
	agents     map[int64]*Agent
	contacts   map[string]int64 // email -> contact id
	groups     map[int64]string
	tickets    map[int64]*Ticket
	endpoints  map[string]endpointBudget
	window     time.Time // start of the current rate-limit minute
	used       int
}

// New returns a fake helpdesk holding the API key's agent.
func New(opts Options) *Server {
	opts = opts.withDefaults()
	s := &Server{
		opts:       opts,
		nextID:     43000000000,
		nextTicket: 1,
		agents:     map[int64]*Agent{},
		contacts:   map[string]int64{},
		groups:     map[int64]string{},
		tickets:    map[int64]*Ticket{},
		endpoints:  map[string]endpointBudget{},
	}
	s.apiAgent = s.addAgentLocked(opts.AgentName, opts.AgentEmail, opts.TicketScope)
	return s
}

func (s *Server) newID() int64 {
	s.nextID++
	return s.nextID
}

// now is the fake's time (see [saasfake.Base.Now]) cut to whole seconds,
// as Freshdesk keeps time.
func (s *Server) now() time.Time { return s.Now().Truncate(time.Second) }

// ServeHTTP answers one API request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		writeValidation(w, fieldError{Field: "", Message: "could not read the request body", Code: "invalid_json"})
		return
	}
	user, _, _ := r.BasicAuth()
	s.Record(Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Body: body, Auth: user})
	switch f, ok := s.TakeFault(r.Method, r.URL.Path); {
	case !ok:
		s.serve(w, r, body)
	case f.AfterApply:
		s.serve(httptest.NewRecorder(), r, body)
		fallthrough
	default:
		f.Write(w, `{"code":"injected_fault","message":"fault injected by the test"}`)
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.authenticate(r) {
		saasfake.WriteJSON(w, http.StatusUnauthorized, map[string]any{
			"code": "invalid_credentials", "message": "You have to be logged in to perform this action.",
		})
		return
	}
	if !s.spend(w) || !s.spendEndpoint(w, r) {
		return
	}
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(segs) < 3 || segs[0] != "api" || segs[1] != "v2" {
		writeNotFound(w)
		return
	}
	if (r.Method == http.MethodPost || r.Method == http.MethodPut) && !isJSON(r.Header.Get("Content-Type")) {
		saasfake.WriteJSON(w, http.StatusUnsupportedMediaType, map[string]any{
			"code": "invalid_content_type", "message": "Content-Type header should have application/json",
		})
		return
	}
	segs = segs[2:]
	route := func(method string, n int, names ...string) bool {
		if len(segs) != n {
			return false
		}
		for i, name := range names {
			if name != "*" && segs[i] != name {
				return false
			}
		}
		return r.Method == method
	}
	switch {
	case route(http.MethodGet, 2, "agents", "me"):
		saasfake.WriteJSON(w, http.StatusOK, s.agentJSON(s.agents[s.apiAgent]))
	case route(http.MethodGet, 2, "agents", "*"):
		s.showAgent(w, segs[1])
	case route(http.MethodGet, 2, "groups", "*"):
		s.showGroup(w, segs[1])
	case route(http.MethodGet, 1, "ticket_fields"):
		saasfake.WriteJSON(w, http.StatusOK, s.ticketFields())
	case route(http.MethodGet, 1, "tickets"):
		s.listTickets(w, r)
	case route(http.MethodPost, 1, "tickets"):
		s.createTicket(w, body)
	case route(http.MethodGet, 2, "tickets", "*"):
		s.showTicket(w, r, segs[1])
	case route(http.MethodPut, 2, "tickets", "*"):
		s.updateTicket(w, segs[1], body)
	case route(http.MethodGet, 3, "tickets", "*", "conversations"):
		s.listConversations(w, r, s.ticket(segs[1], false))
	case route(http.MethodGet, 3, "tickets", "archived", "*"):
		s.showArchived(w, segs[2])
	case route(http.MethodGet, 4, "tickets", "archived", "*", "conversations"):
		s.listConversations(w, r, s.ticket(segs[2], true))
	case route(http.MethodPost, 3, "tickets", "*", "notes"):
		s.addConversation(w, segs[1], body, SourceNote)
	case route(http.MethodPost, 3, "tickets", "*", "reply"):
		s.addConversation(w, segs[1], body, SourceReply)
	default:
		if s.knownPath(segs) {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		writeNotFound(w)
	}
}

// knownPath reports whether segs name an endpoint the fake serves with
// another method.
func (s *Server) knownPath(segs []string) bool {
	switch {
	case len(segs) == 1 && (segs[0] == "tickets" || segs[0] == "ticket_fields"):
		return true
	case len(segs) == 2 && (segs[0] == "tickets" || segs[0] == "agents" || segs[0] == "groups"):
		return true
	case len(segs) == 3 && segs[0] == "tickets" && (segs[2] == "conversations" || segs[2] == "notes" || segs[2] == "reply"):
		return true
	}
	return false
}

func isJSON(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}

// authenticate checks basic auth with the API key as the user name; the
// password is not looked at (clients send "X").
func (s *Server) authenticate(r *http.Request) bool {
	user, _, ok := r.BasicAuth()
	return ok && user == s.opts.APIKey
}

// spend takes one request from the minute's budget and sets the rate-limit
// headers; when the budget is spent it answers 429 and returns false.
func (s *Server) spend(w http.ResponseWriter) bool {
	limit := s.opts.RateLimit
	if limit <= 0 {
		return true
	}
	now := time.Now().UTC()
	if s.window.IsZero() || now.Sub(s.window) >= time.Minute {
		s.window, s.used = now, 0
	}
	h := w.Header()
	h.Set("X-RateLimit-Total", strconv.Itoa(limit))
	if s.used >= limit {
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Used-CurrentRequest", "1")
		h.Set("Retry-After", saasfake.RetryAfter(s.window.Add(time.Minute).Sub(now)))
		saasfake.WriteJSON(w, http.StatusTooManyRequests, map[string]any{
			"message": "You have exceeded the limit of requests per minute. Please try again after some time.",
		})
		return false
	}
	s.used++
	h.Set("X-RateLimit-Remaining", strconv.Itoa(limit-s.used))
	h.Set("X-RateLimit-Used-CurrentRequest", "1")
	return true
}

// Endpoint budgets of [Options.EndpointLimits], named as Freshdesk's
// support article on rate limits names them.
const (
	EndpointTicketsList  = "tickets list"
	EndpointTicketCreate = "ticket create"
	EndpointTicketUpdate = "ticket update"
)

// endpointOf names the endpoint budget r spends, "" for none.
func endpointOf(r *http.Request) string {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(r.URL.Path, "/"), "/api/v2/tickets")
	switch {
	case !ok:
		return ""
	case rest == "" && r.Method == http.MethodGet:
		return EndpointTicketsList
	case rest == "" && r.Method == http.MethodPost:
		return EndpointTicketCreate
	case r.Method == http.MethodPut && strings.Count(rest, "/") == 1:
		return EndpointTicketUpdate
	}
	return ""
}

// spendEndpoint takes one request from the minute's budget of r's
// endpoint; when it is spent it answers 429 with Retry-After (the account's
// headers as they are) and returns false. A refused request spends
// nothing.
func (s *Server) spendEndpoint(w http.ResponseWriter, r *http.Request) bool {
	name := endpointOf(r)
	limit := s.opts.EndpointLimits[name]
	if name == "" || limit <= 0 {
		return true
	}
	now := time.Now().UTC()
	b := s.endpoints[name]
	if b.window.IsZero() || now.Sub(b.window) >= time.Minute {
		b = endpointBudget{window: now}
	}
	if b.used >= limit {
		w.Header().Set("Retry-After", saasfake.RetryAfter(b.window.Add(time.Minute).Sub(now)))
		saasfake.WriteJSON(w, http.StatusTooManyRequests, map[string]any{
			"message": "You have exceeded the limit of requests per minute for this endpoint. Please try again after some time.",
		})
		return false
	}
	b.used++
	s.endpoints[name] = b
	return true
}

type endpointBudget struct {
	window time.Time
	used   int
}

// ---- answers ----

// fieldError is one entry of a validation error's errors.
type fieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
	Code    string `json:"code"`
}

// writeValidation answers 400 with Freshdesk's validation error.
func writeValidation(w http.ResponseWriter, errs ...fieldError) {
	saasfake.WriteJSON(w, http.StatusBadRequest, map[string]any{"description": "Validation failed", "errors": errs})
}

// writeNotFound answers 404 with an empty body.
func writeNotFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
}

// fdTime writes t as Freshdesk does: UTC, whole seconds, Z.
// bodyText is the body_text of a conversation whose HTML is body.
func (s *Server) bodyText(body string) string {
	text := htmlText(body)
	if s.opts.FlatBodyText {
		text = strings.Join(strings.Fields(text), " ")
	}
	return text
}

func fdTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }
