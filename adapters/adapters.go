// Package adapters defines the Helpdesk interface through which the sync
// engine mirrors guest requests into a helpdesk and reads the support team's
// work back, the registry that selects an adapter by name, and the helpers
// adapters share (status mapping, HTTP answer classification).
//
// It is not an adapter itself: each helpdesk lives in a package of its own
// below this one (files, memory, rt, ...), and every one of them passes the
// conformance suite in package adaptertest. Adapters never import the engine
// or the state store; they keep what they must remember (which upstream
// ticket a helpdesk ticket mirrors, which upstream message a comment came
// from) in the helpdesk itself, so that the bridge's state file can be lost
// without creating duplicates.
package adapters

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpx"
)

// Ref is the helpdesk's own reference of a ticket (an RT ticket number, a
// Zendesk id, a folder name). The engine stores it and hands it back; only
// the adapter that made it interprets it.
type Ref string

// Cursor is an adapter's position in its stream of changes. It is opaque to
// the engine, which stores it only after every event before it was journaled.
// The empty cursor means "from the beginning".
type Cursor string

// Ticket is an upstream guest request as an adapter receives it.
type Ticket struct {
	UpstreamID      string
	Department      string
	Status          guestapi.Status
	TaskDescription string
	Origin          guestapi.Origin
	Comments        string   // the console card's internal comment, "" when none
	GuestRating     *float64 // nil while unrated
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// Message is an upstream message to mirror into the helpdesk.
type Message struct {
	UpstreamID string
	AuthorType guestapi.AuthorType
	AuthorName string
	Body       string
	Public     bool // visible_to_guest: correspondence when true, an internal note when false
	CreatedAt  time.Time
}

// Appended says what an upstream message became in the helpdesk.
type Appended struct {
	UpstreamID string // the upstream message id
	HelpdeskID string // the helpdesk's id of the comment, article or transaction
	Existed    bool   // true when the helpdesk already held it (no new write was made)
}

// EventKind is what a helpdesk event asks the bridge to carry upstream.
type EventKind string

// Event kinds.
const (
	EventReply  EventKind = "reply"  // agent correspondence: posted with visible_to_guest true
	EventNote   EventKind = "note"   // internal note: posted with visible_to_guest false
	EventStatus EventKind = "status" // status change: Status holds the upstream status it maps to
)

// Event is one change in the helpdesk made by somebody other than the bridge.
type Event struct {
	// ID identifies the event within the adapter, stably across calls and
	// restarts (a transaction id, a comment id, an outbox file's name). The
	// engine derives the upstream Idempotency-Key from it.
	ID               string
	Ref              Ref
	UpstreamTicketID string
	Kind             EventKind
	Body             string          // reply and note
	AuthorName       string          // the agent's display name, "" when unknown
	Status           guestapi.Status // status: already mapped to an upstream status
	At               time.Time       // when it happened in the helpdesk
}

// Found is what Lookup finds of an upstream ticket in the helpdesk.
type Found struct {
	Ref Ref
	// Messages holds the ids of the upstream messages the ticket already
	// holds, mirrored by Append.
	Messages map[string]string // upstream message id -> helpdesk id
	// Sent holds what MarkSent recorded: helpdesk event id -> upstream
	// message id ("" for a status change).
	Sent map[string]string
	// Status is the helpdesk ticket's current status in the API's terms;
	// the engine's reconcile compares it with the status both sides last
	// agreed on. Its zero value says the helpdesk cannot tell.
	Status FoundStatus
	// Events holds, when the adapter can list them with the ticket, the
	// team's events on it as Changes reports them (same ids), oldest
	// first; reconcile journals those neither delivered nor journaled, so
	// that an event the change feed skipped is still carried. nil when
	// the adapter cannot list them.
	Events []Event
}

// FoundStatus is a helpdesk ticket's current status as Lookup reports it,
// in the API's terms. Build it with [StatusMap.Current] (or the SaaS
// adapters' saas.Current); an adapter whose helpdesk cannot tell the
// status (a one-way receiver such as the webhook adapter) returns
// [NoStatus], and reconcile then leaves that side's status alone.
type FoundStatus struct {
	// Known is false when the helpdesk cannot tell its ticket's status.
	Known bool
	// Up is the upstream status the helpdesk's status maps to (see
	// [StatusMap.Up]); "" when it maps to none, and then nothing is
	// carried up from it.
	Up guestapi.Status
	// Shows holds the upstream statuses the helpdesk status stands for:
	// those for which SetStatus would write nothing (several upstream
	// statuses may share one helpdesk status).
	Shows []guestapi.Status
	// At is when the helpdesk status last changed, or, when the helpdesk
	// keeps no such time, when its ticket last changed; zero when it does
	// not say. The later of two conflicting changes wins by it.
	At time.Time
}

// NoStatus is the FoundStatus of a helpdesk that cannot tell its tickets'
// status.
func NoStatus() FoundStatus { return FoundStatus{} }

// Agrees reports whether the helpdesk status stands for upstream status s.
func (f FoundStatus) Agrees(s guestapi.Status) bool {
	return !f.Known || f.Up == s || slices.Contains(f.Shows, s)
}

// Helpdesk is the interface every adapter implements. Implementations are
// safe for concurrent use on different tickets; the engine never works on one
// ticket from two goroutines at once.
//
// Error contract: a returned error means the call may have done part of its
// work and the engine will repeat it; each method is idempotent so that a
// repeat completes the work without duplicating any of it. Errors wrapping
// [ErrInvalid] are permanent for that input (the engine records them on the
// ticket and does not retry them quickly); every other error is treated as
// temporary. No error contains a credential.
type Helpdesk interface {
	// Name is the adapter's registry name, e.g. "rt". It is part of every
	// Idempotency-Key the engine derives, so it never changes.
	Name() string

	// EnsureTicket returns the helpdesk ticket that mirrors t.UpstreamID,
	// creating it (with t's description, department and status) when none
	// exists. Calling it again for the same upstream id returns the same Ref.
	EnsureTicket(ctx context.Context, t Ticket) (Ref, error)

	// Append adds msgs, in order, to the ticket: public ones as
	// correspondence, the others as internal notes, each with its author and
	// time. A message whose UpstreamID the ticket already holds is not added
	// again (Existed is set). On success it returns one Appended per message.
	// On a new message to a closed helpdesk ticket the adapter reopens it
	// when the helpdesk needs that to show it.
	Append(ctx context.Context, ref Ref, msgs []Message) ([]Appended, error)

	// SetStatus sets the helpdesk status that s maps to. Setting the status
	// the ticket already has is not an error. The change is the bridge's own
	// and never comes back from Changes.
	SetStatus(ctx context.Context, ref Ref, s guestapi.Status) error

	// Changes returns, oldest first, the events after cursor on tickets that
	// mirror an upstream ticket, leaving out the bridge's own writes, and the
	// cursor after the last of them. It may return fewer than all events;
	// the engine calls it again on the next cycle. The empty cursor means
	// from the beginning.
	Changes(ctx context.Context, cursor Cursor) ([]Event, Cursor, error)

	// Lookup finds the helpdesk ticket of an upstream ticket by the upstream
	// id the adapter stored in the helpdesk, with the upstream messages it
	// holds and the events MarkSent recorded. ok is false when there is none.
	Lookup(ctx context.Context, upstreamID string) (f Found, ok bool, err error)

	// MarkSent records in the helpdesk that event eventID of ticket ref was
	// delivered upstream and became upstreamMessageID ("" for a status
	// change), so that Lookup can report it after the bridge's state is lost.
	// Adapters whose helpdesk has nowhere to keep it return nil.
	MarkSent(ctx context.Context, ref Ref, eventID, upstreamMessageID string) error

	// Close releases what the adapter holds.
	Close() error
}

// Checker is implemented by adapters that can check their configuration
// and reach their helpdesk (credentials accepted, custom field present). The
// engine calls it at start and `ticketbridge check` prints its verdict.
type Checker interface {
	Check(ctx context.Context) error
}

// Starter is implemented by adapters that serve or work in the background
// (the webhook adapter's inbound endpoint). Constructing an adapter does no
// I/O and starts nothing; Start starts the listeners and goroutines, and
// Close stops them. Only the daemon (`ticketbridge run`) calls Start, once,
// before its first cycle, so that check, once and a dry run can run beside
// a running daemon.
type Starter interface {
	Start(ctx context.Context) error
}

// Peeker is implemented by adapters whose Changes writes to the helpdesk
// (moving outbox files, recording what it picked up). PeekChanges reports
// the events Changes would report after cursor without writing anything;
// events not yet picked up may carry provisional ids, and the cursor it
// returns is never stored. A dry run (`ticketbridge once --dry-run`) uses
// it instead of Changes.
type Peeker interface {
	PeekChanges(ctx context.Context, cursor Cursor) ([]Event, Cursor, error)
}

// Paced is implemented by adapters whose helpdesk has a rate budget that
// the engine's reconcile must keep within: ReconcilePace is the shortest
// time between two of its lookups (each Lookup's requests included). The
// engine then reconciles at most one ticket per pace in a cycle, and
// leaves the others for the next.
type Paced interface {
	ReconcilePace() time.Duration
}

// Flusher is implemented by adapters that leave part of what makes their
// writes durable for later, to do it once for many writes (the files
// adapter syncs each folder once, where it synced it at every write).
// Flush makes every write that returned before it durable. The engine
// calls it before each state transaction that records what refresh wrote
// (a ticket created, a message mirrored, a status set), so that state
// never records what a crash could take from the helpdesk. An adapter
// without it makes each write durable before it returns.
type Flusher interface {
	Flush(ctx context.Context) error
}

// Connector is implemented by adapters that can link an upstream ticket
// to a helpdesk ticket someone made by hand (an operator's `connect ID
// REF`). Connect stores t.UpstreamID in ticket ref the way EnsureTicket
// stores it in the tickets it creates, so that Lookup finds ref by it
// and Changes reports the team's events on ref from then on. It writes
// nothing else there: the engine then appends the messages the ticket
// lacks. Connecting a ticket that holds t.UpstreamID already writes
// nothing and succeeds. Errors:
//   - wrapping ErrNotFound when the helpdesk has no ticket ref;
//   - wrapping ErrInvalid when ref mirrors another upstream ticket, or
//     another ticket of the helpdesk holds t.UpstreamID (a second
//     mirror of one request): each message says which.
type Connector interface {
	Connect(ctx context.Context, ref Ref, t Ticket) error
}

// ErrInvalid marks an error caused by the input itself (a body the helpdesk
// refuses, an unknown status): repeating the same call cannot succeed.
var ErrInvalid = errors.New("invalid input")

// ErrNotFound is returned for a Ref the helpdesk does not know.
var ErrNotFound = errors.New("helpdesk ticket not found")

// Deps is what an adapter's constructor receives.
type Deps struct {
	// Env looks up the adapter's own variables (TICKETBRIDGE_<NAME>_...);
	// each adapter declares an env-tagged struct and processes it with
	// go-envconfig against this lookuper.
	Env envconfig.Lookuper
	// Logger is the adapter's logger, already carrying adapter=<name>.
	Logger *slog.Logger
	// Status overrides the adapter's default status mapping; see
	// [StatusMap.Override].
	StatusToHelpdesk   StatusTo
	StatusFromHelpdesk StatusFrom
	// ReadOnly opens the adapter for a dry run or `ticketbridge check`: it
	// creates and changes nothing, not even its own folders or lock files;
	// only Lookup, PeekChanges (see [Peeker]), Check (see [Checker]:
	// judging its folders with [CanMakeDir] instead of writing probes) and
	// Close are called. An adapter whose construction or Check writes must
	// honour it.
	ReadOnly bool
	// StateDir is the directory of the hotel's state file, where an adapter
	// keeps what it stores on disk when its configuration names no place;
	// empty when the state is no file (PostgreSQL). Nothing defaults to the
	// working directory.
	StateDir string
	// Transport carries every HTTP request the adapter makes: the daemon
	// gives each hotel's adapter its round-tripper chain (package
	// internal/httpx: the request slots a fleet's hotels share, the
	// hotel's lease guard). nil means http.DefaultTransport. Adapters
	// build their client with [Deps.HTTP].
	Transport http.RoundTripper
	// Guard, when set, says whether the adapter may still act for the
	// hotel: nil lets it, an error says why not (a replica's lease of the
	// hotel ended). Its HTTP requests are guarded by Transport already;
	// an adapter that keeps files asks Guard before each write, so that
	// nothing is written once it refuses, and returns its error.
	Guard func() error
}

// HTTP returns the client an adapter sends its requests with: d's
// Transport, each request bounded by timeout (0: no bound), its answer's
// body read included (see httpx.Bound).
func (d Deps) HTTP(timeout time.Duration) *http.Client {
	if d.Transport == nil {
		// Tests and tools: net/http bounds its own transport without a
		// goroutine a request.
		return &http.Client{Timeout: timeout}
	}
	return &http.Client{Transport: httpx.Bound(d.Transport, timeout)}
}

// Factory builds an adapter from its configuration.
type Factory func(ctx context.Context, deps Deps) (Helpdesk, error)

// Registry maps adapter names to their factories. cmd builds one with every
// adapter the binary carries.
type Registry map[string]Factory
