package memory

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/ticketbridge/ticketbridge/adapters"
)

var _ adapters.Updater = (*Adapter)(nil)

// Update sets the fields of u.Changed of ticket ref, as the bridge. The
// backend holds each field natively (its department is its queue: a move
// lands where EnsureTicket files that department); a rating and a comment
// also become one internal note each per distinct value, found again by
// its marker. A field set to what the ticket holds makes no revision, and
// nothing it writes is reported by Changes.
func (a *Adapter) Update(ctx context.Context, ref adapters.Ref, u adapters.FieldUpdate) error {
	if err := a.check("update"); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("update %s: %w", ref, err)
	}
	nw := u.New
	if !utf8.ValidString(nw.Department) || !utf8.ValidString(nw.Title) || !utf8.ValidString(nw.Comment) {
		return fmt.Errorf("update %s: fields are not valid UTF-8: %w", ref, adapters.ErrInvalid)
	}
	if u.Changed.Has(adapters.FieldTitle) && strings.TrimSpace(nw.Title) == "" {
		return fmt.Errorf("update %s: the title is empty: %w", ref, adapters.ErrInvalid)
	}
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	ferr, after := b.enter(OpUpdate)
	if ferr != nil && !after {
		return ferr
	}
	tk := b.ticket(ref)
	if tk == nil {
		return fmt.Errorf("update %s: %w", ref, adapters.ErrNotFound)
	}
	cur := tk.cur
	if u.Changed.Has(adapters.FieldDepartment) {
		cur.Department = nw.Department
	}
	if u.Changed.Has(adapters.FieldTitle) {
		cur.Title = nw.Title
	}
	if u.Changed.Has(adapters.FieldDue) {
		cur.Due = nw.Due.UTC()
	}
	if u.Changed.Has(adapters.FieldRating) {
		cur.Rating = clone(nw.Rating)
		if nw.Rating != nil {
			text, m := adapters.RatingNote(*nw.Rating)
			b.noteOnce(tk, text, m)
		}
	}
	if u.Changed.Has(adapters.FieldComment) {
		cur.Comment = nw.Comment
		if nw.Comment != "" || u.Old.Comment != "" {
			text, m := adapters.CommentNote(nw.Comment)
			b.noteOnce(tk, text, m)
		}
	}
	if u.Changed.Has(adapters.FieldPriority) && nw.Priority != "" {
		cur.Priority = nw.Priority
	}
	if d := adapters.Diff(tk.cur, cur); d != 0 {
		tk.cur = cur
		tk.updates++
		b.record(change{ref: ref, kind: changeFields, byBridge: true, body: d.String()})
		a.log.LogAttrs(ctx, slog.LevelDebug, "updated fields", slog.String("ticket", tk.fields.UpstreamID),
			slog.String("fields", d.String()), slog.String("op", "update"))
	}
	return ferr
}

// noteOnce adds the bridge's internal note text ending with marker m,
// unless the ticket holds a note of the bridge with that marker. b.mu
// must be held.
func (b *Backend) noteOnce(t *ticket, text string, m adapters.Marker) {
	for _, msg := range t.messages {
		if got, ok := adapters.ParseMarker(msg.Body); ok && msg.ByBridge && got == m {
			return
		}
	}
	b.addMessage(t, MessageSnapshot{AuthorName: "ticketbridge", Body: text + "\n\n" + m.Line(), ByBridge: true})
}

// EditFields changes the fields in which of ticket ref to f's, as the
// agent author would in the helpdesk (retitling a ticket for the team's
// own use, moving it to another queue). The change is the team's: the
// bridge leaves it alone until the platform changes that field again.
func (b *Backend) EditFields(ref adapters.Ref, author string, which adapters.FieldSet, f adapters.Fields) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.ticket(ref)
	if t == nil {
		return fmt.Errorf("edit fields of %s: %w", ref, adapters.ErrNotFound)
	}
	cur := t.cur
	if which.Has(adapters.FieldDepartment) {
		cur.Department = f.Department
	}
	if which.Has(adapters.FieldTitle) {
		cur.Title = f.Title
	}
	if which.Has(adapters.FieldDue) {
		cur.Due = f.Due.UTC()
	}
	if which.Has(adapters.FieldRating) {
		cur.Rating = clone(f.Rating)
	}
	if which.Has(adapters.FieldComment) {
		cur.Comment = f.Comment
	}
	if which.Has(adapters.FieldPriority) {
		cur.Priority = f.Priority
	}
	t.cur = cur
	b.record(change{ref: ref, kind: changeFields, author: author, body: which.String()})
	return nil
}

func clone(r *float64) *float64 {
	if r == nil {
		return nil
	}
	v := *r
	return &v
}
