package zammadfake

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/saas/saasfake"
)

// Permissions a token may carry.
const (
	PermTicketAgent = "ticket.agent"
	PermAdminObject = "admin.object"
)

// Zammad's hard page limits.
const (
	MaxIndexPerPage      = 100 // GET /api/v1/tickets
	MaxSearchPerPage     = 200 // GET /api/v1/tickets/search
	DefaultSearchPerPage = 50  // per_page of a search that names none
)

// Attribute is a custom ticket attribute of the object manager.
type Attribute struct {
	Name    string // e.g. guest_request_id
	Display string // "" means Name
	// DataType is "input" (a text field, the default for ""), or
	// "datetime" (Date & Time), which takes an ISO 8601 time.
	DataType  string
	MaxLength int // 0 means 255 (input only)
	// RefusePast and RefuseFuture turn a datetime attribute's "Allow
	// past" and "Allow future" off (Zammad's defaults are on): see
	// [Server] for what Zammad then refuses.
	RefusePast, RefuseFuture bool
	// Pending marks an attribute created in the object manager but not
	// yet applied with "Update database": it is listed with to_create
	// true and tickets cannot store it.
	Pending bool
	// Inactive marks a disabled attribute (active false).
	Inactive bool
}

// Options configure a [Server].
type Options struct {
	// Token is the API user's access token (required).
	Token string
	// APIName and APILogin describe the API user; "" means "Ticket
	// Bridge" and "bridge@hotel.example".
	APIName, APILogin string
	// Permissions are the token's permissions; nil means ticket.agent and
	// admin.object.
	Permissions []string
	// Groups are the groups, all with full access for the API user and
	// the agents; nil means Zammad's default group "Users".
	Groups []string
	// NoAccess lists groups the API user has no access to.
	NoAccess []string
	// Attributes are the custom ticket attributes.
	Attributes []Attribute
	// MaxPerPage caps per_page of lists and searches below Zammad's
	// limits (100 for the ticket list, 200 for searches); 0 keeps them.
	MaxPerPage int
	// SearchLag is how long a written ticket stays invisible to full-text
	// searches (query=), like Zammad's search index catching up. Searches
	// with a condition read the database and never lag.
	SearchLag time.Duration
}

// Sender ids and names of articles (Zammad's defaults).
const (
	SenderAgent    = "Agent"
	SenderCustomer = "Customer"
	SenderSystem   = "System"
)

var senderIDs = map[string]int64{SenderAgent: 1, SenderCustomer: 2, SenderSystem: 3}

// articleTypes are Zammad's default article types and their ids.
var articleTypes = map[string]int64{"email": 1, "sms": 2, "chat": 3, "fax": 4, "phone": 5, "twitter status": 6, "twitter direct-message": 7, "facebook feed post": 8, "facebook feed comment": 9, "note": 10, "web": 11}

// state is a ticket state of ticket_states.
type state struct {
	ID       int64
	TypeID   int64
	Name     string
	Active   bool
	NextID   int64
	Create   bool // default_create
	FollowUp bool // default_follow_up
}

// Zammad's default states, in its order.
var defaultStates = []state{
	{ID: 1, TypeID: 1, Name: "new", Active: true, Create: true},
	{ID: 2, TypeID: 2, Name: "open", Active: true, FollowUp: true},
	{ID: 3, TypeID: 3, Name: "pending reminder", Active: true},
	{ID: 4, TypeID: 5, Name: "closed", Active: true},
	{ID: 5, TypeID: 6, Name: "merged", Active: true},
	{ID: 6, TypeID: 7, Name: "removed", Active: false},
	{ID: 7, TypeID: 4, Name: "pending close", Active: true, NextID: 4},
}

// agentEditStates are the states the ticket edit screen offers agents
// (the object manager's state_id screens: edit filter 2, 3, 4, 7).
var agentEditStates = []int64{2, 3, 4, 7}

// User is a Zammad user as the fake holds it.
type User struct {
	ID        int64
	Login     string
	Email     string
	Firstname string
	Lastname  string
	Roles     []string // Admin, Agent, Customer
}

// FullName is "Firstname Lastname".
func (u User) FullName() string { return strings.TrimSpace(u.Firstname + " " + u.Lastname) }

// Article is a ticket article as the fake holds it.
type Article struct {
	ID          int64
	TicketID    int64
	From        string
	Subject     string
	Body        string
	ContentType string
	Type        string
	Internal    bool
	Sender      string
	CreatedByID int64
	CreatedAt   time.Time
	Attachments []Attachment // files an agent attached
}

// HistoryEntry is one line of a ticket's history.
type HistoryEntry struct {
	ID            int64
	Type          string // created, updated
	Object        string // Ticket, Ticket::Article
	OID           int64
	Attribute     string // state, group, title, ...
	ValueFrom     string
	ValueTo       string
	IDFrom, IDTo  int64
	RelatedObject string
	RelatedOID    int64
	CreatedByID   int64
	CreatedAt     time.Time
}

// Ticket is a snapshot of a ticket with its articles, oldest first.
type Ticket struct {
	ID          int64
	Number      string
	Title       string
	Group       string
	State       string
	CustomerID  int64
	PendingTime *time.Time
	Priority    string            // "1 low", "2 normal", "3 high"
	Tags        []string          // in the order they were added
	Attributes  map[string]string // custom attributes that hold a value
	CreatedByID int64
	UpdatedByID int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Articles    []Article
}

type ticket struct {
	id          int64
	number      string
	title       string
	groupID     int64
	stateID     int64
	customerID  int64
	ownerID     int64
	pendingTime *time.Time
	priorityID  int64
	tags        []string
	attrs       map[string]*string
	createdBy   int64
	updatedBy   int64
	createdAt   time.Time
	updatedAt   time.Time
	articles    []int64
}

type group struct {
	id   int64
	name string
}

// Fault makes requests fail. Method and Path (a prefix of the URL path)
// select the requests; empty matches all.
type Fault struct {
	Method string
	Path   string
	// Status is the answer, e.g. 429, 500, 502.
	Status int
	// RetryAfter is sent as Retry-After (whole seconds) when positive.
	RetryAfter time.Duration
	// Times is how many requests it hits; 0 means one.
	Times int
	// AfterApply serves the request first and then replaces its answer:
	// the write happened but the client never learns of it.
	AfterApply bool
}

// Request is one request the fake answered, for tests that count calls.
type Request struct {
	Method string
	Path   string
	Query  string
	Status int
}

// Server is the fake Zammad. It is safe for concurrent use.
type Server struct {
	saasfake.Base[Fault, Request]
	opts Options

	mu        sync.Mutex
	users     map[int64]*User
	perms     []string
	apiUser   int64
	groups    []group
	noAccess  map[string]bool
	attrs     map[string]Attribute
	tickets   map[int64]*ticket
	tokens    map[string]int64 // agents' own tokens (Token) -> user id
	articles  map[int64]*Article
	history   []HistoryEntry
	nextUser  int64
	nextTk    int64
	nextArt   int64
	nextHist  int64
	nextAtt   int64
	lastStamp time.Time
}

// New returns a fake with no tickets, the system user (id 1) and the API
// user (id 2).
func New(opts Options) *Server {
	if opts.APIName == "" {
		opts.APIName = "Ticket Bridge"
	}
	if opts.APILogin == "" {
		opts.APILogin = "bridge@hotel.example"
	}
	s := &Server{
		opts:     opts,
		users:    map[int64]*User{},
		perms:    opts.Permissions,
		noAccess: map[string]bool{},
		attrs:    map[string]Attribute{},
		tickets:  map[int64]*ticket{},
		tokens:   map[string]int64{},
		articles: map[int64]*Article{},
		nextUser: 1, nextTk: 0, nextArt: 0, nextHist: 0,
	}
	if s.perms == nil {
		s.perms = []string{PermTicketAgent, PermAdminObject}
	}
	names := opts.Groups
	if names == nil {
		names = []string{"Users"}
	}
	for i, n := range names {
		s.groups = append(s.groups, group{id: int64(i + 1), name: n})
	}
	for _, n := range opts.NoAccess {
		s.noAccess[n] = true
	}
	for _, a := range opts.Attributes {
		if a.DataType == "" {
			a.DataType = "input"
		}
		if a.MaxLength == 0 {
			a.MaxLength = 255
		}
		if a.Display == "" {
			a.Display = a.Name
		}
		s.attrs[a.Name] = a
	}
	s.users[1] = &User{ID: 1, Login: "-", Firstname: "-"}
	first, last, _ := strings.Cut(opts.APIName, " ")
	s.apiUser = s.addUser(User{Login: opts.APILogin, Email: opts.APILogin, Firstname: first, Lastname: last, Roles: []string{"Agent"}})
	return s
}

func (s *Server) addUser(u User) int64 {
	s.nextUser++
	u.ID = s.nextUser
	s.users[u.ID] = &u
	return u.ID
}

// APIUserID returns the id of the token's user.
func (s *Server) APIUserID() int64 { return s.apiUser }

// now is the fake's time (see [saasfake.Base.Now]) at millisecond
// precision, as Zammad shows it. A write made under CommitLate still
// comes after the previous write (see stamp).
func (s *Server) now() time.Time { return s.Now().Truncate(time.Millisecond) }

// stamp returns the time of a write: now, but at least a millisecond after
// the previous write. The caller holds mu.
func (s *Server) stamp() time.Time {
	t := s.now()
	if !t.After(s.lastStamp) {
		t = s.lastStamp.Add(time.Millisecond)
	}
	s.lastStamp = t
	return t
}

// Inject adds a fault; faults hit matching requests in the order they
// were added.
func (s *Server) Inject(f Fault) { s.AddFault(f, f.Method, f.Path, f.Times) }

// ServeHTTP answers one request of the REST API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "could not read the request body")
		return
	}
	// The answer is kept so that a fault can replace it after the request
	// was served, and so that the log holds its status.
	rec := httptest.NewRecorder()
	fault, faulty := s.TakeFault(r.Method, r.URL.Path)
	switch {
	case faulty && !fault.AfterApply:
		writeFault(rec, fault)
	default:
		s.serve(rec, r, body)
		if faulty {
			rec = httptest.NewRecorder()
			writeFault(rec, fault)
		}
	}
	s.Record(Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Status: rec.Code})
	for k, vs := range rec.Header() {
		w.Header()[k] = vs
	}
	w.Header().Set("Date", time.Now().UTC().Format(http.TimeFormat))
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func writeFault(w http.ResponseWriter, f Fault) {
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", saasfake.RetryAfter(f.RetryAfter))
	}
	msg := http.StatusText(f.Status)
	if f.Status == http.StatusTooManyRequests {
		msg = "Too many requests, please try again later."
	}
	writeError(w, f.Status, msg)
}

// authenticate returns the user of the request's token.
func (s *Server) authenticate(r *http.Request) (int64, bool) {
	h := r.Header.Get("Authorization")
	scheme, rest, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Token") {
		return 0, false
	}
	// Both "Token token=abc" (the REST pages) and "Token abc" (the admin
	// pages) are accepted.
	tok := strings.TrimSpace(rest)
	tok = strings.TrimPrefix(tok, "token=")
	tok = strings.Trim(tok, `"`)
	if s.opts.Token != "" && tok == s.opts.Token {
		return s.apiUser, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	uid, ok := s.tokens[tok]
	return uid, ok && tok != ""
}

// permitted reports whether user uid's token has perm: the API token
// those of Options.Permissions, an agent's token ticket.agent.
func (s *Server) permitted(uid int64, perm string) bool {
	if uid != s.apiUser {
		return perm == PermTicketAgent
	}
	return slices.Contains(s.perms, perm)
}

// Token gives agent a token of its own, as an agent makes one under
// avatar > Profile > Token Access, with the permission ticket.agent, and
// returns it: requests with it act as that agent (a ticket it creates is
// created by it, with its article's sender Agent).
func (s *Server) Token(agent int64) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[agent]
	if !ok || !slices.Contains(u.Roles, "Agent") {
		return "", fmt.Errorf("token for user %d: no such agent", agent)
	}
	for tok, uid := range s.tokens {
		if uid == agent {
			return tok, nil
		}
	}
	tok := fmt.Sprintf("agent-token-%d-%s", agent, strings.Repeat("f", 16))
	s.tokens[tok] = agent
	return tok, nil
}

// writeError writes Zammad's error form: the message as both error and
// error_human.
func writeError(w http.ResponseWriter, status int, msg string) {
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		w.Header().Set("X-Failure", msg)
	}
	saasfake.WriteJSON(w, status, map[string]string{"error": msg, "error_human": msg})
}

// zmTime formats t as Zammad does: UTC with milliseconds.
func zmTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func zmTimePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return zmTime(*t)
}

func (s *Server) groupByID(id int64) (group, bool) {
	for _, g := range s.groups {
		if g.id == id {
			return g, true
		}
	}
	return group{}, false
}

func (s *Server) groupByName(name string) (group, bool) {
	for _, g := range s.groups {
		if g.name == name {
			return g, true
		}
	}
	return group{}, false
}

func stateByID(id int64) (state, bool) {
	for _, st := range defaultStates {
		if st.ID == id {
			return st, true
		}
	}
	return state{}, false
}

func stateByName(name string) (state, bool) {
	for _, st := range defaultStates {
		if st.Name == name {
			return st, true
		}
	}
	return state{}, false
}

// pending reports whether a state needs a pending_time (state types
// pending reminder and pending action).
func (st state) pending() bool { return st.TypeID == 3 || st.TypeID == 4 }

func (s *Server) userName(id int64) string {
	if u, ok := s.users[id]; ok {
		return u.Login
	}
	return ""
}

func (s *Server) userJSON(u *User, expand bool) map[string]any {
	roleIDs := []int64{}
	for _, r := range u.Roles {
		roleIDs = append(roleIDs, map[string]int64{"Admin": 1, "Agent": 2, "Customer": 3}[r])
	}
	out := map[string]any{
		"id": u.ID, "login": u.Login, "email": u.Email, "firstname": u.Firstname, "lastname": u.Lastname,
		"active": true, "role_ids": roleIDs, "organization_id": nil,
	}
	groupIDs := map[string][]string{}
	groupNames := map[string][]string{}
	if slices.Contains(u.Roles, "Agent") {
		for _, g := range s.groups {
			if u.ID == s.apiUser && s.noAccess[g.name] {
				continue
			}
			groupIDs[strconv.FormatInt(g.id, 10)] = []string{"full"}
			groupNames[g.name] = []string{"full"}
		}
	}
	out["group_ids"] = groupIDs
	if expand {
		out["roles"] = append([]string{}, u.Roles...)
		out["groups"] = groupNames
	}
	return out
}

func (s *Server) ticketJSON(t *ticket, expand, withArticles bool) map[string]any {
	out := map[string]any{
		"id": t.id, "number": t.number, "title": t.title, "group_id": t.groupID, "state_id": t.stateID,
		"priority_id": t.priorityID, "organization_id": nil, "owner_id": t.ownerID, "customer_id": t.customerID,
		"note": nil, "pending_time": zmTimePtr(t.pendingTime), "article_count": len(t.articles),
		"created_by_id": t.createdBy, "updated_by_id": t.updatedBy,
		"created_at": zmTime(t.createdAt), "updated_at": zmTime(t.updatedAt), "preferences": map[string]any{},
	}
	for name := range s.attrs {
		if s.attrs[name].Pending {
			continue
		}
		if v := t.attrs[name]; v != nil {
			out[name] = *v
		} else {
			out[name] = nil
		}
	}
	if withArticles || expand {
		ids := slices.Clone(t.articles)
		slices.Reverse(ids) // Zammad lists the newest first
		out["article_ids"] = ids
	}
	if expand {
		g, _ := s.groupByID(t.groupID)
		st, _ := stateByID(t.stateID)
		out["group"] = g.name
		out["state"] = st.Name
		p, _ := priorityByID(t.priorityID)
		out["priority"] = p.name
		out["owner"] = s.userName(t.ownerID)
		out["customer"] = s.userName(t.customerID)
		out["created_by"] = s.userName(t.createdBy)
		out["updated_by"] = s.userName(t.updatedBy)
	}
	return out
}

func (s *Server) articleJSON(a *Article) map[string]any {
	return map[string]any{
		"id": a.ID, "ticket_id": a.TicketID, "from": a.From, "to": "", "cc": "", "subject": a.Subject,
		"body": a.Body, "content_type": a.ContentType, "type_id": articleTypes[a.Type], "type": a.Type,
		"sender_id": senderIDs[a.Sender], "sender": a.Sender, "internal": a.Internal,
		"message_id": nil, "preferences": map[string]any{}, "attachments": attachmentsJSON(a.Attachments),
		"created_by_id": a.CreatedByID, "created_by": s.userName(a.CreatedByID),
		"updated_by_id": a.CreatedByID, "updated_by": s.userName(a.CreatedByID), "origin_by_id": nil,
		"created_at": zmTime(a.CreatedAt), "updated_at": zmTime(a.CreatedAt),
	}
}

func historyJSON(h HistoryEntry) map[string]any {
	out := map[string]any{
		"id": h.ID, "o_id": h.OID, "type": h.Type, "object": h.Object,
		"created_by_id": h.CreatedByID, "created_at": zmTime(h.CreatedAt),
	}
	if h.Attribute != "" {
		out["attribute"] = h.Attribute
		out["value_from"] = h.ValueFrom
		out["value_to"] = h.ValueTo
		if h.IDFrom != 0 || h.IDTo != 0 {
			out["id_from"] = h.IDFrom
			out["id_to"] = h.IDTo
		}
	}
	if h.RelatedObject != "" {
		out["related_object"] = h.RelatedObject
		out["related_o_id"] = h.RelatedOID
	}
	return out
}

func (s *Server) addHistory(h HistoryEntry) {
	s.nextHist++
	h.ID = s.nextHist
	s.history = append(s.history, h)
}

// newArticle stores an article on t and touches t. The caller holds mu and
// has checked the input.
func (s *Server) newArticle(t *ticket, a Article, by int64) *Article {
	now := s.stamp()
	s.nextArt++
	a.ID = s.nextArt
	a.TicketID = t.id
	a.CreatedByID = by
	a.CreatedAt = now
	if a.From == "" {
		if u, ok := s.users[by]; ok {
			a.From = u.FullName()
		}
	}
	s.articles[a.ID] = &a
	t.articles = append(t.articles, a.ID)
	t.updatedAt = now
	t.updatedBy = by
	s.addHistory(HistoryEntry{Type: "created", Object: "Ticket::Article", OID: a.ID, RelatedObject: "Ticket", RelatedOID: t.id, CreatedByID: by, CreatedAt: now})
	return &a
}

// setState changes t's state and records it. The caller holds mu.
func (s *Server) setState(t *ticket, st state, pendingTime *time.Time, by int64) {
	if st.ID == t.stateID {
		if pendingTime != nil {
			t.pendingTime = pendingTime
		}
		return
	}
	now := s.stamp()
	old, _ := stateByID(t.stateID)
	t.stateID = st.ID
	if st.pending() {
		t.pendingTime = pendingTime
	} else {
		t.pendingTime = nil
	}
	t.updatedAt = now
	t.updatedBy = by
	s.addHistory(HistoryEntry{Type: "updated", Object: "Ticket", OID: t.id, Attribute: "state", ValueFrom: old.Name, ValueTo: st.Name,
		IDFrom: old.ID, IDTo: st.ID, CreatedByID: by, CreatedAt: now})
}

func (s *Server) snapshot(t *ticket) Ticket {
	g, _ := s.groupByID(t.groupID)
	st, _ := stateByID(t.stateID)
	out := Ticket{
		ID: t.id, Number: t.number, Title: t.title, Group: g.name, State: st.Name, CustomerID: t.customerID,
		Attributes: map[string]string{}, Tags: slices.Clone(t.tags), CreatedByID: t.createdBy, UpdatedByID: t.updatedBy,
		CreatedAt: t.createdAt, UpdatedAt: t.updatedAt,
	}
	if t.pendingTime != nil {
		p := *t.pendingTime
		out.PendingTime = &p
	}
	if p, ok := priorityByID(t.priorityID); ok {
		out.Priority = p.name
	}
	for k, v := range t.attrs {
		if v != nil {
			out.Attributes[k] = *v
		}
	}
	for _, id := range t.articles {
		out.Articles = append(out.Articles, *s.articles[id])
	}
	return out
}

// Ticket returns a snapshot of ticket id.
func (s *Server) Ticket(id int64) (Ticket, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return saasfake.Lookup(s.tickets, id, s.snapshot)
}

// Tickets returns snapshots of every ticket, by id.
func (s *Server) Tickets() []Ticket {
	s.mu.Lock()
	defer s.mu.Unlock()
	return saasfake.Sorted(s.tickets, s.snapshot)
}

// History returns the history of ticket id, oldest first.
func (s *Server) History(id int64) []HistoryEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.historyOf(id)
}

func (s *Server) historyOf(id int64) []HistoryEntry {
	var out []HistoryEntry
	for _, h := range s.history {
		if (h.Object == "Ticket" && h.OID == id) || (h.RelatedObject == "Ticket" && h.RelatedOID == id) {
			out = append(out, h)
		}
	}
	return out
}

// User returns user id.
func (s *Server) User(id int64) (User, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return saasfake.Lookup(s.users, id, func(u *User) User { return *u })
}

// FindUser returns the user whose login or email is key.
func (s *Server) FindUser(key string) (User, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u := s.userByKey(key); u != nil {
		return *u, true
	}
	return User{}, false
}

func (s *Server) userByKey(key string) *User {
	key = strings.ToLower(strings.TrimSpace(key))
	ids := make([]int64, 0, len(s.users))
	for id := range s.users {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		u := s.users[id]
		if strings.ToLower(u.Login) == key || (u.Email != "" && strings.ToLower(u.Email) == key) {
			return u
		}
	}
	return nil
}

func parseID(s string) (int64, bool) {
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil && id > 0 && strconv.FormatInt(id, 10) == s
}

func notFound(w http.ResponseWriter, model string, id string) {
	writeError(w, http.StatusNotFound, fmt.Sprintf("Couldn't find %s with 'id'=%s", model, id))
}
