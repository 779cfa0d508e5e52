package refserver

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
)

// Errors of the console methods, matched with errors.Is. The HTTP console
// answers ErrNotFound with 404, ErrConflict with 409 and ErrInvalid with 400.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("already exists")
	ErrInvalid  = errors.New("invalid input")
)

// Platform is a key's right on the service API: none, read, write or admin.
type Platform string

// Platform rights.
const (
	PlatformNone  Platform = "none"
	PlatformRead  Platform = "read"
	PlatformWrite Platform = "write"
	PlatformAdmin Platform = "admin"
)

func (p Platform) valid() bool {
	switch p {
	case PlatformNone, PlatformRead, PlatformWrite, PlatformAdmin:
		return true
	}
	return false
}

// scopes are the access token scopes of a platform right: read gives
// [read], write and admin give [read write], none gives no token at all.
func (p Platform) scopes() []string {
	switch p {
	case PlatformRead:
		return []string{"read"}
	case PlatformWrite, PlatformAdmin:
		return []string{"read", "write"}
	}
	return nil
}

// TicketRight is a key's right on the ticket API: none, read or write
// (write includes read).
type TicketRight string

// Ticket rights.
const (
	TicketsNone  TicketRight = "none"
	TicketsRead  TicketRight = "read"
	TicketsWrite TicketRight = "write"
)

func (t TicketRight) valid() bool {
	switch t {
	case TicketsNone, TicketsRead, TicketsWrite:
		return true
	}
	return false
}

// Product types an organisation may have.
var productTypes = []string{"hotel", "short_term", "long_term"}

// Sources of messages and operations in the internal view.
const (
	SourceAPI     = "api"     // through the public API: an external system
	SourceConsole = "console" // through the console (Go methods or /console/v1)
	SourceSeed    = "seed"    // loaded from a seed
)

// KeyPrefix starts every API key.
const KeyPrefix = "rta_"

// tokenPrefix starts every access token; it differs from KeyPrefix so that
// neither is mistaken for the other.
const tokenPrefix = "rtt_"

type organization struct {
	id          string
	productType string
	idem        map[string]idemEntry
	pruneAt     time.Time // when expired idempotency keys are next swept out
	// tickets are the organisation's tickets, newest first while sorted:
	// a list costs what the organisation holds, not what the server holds.
	tickets []*ticket
	sorted  bool
}

type idemEntry struct {
	resp response
	at   time.Time
}

type ticket struct {
	seq         uint64
	org         string
	id          string
	department  string
	status      guestapi.Status
	description string
	origin      guestapi.Origin
	rating      *float64
	due         *time.Time
	comments    *string
	created     time.Time
	updated     time.Time
	messages    []InternalMessage
	ops         []Operation
}

type apiKey struct {
	org      string
	name     string
	fp       [sha256.Size]byte
	prefix   string
	platform Platform
	tickets  TicketRight
	created  time.Time
	expires  *time.Time
	lastUsed *time.Time
}

type accessToken struct {
	fp      [sha256.Size]byte
	key     *apiKey
	expires time.Time
}

// store is the server's state; every field is guarded by mu.
type store struct {
	mu       sync.Mutex
	orgs     map[string]*organization
	orgOrder []string
	tickets  map[string]*ticket
	msgIDs   map[string]bool
	keys     []*apiKey
	tokens   []*accessToken
	seq      uint64

	keepUpdated bool // a new message leaves updated_at (Options.MessagesKeepUpdatedAt)
}

func newStore() store {
	return store{orgs: map[string]*organization{}, tickets: map[string]*ticket{}, msgIDs: map[string]bool{}}
}

func fingerprint(secret string) [sha256.Size]byte { return sha256.Sum256([]byte(secret)) }

// findKey returns the key whose fingerprint matches secret's, comparing
// every stored fingerprint in constant time. Caller holds mu.
func (st *store) findKey(secret string) *apiKey {
	fp := fingerprint(secret)
	var found *apiKey
	for _, k := range st.keys {
		if subtle.ConstantTimeCompare(fp[:], k.fp[:]) == 1 {
			found = k
		}
	}
	return found
}

// findToken is findKey for access tokens. Caller holds mu.
func (st *store) findToken(secret string) *accessToken {
	fp := fingerprint(secret)
	var found *accessToken
	for _, t := range st.tokens {
		if subtle.ConstantTimeCompare(fp[:], t.fp[:]) == 1 {
			found = t
		}
	}
	return found
}

func (st *store) keyLive(k *apiKey, now time.Time) bool {
	if !slices.Contains(st.keys, k) {
		return false // revoked
	}
	return k.expires == nil || now.Before(*k.expires)
}

func newSecret(prefix string) string { return prefix + strings.ToLower(rand.Text()) }

// keyDisplayPrefix is what the key table shows of a key: its first 8
// characters.
func keyDisplayPrefix(value string) string {
	if len(value) > 8 {
		return value[:8]
	}
	return value
}

// NewTicket describes a ticket created through the console.
type NewTicket struct {
	ID              string          // "" means a new UUID
	Department      string          // required
	Status          guestapi.Status // "" means new; any of the seven
	TaskDescription string          // required
	Origin          guestapi.Origin // "" means guest
	GuestRating     *float64
	TargetDueAt     *time.Time
	Comments        *string
	CreatedAt       time.Time // zero means now
}

// ConsoleMessage is a message added through the console.
type ConsoleMessage struct {
	AuthorType     guestapi.AuthorType // guest, staff, ai or system; required
	AuthorName     string              // "" means Guest, Staff, AI concierge or System after the type
	Body           string              // required, not blank
	VisibleToGuest *bool               // nil means true
	CreatedAt      time.Time           // zero means now
}

// KeySpec describes a key to issue.
type KeySpec struct {
	Name     string      // required, unique in the organisation
	Platform Platform    // "" means none
	Tickets  TicketRight // "" means none (the console's default)
	// ValidityDays is 30, 90 or 365; 0 means unlimited.
	ValidityDays int
}

// IssuedKey is a key just issued; Value is shown this once.
type IssuedKey struct {
	Organization string      `json:"organization"`
	Name         string      `json:"name"`
	Value        string      `json:"value"`
	Platform     Platform    `json:"platform"`
	Tickets      TicketRight `json:"tickets"`
	ExpiresAt    *time.Time  `json:"-"`
}

// KeyInfo is a row of the key table: never the value.
type KeyInfo struct {
	Organization string
	Name         string
	Prefix       string
	Platform     Platform
	Tickets      TicketRight
	CreatedAt    time.Time
	ExpiresAt    *time.Time // nil: unlimited
	LastUsedAt   *time.Time // nil: never used
}

// TicketView is a ticket with every field, as the console sees it.
type TicketView struct {
	Organization    string
	ID              string
	Department      string
	Status          guestapi.Status
	TaskDescription string
	Origin          guestapi.Origin
	GuestRating     *float64
	TargetDueAt     *time.Time
	Comments        *string
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// InternalMessage is a message with what only the console knows of it.
type InternalMessage struct {
	guestapi.Message
	Source   string // api, console or seed
	External bool   // posted by an external system (through the API)
}

// Operation is an entry of a ticket's operations log.
type Operation struct {
	At       time.Time
	Op       string // status, rating, department, task_description, target_due_at or comments
	From     string
	To       string
	Source   string // api, console or seed
	External bool   // made by an external system (through the API)
}

// GuestView is what the guest's request page shows.
type GuestView struct {
	Status   guestapi.Status
	Messages []guestapi.Message
}

// InternalView is a ticket as the console shows it: every message with its
// source, the operations log, and what the guest sees.
type InternalView struct {
	Ticket     TicketView
	Messages   []InternalMessage // oldest first
	Operations []Operation       // oldest first
	GuestView  GuestView
}

func (t *ticket) view() TicketView {
	return TicketView{t.org, t.id, t.department, t.status, t.description, t.origin,
		clonePtr(t.rating), clonePtr(t.due), clonePtr(t.comments), t.created, t.updated}
}

func (t *ticket) listItem() guestapi.Ticket {
	return guestapi.Ticket{ID: t.id, Department: t.department, Status: t.status, TaskDescription: t.description,
		Origin: t.origin, GuestRating: clonePtr(t.rating), TargetDueAt: clonePtr(t.due), CreatedAt: t.created, UpdatedAt: t.updated}
}

func (t *ticket) detail() guestapi.TicketDetail {
	return guestapi.TicketDetail{ID: t.id, Department: t.department, Status: t.status, TaskDescription: t.description,
		Origin: t.origin, GuestRating: clonePtr(t.rating), Comments: clonePtr(t.comments), CreatedAt: t.created, UpdatedAt: t.updated}
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func (s *Server) nowUTC() time.Time { return s.opts.Now().UTC().Truncate(time.Microsecond) }

// AddOrganization adds an organisation with a product type (hotel,
// short_term or long_term).
func (s *Server) AddOrganization(id, productType string) error {
	if strings.TrimSpace(id) == "" {
		return fmt.Errorf("add organization: %w: id is empty", ErrInvalid)
	}
	if !slices.Contains(productTypes, productType) {
		return fmt.Errorf("add organization %s: %w: product_type %q is not one of %s", id, ErrInvalid, productType, strings.Join(productTypes, ", "))
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if _, ok := s.st.orgs[id]; ok {
		return fmt.Errorf("add organization %s: %w", id, ErrConflict)
	}
	s.st.addOrg(id, productType)
	return nil
}

func (st *store) addOrg(id, productType string) {
	st.orgs[id] = &organization{id: id, productType: productType, idem: map[string]idemEntry{}}
	st.orgOrder = append(st.orgOrder, id)
}

// Organizations returns the organisations' ids in the order they were added.
func (s *Server) Organizations() []string {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return slices.Clone(s.st.orgOrder)
}

// CreateTicket creates a ticket in organisation org.
func (s *Server) CreateTicket(org string, nt NewTicket) (TicketView, error) {
	now := s.nowUTC()
	if nt.Status == "" {
		nt.Status = guestapi.StatusNew
	}
	if nt.Origin == "" {
		nt.Origin = guestapi.OriginGuest
	}
	if nt.CreatedAt.IsZero() {
		nt.CreatedAt = now
	}
	if err := checkTicketFields(nt.ID != "", nt.ID, nt.Department, nt.Status, nt.TaskDescription, nt.Origin, nt.GuestRating); err != nil {
		return TicketView{}, fmt.Errorf("create ticket: %w", err)
	}
	if nt.ID == "" {
		nt.ID = s.opts.NewID()
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if _, ok := s.st.orgs[org]; !ok {
		return TicketView{}, fmt.Errorf("create ticket: organization %q: %w", org, ErrNotFound)
	}
	if _, ok := s.st.tickets[nt.ID]; ok {
		return TicketView{}, fmt.Errorf("create ticket %s: %w", nt.ID, ErrConflict)
	}
	t := &ticket{org: org, id: nt.ID, department: nt.Department, status: nt.Status, description: nt.TaskDescription,
		origin: nt.Origin, rating: clonePtr(nt.GuestRating), due: utcPtr(nt.TargetDueAt), comments: clonePtr(nt.Comments),
		created: nt.CreatedAt.UTC().Truncate(time.Microsecond)}
	t.updated = t.created
	s.st.insertTicket(t)
	s.log.Info("ticket created", slog.String("ticket", t.id), slog.String("org", org), slog.String("source", string(SourceConsole)))
	return t.view(), nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.UTC().Truncate(time.Microsecond)
	return &v
}

func (st *store) insertTicket(t *ticket) {
	st.seq++
	t.seq = st.seq
	st.tickets[t.id] = t
	o := st.orgs[t.org]
	o.tickets = append(o.tickets, t)
	o.sorted = false
}

// checkTicketFields checks the fields of a ticket to create; the errors
// name the field.
func checkTicketFields(checkID bool, id, department string, status guestapi.Status, description string, origin guestapi.Origin, rating *float64) error {
	if checkID && !isUUID(id) {
		return fmt.Errorf("%w: id %q is not a UUID", ErrInvalid, id)
	}
	if strings.TrimSpace(department) == "" {
		return fmt.Errorf("%w: department is empty", ErrInvalid)
	}
	if !status.Known() {
		return fmt.Errorf("%w: status %q is not one of %s", ErrInvalid, status, joinStatuses(guestapi.Statuses()))
	}
	if strings.TrimSpace(description) == "" {
		return fmt.Errorf("%w: task_description is empty", ErrInvalid)
	}
	switch origin {
	case guestapi.OriginGuest, guestapi.OriginStaff, guestapi.OriginInternal:
	default:
		return fmt.Errorf("%w: origin %q is not one of guest, staff, internal", ErrInvalid, origin)
	}
	return checkRating(rating)
}

func checkRating(r *float64) error {
	if r != nil && (math.IsNaN(*r) || *r < 0 || *r > 10) {
		return fmt.Errorf("%w: guest_rating %v is not a number from 0 to 10", ErrInvalid, *r)
	}
	return nil
}

func joinStatuses(ss []guestapi.Status) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	return strings.Join(parts, ", ")
}

func statusStrings(ss []guestapi.Status) []string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	return parts
}

func defaultAuthorName(a guestapi.AuthorType) string {
	switch a {
	case guestapi.AuthorGuest:
		return "Guest"
	case guestapi.AuthorStaff:
		return "Staff"
	case guestapi.AuthorAI:
		return "AI concierge"
	}
	return "System"
}

// AddMessage adds a message to a ticket as the console does: as the guest,
// an employee, the AI concierge or the platform. It moves the ticket's
// updated_at to the message's time when that is later.
func (s *Server) AddMessage(ticketID string, m ConsoleMessage) (guestapi.Message, error) {
	if !m.AuthorType.Known() {
		return guestapi.Message{}, fmt.Errorf("add message: %w: author_type %q is not one of guest, staff, ai, system", ErrInvalid, m.AuthorType)
	}
	if strings.TrimSpace(m.Body) == "" {
		return guestapi.Message{}, fmt.Errorf("add message: %w: body is empty", ErrInvalid)
	}
	if strings.TrimSpace(m.AuthorName) == "" {
		m.AuthorName = defaultAuthorName(m.AuthorType)
	}
	visible := true
	if m.VisibleToGuest != nil {
		visible = *m.VisibleToGuest
	}
	at := s.nowUTC()
	if !m.CreatedAt.IsZero() {
		at = m.CreatedAt.UTC().Truncate(time.Microsecond)
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	t, ok := s.st.tickets[ticketID]
	if !ok {
		return guestapi.Message{}, fmt.Errorf("add message: ticket %q: %w", ticketID, ErrNotFound)
	}
	msg := guestapi.Message{ID: s.newMessageID(), AuthorType: m.AuthorType, AuthorName: m.AuthorName, Body: m.Body, VisibleToGuest: visible, CreatedAt: at}
	s.st.appendMessage(t, InternalMessage{Message: msg, Source: SourceConsole})
	s.log.Info("message added", slog.String("ticket", t.id), slog.String("message", msg.ID), slog.String("author_type", string(msg.AuthorType)), slog.String("source", string(SourceConsole)))
	return msg, nil
}

// newMessageID returns an id no message has. Caller holds mu.
func (s *Server) newMessageID() string {
	for {
		id := s.opts.NewID()
		if !s.st.msgIDs[id] {
			return id
		}
	}
}

// appendMessage adds m in time order (a message dated before the last one
// goes before it) and moves updated_at, unless Options.MessagesKeepUpdatedAt
// is set. Caller holds mu.
func (st *store) appendMessage(t *ticket, m InternalMessage) {
	st.msgIDs[m.ID] = true
	i := len(t.messages)
	for i > 0 && t.messages[i-1].CreatedAt.After(m.CreatedAt) {
		i--
	}
	t.messages = slices.Insert(t.messages, i, m)
	if !st.keepUpdated && m.CreatedAt.After(t.updated) {
		t.updated = m.CreatedAt
	}
}

// SetStatus sets any of the seven statuses, as the console does.
func (s *Server) SetStatus(ticketID string, status guestapi.Status) error {
	if !status.Known() {
		return fmt.Errorf("set status: %w: status %q is not one of %s", ErrInvalid, status, joinStatuses(guestapi.Statuses()))
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	t, ok := s.st.tickets[ticketID]
	if !ok {
		return fmt.Errorf("set status: ticket %q: %w", ticketID, ErrNotFound)
	}
	s.setStatusLocked(t, status, SourceConsole)
	return nil
}

// setStatusLocked changes the status and logs the operation; updated_at
// moves only when the status changed. Caller holds mu.
func (s *Server) setStatusLocked(t *ticket, status guestapi.Status, source string) {
	now := s.nowUTC()
	t.ops = append(t.ops, Operation{At: now, Op: "status", From: string(t.status), To: string(status), Source: source, External: source == SourceAPI})
	if t.status != status {
		t.status = status
		if now.After(t.updated) {
			t.updated = now
		}
	}
	s.log.Info("status set", slog.String("ticket", t.id), slog.String("status", string(status)), slog.String("source", string(source)))
}

// DeleteTicket deletes a ticket, as a hotel's staff may on the platform:
// from then on every endpoint answers 404 not_found for it, as for a
// ticket that never was. Its message ids stay taken.
func (s *Server) DeleteTicket(ticketID string) error {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	t, ok := s.st.tickets[ticketID]
	if !ok {
		return fmt.Errorf("delete ticket: ticket %q: %w", ticketID, ErrNotFound)
	}
	delete(s.st.tickets, ticketID)
	o := s.st.orgs[t.org]
	o.tickets = slices.DeleteFunc(o.tickets, func(x *ticket) bool { return x == t })
	s.log.Info("ticket deleted", slog.String("ticket", ticketID))
	return nil
}

// Ticket returns the internal view of a ticket.
func (s *Server) Ticket(id string) (InternalView, error) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	t, ok := s.st.tickets[id]
	if !ok {
		return InternalView{}, fmt.Errorf("read ticket %q: %w", id, ErrNotFound)
	}
	v := InternalView{Ticket: t.view(), Messages: slices.Clone(t.messages), Operations: slices.Clone(t.ops),
		GuestView: GuestView{Status: t.status, Messages: []guestapi.Message{}}}
	if v.Messages == nil {
		v.Messages = []InternalMessage{}
	}
	if v.Operations == nil {
		v.Operations = []Operation{}
	}
	for _, m := range t.messages {
		if m.VisibleToGuest {
			v.GuestView.Messages = append(v.GuestView.Messages, m.Message)
		}
	}
	return v, nil
}

// Tickets returns every ticket of org, newest first.
func (s *Server) Tickets(org string) []TicketView {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	var out []TicketView
	for _, t := range s.st.sortedTickets(org) {
		out = append(out, t.view())
	}
	return out
}

// sortedTickets returns org's tickets newest first (created_at, then the
// later created). Caller holds mu.
func (st *store) sortedTickets(org string) []*ticket {
	o := st.orgs[org]
	if o == nil {
		return nil
	}
	if !o.sorted {
		// created_at never changes after a ticket is created.
		slices.SortFunc(o.tickets, func(a, b *ticket) int {
			if c := b.created.Compare(a.created); c != 0 {
				return c
			}
			return int(b.seq) - int(a.seq)
		})
		o.sorted = true
	}
	return o.tickets
}

// IssueKey issues a key in org and returns its value, which is stored only
// as a SHA-256 fingerprint and cannot be read again.
func (s *Server) IssueKey(org string, spec KeySpec) (IssuedKey, error) {
	if spec.Platform == "" {
		spec.Platform = PlatformNone
	}
	if spec.Tickets == "" {
		spec.Tickets = TicketsNone
	}
	if err := checkKeySpec(spec.Name, spec.Platform, spec.Tickets); err != nil {
		return IssuedKey{}, fmt.Errorf("issue key: %w", err)
	}
	var expires *time.Time
	now := s.nowUTC()
	switch spec.ValidityDays {
	case 0:
	case 30, 90, 365:
		e := now.Add(time.Duration(spec.ValidityDays) * 24 * time.Hour)
		expires = &e
	default:
		return IssuedKey{}, fmt.Errorf("issue key: %w: validity_days %d is not 30, 90, 365 or 0 (unlimited)", ErrInvalid, spec.ValidityDays)
	}
	value := newSecret(KeyPrefix)
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if err := s.st.addKey(org, spec.Name, value, spec.Platform, spec.Tickets, now, expires); err != nil {
		return IssuedKey{}, fmt.Errorf("issue key: %w", err)
	}
	s.log.Info("key issued", slog.String("org", org), slog.String("name", spec.Name), slog.String("platform", string(spec.Platform)), slog.String("tickets", string(spec.Tickets)))
	return IssuedKey{Organization: org, Name: spec.Name, Value: value, Platform: spec.Platform, Tickets: spec.Tickets, ExpiresAt: clonePtr(expires)}, nil
}

func checkKeySpec(name string, p Platform, t TicketRight) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("%w: name is empty", ErrInvalid)
	}
	if !p.valid() {
		return fmt.Errorf("%w: platform %q is not one of none, read, write, admin", ErrInvalid, p)
	}
	if !t.valid() {
		return fmt.Errorf("%w: tickets %q is not one of none, read, write", ErrInvalid, t)
	}
	return nil
}

// addKey stores a key's fingerprint. Caller holds mu.
func (st *store) addKey(org, name, value string, p Platform, t TicketRight, now time.Time, expires *time.Time) error {
	if _, ok := st.orgs[org]; !ok {
		return fmt.Errorf("organization %q: %w", org, ErrNotFound)
	}
	for _, k := range st.keys {
		if k.org == org && k.name == name {
			return fmt.Errorf("key %q: %w", name, ErrConflict)
		}
	}
	if st.findKey(value) != nil {
		return fmt.Errorf("key %q: the value is another key's: %w", name, ErrConflict)
	}
	st.keys = append(st.keys, &apiKey{org: org, name: name, fp: fingerprint(value), prefix: keyDisplayPrefix(value),
		platform: p, tickets: t, created: now, expires: expires})
	return nil
}

// RevokeKey deletes a key; the next request with it gets 401, and so does
// every access token obtained with it.
func (s *Server) RevokeKey(org, name string) error {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	for i, k := range s.st.keys {
		if k.org == org && k.name == name {
			s.st.keys = slices.Delete(s.st.keys, i, i+1)
			s.st.tokens = slices.DeleteFunc(s.st.tokens, func(t *accessToken) bool { return t.key == k })
			s.log.Info("key revoked", slog.String("org", org), slog.String("name", name))
			return nil
		}
	}
	return fmt.Errorf("revoke key %q of organization %q: %w", name, org, ErrNotFound)
}

// Keys returns the key table of org: names, prefixes, rights, validity and
// last use, never values.
func (s *Server) Keys(org string) ([]KeyInfo, error) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if _, ok := s.st.orgs[org]; !ok {
		return nil, fmt.Errorf("list keys: organization %q: %w", org, ErrNotFound)
	}
	out := []KeyInfo{}
	for _, k := range s.st.keys {
		if k.org == org {
			out = append(out, KeyInfo{k.org, k.name, k.prefix, k.platform, k.tickets, k.created, clonePtr(k.expires), clonePtr(k.lastUsed)})
		}
	}
	return out, nil
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// AddKey adds a key whose value is given, as a seed does; an ExpiresAt in
// the past makes an expired key.
func (s *Server) AddKey(org string, k SeedKey) error {
	if k.Platform == "" {
		k.Platform = PlatformNone
	}
	if k.Tickets == "" {
		k.Tickets = TicketsNone
	}
	if err := checkKeySpec(k.Name, k.Platform, k.Tickets); err != nil {
		return fmt.Errorf("add key: %w", err)
	}
	if !strings.HasPrefix(k.Value, KeyPrefix) || len(k.Value) <= len(KeyPrefix) {
		return fmt.Errorf("add key: %w: value: an API key starts with %s and has more after it", ErrInvalid, KeyPrefix)
	}
	now := s.nowUTC()
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if err := s.st.addKey(org, k.Name, k.Value, k.Platform, k.Tickets, now, utcPtr(k.ExpiresAt)); err != nil {
		return fmt.Errorf("add key: %w", err)
	}
	return nil
}
