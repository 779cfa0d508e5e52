package sync

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/state"
)

// Status is a snapshot of what the engine knows, for `ticketbridge status`:
// the tracked tickets, the last cycle and what waits or failed in the
// outbound journal. It holds no message text and no credential.
type Status struct {
	At          time.Time `json:"at"` // when the snapshot was taken
	Adapter     string    `json:"adapter,omitempty"`
	LastCycle   *Report   `json:"last_cycle,omitempty"` // nil before the first cycle
	LastSuccess time.Time `json:"last_success,omitzero"`
	// FullRead is the full-read interval in force; nil until the engine
	// stored one (it stores it when it first differs from the configured).
	FullRead *FullRead `json:"full_read,omitempty"`

	Counts  StatusCounts   `json:"counts"`
	Tickets []TicketStatus `json:"tickets"`
	// Held lists the changes the helpdesk holds until its team acts (a
	// field to fill in), as the running daemon's adapter last saw them;
	// the daemon fills it in (adapters.Holder), and so does `ticketbridge
	// status` with the daemon stopped (see HeldAt).
	Held []adapters.HeldError `json:"held,omitempty"`
	// HeldAt is when Held was seen, when that was before At: status with
	// the daemon stopped lists what an adapter other than files held at
	// the last snapshot (only a running adapter knows it). Zero when Held
	// was seen at At.
	HeldAt  time.Time     `json:"held_at,omitzero"`
	Pending []EntryStatus `json:"pending,omitempty"` // waiting to be sent, oldest first
	Failed  []EntryStatus `json:"failed,omitempty"`  // refused for good, oldest first
}

// SetAside returns the entries of Held that are files the adapter set
// aside (adapters.HeldError.File), in Held's order.
func (s Status) SetAside() []adapters.HeldError { return s.setAside(false) }

// SetAsideMail returns the entries of Held that are mails the adapter set
// aside (adapters.HeldError.Mail), in Held's order.
func (s Status) SetAsideMail() []adapters.HeldError { return s.setAside(true) }

func (s Status) setAside(mail bool) []adapters.HeldError {
	var out []adapters.HeldError
	for _, h := range s.Held {
		if h.SetAside() && h.Mail == mail {
			out = append(out, h)
		}
	}
	return out
}

// StatusCounts sums the tickets up by how the engine treats them.
type StatusCounts struct {
	Tickets int `json:"tickets"`
	Active  int `json:"active"`  // due now or soon: new, changed, an event, or recent activity polled
	Quiet   int `json:"quiet"`   // nothing changed lately: read when a list shows a change, or at the full-read slot
	Closed  int `json:"closed"`  // closed upstream, read at the closed interval
	Retired int `json:"retired"` // not read any more
	Failing int `json:"failing"` // the last try failed
	Pending int `json:"pending"` // journal entries waiting
	Failed  int `json:"failed"`  // journal entries refused for good
	// Deleted counts the tracked tickets taken for deleted on the
	// platform, not read any more (not counted as retired); NotOurs the
	// helpdesk tickets not this hotel's, whose events are ignored (not
	// tracked, so not in Tickets). See docs/when-a-request-looks-wrong.md.
	Deleted int `json:"deleted"`
	NotOurs int `json:"not_ours"`
	// Paused counts the tickets an operator paused (see Apply), counted
	// in no other row of tickets.
	Paused int `json:"paused,omitempty"`
	// Unlinked counts the tickets an operator unlinked, counted in no
	// other row of tickets.
	Unlinked int `json:"unlinked,omitempty"`
	Mirrored int `json:"mirrored"`
	Own      int `json:"own"`
}

// TicketStatus is one tracked ticket.
type TicketStatus struct {
	ID             string    `json:"id"`
	Ref            string    `json:"ref,omitempty"`
	Department     string    `json:"department,omitempty"`
	UpstreamStatus string    `json:"upstream_status,omitempty"`
	HelpdeskStatus string    `json:"helpdesk_status,omitempty"`
	NextDue        time.Time `json:"next_due,omitzero"`
	DueReason      string    `json:"due_reason,omitempty"`
	Retired        bool      `json:"retired,omitempty"`
	// Deleted is when the ticket was taken for deleted on the platform.
	Deleted time.Time `json:"deleted,omitzero"`
	// Paused is when an operator paused the ticket and PausedBy who
	// (see Apply); zero while it is not paused.
	Paused   time.Time `json:"paused,omitzero"`
	PausedBy string    `json:"paused_by,omitempty"`
	// Unlinked is when an operator unlinked the ticket from its
	// helpdesk ticket and UnlinkedBy who; zero while it is linked.
	Unlinked   time.Time `json:"unlinked,omitzero"`
	UnlinkedBy string    `json:"unlinked_by,omitempty"`
	// Connecting is the helpdesk ticket an operator connected the
	// request to, until a cycle has done it.
	Connecting   string    `json:"connecting,omitempty"`
	LastActivity time.Time `json:"last_activity,omitzero"`
	Attempts     int       `json:"attempts,omitempty"`
	LastError    string    `json:"last_error,omitempty"`
	// AgreedStatus is the status both sides last agreed on ("" unknown),
	// ReconciledAt the last reconcile and LastReconcile its outcome.
	AgreedStatus  string    `json:"agreed_status,omitempty"`
	ReconciledAt  time.Time `json:"reconciled_at,omitzero"`
	LastReconcile string    `json:"last_reconcile,omitempty"`
	Mirrored      int       `json:"mirrored"` // upstream messages in the helpdesk
	Own           int       `json:"own"`      // the bridge's own upstream posts
	// Journal holds the ticket's newest journal entries, at most
	// statusJournalPerTicket of them, oldest first.
	Journal []EntryStatus `json:"journal,omitempty"`
}

// EntryStatus is one outbound journal entry.
type EntryStatus struct {
	EventID           string    `json:"event_id"`
	Ticket            string    `json:"ticket"`
	Kind              string    `json:"kind"`
	State             string    `json:"state"`
	Attempts          int       `json:"attempts,omitempty"`
	LastError         string    `json:"last_error,omitempty"`
	NextAttempt       time.Time `json:"next_attempt,omitzero"`
	CreatedAt         time.Time `json:"created_at,omitzero"`
	SentAt            time.Time `json:"sent_at,omitzero"`
	UpstreamMessageID string    `json:"upstream_message_id,omitempty"`
	IdempotencyKey    string    `json:"idempotency_key,omitempty"`
}

// statusJournalPerTicket bounds the journal entries a snapshot keeps per
// ticket.
const statusJournalPerTicket = 10

func entryStatus(e state.Entry) EntryStatus {
	return EntryStatus{
		EventID: e.EventID, Ticket: e.TicketID, Kind: e.Kind, State: string(e.State), Attempts: e.Attempts,
		LastError: e.LastError, NextAttempt: e.NextAttempt, CreatedAt: e.CreatedAt, SentAt: e.SentAt,
		UpstreamMessageID: e.UpstreamMessageID, IdempotencyKey: e.IdempotencyKey,
	}
}

// ReadStatus takes a snapshot of st in one read transaction. now stamps it
// and decides which tickets count as active.
func ReadStatus(ctx context.Context, st *state.Store, now time.Time) (Status, error) {
	s := Status{At: now, Tickets: []TicketStatus{}}
	notOurs := 0
	err := st.View(ctx, func(tx *state.Tx) error {
		var err error
		if s.Adapter, _, err = tx.Meta(MetaAdapter); err != nil {
			return err
		}
		if s.LastCycle, err = lastCycle(tx); err != nil {
			return err
		}
		if v, ok, err := tx.Meta(MetaFullRead); err != nil {
			return err
		} else if ok {
			var f FullRead
			if json.Unmarshal([]byte(v), &f) == nil {
				s.FullRead = &f
			}
		}
		if c, ok, err := tx.LastSuccess(); err != nil {
			return err
		} else if ok {
			s.LastSuccess = c.End
		}
		// Counted and listed for all tickets at once: a few round trips on
		// PostgreSQL, not three a ticket.
		mirrored, own, err := tx.MessageCounts()
		if err != nil {
			return err
		}
		journals, err := tx.RecentJournal(statusJournalPerTicket)
		if err != nil && !errors.Is(err, state.ErrCorrupt) {
			return err
		}
		err = tx.ForEachTicket(func(t state.Ticket) error {
			ts := TicketStatus{
				ID: t.ID, Ref: t.Ref, Department: t.Department, UpstreamStatus: t.UpstreamStatus, HelpdeskStatus: t.HelpdeskStatus,
				NextDue: t.NextDue, DueReason: t.DueReason, Retired: t.Retired, Deleted: t.Deleted, Paused: t.Paused, PausedBy: t.PausedBy, Unlinked: t.Unlinked, UnlinkedBy: t.UnlinkedBy, Connecting: t.ConnectRef, LastActivity: t.LastActivity,
				Attempts: t.Attempts, LastError: t.LastError,
				AgreedStatus: t.AgreedStatus, ReconciledAt: t.ReconciledAt, LastReconcile: t.LastReconcile,
				Mirrored: mirrored[t.ID], Own: own[t.ID],
			}
			for _, e := range journals[t.ID] {
				ts.Journal = append(ts.Journal, entryStatus(e))
			}
			s.Tickets = append(s.Tickets, ts)
			return nil
		})
		if err != nil && !errors.Is(err, state.ErrCorrupt) {
			return err
		}
		if err := tx.ForEachNotOurs(func(state.NotOurs) error { notOurs++; return nil }); err != nil && !errors.Is(err, state.ErrCorrupt) {
			return err
		}
		ps, err := tx.PendingJournal()
		if err != nil && !errors.Is(err, state.ErrCorrupt) {
			return err
		}
		for _, e := range ps {
			s.Pending = append(s.Pending, entryStatus(e))
		}
		fs, err := tx.FailedJournal()
		if err != nil && !errors.Is(err, state.ErrCorrupt) {
			return err
		}
		for _, e := range fs {
			s.Failed = append(s.Failed, entryStatus(e))
		}
		return nil
	})
	if err != nil {
		return Status{}, fmt.Errorf("read status: %w", err)
	}
	slices.SortFunc(s.Tickets, func(a, b TicketStatus) int {
		return cmp.Or(b.LastActivity.Compare(a.LastActivity), cmp.Compare(a.ID, b.ID))
	})
	s.Counts = countTickets(s)
	s.Counts.NotOurs = notOurs
	return s, nil
}

// ReadLastCycle returns the report of the last cycle stored in st, nil
// before the first; a report it cannot decode has its start and outcome
// only.
func ReadLastCycle(ctx context.Context, st *state.Store) (*Report, error) {
	var r *Report
	err := st.View(ctx, func(tx *state.Tx) error {
		var err error
		r, err = lastCycle(tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the last cycle: %w", err)
	}
	return r, nil
}

// lastCycle is ReadLastCycle in tx.
func lastCycle(tx *state.Tx) (*Report, error) {
	c, ok, err := tx.LastCycle()
	if err != nil || !ok {
		return nil, err
	}
	var r Report
	if json.Unmarshal(c.Report, &r) != nil {
		return &Report{Start: c.Start, Outcome: c.Outcome}, nil
	}
	return &r, nil
}

func countTickets(s Status) StatusCounts {
	c := StatusCounts{Tickets: len(s.Tickets), Pending: len(s.Pending), Failed: len(s.Failed)}
	for _, t := range s.Tickets {
		c.Mirrored += t.Mirrored
		c.Own += t.Own
		switch {
		case !t.Unlinked.IsZero():
			c.Unlinked++
		case !t.Paused.IsZero():
			c.Paused++
		case !t.Deleted.IsZero():
			c.Deleted++
		case t.Retired:
			c.Retired++
		case t.Attempts > 0:
			c.Failing++
		case t.DueReason == DueClosed:
			c.Closed++
		case t.DueReason == DueQuiet || t.DueReason == DueFull:
			c.Quiet++
		default:
			c.Active++
		}
	}
	return c
}

// TicketDetail is everything the state holds of one ticket: its mapping,
// the messages mirrored and posted, and its whole journal.
type TicketDetail struct {
	TicketStatus
	// MirroredMessages maps upstream message ids to helpdesk ids.
	MirroredMessages map[string]string `json:"mirrored_messages"`
	// OwnMessages maps the bridge's upstream posts to the helpdesk events
	// they were made for.
	OwnMessages map[string]string `json:"own_messages"`
	// Messages holds, by upstream message id, who wrote each message
	// mirrored or posted, when, and its first words, where the state
	// keeps them. The guest's words are personal data: the status page
	// shows them to signed-in users only, and the JSON leaves them out.
	Messages map[string]state.MessageInfo `json:"-"`
	// Audit is the request's audit trail, oldest first: what crossed
	// for it and why (ids, kinds and outcomes; no message text).
	Audit []state.Audit `json:"audit"`
	// Carried is what the bridge last carried of the platform's fields
	// to the helpdesk ticket; nil when the state records none.
	Carried *CarriedFields `json:"carried,omitempty"`
	// HelpdeskURL is the ticket's address in the helpdesk's web UI
	// (adapters.TicketLinker); "" when the helpdesk has none, or the
	// reader does not know the helpdesk (the state alone does not say).
	HelpdeskURL string `json:"helpdesk_url,omitempty"`
}

// CarriedFields is state.Ticket.Carried as status and the request's page
// show it: the platform's fields as the helpdesk was last given them.
// The origin is not among them: it is given once, at creation, and the
// state does not keep it.
type CarriedFields struct {
	// At is when they were last carried.
	At         time.Time `json:"at"`
	Department string    `json:"department,omitempty"`
	// Due is the request's target_due_at; zero when none.
	Due time.Time `json:"due,omitzero"`
	// Rating is the guest's rating when Rated.
	Rated  bool    `json:"rated,omitempty"`
	Rating float64 `json:"rating,omitempty"`
	// Priority is what the priority rule derived; "" when no rule set
	// one (the helpdesk's own is left alone).
	Priority string `json:"priority,omitempty"`
	// Unsure names the fields whose last update's outcome is unknown
	// ("department", "due", ...): the values above are the last known
	// carried, and the next update sets these again.
	Unsure []string `json:"unsure,omitempty"`
	// Title (the request's task description) and Comment (the console
	// card's internal comment) are request text: the page shows them to
	// signed-in users only, and the JSON leaves them out, as it does the
	// messages' words.
	Title   string `json:"-"`
	Comment string `json:"-"`
}

// IsUnsure reports whether the last update of the field named name
// ("department", "title", "due", "rating", "comment", "priority") has an
// unknown outcome.
func (c CarriedFields) IsUnsure(name string) bool { return slices.Contains(c.Unsure, name) }

// carriedStatus returns f as CarriedFields; nil when it was never carried.
func carriedStatus(f state.Fields) *CarriedFields {
	if !f.Known() {
		return nil
	}
	c := &CarriedFields{At: f.At, Department: f.Department, Due: f.Due, Rated: f.Rated, Rating: f.Rating,
		Priority: f.Priority, Title: f.Title, Comment: f.Comment}
	for _, x := range adapters.FieldSet(f.Unsure).Fields() {
		c.Unsure = append(c.Unsure, x.String())
	}
	return c
}

// ReadTicket returns what st holds of the ticket whose upstream id or
// helpdesk reference is id, or whose upstream id starts with it (at least
// 8 characters, and only one ticket may match). An id that is not an
// upstream id costs a read of every ticket record.
func ReadTicket(ctx context.Context, st *state.Store, id string) (TicketDetail, error) {
	return readTicket(ctx, st, id, true)
}

// Ticket returns the ticket of s that id names, as [ReadTicket] finds it
// in the state: its upstream id or helpdesk reference, or the start of
// its upstream id (at least 8 characters, and only one ticket may match).
func (s Status) Ticket(id string) (TicketStatus, error) {
	var found []TicketStatus
	for _, t := range s.Tickets {
		if t.ID == id {
			return t, nil
		}
		if namesTicket(id, t.ID, t.Ref) {
			found = append(found, t)
		}
	}
	return theOne(id, found)
}

// namesTicket reports whether id names the ticket of upstream id tid and
// helpdesk reference ref, other than by its whole id: its reference, or
// the start of its id (at least 8 characters).
func namesTicket(id, tid, ref string) bool {
	return ref == id || (len(id) >= 8 && len(tid) > len(id) && strings.HasPrefix(tid, id))
}

// theOne is the one ticket of found that id names, or why there is none.
func theOne[T any](id string, found []T) (T, error) {
	var none T
	switch len(found) {
	case 0:
		return none, fmt.Errorf("no tracked ticket has the id or helpdesk reference %q", id)
	case 1:
		return found[0], nil
	}
	return none, fmt.Errorf("%d tracked tickets start with %q; give more of the id", len(found), id)
}

// ReadTicketByID returns what st holds of the ticket whose upstream id is
// id, by key: it never reads other tickets' records, so its cost does not
// grow with the state (the status page's reads, which anyone who reaches
// the page may ask for).
func ReadTicketByID(ctx context.Context, st *state.Store, id string) (TicketDetail, error) {
	return readTicket(ctx, st, id, false)
}

func readTicket(ctx context.Context, st *state.Store, id string, search bool) (TicketDetail, error) {
	var d TicketDetail
	err := st.View(ctx, func(tx *state.Tx) error {
		t, ok, err := tx.Ticket(id)
		if err != nil {
			return err
		}
		if !ok && !search {
			return fmt.Errorf("no tracked ticket has the id %q", id)
		}
		if !ok {
			var matches []state.Ticket
			err := tx.ForEachTicket(func(c state.Ticket) error {
				if namesTicket(id, c.ID, c.Ref) {
					matches = append(matches, c)
				}
				return nil
			})
			if err != nil && !errors.Is(err, state.ErrCorrupt) {
				return err
			}
			if t, err = theOne(id, matches); err != nil {
				return err
			}
		}
		d.TicketStatus = TicketStatus{
			ID: t.ID, Ref: t.Ref, Department: t.Department, UpstreamStatus: t.UpstreamStatus, HelpdeskStatus: t.HelpdeskStatus,
			NextDue: t.NextDue, DueReason: t.DueReason, Retired: t.Retired, Deleted: t.Deleted, Paused: t.Paused, PausedBy: t.PausedBy, Unlinked: t.Unlinked, UnlinkedBy: t.UnlinkedBy, Connecting: t.ConnectRef, LastActivity: t.LastActivity,
			Attempts: t.Attempts, LastError: t.LastError,
			AgreedStatus: t.AgreedStatus, ReconciledAt: t.ReconciledAt, LastReconcile: t.LastReconcile,
		}
		m, err := tx.Mirrored(t.ID)
		if err != nil {
			return err
		}
		d.MirroredMessages = map[string]string{}
		d.Messages = map[string]state.MessageInfo{}
		for k, v := range m {
			d.MirroredMessages[k] = v.HelpdeskID
			if v.MessageInfo != (state.MessageInfo{}) {
				d.Messages[k] = v.MessageInfo
			}
		}
		o, err := tx.OwnMessages(t.ID)
		if err != nil {
			return err
		}
		d.OwnMessages = map[string]string{}
		for k, v := range o {
			d.OwnMessages[k] = v.EventID
			if v.MessageInfo != (state.MessageInfo{}) {
				d.Messages[k] = v.MessageInfo
			}
		}
		d.Mirrored, d.Own = len(m), len(o)
		d.Carried = carriedStatus(t.Carried)
		js, err := tx.JournalForTicket(t.ID)
		if err != nil && !errors.Is(err, state.ErrCorrupt) {
			return err
		}
		for _, e := range js {
			d.Journal = append(d.Journal, entryStatus(e))
		}
		d.Audit, err = tx.AuditTrail(t.ID)
		if err != nil && !errors.Is(err, state.ErrCorrupt) {
			return err
		}
		return nil
	})
	if err != nil {
		return TicketDetail{}, fmt.Errorf("read ticket %s: %w", id, err)
	}
	return d, nil
}
