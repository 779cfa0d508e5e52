package saas

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/ticketbridge/ticketbridge/adapters"
)

var _ adapters.Peeker = (*Helpdesk[int])(nil)

// Changes returns the vendor's events after cur, without the adapter's
// own writes. For an event whose files the API cannot carry it leaves the
// ticket the note of [UnsentText], once (see [adapters.NoteUnsent] for
// why a marker and not the cursor keeps it from being written twice),
// and an event with files and no text is not returned.
func (h *Helpdesk[T]) Changes(ctx context.Context, cur adapters.Cursor) ([]adapters.Event, adapters.Cursor, error) {
	return h.changes(ctx, cur, h.noteUnsent)
}

// PeekChanges is Changes without the notes: it writes nothing, for a dry
// run (see [adapters.Peeker]).
func (h *Helpdesk[T]) PeekChanges(ctx context.Context, cur adapters.Cursor) ([]adapters.Event, adapters.Cursor, error) {
	return h.changes(ctx, cur, nil)
}

func (h *Helpdesk[T]) changes(ctx context.Context, cur adapters.Cursor, note func(context.Context, adapters.Event, []string) error) ([]adapters.Event, adapters.Cursor, error) {
	if err := h.in.open(); err != nil {
		return nil, cur, err
	}
	me, err := h.v.Self(ctx)
	if err != nil {
		return nil, cur, err
	}
	evs, files, next, err := h.v.Events(ctx, cur, me)
	if err != nil {
		return nil, cur, err
	}
	evs, err = adapters.NoteUnsent(ctx, h.log, evs, files, note)
	if err != nil {
		return nil, cur, err
	}
	return evs, next, nil
}

// noteUnsent writes the note naming ev's files unless the ticket holds
// its marker already.
func (h *Helpdesk[T]) noteUnsent(ctx context.Context, ev adapters.Event, files []string) error {
	what := fmt.Sprintf("note the files of event %s on %s ticket %s", ev.ID, h.in.Name, ev.Ref)
	th, err := h.v.Resolve(ctx, ev.Ref)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	marks, err := h.markers(ctx, th, what)
	if err != nil {
		return err
	}
	if marks.Unsent[ev.ID] {
		return nil
	}
	if err := h.v.Note(ctx, th, "note unsent", UnsentText(ev, files)); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	h.log.LogAttrs(ctx, slog.LevelInfo, "noted the files not sent upstream", slog.String("op", "note unsent"),
		slog.String("ticket", ev.UpstreamTicketID), slog.String("event", ev.ID), slog.Int("files", len(files)))
	return nil
}
