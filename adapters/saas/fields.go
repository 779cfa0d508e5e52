package saas

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
)

// Values are the ticket's own fields that hold the platform's fields, in
// the vendor's terms and forms: what a ticket holds ([Fielder.Held]) or is
// to hold ([Fielder.Want]). Helpdesk compares the two as text, so the
// vendor writes both in one form (a group id in decimal, a date as the
// helpdesk stores it). "" is none: a field the helpdesk cannot hold (no
// due date field configured) is "" in both and never written.
type Values struct {
	Group    string // the group or queue the department routes to
	Title    string // the subject or title
	Due      string // the due date
	Rating   string // the rating, as a field value or a tag
	Priority string // the helpdesk's priority
}

// Fielder is the primitive of a [Vendor] that keeps the platform's fields
// in the ticket's own fields ([adapters.Updater]); Helpdesk.UpdateFields
// builds the rest on it: what differs from what the ticket holds, the
// rating and comment notes written once per distinct value by their
// markers, and the rate budget's [*adapters.WaitError].
type Fielder[T any] interface {
	// Held returns what the ticket of th that takes writes holds, read
	// by Resolve; ok is false when it can take no write (closed for
	// good), and nothing is then written.
	Held(th T) (v Values, ok bool)
	// Want returns what the ticket is to hold for f, the platform's
	// fields: the group f.Department routes to, by the routing of
	// Create; the title as Create writes it; and so on. held is what it
	// holds, for a field the vendor cannot clear (it keeps held's).
	Want(held Values, f adapters.Fields) Values
	// SetFields writes, in one request where the helpdesk allows, the
	// fields in which (FieldDepartment for Group, FieldTitle, FieldDue,
	// FieldRating, FieldPriority) to their values in v, on the ticket of
	// th that takes writes; v holds what the ticket holds for the
	// others. A spent rate budget is a [*adapters.WaitError], or an
	// [*adapters.HTTPError] of status 429, which UpdateFields turns into
	// one.
	SetFields(ctx context.Context, th T, which adapters.FieldSet, v Values) error
}

// Differ returns the fields of changed whose values differ between held
// and want. The title is rendered from the department too (its
// "[department]" prefix), so a department move compares the title as
// well. Priority "" in want leaves the helpdesk's alone.
func Differ(held, want Values, changed adapters.FieldSet) adapters.FieldSet {
	var s adapters.FieldSet
	if changed.Has(adapters.FieldDepartment) && held.Group != want.Group {
		s = s.With(adapters.FieldDepartment)
	}
	if (changed.Has(adapters.FieldTitle) || changed.Has(adapters.FieldDepartment)) && held.Title != want.Title && want.Title != "" {
		s = s.With(adapters.FieldTitle)
	}
	if changed.Has(adapters.FieldDue) && held.Due != want.Due {
		s = s.With(adapters.FieldDue)
	}
	if changed.Has(adapters.FieldRating) && held.Rating != want.Rating {
		s = s.With(adapters.FieldRating)
	}
	if changed.Has(adapters.FieldPriority) && want.Priority != "" && held.Priority != want.Priority {
		s = s.With(adapters.FieldPriority)
	}
	return s
}

// UpdateFields is the body of a SaaS adapter's Update (see
// [adapters.Updater]): it resolves ref, has the vendor ([Fielder]) write
// the fields of u.Changed whose values differ from what the ticket holds,
// in one write, and then writes the internal note of a new rating and of a
// changed console comment ([adapters.RatingNote], [adapters.CommentNote])
// with Vendor.Note, each unless a note of the bridge with its marker is in
// the ticket already. So a repeat, or a repeat after a lost state (u.Old
// zero), writes nothing. A spent rate budget, the vendor's
// [*adapters.WaitError] or a 429, is returned as a *adapters.WaitError.
func (h *Helpdesk[T]) UpdateFields(ctx context.Context, ref adapters.Ref, u adapters.FieldUpdate) error {
	if err := h.in.open(); err != nil {
		return err
	}
	what := fmt.Sprintf("update fields of %s ticket %s", h.in.Name, ref)
	nw := u.New
	if !utf8.ValidString(nw.Department) || !utf8.ValidString(nw.Title) || !utf8.ValidString(nw.Comment) {
		return fmt.Errorf("%s: the department, title or comment is not valid UTF-8: %w", what, adapters.ErrInvalid)
	}
	if u.Changed.Has(adapters.FieldTitle) && strings.TrimSpace(nw.Title) == "" {
		return fmt.Errorf("%s: the title is empty: %w", what, adapters.ErrInvalid)
	}
	f, ok := h.v.(Fielder[T])
	if !ok {
		return fmt.Errorf("%s: the %s adapter keeps no fields: %w", what, h.in.Name, adapters.ErrInvalid)
	}
	th, err := h.v.Resolve(ctx, ref)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if held, writable := f.Held(th); writable {
		want := f.Want(held, nw)
		if which := Differ(held, want, u.Changed); which != 0 {
			if err := f.SetFields(ctx, th, which, want); err != nil {
				return waitOf(ref, fmt.Errorf("%s (%s): %w", what, which, err))
			}
		}
	}
	var notes []string
	var marks []adapters.Marker
	if u.Changed.Has(adapters.FieldRating) && nw.Rating != nil {
		text, m := adapters.RatingNote(*nw.Rating)
		notes, marks = append(notes, text), append(marks, m)
	}
	if u.Changed.Has(adapters.FieldComment) && (nw.Comment != "" || u.Old.Comment != "") {
		text, m := adapters.CommentNote(nw.Comment)
		notes, marks = append(notes, text), append(marks, m)
	}
	if len(notes) == 0 {
		return nil
	}
	held, err := h.markers(ctx, th, what)
	if err != nil {
		return err
	}
	for i, text := range notes {
		if _, ok := held.Noted[marks[i]]; ok {
			continue
		}
		if err := h.v.Note(ctx, th, "note "+marks[i].Kind, text+"\n\n"+marks[i].Line()); err != nil {
			return waitOf(ref, fmt.Errorf("%s: note the %s: %w", what, marks[i].Kind, err))
		}
	}
	return nil
}

// waitOf returns err as the *adapters.WaitError it holds, or as one when
// it is the helpdesk's 429 (its Retry-After, or a wait the client put
// off); any other error as it is.
func waitOf(ref adapters.Ref, err error) error {
	var w *adapters.WaitError
	if errors.As(err, &w) {
		if w.Ref == "" {
			w.Ref = ref
		}
		return w
	}
	var herr *adapters.HTTPError
	if !errors.As(err, &herr) || herr.StatusCode != http.StatusTooManyRequests {
		return err
	}
	until := time.Now().Add(max(herr.RetryAfter, time.Second))
	var put *httpretry.WaitError
	if errors.As(err, &put) {
		until = put.Until
	}
	return &adapters.WaitError{Ref: ref, Until: until, Why: "the helpdesk answered 429 Too Many Requests"}
}

// Wait429 is how long a 429 answer asks to wait: its Retry-After, or a
// minute without one (the window of the helpdesks' per-minute budgets);
// ok is false for any other answer. It fits [adapters.HTTPClient.Wait].
func Wait429(resp *adapters.HTTPResponse, now time.Time) (wait time.Duration, ok bool) {
	if resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		return 0, false
	}
	if d, ok := httpretry.RetryAfter(resp.Header, now); ok {
		return d, true
	}
	return time.Minute, true
}

// TooMany returns a 429 answer, one the client did not wait out (an
// update's, which the engine puts off), as an [*adapters.WaitError] at
// [Wait429] that says why; ok is false for any other answer.
func TooMany(resp *adapters.HTTPResponse, why string) (w *adapters.WaitError, ok bool) {
	now := time.Now()
	wait, ok := Wait429(resp, now)
	if !ok {
		return nil, false
	}
	return &adapters.WaitError{Until: now.Add(wait), Why: why}, true
}

// Budget counts a helpdesk's writes per ticket in a sliding window, for a
// helpdesk that limits them (Zendesk: 30 updates of a ticket by one user
// in 10 minutes), so that an adapter waits rather than sends a write the
// helpdesk would refuse. The zero value allows everything; it is safe for
// concurrent use.
type Budget struct {
	// N writes of a ticket are allowed in any Window; N <= 0: no limit.
	N      int
	Window time.Duration
	// Why names the limit in the helpdesk's words, for the WaitError.
	Why string

	mu      sync.Mutex
	hits    map[int64][]time.Time // ticket -> times of the writes in the window
	blocked map[int64]time.Time   // ticket -> until when the helpdesk refuses writes
}

// Take spends one write of ticket id (named ref in errors) now, or
// returns a [*adapters.WaitError] saying when the next is allowed.
func (b *Budget) Take(id int64, ref adapters.Ref) error {
	if b.N <= 0 {
		return nil
	}
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hits == nil {
		b.hits, b.blocked = map[int64][]time.Time{}, map[int64]time.Time{}
	}
	if until, ok := b.blocked[id]; ok {
		if now.Before(until) {
			return &adapters.WaitError{Ref: ref, Until: until, Why: b.Why}
		}
		delete(b.blocked, id)
	}
	kept := b.hits[id][:0]
	for _, t := range b.hits[id] {
		if now.Sub(t) < b.Window {
			kept = append(kept, t)
		}
	}
	if len(kept) >= b.N {
		b.hits[id] = kept
		return &adapters.WaitError{Ref: ref, Until: kept[len(kept)-b.N].Add(b.Window), Why: b.Why}
	}
	if len(kept) == 0 {
		delete(b.hits, id)
	}
	b.hits[id] = append(kept, now)
	return nil
}

// Block records that the helpdesk refused a write of ticket id until
// until (a 429 with Retry-After).
func (b *Budget) Block(id int64, until time.Time) {
	if b.N <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.blocked == nil {
		b.hits, b.blocked = map[int64][]time.Time{}, map[int64]time.Time{}
	}
	if until.After(b.blocked[id]) {
		b.blocked[id] = until
	}
}
