// Package rt is the Request Tracker adapter of ticketbridge: it mirrors
// guest requests into RT 5 tickets over RT's REST2 API and reads the support
// team's replies, comments and status changes back.
//
// It follows the REST2 documentation shipped with RT 5.0.3 (the POD of
// lib/RT/REST2.pm, "RT::REST2 - RT REST API v. 2.0 under /REST/2.0/") and is
// tested against Debian's request-tracker5 5.0.3 (deploy/dev/rt.sh). It is
// not a general RT client, and it does not follow the _url links in RT's
// answers: those use RT's WebBaseURL, which need not be the address the
// bridge reaches RT on.
//
// How it keeps RT and the bridge apart:
//
//   - Each mirrored ticket holds the upstream ticket id in a ticket custom
//     field (TICKETBRIDGE_RT_ID_FIELD, "Guest Request ID"), so Lookup finds
//     it with a TicketSQL search after the bridge's state is lost.
//   - Each upstream message becomes one transaction, correspondence when the
//     guest sees it and a comment otherwise, whose text/plain body starts
//     with the author, the author's type and the time, and ends with the
//     line "[ticketbridge message <id>]". RT keeps that body verbatim, so
//     Append reads the markers a ticket holds before it writes, and a repeat
//     after a crash writes nothing twice.
//   - Changes finds new work with one TransactionSQL search on transaction
//     ids after the cursor (correspondence, comments and status changes on
//     tickets in the configured queues, not created by the bridge's own RT
//     user); a TicketSQL search on LastUpdated would have a resolution of
//     one second and would still need each ticket's history read. Status
//     changes RT makes itself (RT_System: a scrip reopening a ticket on
//     correspondence) stay in RT, so a mirrored guest message never comes
//     back as a status change. A transaction by another user whose body
//     ends in a marker is the bridge's too and is skipped.
//   - The cursor never skips a change. RT numbers a transaction when it
//     inserts the row, inside a database transaction that also runs the
//     scrips (RT::Ticket::Atomic, for an update in the web UI), so on MySQL
//     or PostgreSQL transaction 1001 can be visible before 1000 commits;
//     and RT::Transaction::Create inserts a message's attachments after its
//     row, so a reply can be visible before its text. Each Changes call
//     therefore searches again from the last transaction older than the
//     overlap (TICKETBRIDGE_RT_OVERLAP, two minutes), and the cursor names
//     the transactions after it already handled, so each is reported once
//     and the cursor holds no more than the overlap's ids; a reply or
//     comment without text is read again until it is older than the
//     overlap. Only a change that takes longer than the overlap to commit
//     can be missed. TestChangesLateCommit and TestChangesBodyCommittedLate
//     show it, TestChangesMemoryBounded the cursor's bound.
//   - The API carries text only. A reply or comment with files sends its
//     text upstream, one that is only files sends nothing, and the ticket
//     gets one comment by the bridge naming the files not sent, ending in
//     "[ticketbridge unsent <transaction id>]"; Changes writes it before
//     it reports the event and not when the ticket holds that marker
//     already, so reading the transaction again (the overlap, a crash
//     before the cursor was stored) writes no second one.
//     TestChangesAttachmentsNoted shows it.
//   - MarkSent records "<transaction id>=<upstream message id>" in a second,
//     multi-value custom field (TICKETBRIDGE_RT_SENT_FIELD, "Guest Request
//     Sent"), and Lookup returns those records. A custom field change
//     notifies nobody and shows in the ticket's history as a one-liner,
//     where a comment would mail every AdminCc for every delivered reply.
//     Set the variable to "none" to go without: after a state loss the
//     engine then relies on the API's Idempotency-Key retention alone.
//   - RT opens a new or closed ticket on correspondence (its scrip "On
//     Correspond Open Inactive Tickets"). A mirrored guest message leaves a
//     new ticket new (until an agent takes it up) and a closed one closed
//     when it is history being filled in; a new guest message on a closed
//     ticket reopens it.
//   - A bridge killed while RT creates a ticket leaves that create running
//     in RT; the restarted bridge may search before it ends and create a
//     second ticket. EnsureTicket searches again after creating, and
//     duplicates are merged (RT's way) into the one holding the mirrored
//     messages.
//   - Tickets are followed in the queues the adapter is configured with; a
//     ticket an agent moves to another queue is no longer synced.
//   - A ticket made by hand in one of those queues is linked to a guest
//     request by [Adapter.Connect], which sets the ID field and nothing
//     else; Changes then reports the team's work on it from its cursor
//     on, as for any mirrored ticket.
//   - Update keeps the platform's fields current (queue, Subject, Due,
//     Priority, an optional rating field, and a comment per rating and
//     per console comment, by marker); it writes only what the ticket
//     does not hold, and nothing it writes is a transaction Changes
//     reports. See [Adapter.Update].
//   - RT leaves deleted tickets out of every search. An agent deleting a
//     ticket is reported (as cancelled, by default), but should the bridge
//     lose its state afterwards, Lookup cannot find that ticket and the
//     request gets a new one. Agents should reject rather than delete.
//
// Every request goes through [adapters.HTTPClient], which retries RT's
// errors and slow answers with the same backoff as the API client and
// keeps the token and password out of errors and logs.
package rt

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/internal/redact"
)

// Name is the adapter's registry name.
const Name = "rt"

// DefaultStatusMap maps the API's statuses to RT's default lifecycle (new,
// open, stalled, resolved, rejected, deleted) and back. Both directions can
// be overridden with TICKETBRIDGE_STATUS_TO_HELPDESK and
// TICKETBRIDGE_STATUS_FROM_HELPDESK.
func DefaultStatusMap() adapters.StatusMap {
	return adapters.StatusMap{
		ToHelpdesk: map[guestapi.Status]string{
			guestapi.StatusNew:        "new",
			guestapi.StatusAssigned:   "open",
			guestapi.StatusInProgress: "open",
			guestapi.StatusDone:       "resolved",
			guestapi.StatusCompleted:  "resolved",
			guestapi.StatusConfirmed:  "resolved",
			guestapi.StatusCancelled:  "rejected",
		},
		FromHelpdesk: map[string]guestapi.Status{
			"new":      guestapi.StatusNew,
			"open":     guestapi.StatusInProgress,
			"stalled":  guestapi.StatusInProgress,
			"resolved": guestapi.StatusDone,
			"rejected": guestapi.StatusCancelled,
			"deleted":  guestapi.StatusCancelled,
		},
	}
}

// Factory builds the adapter from the TICKETBRIDGE_RT_* variables in
// deps.Env. It does not reach RT; [Adapter.Check] does.
func Factory(ctx context.Context, deps adapters.Deps) (adapters.Helpdesk, error) {
	cfg, err := LoadConfig(ctx, deps.Env)
	if err != nil {
		return nil, err
	}
	return New(ctx, cfg, deps)
}

// Adapter is the Request Tracker [adapters.Helpdesk]. It is safe for
// concurrent use.
type Adapter struct {
	cfg    Config
	queues map[string]string // department -> queue name
	status adapters.StatusMap
	log    *slog.Logger
	c      *client

	// Learnt from RT on first use, again after a failure.
	setupMu sync.Mutex
	setup   *setup

	mu      sync.Mutex
	tickets map[int64]string // RT ticket id -> upstream ticket id, of mirrored tickets only

	// sentLocks serialise MarkSent per ticket: REST2 sets a multi-value
	// custom field to the whole list it is given, so two concurrent
	// read-modify-writes would drop each other's value.
	sentLocks [64]sync.Mutex
}

// setup is what the adapter learns from RT before its first real call.
type setup struct {
	me       userRef
	meID     int64
	queueIDs map[string]int64 // queue name -> id
	idCF     int64
	sentCF   int64 // 0 when the delivery record is off
	ratingCF int64 // 0 when no rating field is configured
}

// Options are the adapter's hooks for tests and benchmarks.
type Options struct {
	// HTTP sends the requests; nil means deps' client (adapters.Deps.HTTP)
	// with Config.Timeout.
	HTTP *http.Client
	// Backoff is the wait between attempts; the zero value is the daemon's
	// default, shared with the API client.
	Backoff httpretry.Backoff
	// Sleep waits between attempts; nil means a real timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// New builds the adapter from cfg (see [Config] for its defaults) without
// reaching RT. Tests use it; the daemon uses [Factory].
func New(ctx context.Context, cfg Config, deps adapters.Deps) (*Adapter, error) {
	return NewWithOptions(ctx, cfg, deps, Options{})
}

// NewWithOptions is [New] with hooks.
func NewWithOptions(_ context.Context, cfg Config, deps adapters.Deps, opts Options) (*Adapter, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base := cfg.URL.Trimmed(apiSuffix)
	logger := deps.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	httpc := &adapters.HTTPClient{
		HTTP:    cmp.Or(opts.HTTP, deps.HTTP(cfg.Timeout)),
		Backoff: opts.Backoff,
		Sleep:   opts.Sleep,
		Header:  http.Header{"User-Agent": {"ticketbridge-rt"}},
		Logger:  logger,
	}
	return &Adapter{
		cfg:     cfg,
		queues:  cfg.Queues,
		status:  DefaultStatusMap().Override(deps),
		log:     logger,
		c:       newClient(base, cfg, httpc),
		tickets: map[int64]string{},
	}, nil
}

// Name returns "rt".
func (a *Adapter) Name() string { return Name }

// Location returns where RT answers and the default queue (see
// adapters.Locator).
func (a *Adapter) Location() string {
	at := ""
	if u := a.cfg.URL.Parsed(); u != nil {
		at = redact.Place(u.String())
	}
	return at + " queue " + a.cfg.Queue
}

// TicketURL implements [adapters.TicketLinker]: RT's Display page of the
// ticket number, below the address RT answers on.
func (a *Adapter) TicketURL(ref adapters.Ref) string {
	n, err := parseRef(ref)
	if err != nil {
		return ""
	}
	return adapters.WebURL(a.cfg.URL.Trimmed(apiSuffix), "/Ticket/Display.html?id="+strconv.FormatInt(n, 10))
}

// StatusMap returns the adapter's effective status mapping.
func (a *Adapter) StatusMap() adapters.StatusMap { return a.status }

// Close releases nothing; the adapter holds no connection between calls.
func (a *Adapter) Close() error { return nil }

// queueNames returns the default queue and the mapped ones, each once.
func (a *Adapter) queueNames() []string {
	names := []string{a.cfg.Queue}
	for _, q := range a.queues {
		if !slices.Contains(names, q) {
			names = append(names, q)
		}
	}
	slices.Sort(names[1:])
	return names
}

// queueFor returns the queue of a department: the mapped one (the code
// matched exactly, else ignoring case), else the default queue.
func (a *Adapter) queueFor(dept string) string {
	if q, ok := a.queues[dept]; ok {
		return q
	}
	for d, q := range a.queues {
		if strings.EqualFold(d, dept) {
			return q
		}
	}
	return a.cfg.Queue
}
