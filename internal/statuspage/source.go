package statuspage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	gosync "sync"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/notify"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// Source is one hotel's bridge as the page sees it. Anyone who reaches the
// page may call Snapshot and Ticket as often as they like, so neither may
// cost a read of every record: Snapshot is served from memory (read from
// the state at most once per cycle), and Ticket reads one ticket by key.
type Source interface {
	// Name names the hotel ("" when the daemon serves one).
	Name() string
	// Snapshot returns the latest status and the recent cycles.
	Snapshot() Snapshot
	// Ticket returns everything state holds of the ticket whose upstream
	// id or helpdesk reference is id, or whose upstream id starts with id
	// (8 characters at least, one ticket only), as the snapshot knows
	// them.
	Ticket(id string) (sync.TicketDetail, error)
	// Payloads returns what the journal entries of ticket id send, by
	// event id: message text, shown to signed-in users only.
	Payloads(id string) (map[string]state.Payload, error)

	// ReadNow makes the ticket due now (sync.ReadNow); who names the
	// signed-in operator, for the request's audit trail.
	ReadNow(ticketID, who string) (state.Ticket, error)
	// Retry puts a journal entry back to pending (sync.RetryEntry).
	Retry(eventID, who string) (state.Entry, error)
	// Skip marks a journal entry abandoned (sync.SkipEntry).
	Skip(eventID, who, reason string) (state.Entry, error)
	// Command applies an operator's command on one request (pause,
	// resume, resync: sync.Apply).
	Command(c sync.Command) (sync.Done, error)
}

// Snapshot is what the overview and the table show.
type Snapshot struct {
	// Status is the engine's status as of its At.
	Status sync.Status
	// Cycles are the reports of the recent cycles, oldest first.
	Cycles []sync.Report
	// Conditions are the notifications' open episodes of the hotel (see
	// package notify), as the notifier holds them in memory; none when
	// the notifications are off.
	Conditions []notify.Episode
}

// Hotel is the Source of a daemon's one hotel: its state file and the
// cycles it ran. Its snapshot lives in memory; CycleDone replaces it after
// each cycle, and an action updates it in place.
type Hotel struct {
	name string
	st   *state.Store
	keep time.Duration

	// onDemand keeps no request list in memory between views: see
	// OnDemand.
	onDemand bool
	// conditions returns the notifications' open conditions (see
	// WithConditions); nil when the notifications are off.
	conditions func() []notify.Episode
	// ticketURL returns a helpdesk ticket's address in the helpdesk's
	// web UI (see WithTicketURL); nil when the helpdesk has none.
	ticketURL func(ref string) string
	// reading is held while a view reads the status on demand, so that
	// views arriving together wait for one read instead of making their
	// own.
	reading gosync.Mutex

	mu     gosync.Mutex
	status sync.Status
	// cycles are the recent cycles, oldest first, as pastCycle keeps
	// them; last is the newest in full (without its lists), valid when
	// cycles is not empty.
	cycles []pastCycle
	last   sync.Report
	// read is the status read on demand since the last cycle, nil when
	// none was (or an action changed the state since).
	read *sync.Status
}

// OnDemand makes h keep in memory only the counts of its status and its
// recent cycles; the request list is read from the state when its pages
// are viewed, at most once per cycle, and dropped at the next cycle. The
// list of hotels shows the counts ([Hotel.Summary]). A daemon of many
// hotels uses it, so that its memory does not hold every hotel's requests
// twice, and so that views, however many, cost one read per cycle. It
// returns h.
func (h *Hotel) OnDemand() *Hotel {
	h.onDemand = true
	return h
}

// WithConditions has the overview list the open conditions that open
// returns at each view: the notifier's, kept in its memory, so that a view
// reads nothing from the state (a database that does not answer holds no
// page). Set it before the page is served. It returns h.
func (h *Hotel) WithConditions(open func() []notify.Episode) *Hotel {
	h.conditions = open
	return h
}

// WithTicketURL has a request's page link the helpdesk ticket: url
// returns the address of the ticket whose reference is ref in the
// helpdesk's web UI, "" when there is none (the bridge gives the
// adapter's, adapters.TicketLinker). It must do no I/O. Set it before the
// page is served. It returns h.
func (h *Hotel) WithTicketURL(url func(ref string) string) *Hotel {
	h.ticketURL = url
	return h
}

// IsOnDemand reports whether h reads its request list on demand (see
// OnDemand).
func (h *Hotel) IsOnDemand() bool { return h.onDemand }

// Recent cycles are kept for an hour, at most maxCycles of them.
const (
	keepCycles = time.Hour
	maxCycles  = 3600
)

// NewHotel returns the source of the hotel whose state is st. It reads no
// state until Refresh or CycleDone. Its clock is the runtime's (time.Now).
func NewHotel(name string, st *state.Store) *Hotel {
	return &Hotel{name: name, st: st, keep: keepCycles, status: sync.Status{Tickets: []sync.TicketStatus{}}}
}

// ctx is the context of h's reads and writes of state. Source's methods
// take no context yet (the request's would be theirs), so none is at
// hand: each transaction is bounded by the state's own round-trip
// timeout, as before contexts reached the state.
func (h *Hotel) ctx() context.Context { return context.Background() }

// Name implements Source.
func (h *Hotel) Name() string { return h.name }

// Refresh reads the status from the state. Before the first cycle it also
// takes the last cycle stored in state (one run before a restart) as the
// first of the recent cycles.
func (h *Hotel) Refresh() error {
	s, err := sync.ReadStatus(h.ctx(), h.st, time.Now())
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.status = h.kept(s)
	if len(h.cycles) == 0 && s.LastCycle != nil && !s.LastCycle.Start.Before(time.Now().Add(-h.keep)) {
		h.keepCycle(*s.LastCycle)
	}
	h.mu.Unlock()
	return nil
}

// CycleDone records a finished cycle's report and the status read after
// it (nil: read it now). Call it from the daemon's after-cycle hook.
func (h *Hotel) CycleDone(r sync.Report, s *sync.Status) error {
	var err error
	if s == nil {
		var live sync.Status
		if live, err = sync.ReadStatus(h.ctx(), h.st, time.Now()); err == nil {
			s = &live
		}
	}
	h.record(r, s)
	return err
}

// CycleReported records a finished cycle's report and keeps the status
// read last: the daemon does not read every record after every cycle.
func (h *Hotel) CycleReported(r sync.Report) { h.record(r, nil) }

// record keeps r and, unless nil, s.
func (h *Hotel) record(r sync.Report, s *sync.Status) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s != nil {
		h.status = h.kept(*s)
	}
	if !r.Start.IsZero() {
		h.read = nil // the next view reads what this cycle did
		h.keepCycle(r)
	}
}

// pastCycle is what a hotel keeps of each recent cycle: what the chart
// and the overview's hour show. A daemon of many hotels keeps an hour of
// each hotel's; a whole sync.Report is 408 bytes, 49 KB a hotel for an
// hour at a 30 s schedule, where this is 48.
type pastCycle struct {
	start    int64 // Unix nanoseconds
	duration time.Duration
	outcome  string
	requests int
	prop     *sync.Propagation // nil when nothing crossed
}

// keepCycle adds r to the recent cycles and drops those older than the
// hour, or beyond maxCycles. Called with h.mu held.
func (h *Hotel) keepCycle(r sync.Report) {
	h.last = r.Brief()
	c := pastCycle{start: r.Start.UnixNano(), duration: r.Duration, outcome: r.Outcome, requests: r.APIRequests}
	if !r.Propagation.IsZero() {
		p := r.Propagation
		c.prop = &p
	}
	h.cycles = append(h.cycles, c)
	from := time.Now().Add(-h.keep).UnixNano()
	cut := 0
	for cut < len(h.cycles) && (h.cycles[cut].start < from || len(h.cycles)-cut > maxCycles) {
		cut++
	}
	if cut > 0 {
		// In place: no view holds h.cycles (reports reads a copy), and a
		// copy of the hour in every cycle was that cycle's largest
		// allocation.
		n := copy(h.cycles, h.cycles[cut:])
		clear(h.cycles[n:])
		h.cycles = h.cycles[:n]
	}
}

// reports returns the recent cycles as reports, oldest first, the newest
// whole and the others with what pastCycle keeps. Called with h.mu held.
func (h *Hotel) reports() []sync.Report {
	if len(h.cycles) == 0 {
		return nil
	}
	out := make([]sync.Report, len(h.cycles))
	for i, c := range h.cycles[:len(h.cycles)-1] {
		out[i] = sync.Report{Start: time.Unix(0, c.start), Duration: c.duration, Outcome: c.outcome, APIRequests: c.requests}
		if c.prop != nil {
			out[i].Propagation = *c.prop
		}
	}
	out[len(out)-1] = h.last
	return out
}

// kept is what h keeps of s.
func (h *Hotel) kept(s sync.Status) sync.Status {
	if h.onDemand {
		s.Tickets, s.Pending, s.Failed = nil, nil, nil // the counts stay
	}
	return s
}

// Snapshot implements Source. On demand (see OnDemand) it reads the status
// from the state at the first view after a cycle, and serves that read
// until the next cycle; when the read fails, it returns what h keeps.
func (h *Hotel) Snapshot() Snapshot {
	snap := h.recent()
	if h.conditions != nil {
		snap.Conditions = h.conditions()
	}
	if !h.onDemand || h.st == nil {
		return snap
	}
	h.reading.Lock()
	defer h.reading.Unlock()
	h.mu.Lock()
	read := h.read
	h.mu.Unlock()
	if read == nil {
		s, err := sync.ReadStatus(h.ctx(), h.st, time.Now())
		if err != nil {
			return snap
		}
		read = &s
		h.mu.Lock()
		h.read = read
		h.mu.Unlock()
	}
	held := snap.Status.Held // the adapter's, as the cycle saw it: not in the state
	snap.Status = *read
	snap.Status.Held = held
	return snap
}

// Summary returns the counts of the status and the newest cycle, as kept
// in memory: what the list of hotels shows.
func (h *Hotel) Summary() Snapshot {
	h.mu.Lock()
	defer h.mu.Unlock()
	snap := Snapshot{Status: h.status}
	if len(h.cycles) > 0 {
		snap.Cycles = []sync.Report{h.last}
	}
	return snap
}

// recent returns the counts of the status and every recent cycle, as kept
// in memory.
func (h *Hotel) recent() Snapshot {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Snapshot{Status: h.status, Cycles: h.reports()}
}

// Ticket implements Source. The id, a reference or a prefix is resolved in
// the snapshot, and the one ticket found is read by key: a view never
// searches the state, whatever id it names.
func (h *Hotel) Ticket(id string) (sync.TicketDetail, error) {
	full, err := resolve(h.Snapshot().Status.Tickets, id)
	if err != nil {
		return sync.TicketDetail{}, err
	}
	d, err := sync.ReadTicketByID(h.ctx(), h.st, full)
	if err == nil && h.ticketURL != nil && d.Ref != "" {
		d.HelpdeskURL = h.ticketURL(d.Ref)
	}
	return d, err
}

// resolve finds the upstream id of the ticket whose upstream id or
// helpdesk reference is id, or whose upstream id starts with id (8
// characters at least), among ts.
func resolve(ts []sync.TicketStatus, id string) (string, error) {
	var found []string
	for _, t := range ts {
		switch {
		case t.ID == id:
			return id, nil
		case t.Ref == id || (len(id) >= 8 && strings.HasPrefix(t.ID, id)):
			found = append(found, t.ID)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no tracked ticket has the id or helpdesk reference %q", id)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%d tracked tickets start with %q; give more of the id", len(found), id)
}

// Payloads implements Source.
func (h *Hotel) Payloads(id string) (map[string]state.Payload, error) {
	out := map[string]state.Payload{}
	err := h.st.View(h.ctx(), func(tx *state.Tx) error {
		es, err := tx.JournalForTicket(id)
		for _, e := range es {
			out[e.EventID] = e.Payload
		}
		if errors.Is(err, state.ErrCorrupt) {
			err = nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read journal of ticket %s: %w", id, err)
	}
	return out, nil
}

// ReadNow implements Source.
func (h *Hotel) ReadNow(ticketID, who string) (state.Ticket, error) {
	t, err := sync.ReadNow(h.ctx(), h.st, ticketID, who, time.Now())
	if err == nil {
		h.patchTicket(t)
	}
	return t, err
}

// Retry implements Source.
func (h *Hotel) Retry(eventID, who string) (state.Entry, error) {
	e, err := sync.RetryEntry(h.ctx(), h.st, eventID, who, time.Now())
	if err == nil {
		h.patchEntry(e)
	}
	return e, err
}

// Skip implements Source.
func (h *Hotel) Skip(eventID, who, reason string) (state.Entry, error) {
	e, err := sync.SkipEntry(h.ctx(), h.st, eventID, who, reason)
	if err == nil {
		h.patchEntry(e)
	}
	return e, err
}

// Command implements Source.
func (h *Hotel) Command(c sync.Command) (sync.Done, error) {
	d, err := sync.Apply(h.ctx(), h.st, c, time.Now())
	if err == nil {
		h.patchTicket(d.Ticket)
		for _, e := range d.Requeued {
			h.patchEntry(e)
		}
		for _, e := range d.Abandoned {
			h.patchEntry(e)
		}
	}
	return d, err
}

// patchTicket shows an action's effect on a ticket before the next cycle.
func (h *Hotel) patchTicket(t state.Ticket) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.read = nil // actions are signed in: reading after one is theirs to cost
	ts := h.status.Tickets
	for i := range ts {
		if ts[i].ID == t.ID {
			c := ts[i]
			c.NextDue, c.DueReason, c.Retired, c.Deleted = t.NextDue, t.DueReason, t.Retired, t.Deleted
			c.Paused, c.PausedBy, c.Unlinked, c.UnlinkedBy, c.Connecting = t.Paused, t.PausedBy, t.Unlinked, t.UnlinkedBy, t.ConnectRef
			c.Ref = t.Ref
			h.status.Tickets = replaced(ts, i, c)
			return
		}
	}
}

// patchEntry moves an entry between the snapshot's pending and failed
// lists after an action; the snapshot's slices are shared with earlier
// Snapshot callers, so they are copied, never written.
func (h *Hotel) patchEntry(e state.Entry) {
	es := sync.EntryStatus{
		EventID: e.EventID, Ticket: e.TicketID, Kind: e.Kind, State: string(e.State), Attempts: e.Attempts,
		LastError: e.LastError, NextAttempt: e.NextAttempt, CreatedAt: e.CreatedAt, SentAt: e.SentAt,
		UpstreamMessageID: e.UpstreamMessageID, IdempotencyKey: e.IdempotencyKey,
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.read = nil
	s := &h.status
	drop := func(list []sync.EntryStatus) []sync.EntryStatus {
		out := make([]sync.EntryStatus, 0, len(list))
		for _, x := range list {
			if x.EventID != e.EventID {
				out = append(out, x)
			}
		}
		return out
	}
	s.Pending, s.Failed = drop(s.Pending), drop(s.Failed)
	switch e.State {
	case state.Pending:
		s.Pending = append(s.Pending, es)
	case state.Failed:
		s.Failed = append(s.Failed, es)
	}
	s.Counts.Pending, s.Counts.Failed = len(s.Pending), len(s.Failed)
	for i := range s.Tickets {
		if s.Tickets[i].ID != e.TicketID {
			continue
		}
		c := s.Tickets[i]
		j := make([]sync.EntryStatus, len(c.Journal))
		copy(j, c.Journal)
		for k := range j {
			if j[k].EventID == e.EventID {
				j[k] = es
			}
		}
		c.Journal = j
		s.Tickets = replaced(s.Tickets, i, c)
		return
	}
}

func replaced[T any](list []T, i int, v T) []T {
	out := make([]T, len(list))
	copy(out, list)
	out[i] = v
	return out
}
