package memory

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// Backend is the helpdesk itself: its tickets, their messages and statuses,
// and the log of every change with who made it. Any number of adapters
// (see [New]) share one Backend, as restarts of the bridge share one real
// helpdesk. Its agent methods act as the support team. It is safe for
// concurrent use.
type Backend struct {
	mu      sync.Mutex
	tickets []*ticket // by ref number - 1
	log     []change  // every change, in order; seq = index + 1
	// now stamps messages and changes (see SetClock). Kept because the
	// simulator of package sync runs the backend on one fake clock with
	// the reference server over real sockets, where a testing/synctest
	// bubble's clock cannot advance.
	now    func() time.Time
	rng    *rand.Rand
	faults []*fault
	calls  map[Op]int
}

type ticket struct {
	ref      adapters.Ref
	fields   adapters.Ticket
	status   string
	statusAt time.Time // when status last changed
	messages []*message
	sent     map[string]string // event id -> upstream message id
	cur      adapters.Fields   // the platform's fields as the ticket holds them now
	updates  int               // the bridge's updates that changed a field
}

type message struct {
	MessageSnapshot
}

// changeKind is what one logged change did.
type changeKind int

const (
	changeCreate changeKind = iota + 1
	changeMessage
	changeStatus
	changeSent
	changeFields // fields set by Update or edited by an agent: never reported
)

// change is one entry of the backend's log, the helpdesk's equivalent of a
// transaction history.
type change struct {
	seq      int
	ref      adapters.Ref
	kind     changeKind
	byBridge bool
	author   string
	body     string
	public   bool
	status   string
	at       time.Time
}

// NewBackend returns an empty helpdesk using the wall clock and a fault
// generator seeded with 1 (see [Backend.Seed]).
func NewBackend() *Backend {
	return &Backend{now: time.Now, rng: rand.New(rand.NewPCG(1, 1)), calls: map[Op]int{}}
}

// SetClock replaces the clock that stamps messages and changes (the
// simulator's fake clock).
func (b *Backend) SetClock(clock func() time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.now = clock
}

// TicketSnapshot is a copy of one ticket as the helpdesk holds it.
type TicketSnapshot struct {
	Ref      adapters.Ref
	Ticket   adapters.Ticket // the upstream fields it was created with
	Status   string          // the helpdesk status
	Messages []MessageSnapshot
	Sent     map[string]string // what MarkSent recorded: event id -> upstream message id
	// Fields are the platform's fields as the ticket holds them now (its
	// department is its queue), and Updates how many of the bridge's
	// updates changed one: a repeat that writes nothing leaves it.
	Fields  adapters.Fields
	Updates int
}

// MessageSnapshot is a copy of one message of a ticket.
type MessageSnapshot struct {
	ID         string              // the helpdesk's id
	UpstreamID string              // the upstream message id; "" for an agent's message
	AuthorType guestapi.AuthorType // the upstream author type; "" for an agent's message
	AuthorName string
	Body       string
	Public     bool
	At         time.Time
	ByBridge   bool // written by the adapter rather than by an agent
}

// Text renders the message as the helpdesk shows it to a person: an
// attribution line with author, author type, time and visibility, a blank
// line, then the body.
func (m MessageSnapshot) Text() string {
	who := m.AuthorName
	if m.AuthorType != "" {
		who += " (" + string(m.AuthorType) + ")"
	} else {
		who += " (agent)"
	}
	vis := "internal note"
	if m.Public {
		vis = "public"
	}
	return fmt.Sprintf("%s, %s, %s:\n\n%s", who, m.At.UTC().Format("2006-01-02 15:04 UTC"), vis, m.Body)
}

func (t *ticket) snapshot() TicketSnapshot {
	s := TicketSnapshot{Ref: t.ref, Ticket: t.fields, Status: t.status, Sent: maps.Clone(t.sent), Fields: t.cur, Updates: t.updates}
	s.Fields.Rating = clone(t.cur.Rating)
	if s.Sent == nil {
		s.Sent = map[string]string{}
	}
	for _, m := range t.messages {
		s.Messages = append(s.Messages, m.MessageSnapshot)
	}
	return s
}

// Ticket returns a copy of the ticket ref; ok is false when there is none.
func (b *Backend) Ticket(ref adapters.Ref) (TicketSnapshot, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.ticket(ref)
	if t == nil {
		return TicketSnapshot{}, false
	}
	return t.snapshot(), true
}

// Tickets returns copies of all tickets, oldest first.
func (b *Backend) Tickets() []TicketSnapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]TicketSnapshot, len(b.tickets))
	for i, t := range b.tickets {
		out[i] = t.snapshot()
	}
	return out
}

// Messages returns copies of the messages of ticket ref, oldest first; nil
// when there is no such ticket. Counting a message's UpstreamID in it tells
// whether it was mirrored twice.
func (b *Backend) Messages(ref adapters.Ref) []MessageSnapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.ticket(ref)
	if t == nil {
		return nil
	}
	out := make([]MessageSnapshot, len(t.messages))
	for i, m := range t.messages {
		out[i] = m.MessageSnapshot
	}
	return out
}

// Find returns every ticket that mirrors the upstream ticket, oldest first;
// more than one is a duplicate.
func (b *Backend) Find(upstreamID string) []adapters.Ref {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []adapters.Ref
	for _, t := range b.tickets {
		if t.fields.UpstreamID == upstreamID {
			out = append(out, t.ref)
		}
	}
	return out
}

// Reply adds a public reply by the agent author to ticket ref, as a member
// of the support team would, and returns its helpdesk id.
func (b *Backend) Reply(ref adapters.Ref, author, body string) (string, error) {
	return b.agentMessage(ref, author, body, true)
}

// Note adds an internal note by the agent author to ticket ref and returns
// its helpdesk id.
func (b *Backend) Note(ref adapters.Ref, author, body string) (string, error) {
	return b.agentMessage(ref, author, body, false)
}

func (b *Backend) agentMessage(ref adapters.Ref, author, body string, public bool) (string, error) {
	if strings.TrimSpace(body) == "" {
		return "", fmt.Errorf("add agent message to %s: empty body: %w", ref, adapters.ErrInvalid)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.ticket(ref)
	if t == nil {
		return "", fmt.Errorf("add agent message to %s: %w", ref, adapters.ErrNotFound)
	}
	m := b.addMessage(t, MessageSnapshot{AuthorName: author, Body: body, Public: public})
	return m.ID, nil
}

// SetStatus sets the status of ticket ref as the agent author would, in the
// helpdesk's terms (any non-empty word: like a real helpdesk, the backend
// has its own statuses, and the adapter reports only the ones it maps).
func (b *Backend) SetStatus(ref adapters.Ref, author, status string) error {
	if strings.TrimSpace(status) == "" {
		return fmt.Errorf("set status of %s: empty status: %w", ref, adapters.ErrInvalid)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.ticket(ref)
	if t == nil {
		return fmt.Errorf("set status of %s: %w", ref, adapters.ErrNotFound)
	}
	t.status, t.statusAt = status, b.now().UTC()
	b.record(change{ref: ref, kind: changeStatus, author: author, status: status})
	return nil
}

// SetStatusUnreported sets the status of ticket ref as the agent author
// would, without the change entering the log Changes reads: a change the
// adapter's change feed skipped (a cursor moved past a late commit), which
// only Lookup shows.
func (b *Backend) SetStatusUnreported(ref adapters.Ref, status string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.ticket(ref)
	if t == nil {
		return fmt.Errorf("set status of %s: %w", ref, adapters.ErrNotFound)
	}
	t.status, t.statusAt = status, b.now().UTC()
	return nil
}

// ticket returns the ticket ref or nil. b.mu must be held.
func (b *Backend) ticket(ref adapters.Ref) *ticket {
	n, ok := strings.CutPrefix(string(ref), refPrefix)
	if !ok {
		return nil
	}
	i, err := strconv.Atoi(n)
	if err != nil || i < 1 || i > len(b.tickets) || strconv.Itoa(i) != n {
		return nil
	}
	return b.tickets[i-1]
}

// byUpstream returns the first ticket mirroring upstreamID or nil. b.mu
// must be held.
func (b *Backend) byUpstream(upstreamID string) *ticket {
	for _, t := range b.tickets {
		if t.fields.UpstreamID == upstreamID {
			return t
		}
	}
	return nil
}

const refPrefix = "mem-"

// create adds a ticket as the bridge. b.mu must be held.
func (b *Backend) create(fields adapters.Ticket, status string) *ticket {
	t := &ticket{
		ref:      adapters.Ref(refPrefix + strconv.Itoa(len(b.tickets)+1)),
		fields:   fields,
		status:   status,
		statusAt: b.now().UTC(),
		sent:     map[string]string{},
		cur: adapters.Fields{Department: fields.Department, Title: fields.TaskDescription, Rating: clone(fields.GuestRating),
			Comment: fields.Comments, Origin: fields.Origin},
	}
	b.tickets = append(b.tickets, t)
	b.record(change{ref: t.ref, kind: changeCreate, byBridge: true, status: status})
	return t
}

// addMessage appends m to t, giving it an id and a time, and logs it. b.mu
// must be held.
func (b *Backend) addMessage(t *ticket, m MessageSnapshot) *message {
	m.ID = fmt.Sprintf("%s#%d", t.ref, len(t.messages)+1)
	now := b.now().UTC()
	if m.At.IsZero() {
		m.At = now
	}
	msg := &message{m}
	t.messages = append(t.messages, msg)
	b.record(change{ref: t.ref, kind: changeMessage, byBridge: m.ByBridge, author: m.AuthorName, body: m.Body, public: m.Public, at: now})
	return msg
}

// record logs c. b.mu must be held.
func (b *Backend) record(c change) {
	c.seq = len(b.log) + 1
	if c.at.IsZero() {
		c.at = b.now().UTC()
	}
	b.log = append(b.log, c)
}

// Op names an adapter method for fault injection.
type Op string

// The adapter methods faults can be injected into.
const (
	OpEnsureTicket Op = "EnsureTicket"
	OpAppend       Op = "Append"
	OpSetStatus    Op = "SetStatus"
	OpChanges      Op = "Changes"
	OpLookup       Op = "Lookup"
	OpMarkSent     Op = "MarkSent"
	OpUpdate       Op = "Update"
)

// ErrInjected is wrapped by every error a [Fault] causes.
var ErrInjected = errors.New("injected fault")

// Fault makes adapter calls fail, to test what the engine does when the
// helpdesk errs, times out or loses an answer.
type Fault struct {
	// Op is the method that fails; "" means any.
	Op Op
	// Nth makes the Nth matching call after Inject fail (1 is the next
	// one), and the Times-1 calls after it.
	Nth int
	// Rate, with Nth 0, makes each matching call fail with this
	// probability, drawn from the backend's seeded generator.
	Rate float64
	// Times is how many calls fail before the fault is spent; 0 means 1
	// with Nth and no limit with Rate.
	Times int
	// Permanent makes the error wrap [adapters.ErrInvalid] (the engine
	// will not retry it soon); otherwise it is temporary.
	Permanent bool
	// AfterApply makes the call do its work and then fail, as when the
	// helpdesk applied a write but its answer was lost.
	AfterApply bool
	// WaitUntil, when set, makes the call return an
	// *adapters.WaitError with this Until, as a helpdesk whose rate
	// budget for the ticket is spent (Update only).
	WaitUntil time.Time
}

type fault struct {
	Fault
	seen   int // matching calls so far
	failed int // failures caused so far
}

// Inject adds a fault. Faults are checked in the order they were added;
// the first that fires decides the call.
func (b *Backend) Inject(f Fault) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.faults = append(b.faults, &fault{Fault: f})
}

// ClearFaults removes every fault.
func (b *Backend) ClearFaults() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.faults = nil
}

// Seed reseeds the generator that Rate faults draw from.
func (b *Backend) Seed(seed uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rng = rand.New(rand.NewPCG(seed, seed))
}

// Calls returns how many times op was called on the adapters of this
// backend, failed calls included.
func (b *Backend) Calls(op Op) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[op]
}

// enter counts a call of op and returns the error a fault makes it fail
// with, if any, and whether that error comes after the work is applied.
// b.mu must be held.
func (b *Backend) enter(op Op) (err error, after bool) {
	b.calls[op]++
	for _, f := range b.faults {
		if f.Op != "" && f.Op != op {
			continue
		}
		f.seen++
		if !f.fires(b.rng) {
			continue
		}
		f.failed++
		if !f.WaitUntil.IsZero() {
			return fmt.Errorf("memory %s: %w", op, &adapters.WaitError{Until: f.WaitUntil, Why: "injected fault"}), false
		}
		if f.Permanent {
			return fmt.Errorf("memory %s: %w: %w", op, ErrInjected, adapters.ErrInvalid), f.AfterApply
		}
		return fmt.Errorf("memory %s: %w (temporary)", op, ErrInjected), f.AfterApply
	}
	return nil, false
}

func (f *fault) fires(rng *rand.Rand) bool {
	if f.Nth > 0 {
		times := max(f.Times, 1)
		return f.seen >= f.Nth && f.failed < times
	}
	if f.Times > 0 && f.failed >= f.Times {
		return false
	}
	return f.Rate > 0 && rng.Float64() < f.Rate
}

// changesAfter returns a copy of the log entries after seq. b.mu must be
// held.
func (b *Backend) changesAfter(seq int) []change {
	if seq >= len(b.log) {
		return nil
	}
	return slices.Clone(b.log[seq:])
}

// MakeTicket makes a ticket by hand, as a member of the team would: it
// mirrors no upstream ticket until the bridge connects it (see
// Adapter.Connect). body, when not empty, is its first message, by the
// agent author.
func (b *Backend) MakeTicket(author, subject, body string) adapters.Ref {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := &ticket{
		ref:      adapters.Ref(refPrefix + strconv.Itoa(len(b.tickets)+1)),
		fields:   adapters.Ticket{TaskDescription: subject},
		status:   "new",
		statusAt: b.now().UTC(),
		sent:     map[string]string{},
		cur:      adapters.Fields{Title: subject},
	}
	b.tickets = append(b.tickets, t)
	b.record(change{ref: t.ref, kind: changeCreate, status: t.status, author: author})
	if body != "" {
		b.addMessage(t, MessageSnapshot{AuthorName: author, Body: body, Public: true})
	}
	return t.ref
}
