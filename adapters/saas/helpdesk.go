package saas

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// Vendor is what the package of one SaaS helpdesk implements: the
// primitives of its API. [Helpdesk] builds the methods of
// [adapters.Helpdesk] on them and keeps what every vendor shares: the
// input checks, the open-or-closed state, reading the markers of the
// bridge's own comments, not writing a comment twice, and the error
// wrapping.
//
// T is the vendor's view of what mirrors one upstream ticket, as Resolve
// reads it: a ticket, or a ticket with its follow-ups. Every method may be
// called for different tickets at once. The errors of Self, Comment,
// Status, Events and Prepare go to the engine as they are, so
// they say what failed where; those of Find, Create, Thread, Resolve and
// Comments are wrapped with the method and the ticket, those of Note with
// the event.
type Vendor[T any] interface {
	// Self returns the id of the helpdesk user the adapter acts as,
	// asking the helpdesk once (see [Memo]).
	Self(ctx context.Context) (int64, error)
	// Find returns the ticket that mirrors upstreamID, found by what the
	// bridge stored in it; ok is false when there is none. EnsureTicket
	// calls it before Create.
	Find(ctx context.Context, upstreamID string) (ref adapters.Ref, ok bool, err error)
	// Create makes the ticket of t, with [DescriptionText] as its first
	// comment (or description).
	Create(ctx context.Context, t adapters.Ticket) (adapters.Ref, error)
	// Thread finds, for Lookup, what mirrors upstreamID and the Ref to
	// report for it; ok is false when there is none. It may read more
	// than Find (archived tickets, follow-ups), since Lookup runs after
	// the bridge's state was lost.
	Thread(ctx context.Context, upstreamID string) (th T, ref adapters.Ref, ok bool, err error)
	// Resolve reads what ref names. A Ref the helpdesk does not know, or
	// whose ticket mirrors no upstream ticket, is [adapters.ErrNotFound].
	Resolve(ctx context.Context, ref adapters.Ref) (T, error)
	// Comments lists the comments of every ticket of th with their
	// authors; Helpdesk reads the markers of those Self wrote, and Lookup
	// reports the events of the others (see [Comment.Event]).
	Comments(ctx context.Context, th T) ([]Comment, error)
	// AuthorName returns the name Events gives the author of comment c,
	// an event's (asking the helpdesk only about a user the adapter has
	// not met).
	AuthorName(ctx context.Context, c Comment) (string, error)
	// Comment writes m ([MessageText]) as one comment, public after
	// m.Public, reopening the ticket when the vendor needs that to show a
	// guest's message, and returns th as it is after the write and the
	// comment's id. A write whose outcome is unknown is not repeated:
	// the next Append finds it by its marker.
	Comment(ctx context.Context, th T, m adapters.Message) (T, string, error)
	// Note writes text as an internal note (a private comment) of th, on
	// the ticket that takes writes: [SentText] for MarkSent, [UnsentText]
	// for the files of an event the API cannot carry. op names the write
	// in logs ("mark sent", "note unsent"). A ticket that cannot take a
	// note (closed for good) is skipped with nil.
	Note(ctx context.Context, th T, op, text string) error
	// Status sets the helpdesk status that s maps to (see [Target]).
	Status(ctx context.Context, th T, s guestapi.Status) error
	// Current returns the status of th as Lookup reports it (see
	// [Current]), from what Thread read.
	Current(th T) adapters.FoundStatus
	// Events returns the changes after cur, leaving out those the user me
	// (the adapter's own) made, with the cursor after them; see
	// [adapters.Helpdesk.Changes] and [Cursor]. files names, by event id,
	// the files attached to a reply or note, which the API cannot carry;
	// such an event is returned even without text, and Changes notes them
	// (see [adapters.NoteUnsent]).
	Events(ctx context.Context, cur adapters.Cursor, me int64) (evs []adapters.Event, files map[string][]string, next adapters.Cursor, err error)
}

// Preparer is implemented by a Vendor whose ticket must change before new
// messages go in at all (Freshdesk: a follow-up of an archived ticket, a
// reopened ticket). Append calls Prepare with the messages the ticket does
// not hold yet, before the first Comment.
type Preparer[T any] interface {
	Prepare(ctx context.Context, th T, msgs []adapters.Message) (T, error)
}

// Comment is one comment, note or article of a ticket as Vendor.Comments
// lists it: the helpdesk's id of it, its author, and its text, whose last
// line holds the marker if the bridge wrote it.
type Comment struct {
	ID     string
	Author int64
	Text   string
	// Event is, for a reply or note of the team that Events reports, the
	// event Events makes of it (same id, kind, body and time), built by
	// the same code; its AuthorName is what Events falls back to when the
	// user has no name, and Lookup sets it with Vendor.AuthorName. nil for
	// the bridge's own comments and for those Events leaves out.
	Event *adapters.Event
	// Files names the files of the comment, which the API cannot carry.
	Files []string
}

// Helpdesk is the [adapters.Helpdesk] of a SaaS adapter, on its [Vendor].
// A vendor's Adapter embeds it. It is safe for concurrent use.
type Helpdesk[T any] struct {
	in   Input // checks the input of the methods and that the adapter is open
	v    Vendor[T]
	utf8 bool
	life Life
	log  *slog.Logger
}

// NewHelpdesk returns the Helpdesk of vendor v named name (e.g.
// "zendesk"); valid is [Input.Valid]. With texts set, descriptions,
// departments, comments, message bodies and author names must also be
// valid UTF-8, for a helpdesk that refuses anything else. log (nil: none)
// takes the notes of files not sent (see Changes).
func NewHelpdesk[T any](name string, v Vendor[T], valid func(string) bool, texts bool, log *slog.Logger) *Helpdesk[T] {
	h := &Helpdesk[T]{v: v, utf8: texts, log: Logger(log)}
	h.in = Input{Name: name, Valid: valid, Life: &h.life}
	return h
}

// Name returns the adapter's registry name.
func (h *Helpdesk[T]) Name() string { return h.in.Name }

// Close marks the adapter closed; the SaaS adapters hold no connection of
// their own.
func (h *Helpdesk[T]) Close() error { return h.life.Close() }

// Input checks the input of the Helpdesk methods, and that the adapter is
// open, for a vendor's own variant of one of them.
func (h *Helpdesk[T]) Input() Input { return h.in }

// Open returns [ErrClosed] once the adapter is closed.
func (h *Helpdesk[T]) Open() error { return h.in.open() }

// EnsureTicket returns the ticket Find finds, or the one Create makes.
func (h *Helpdesk[T]) EnsureTicket(ctx context.Context, t adapters.Ticket) (adapters.Ref, error) {
	if err := h.in.UpstreamID("ensure", t.UpstreamID); err != nil {
		return "", err
	}
	if h.utf8 && (!utf8.ValidString(t.TaskDescription) || !utf8.ValidString(t.Department) || !utf8.ValidString(t.Comments)) {
		return "", fmt.Errorf("ensure %s ticket for %s: the description, department or comment is not valid UTF-8: %w", h.in.Name, t.UpstreamID, adapters.ErrInvalid)
	}
	ref, ok, err := h.v.Find(ctx, t.UpstreamID)
	if err != nil {
		return "", fmt.Errorf("ensure %s ticket for %s: %w", h.in.Name, t.UpstreamID, err)
	}
	if ok {
		return ref, nil
	}
	ref, err = h.v.Create(ctx, t)
	if err != nil {
		return "", fmt.Errorf("create %s ticket for %s: %w", h.in.Name, t.UpstreamID, err)
	}
	return ref, nil
}

// Lookup reports what the markers of the bridge's comments in the thread
// of upstreamID record.
func (h *Helpdesk[T]) Lookup(ctx context.Context, upstreamID string) (adapters.Found, bool, error) {
	if err := h.in.UpstreamID("look up", upstreamID); err != nil {
		return adapters.Found{}, false, err
	}
	th, ref, ok, err := h.v.Thread(ctx, upstreamID)
	if err != nil || !ok {
		if err != nil {
			err = fmt.Errorf("look up %s ticket for %s: %w", h.in.Name, upstreamID, err)
		}
		return adapters.Found{}, false, err
	}
	what := "look up " + h.in.Name + " ticket for " + upstreamID
	marks, cs, err := h.read(ctx, th, what)
	if err != nil {
		return adapters.Found{}, false, err
	}
	f := marks.Found(ref)
	f.Status = h.v.Current(th)
	if f.Events, err = h.events(ctx, cs); err != nil {
		return adapters.Found{}, false, fmt.Errorf("%s: %w", what, err)
	}
	return f, true, nil
}

// events returns the events of the team's comments in cs, as Changes
// reports them, oldest first: one without text or files is left out, a
// reply or note with files keeps its text, and one with files only is
// left out (the rule of [adapters.NoteUnsent]).
// Lookup is a read: the note naming the files is Changes' to write.
func (h *Helpdesk[T]) events(ctx context.Context, cs []Comment) ([]adapters.Event, error) {
	evs := []adapters.Event{}
	files := map[string][]string{}
	for _, c := range cs {
		if c.Event == nil || len(c.Files) == 0 && strings.TrimSpace(c.Event.Body) == "" {
			continue // nothing to carry, as Changes leaves it out
		}
		ev := *c.Event
		name, err := h.v.AuthorName(ctx, c)
		if err != nil {
			return nil, err
		}
		if name != "" {
			ev.AuthorName = name
		}
		if len(c.Files) > 0 {
			files[ev.ID] = c.Files
		}
		evs = append(evs, ev)
	}
	slices.SortStableFunc(evs, func(x, y adapters.Event) int { return x.At.Compare(y.At) })
	return adapters.NoteUnsent(ctx, nil, evs, files, nil)
}

// markers reads the markers of the comments the adapter's own user wrote in
// th. An error reading the user is returned as it is, the others say what.
func (h *Helpdesk[T]) markers(ctx context.Context, th T, what string) (Markers, error) {
	marks, _, err := h.read(ctx, th, what)
	return marks, err
}

// read is markers, with the comments it read.
func (h *Helpdesk[T]) read(ctx context.Context, th T, what string) (Markers, []Comment, error) {
	me, err := h.v.Self(ctx)
	if err != nil {
		return Markers{}, nil, err
	}
	cs, err := h.v.Comments(ctx, th)
	if err != nil {
		return Markers{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	marks := NewMarkers()
	for i, c := range cs {
		if c.Author == me {
			marks.Text(c.Text, c.ID)
			cs[i].Event = nil // never the bridge's own
		}
	}
	return marks, cs, nil
}

// Append writes each message the ticket does not hold yet (by its
// marker) with Vendor.Comment, in order. After a failed write it returns
// what was appended before it with the error.
func (h *Helpdesk[T]) Append(ctx context.Context, ref adapters.Ref, msgs []adapters.Message) ([]adapters.Appended, error) {
	if err := h.in.Messages(ref, msgs); err != nil {
		return nil, err
	}
	if h.utf8 {
		for _, m := range msgs {
			if !utf8.ValidString(m.Body) || !utf8.ValidString(m.AuthorName) {
				return nil, fmt.Errorf("append to %s ticket %s: message %s: body or author is not valid UTF-8: %w", h.in.Name, ref, m.UpstreamID, adapters.ErrInvalid)
			}
		}
	}
	if len(msgs) == 0 {
		return []adapters.Appended{}, nil
	}
	what := fmt.Sprintf("append to %s ticket %s", h.in.Name, ref)
	th, err := h.v.Resolve(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	marks, err := h.markers(ctx, th, what)
	if err != nil {
		return nil, err
	}
	if p, ok := h.v.(Preparer[T]); ok {
		var fresh []adapters.Message
		for _, m := range msgs {
			if _, in := marks.Messages[m.UpstreamID]; !in {
				fresh = append(fresh, m)
			}
		}
		if th, err = p.Prepare(ctx, th, fresh); err != nil {
			return nil, err
		}
	}
	out := make([]adapters.Appended, 0, len(msgs))
	for _, m := range msgs {
		if id, ok := marks.Messages[m.UpstreamID]; ok {
			out = append(out, adapters.Appended{UpstreamID: m.UpstreamID, HelpdeskID: id, Existed: true})
			continue
		}
		var id string
		th, id, err = h.v.Comment(ctx, th, m)
		if err != nil {
			return out, err
		}
		marks.Messages[m.UpstreamID] = id
		out = append(out, adapters.Appended{UpstreamID: m.UpstreamID, HelpdeskID: id})
	}
	return out, nil
}

// SetStatus checks s and has the vendor set it.
func (h *Helpdesk[T]) SetStatus(ctx context.Context, ref adapters.Ref, s guestapi.Status) error {
	if err := h.in.open(); err != nil {
		return err
	}
	if !s.Known() {
		return fmt.Errorf("set status of %s ticket %s: unknown status %q: %w", h.in.Name, ref, s, adapters.ErrInvalid)
	}
	th, err := h.v.Resolve(ctx, ref)
	if err != nil {
		return fmt.Errorf("set status of %s ticket %s: %w", h.in.Name, ref, err)
	}
	return h.v.Status(ctx, th, s)
}

// MarkSent writes the sent note of eventID unless a marker in the ticket
// records it already.
func (h *Helpdesk[T]) MarkSent(ctx context.Context, ref adapters.Ref, eventID, upstreamMessageID string) error {
	if err := h.in.Sent(ref, eventID, upstreamMessageID); err != nil {
		return err
	}
	what := fmt.Sprintf("mark event %s sent on %s ticket %s", eventID, h.in.Name, ref)
	th, err := h.v.Resolve(ctx, ref)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	marks, err := h.markers(ctx, th, what)
	if err != nil {
		return err
	}
	if _, ok := marks.Sent[eventID]; ok {
		return nil
	}
	if err := h.v.Note(ctx, th, "mark sent", SentText(eventID, upstreamMessageID)); err != nil {
		return fmt.Errorf("mark event %s sent: %w", eventID, err)
	}
	return nil
}

// Current returns the [adapters.FoundStatus] of a ticket of status cur,
// changed at at, for a vendor whose Status writes by [Target]: it shows
// the upstream statuses Target writes nothing for.
func Current(m adapters.StatusMap, cur string, at time.Time, initial, open string) adapters.FoundStatus {
	return m.CurrentBy(cur, at, func(s guestapi.Status) bool {
		_, write := Target(m, cur, s, initial, open)
		return !write
	})
}

// Target returns the helpdesk status to set for s on a ticket whose
// status is cur, and false when nothing is to be written: cur already
// maps to s (an agent's finer status stays, such as pending for
// in_progress) or is the one s maps to. A ticket cannot go back to the
// helpdesk's initial status once it left it: initial then becomes open
// ("" when the helpdesk has no such rule).
func Target(m adapters.StatusMap, cur string, s guestapi.Status, initial, open string) (string, bool) {
	if up, ok := m.Up(cur); ok && up == s {
		return "", false
	}
	target := m.Down(s)
	if initial != "" && target == initial && cur != initial {
		target = open
	}
	return target, cur != target
}
