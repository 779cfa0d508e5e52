package zendeskfake

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html"
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

// Defaults of [Options], each from Zendesk's published limits.
const (
	DefaultMaxPageSize        = 100
	DefaultEventsPageSize     = 1000
	DefaultExportDelay        = time.Minute
	DefaultIdempotencyTTL     = 2 * time.Hour
	DefaultTicketUpdates      = 30
	DefaultTicketUpdateWindow = 10 * time.Minute
	DefaultExportRequests     = 10
)

// SystemUserID is the updater of changes Zendesk makes itself (an
// automation closing a solved ticket), as in Zendesk's audits.
const SystemUserID int64 = -1

// RateLimit allows Requests requests in any sliding Window. A request over
// it gets 429 with Retry-After, the whole seconds until a slot frees, and is
// not counted. Requests < 0 removes the limit; the zero value means the
// default of the field it is in.
type RateLimit struct {
	Requests int
	Window   time.Duration
}

// Options configure a [Server]. The zero value is usable.
type Options struct {
	// Email and Token are the API user's credentials, sent as basic auth
	// "{Email}/token:{Token}". Empty means "agent@example.com" and
	// "fake-token".
	Email, Token string
	// Name and Role of the API user; empty means "Ticketbridge API" and
	// "admin".
	Name, Role string
	// MaxPageSize caps page[size] and per_page of the list endpoints; zero
	// means 100, Zendesk's maximum. Tests set 2 to force paging.
	MaxPageSize int
	// EventsPageSize is how many ticket events an incremental export page
	// holds; zero means 1000.
	EventsPageSize int
	// ExportDelay leaves events younger than it out of incremental
	// exports; zero means one minute, negative none.
	ExportDelay time.Duration
	// IdempotencyTTL is how long an Idempotency-Key of a ticket creation is
	// remembered; zero means two hours.
	IdempotencyTTL time.Duration
	// TicketUpdates limits updates of one ticket by one user; the zero
	// value means 30 in ten minutes.
	TicketUpdates RateLimit
	// ExportRequests limits the incremental export; the zero value means
	// 10 a minute.
	ExportRequests RateLimit
	// AccountRequests limits every API request; the zero value means none
	// (the account-wide limit depends on the plan).
	AccountRequests RateLimit
	// SearchLag is how long a new ticket, or a ticket's new external_id,
	// takes to reach the Search API's index; zero means none (Zendesk
	// says up to a few minutes).
	SearchLag time.Duration
	// RequiredOnSolve are ticket fields an admin made required on solve:
	// an API update to solved (or closed) of a ticket where one is empty
	// is refused with 422 RecordInvalid. [Server.SetField] fills one in.
	RequiredOnSolve []Field
	// TicketFields are the account's other custom ticket fields, which
	// the API may set ("custom_fields"); see [Field].
	TicketFields []Field
}

// Field is a custom ticket field. Type is Zendesk's field type: "date"
// takes "YYYY-MM-DD", "decimal" and "integer" a number; "" (and "text")
// any text. Null empties any of them.
type Field struct {
	ID    int64
	Title string
	Type  string
}

func (o Options) withDefaults() Options {
	if o.Email == "" {
		o.Email = "agent@example.com"
	}
	if o.Token == "" {
		o.Token = "fake-token"
	}
	if o.Name == "" {
		o.Name = "Ticketbridge API"
	}
	if o.Role == "" {
		o.Role = "admin"
	}
	if o.MaxPageSize <= 0 {
		o.MaxPageSize = DefaultMaxPageSize
	}
	if o.EventsPageSize <= 0 {
		o.EventsPageSize = DefaultEventsPageSize
	}
	if o.ExportDelay == 0 {
		o.ExportDelay = DefaultExportDelay
	} else if o.ExportDelay < 0 {
		o.ExportDelay = 0
	}
	if o.IdempotencyTTL <= 0 {
		o.IdempotencyTTL = DefaultIdempotencyTTL
	}
	if o.TicketUpdates == (RateLimit{}) {
		o.TicketUpdates = RateLimit{Requests: DefaultTicketUpdates, Window: DefaultTicketUpdateWindow}
	}
	if o.ExportRequests == (RateLimit{}) {
		o.ExportRequests = RateLimit{Requests: DefaultExportRequests, Window: time.Minute}
	}
	if o.AccountRequests == (RateLimit{}) {
		o.AccountRequests = RateLimit{Requests: -1}
	}
	return o
}

// User is a Zendesk user of the fake account.
type User struct {
	ID    int64
	Name  string
	Email string
	Role  string // admin, agent or end-user
}

// Comment is a ticket comment as the fake holds it.
type Comment struct {
	ID          int64
	AuditID     int64
	AuthorID    int64
	Body        string
	HTMLBody    string
	Public      bool
	Attachments []Attachment
	CreatedAt   time.Time
}

// Attachment is a file attached to a comment: its name and what Zendesk
// tells of it. The fake keeps no content.
type Attachment struct {
	ID          int64
	FileName    string
	ContentType string
	Size        int64
}

// Ticket is a snapshot of a ticket of the fake account.
type Ticket struct {
	ID                  int64
	ExternalID          string
	Subject             string
	Status              string
	GroupID             int64
	Priority            string // low, normal, high, urgent; "" for none
	Tags                []string
	RequesterID         int64
	SubmitterID         int64
	ViaFollowupSourceID int64
	FollowupIDs         []int64
	CreatedAt           time.Time
	UpdatedAt           time.Time
	Comments            []Comment
	Fields              map[int64]string // custom field id -> value
}

type ticket struct {
	Ticket
	archived bool // closed long ago: left out of List Tickets, still shown and searched
	// externalAt is when external_id was last set, from which the
	// Search API finds the ticket by it after [Options.SearchLag]
	externalAt time.Time
	updates    map[int64][]time.Time // updater -> times of API updates, for the rate limit
}

// auditEvent is one child event of an audit.
type auditEvent struct {
	ID       int64
	Type     string // Create, Change, Comment
	Field    string // Create and Change
	Value    string
	Previous string
	Comment  *Comment
}

type audit struct {
	ID        int64
	TicketID  int64
	AuthorID  int64
	CreatedAt time.Time
	Via       string
	Events    []auditEvent
}

type idemEntry struct {
	hash   [32]byte
	status int
	body   []byte
	at     time.Time
}

// Request is one request the fake received, for assertions.
type Request struct {
	Method         string
	Path           string
	Query          url.Values
	IdempotencyKey string
	Body           []byte
}

// Server is the fake account. It is safe for concurrent use.
type Server struct {
	saasfake.Base[Fault, Request]
	opts Options

	mu          sync.Mutex
	nextID      int64
	nextTicket  int64
	apiUser     int64
	users       map[int64]*User
	groups      map[int64]string
	tickets     map[int64]*ticket
	audits      []*audit
	idem        map[string]idemEntry
	exportHits  []time.Time
	accountHits []time.Time
}

// New returns a fake account holding the API user of opts.
func New(opts Options) *Server {
	opts = opts.withDefaults()
	s := &Server{
		opts:       opts,
		nextID:     360000000000,
		nextTicket: 1,
		users:      map[int64]*User{},
		groups:     map[int64]string{},
		tickets:    map[int64]*ticket{},
		idem:       map[string]idemEntry{},
	}
	s.apiUser = s.addUserLocked(opts.Name, opts.Email, opts.Role)
	return s
}

func (s *Server) newID() int64 {
	s.nextID++
	return s.nextID
}

// ServeHTTP answers one API request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "InvalidRequest", "could not read the request body", nil)
		return
	}
	path := strings.TrimSuffix(r.URL.Path, ".json")
	s.Record(Request{
		Method: r.Method, Path: path, Query: r.URL.Query(),
		IdempotencyKey: r.Header.Get("Idempotency-Key"), Body: body,
	})
	switch f, ok := s.TakeFault(r.Method, path); {
	case !ok:
		s.serve(w, r, path, body)
	case f.AfterApply:
		s.serve(httptest.NewRecorder(), r, path, body)
		fallthrough
	default:
		f.Write(w, `{"error":"InjectedFault","description":"injected by the test (status `+strconv.Itoa(f.Status)+`)"}`)
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, path string, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	user, ok := s.authenticate(r)
	if !ok {
		writeError(w, http.StatusUnauthorized, "Couldn't authenticate you", "", nil)
		return
	}
	if wait, ok := s.allow(&s.accountHits, s.opts.AccountRequests); !ok {
		writeRateLimited(w, wait, "APIRateLimitExceeded")
		return
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	if len(segs) < 3 || segs[0] != "api" || segs[1] != "v2" {
		writeError(w, http.StatusNotFound, "InvalidEndpoint", "Not found", nil)
		return
	}
	segs = segs[2:]
	switch {
	case r.Method == http.MethodGet && len(segs) == 2 && segs[0] == "users" && segs[1] == "me":
		saasfake.WriteJSON(w, http.StatusOK, map[string]any{"user": s.userJSON(s.users[user])})
	case r.Method == http.MethodGet && len(segs) == 2 && segs[0] == "users" && segs[1] == "show_many":
		showMany(w, r, s.users, "users", s.userJSON)
	case r.Method == http.MethodGet && len(segs) == 2 && segs[0] == "users":
		show(w, s.users, segs[1], "user", s.userJSON)
	case r.Method == http.MethodGet && len(segs) == 2 && segs[0] == "groups":
		s.showGroup(w, segs[1])
	case len(segs) == 1 && segs[0] == "tickets" && r.Method == http.MethodGet:
		s.listTickets(w, r)
	case len(segs) == 1 && segs[0] == "search" && r.Method == http.MethodGet:
		s.search(w, r)
	case len(segs) == 1 && segs[0] == "tickets" && r.Method == http.MethodPost:
		s.createTicket(w, r, user, body)
	case len(segs) == 2 && segs[0] == "tickets" && segs[1] == "show_many" && r.Method == http.MethodGet:
		showMany(w, r, s.tickets, "tickets", s.ticketJSON)
	case len(segs) == 2 && segs[0] == "tickets" && r.Method == http.MethodGet:
		show(w, s.tickets, segs[1], "ticket", s.ticketJSON)
	case len(segs) == 2 && segs[0] == "tickets" && r.Method == http.MethodPut:
		s.updateTicket(w, segs[1], user, body)
	case len(segs) == 3 && segs[0] == "tickets" && segs[2] == "comments" && r.Method == http.MethodGet:
		s.listComments(w, r, segs[1])
	case len(segs) == 3 && segs[0] == "tickets" && segs[2] == "audits" && r.Method == http.MethodGet:
		s.listAudits(w, r, segs[1])
	case len(segs) == 2 && segs[0] == "incremental" && segs[1] == "ticket_events" && r.Method == http.MethodGet:
		s.ticketEvents(w, r, user)
	default:
		writeError(w, http.StatusNotFound, "InvalidEndpoint", "Not found", nil)
	}
}

// authenticate checks "{email}/token:{token}" basic auth and returns the
// API user's id.
func (s *Server) authenticate(r *http.Request) (int64, bool) {
	user, pass, ok := r.BasicAuth()
	if !ok {
		return 0, false
	}
	email, isToken := strings.CutSuffix(user, "/token")
	if !isToken || !strings.EqualFold(email, s.opts.Email) || pass != s.opts.Token {
		return 0, false
	}
	return s.apiUser, true
}

// allow applies limit to the request times in hits.
func (s *Server) allow(hits *[]time.Time, limit RateLimit) (time.Duration, bool) {
	if limit.Requests < 0 {
		return 0, true
	}
	now := s.Now()
	kept := (*hits)[:0]
	for _, t := range *hits {
		if now.Sub(t) < limit.Window {
			kept = append(kept, t)
		}
	}
	*hits = kept
	if len(kept) >= limit.Requests {
		if len(kept) == 0 {
			return limit.Window, false
		}
		return kept[0].Add(limit.Window).Sub(now), false
	}
	*hits = append(*hits, now)
	return 0, true
}

// ---- JSON forms ----

// writeError writes Zendesk's error object: error, and description and
// details when given.
func writeError(w http.ResponseWriter, status int, code, description string, details map[string]any) {
	body := map[string]any{"error": code}
	if description != "" {
		body["description"] = description
	}
	if details != nil {
		body["details"] = details
	}
	saasfake.WriteJSON(w, status, body)
}

func writeInvalid(w http.ResponseWriter, field, description string) {
	writeError(w, http.StatusUnprocessableEntity, "RecordInvalid", "Record validation errors", map[string]any{
		field: []map[string]string{{"description": description, "error": "InvalidValue"}},
	})
}

// writeRequiredOnSolve answers an update to solved that leaves required
// fields empty, in the shape Zendesk gives it.
func writeRequiredOnSolve(w http.ResponseWriter, missing []Field) {
	var base []map[string]any
	for _, f := range missing {
		base = append(base, map[string]any{
			"description": f.Title + ": is required when solving a ticket", "error": nil,
			"ticket_field_id": f.ID, "ticket_field_type": "FieldText",
		})
	}
	writeError(w, http.StatusUnprocessableEntity, "RecordInvalid", "Record validation errors", map[string]any{"base": base})
}

func writeRateLimited(w http.ResponseWriter, wait time.Duration, code string) {
	secs := saasfake.RetryAfter(wait)
	w.Header().Set("Retry-After", secs)
	writeError(w, http.StatusTooManyRequests, code, "Rate limit exceeded, retry after "+secs+" seconds", nil)
}

func zdTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func (s *Server) userJSON(u *User) map[string]any {
	return map[string]any{
		"id": u.ID, "url": fmt.Sprintf("/api/v2/users/%d.json", u.ID), "name": u.Name, "email": u.Email,
		"role": u.Role, "active": true, "verified": true,
	}
}

func (s *Server) ticketJSON(t *ticket) map[string]any {
	var ext any
	if t.ExternalID != "" {
		ext = t.ExternalID
	}
	var group any
	if t.GroupID != 0 {
		group = t.GroupID
	}
	desc := ""
	if len(t.Comments) > 0 {
		desc = t.Comments[0].Body
	}
	via := map[string]any{"channel": "api", "source": map[string]any{"from": map[string]any{}, "to": map[string]any{}, "rel": nil}}
	if t.ViaFollowupSourceID != 0 {
		via["source"] = map[string]any{"from": map[string]any{"ticket_id": t.ViaFollowupSourceID}, "to": map[string]any{}, "rel": "follow_up"}
	}
	return map[string]any{
		"id": t.ID, "url": fmt.Sprintf("/api/v2/tickets/%d.json", t.ID), "external_id": ext,
		"subject": t.Subject, "raw_subject": t.Subject, "description": desc, "status": t.Status,
		"group_id": group, "priority": nullable(t.Priority), "custom_fields": s.fieldsJSON(t), "requester_id": t.RequesterID, "submitter_id": t.SubmitterID, "assignee_id": nil,
		"tags": nonNil(t.Tags), "via": via, "followup_ids": nonNilIDs(t.FollowupIDs), "is_public": anyPublic(t.Comments),
		"created_at": zdTime(t.CreatedAt), "updated_at": zdTime(t.UpdatedAt),
	}
}

func commentJSON(c *Comment) map[string]any {
	return map[string]any{
		"id": c.ID, "type": "Comment", "author_id": c.AuthorID, "body": c.Body, "html_body": c.HTMLBody,
		"plain_body": c.Body, "public": c.Public, "attachments": attachmentsJSON(c.Attachments), "audit_id": c.AuditID,
		"via": map[string]any{"channel": "api"}, "created_at": zdTime(c.CreatedAt), "metadata": map[string]any{},
	}
}

// attachment makes the record of a file called name attached now.
func (s *Server) attachment(name string) Attachment {
	ctype, size := saasfake.File(name)
	return Attachment{ID: s.newID(), FileName: name, ContentType: ctype, Size: size}
}

// attachmentsJSON is the "attachments" list of a comment, each in the
// form of Zendesk's Attachments API (Show Attachment).
func attachmentsJSON(as []Attachment) []map[string]any {
	out := make([]map[string]any, 0, len(as))
	for _, at := range as {
		content := fmt.Sprintf("https://fake.zendesk.com/attachments/token/%d/?name=%s", at.ID, url.QueryEscape(at.FileName))
		out = append(out, map[string]any{
			"id": at.ID, "url": fmt.Sprintf("/api/v2/attachments/%d.json", at.ID), "file_name": at.FileName,
			"content_url": content, "mapped_content_url": content, "content_type": at.ContentType, "size": at.Size,
			"width": nil, "height": nil, "inline": false, "deleted": false, "malware_scan_result": "malware_not_found",
			"thumbnails": []any{},
		})
	}
	return out
}

// auditJSON is an audit in the form of the ticket audits API, as create
// and update answers carry it.
func auditJSON(a *audit) map[string]any {
	events := make([]map[string]any, 0, len(a.Events))
	for _, e := range a.Events {
		if e.Comment != nil {
			events = append(events, commentJSON(e.Comment))
			continue
		}
		ev := map[string]any{"id": e.ID, "type": e.Type, "field_name": e.Field, "value": e.Value}
		if e.Type == "Change" {
			ev["previous_value"] = e.Previous
		}
		events = append(events, ev)
	}
	return map[string]any{
		"id": a.ID, "ticket_id": a.TicketID, "author_id": a.AuthorID, "created_at": zdTime(a.CreatedAt),
		"via": map[string]any{"channel": a.Via}, "metadata": map[string]any{"system": map[string]any{}, "custom": map[string]any{}},
		"events": events,
	}
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

func nonNilIDs(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}

func anyPublic(cs []Comment) bool {
	for _, c := range cs {
		if c.Public {
			return true
		}
	}
	return false
}

// normalizeBody is what Zendesk keeps of a comment's body: \r\n as \n, no
// trailing white space.
func normalizeBody(b string) string {
	b = strings.ReplaceAll(b, "\r\n", "\n")
	return strings.TrimRight(b, " \t\r\n")
}

// renderHTML is the fake's html_body: the text escaped, a paragraph per
// blank-line separated block, <br> for the other line breaks.
func renderHTML(body string) string {
	var b strings.Builder
	b.WriteString(`<div class="zd-comment" dir="auto">`)
	for _, para := range strings.Split(body, "\n\n") {
		if strings.TrimSpace(para) == "" {
			continue
		}
		b.WriteString(`<p dir="auto">`)
		b.WriteString(strings.ReplaceAll(html.EscapeString(para), "\n", "<br>"))
		b.WriteString("</p>")
	}
	b.WriteString("</div>")
	return b.String()
}

// stripHTML is the body Zendesk derives from an html_body: the text
// without tags.
func stripHTML(h string) string {
	var b strings.Builder
	in := false
	for _, r := range h {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return html.UnescapeString(b.String())
}

// ---- paging ----

// page cuts items (sorted by id, or in the order a sort parameter asks
// for) for the request r: cursor pagination when
// page[size] is given, offset pagination otherwise. key names the list in
// the answer.
func (s *Server) page(w http.ResponseWriter, r *http.Request, key string, ids []int64, render func(int64) map[string]any) {
	q := r.URL.Query()
	if sz := q.Get("page[size]"); sz != "" {
		size, err := strconv.Atoi(sz)
		if err != nil || size < 1 {
			writeError(w, http.StatusBadRequest, "InvalidPaginationParameter", "page[size] must be a positive number", nil)
			return
		}
		size = min(size, s.opts.MaxPageSize)
		if q.Get("page[before]") != "" {
			writeError(w, http.StatusBadRequest, "InvalidPaginationParameter", "page[before] is not supported by this fake", nil)
			return
		}
		start := 0
		if after := q.Get("page[after]"); after != "" {
			last, ok := decodeCursor(after)
			if !ok {
				writeError(w, http.StatusBadRequest, "InvalidPaginationParameter", "page[after] is not a cursor this endpoint issued", nil)
				return
			}
			if i := slices.Index(ids, last); i >= 0 {
				start = i + 1 // ids in another order than by id (sort)
			} else {
				start, _ = slices.BinarySearch(ids, last+1)
			}
		}
		end := min(start+size, len(ids))
		items := make([]map[string]any, 0, end-start)
		for _, id := range ids[start:end] {
			items = append(items, render(id))
		}
		hasMore := end < len(ids)
		meta := map[string]any{"has_more": hasMore, "after_cursor": nil, "before_cursor": nil}
		links := map[string]any{"next": nil, "prev": nil}
		if end > start {
			after := encodeCursor(ids[end-1])
			meta["after_cursor"] = after
			meta["before_cursor"] = encodeCursor(ids[start])
			if hasMore {
				links["next"] = saasfake.Link(r, "page[after]", after)
			}
		}
		saasfake.WriteJSON(w, http.StatusOK, map[string]any{key: items, "meta": meta, "links": links})
		return
	}
	pageNo, perPage := 1, s.opts.MaxPageSize
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "InvalidPaginationParameter", "page must be a positive number", nil)
			return
		}
		pageNo = n
	}
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "InvalidPaginationParameter", "per_page must be a positive number", nil)
			return
		}
		perPage = min(n, s.opts.MaxPageSize)
	}
	start := min((pageNo-1)*perPage, len(ids))
	end := min(start+perPage, len(ids))
	items := make([]map[string]any, 0, end-start)
	for _, id := range ids[start:end] {
		items = append(items, render(id))
	}
	var next, prev any
	if end < len(ids) {
		next = saasfake.Link(r, "page", strconv.Itoa(pageNo+1))
	}
	if pageNo > 1 {
		prev = saasfake.Link(r, "page", strconv.Itoa(pageNo-1))
	}
	saasfake.WriteJSON(w, http.StatusOK, map[string]any{key: items, "next_page": next, "previous_page": prev, "count": len(ids)})
}

func encodeCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("id:" + strconv.FormatInt(id, 10)))
}

func decodeCursor(c string) (int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	v, ok := strings.CutPrefix(string(b), "id:")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

func parseID(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0
}

func bodyHash(b []byte) [32]byte { return sha256.Sum256(bytes.TrimSpace(b)) }
