package adapters

import (
	"context"
	"errors"
	"log/slog"
	"strings"
)

// NoteUnsent is how every adapter that sees attachments keeps them from
// being dropped in silence: the API carries text only, so a file an agent
// attaches to a reply or note cannot reach the guest. files names, by
// event id, the files of the events of evs that carried some. For each
// such event, note leaves the helpdesk ticket one internal note saying
// which files were not sent ([UnsentNote]); NoteUnsent then returns evs
// without the replies and notes that have no text to send (a reply that
// was only a photo), in their order. The text of the others goes upstream
// as it is.
//
// note must be idempotent: Changes runs before the engine stores the
// cursor after it, so a crash in between, or an overlap the adapter reads
// again, reports the same event twice. Each adapter's note therefore ends
// with the marker [ticketbridge unsent <event id>] and is not written when
// the ticket holds it already. (Writing the note only once the cursor
// past the event is stored would not do: the adapter learns of that only
// on its next call, and a crash there repeats the note the same way.)
//
// A note the helpdesk refuses for good (the ticket is gone,
// [ErrNotFound]; the text refused, [ErrInvalid]) is logged at warning
// level and skipped, so that one ticket cannot stop the stream of
// changes; any other error is returned, and Changes fails with its cursor
// unmoved and runs again. A nil note writes nothing (a dry run's
// PeekChanges).
func NoteUnsent(ctx context.Context, log *slog.Logger, evs []Event, files map[string][]string, note func(context.Context, Event, []string) error) ([]Event, error) {
	out := make([]Event, 0, len(evs))
	for _, ev := range evs {
		names := files[ev.ID]
		if len(names) > 0 && note != nil {
			err := note(ctx, ev, names)
			switch {
			case errors.Is(err, ErrNotFound), errors.Is(err, ErrInvalid):
				if log != nil {
					log.LogAttrs(ctx, slog.LevelWarn, "cannot note the files not sent upstream", slog.String("op", "note unsent"),
						slog.String("ticket", ev.UpstreamTicketID), slog.String("event", ev.ID), slog.Any("error", err))
				}
			case err != nil:
				return nil, err
			}
		}
		if len(names) > 0 && (ev.Kind == EventReply || ev.Kind == EventNote) && strings.TrimSpace(ev.Body) == "" {
			continue
		}
		out = append(out, ev)
	}
	return out, nil
}
