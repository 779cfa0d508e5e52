// Package memory is a helpdesk held in memory, and the adapter "memory"
// that mirrors guest requests into it.
//
// It is a first-class helpdesk, not a mock: a [Backend] keeps tickets,
// messages with their authors and visibility, statuses in its own words
// (new, open, working, solved, cancelled), and a log of every change with
// who made it, from which [Adapter.Changes] reports the support team's work
// and leaves out the bridge's own. Agent methods on the Backend ([Backend.Reply],
// [Backend.Note], [Backend.SetStatus]) act as the support team, snapshots
// ([Backend.Tickets], [Backend.Messages], [Backend.Find]) let tests count
// duplicates, and faults ([Backend.Inject]) make calls fail before or after
// their work is applied. It holds the platform's fields natively
// ([Adapter.Update]; [Backend.EditFields] edits them as an agent).
// Several adapters share one Backend the way restarts of the bridge share
// one helpdesk, so losing an adapter loses nothing.
//
// It is what the engine's tests and `ticketbridge demo` run against. It
// keeps nothing on disk: use the files adapter to keep tickets across runs.
package memory

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// Name is the adapter's registry name.
const Name = "memory"

// DefaultPageSize is how many events one Changes call returns at most.
const DefaultPageSize = 100

// DefaultStatusMap is the mapping between the API's statuses and the
// backend's own: new, open, working, solved, cancelled.
func DefaultStatusMap() adapters.StatusMap {
	return adapters.StatusMap{
		ToHelpdesk: map[guestapi.Status]string{
			guestapi.StatusNew:        "new",
			guestapi.StatusAssigned:   "open",
			guestapi.StatusInProgress: "working",
			guestapi.StatusDone:       "solved",
			guestapi.StatusCompleted:  "solved",
			guestapi.StatusConfirmed:  "solved",
			guestapi.StatusCancelled:  "cancelled",
		},
		FromHelpdesk: map[string]guestapi.Status{
			"new":       guestapi.StatusNew,
			"open":      guestapi.StatusAssigned,
			"working":   guestapi.StatusInProgress,
			"solved":    guestapi.StatusDone,
			"cancelled": guestapi.StatusCancelled,
		},
	}
}

// Options configure an [Adapter].
type Options struct {
	// Status maps statuses; the zero value means [DefaultStatusMap].
	Status adapters.StatusMap
	// PageSize caps the events of one Changes call; 0 means
	// [DefaultPageSize].
	PageSize int
	// Logger receives the adapter's log; nil discards it.
	Logger *slog.Logger
}

// Adapter is the Helpdesk of a [Backend].
type Adapter struct {
	b      *Backend
	status adapters.StatusMap
	page   int
	log    *slog.Logger
	closed atomic.Bool
}

var _ adapters.Helpdesk = (*Adapter)(nil)

// New returns an adapter on b.
func New(b *Backend, opts Options) *Adapter {
	a := &Adapter{b: b, status: opts.Status, page: opts.PageSize, log: opts.Logger}
	if len(a.status.ToHelpdesk) == 0 {
		a.status = DefaultStatusMap()
	}
	if a.page <= 0 {
		a.page = DefaultPageSize
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	return a
}

// Factory returns the registry's factory for adapters on b, applying the
// status overrides of deps to [DefaultStatusMap].
func Factory(b *Backend) adapters.Factory {
	return func(_ context.Context, deps adapters.Deps) (adapters.Helpdesk, error) {
		if b == nil {
			return nil, fmt.Errorf("open memory adapter: no backend")
		}
		return New(b, Options{Status: DefaultStatusMap().Override(deps), Logger: deps.Logger}), nil
	}
}

// Name returns "memory".
func (a *Adapter) Name() string { return Name }

// Status returns the adapter's status mapping.
func (a *Adapter) Status() adapters.StatusMap { return a.status }

// Close marks the adapter closed; the backend and its tickets stay.
func (a *Adapter) Close() error {
	a.closed.Store(true)
	return nil
}

func (a *Adapter) check(op string) error {
	if a.closed.Load() {
		return fmt.Errorf("memory %s: adapter closed", op)
	}
	return nil
}

// EnsureTicket returns the ticket mirroring t.UpstreamID, creating it when
// there is none.
func (a *Adapter) EnsureTicket(ctx context.Context, t adapters.Ticket) (adapters.Ref, error) {
	if err := a.check("ensure ticket"); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("ensure ticket %s: %w", t.UpstreamID, err)
	}
	if strings.TrimSpace(t.UpstreamID) == "" {
		return "", fmt.Errorf("ensure ticket: upstream id is empty: %w", adapters.ErrInvalid)
	}
	if !utf8.ValidString(t.UpstreamID) || !utf8.ValidString(t.TaskDescription) || !utf8.ValidString(t.Department) {
		return "", fmt.Errorf("ensure ticket %q: fields are not valid UTF-8: %w", t.UpstreamID, adapters.ErrInvalid)
	}
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	ferr, after := b.enter(OpEnsureTicket)
	if ferr != nil && !after {
		return "", ferr
	}
	tk := b.byUpstream(t.UpstreamID)
	if tk == nil {
		st := t.Status
		if st == "" {
			st = guestapi.StatusNew
		}
		tk = b.create(t, a.status.Down(st))
		a.log.LogAttrs(ctx, slog.LevelDebug, "created ticket", slog.String("ticket", t.UpstreamID),
			slog.String("ref", string(tk.ref)), slog.String("op", "ensure"))
	}
	if ferr != nil {
		return "", ferr
	}
	return tk.ref, nil
}

// validMessages checks a batch before anything of it is written.
func validMessages(ref adapters.Ref, msgs []adapters.Message) error {
	for i, m := range msgs {
		switch {
		case strings.TrimSpace(m.UpstreamID) == "":
			return fmt.Errorf("append to %s: message %d: upstream id is empty: %w", ref, i+1, adapters.ErrInvalid)
		case strings.TrimSpace(m.Body) == "":
			return fmt.Errorf("append to %s: message %d (%s): body is empty: %w", ref, i+1, m.UpstreamID, adapters.ErrInvalid)
		case !utf8.ValidString(m.Body) || !utf8.ValidString(m.AuthorName):
			return fmt.Errorf("append to %s: message %d (%s): body or author is not valid UTF-8: %w", ref, i+1, m.UpstreamID, adapters.ErrInvalid)
		}
	}
	return nil
}

// Append adds msgs to ticket ref, skipping those it already holds.
func (a *Adapter) Append(ctx context.Context, ref adapters.Ref, msgs []adapters.Message) ([]adapters.Appended, error) {
	if err := a.check("append"); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("append to %s: %w", ref, err)
	}
	if err := validMessages(ref, msgs); err != nil {
		return nil, err
	}
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	ferr, after := b.enter(OpAppend)
	if ferr != nil && !after {
		return nil, ferr
	}
	tk := b.ticket(ref)
	if tk == nil {
		return nil, fmt.Errorf("append to %s: %w", ref, adapters.ErrNotFound)
	}
	out := make([]adapters.Appended, 0, len(msgs))
	for _, m := range msgs {
		if held := tk.find(m.UpstreamID); held != nil {
			out = append(out, adapters.Appended{UpstreamID: m.UpstreamID, HelpdeskID: held.ID, Existed: true})
			continue
		}
		nm := b.addMessage(tk, MessageSnapshot{
			UpstreamID: m.UpstreamID, AuthorType: m.AuthorType, AuthorName: m.AuthorName,
			Body: m.Body, Public: m.Public, At: m.CreatedAt.UTC(), ByBridge: true,
		})
		a.log.LogAttrs(ctx, slog.LevelDebug, "appended message", slog.String("ticket", tk.fields.UpstreamID),
			slog.String("message", m.UpstreamID), slog.String("op", "append"))
		out = append(out, adapters.Appended{UpstreamID: m.UpstreamID, HelpdeskID: nm.ID})
	}
	if ferr != nil {
		return nil, ferr
	}
	return out, nil
}

func (t *ticket) find(upstreamID string) *message {
	for _, m := range t.messages {
		if m.UpstreamID == upstreamID {
			return m
		}
	}
	return nil
}

// SetStatus sets the backend status s maps to, as the bridge.
func (a *Adapter) SetStatus(ctx context.Context, ref adapters.Ref, s guestapi.Status) error {
	if err := a.check("set status"); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("set status of %s: %w", ref, err)
	}
	if !s.Known() {
		return fmt.Errorf("set status of %s: unknown status %q (want one of new, assigned, in_progress, done, completed, confirmed, cancelled): %w", ref, s, adapters.ErrInvalid)
	}
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	ferr, after := b.enter(OpSetStatus)
	if ferr != nil && !after {
		return ferr
	}
	tk := b.ticket(ref)
	if tk == nil {
		return fmt.Errorf("set status of %s: %w", ref, adapters.ErrNotFound)
	}
	if h := a.status.Down(s); tk.status != h {
		tk.status, tk.statusAt = h, b.now().UTC()
		b.record(change{ref: ref, kind: changeStatus, byBridge: true, status: h})
	}
	return ferr
}

// Changes reports the agents' replies, notes and mapped status changes
// after cursor, which is the sequence number of the last change seen.
func (a *Adapter) Changes(ctx context.Context, cursor adapters.Cursor) ([]adapters.Event, adapters.Cursor, error) {
	if err := a.check("changes"); err != nil {
		return nil, cursor, err
	}
	if err := ctx.Err(); err != nil {
		return nil, cursor, fmt.Errorf("read changes: %w", err)
	}
	seq := 0
	if cursor != "" {
		n, err := strconv.Atoi(string(cursor))
		if err != nil || n < 0 {
			return nil, cursor, fmt.Errorf("read changes: cursor %q is not a sequence number: %w", cursor, adapters.ErrInvalid)
		}
		seq = n
	}
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	ferr, _ := b.enter(OpChanges)
	if ferr != nil {
		return nil, cursor, ferr
	}
	var evs []adapters.Event
	next := seq
	for _, c := range b.changesAfter(seq) {
		if len(evs) == a.page {
			break
		}
		next = c.seq
		if c.byBridge {
			continue
		}
		if ev, ok := a.event(b, c); ok {
			evs = append(evs, ev)
		}
	}
	return evs, adapters.Cursor(strconv.Itoa(next)), nil
}

// event returns the event the team's change c is, and false when it is
// none the bridge carries. b.mu must be held.
func (a *Adapter) event(b *Backend, c change) (adapters.Event, bool) {
	tk := b.ticket(c.ref)
	if tk.fields.UpstreamID == "" {
		return adapters.Event{}, false // made by hand, not connected (yet)
	}
	ev := adapters.Event{ID: strconv.Itoa(c.seq), Ref: c.ref, UpstreamTicketID: tk.fields.UpstreamID, AuthorName: c.author, At: c.at}
	switch c.kind {
	case changeMessage:
		ev.Kind, ev.Body = adapters.EventNote, c.body
		if c.public {
			ev.Kind = adapters.EventReply
		}
	case changeStatus:
		up, ok := a.status.Up(c.status)
		if !ok {
			return ev, false
		}
		ev.Kind, ev.Status = adapters.EventStatus, up
	default:
		return ev, false
	}
	return ev, true
}

// Lookup finds the ticket mirroring upstreamID.
func (a *Adapter) Lookup(ctx context.Context, upstreamID string) (adapters.Found, bool, error) {
	if err := a.check("lookup"); err != nil {
		return adapters.Found{}, false, err
	}
	if err := ctx.Err(); err != nil {
		return adapters.Found{}, false, fmt.Errorf("look up %s: %w", upstreamID, err)
	}
	if strings.TrimSpace(upstreamID) == "" {
		return adapters.Found{}, false, fmt.Errorf("look up ticket: upstream id is empty: %w", adapters.ErrInvalid)
	}
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if ferr, _ := b.enter(OpLookup); ferr != nil {
		return adapters.Found{}, false, ferr
	}
	tk := b.byUpstream(upstreamID)
	if tk == nil {
		return adapters.Found{}, false, nil
	}
	f := adapters.Found{Ref: tk.ref, Messages: map[string]string{}, Sent: maps.Clone(tk.sent),
		Status: a.status.Current(tk.status, tk.statusAt), Events: []adapters.Event{}}
	for _, m := range tk.messages {
		if m.UpstreamID != "" {
			f.Messages[m.UpstreamID] = m.ID
		}
	}
	for _, c := range b.log {
		if c.ref != tk.ref || c.byBridge {
			continue
		}
		if ev, ok := a.event(b, c); ok {
			f.Events = append(f.Events, ev)
		}
	}
	return f, true, nil
}

// Connect stores t's upstream id in ticket ref, one made by hand (see
// adapters.Connector).
func (a *Adapter) Connect(ctx context.Context, ref adapters.Ref, t adapters.Ticket) error {
	if err := a.check("connect"); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("connect ticket %s: %w", ref, err)
	}
	if strings.TrimSpace(t.UpstreamID) == "" {
		return fmt.Errorf("connect ticket %s: upstream id is empty: %w", ref, adapters.ErrInvalid)
	}
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	tk := b.ticket(ref)
	switch other := b.byUpstream(t.UpstreamID); {
	case tk == nil:
		return fmt.Errorf("connect ticket %s: %w", ref, adapters.ErrNotFound)
	case tk.fields.UpstreamID == t.UpstreamID:
		return nil
	case tk.fields.UpstreamID != "":
		return fmt.Errorf("connect ticket %s to request %s: it mirrors request %s: %w", ref, t.UpstreamID, tk.fields.UpstreamID, adapters.ErrInvalid)
	case other != nil:
		return fmt.Errorf("connect ticket %s to request %s: ticket %s mirrors that request: %w", ref, t.UpstreamID, other.ref, adapters.ErrInvalid)
	}
	tk.fields.UpstreamID = t.UpstreamID
	return nil
}

// MarkSent records that event eventID of ticket ref became the upstream
// message upstreamMessageID ("" for a status change).
func (a *Adapter) MarkSent(ctx context.Context, ref adapters.Ref, eventID, upstreamMessageID string) error {
	if err := a.check("mark sent"); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mark sent %s on %s: %w", eventID, ref, err)
	}
	if eventID == "" {
		return fmt.Errorf("mark sent on %s: event id is empty: %w", ref, adapters.ErrInvalid)
	}
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	ferr, after := b.enter(OpMarkSent)
	if ferr != nil && !after {
		return ferr
	}
	tk := b.ticket(ref)
	if tk == nil {
		return fmt.Errorf("mark sent %s on %s: %w", eventID, ref, adapters.ErrNotFound)
	}
	if old, ok := tk.sent[eventID]; !ok || old != upstreamMessageID {
		tk.sent[eventID] = upstreamMessageID
		b.record(change{ref: ref, kind: changeSent, byBridge: true, body: eventID + "=" + upstreamMessageID})
	}
	return ferr
}
