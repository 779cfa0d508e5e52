package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
)

var _ adapters.Peeker = (*Adapter)(nil)

// PeekPrefix starts the provisional id PeekChanges gives an event whose
// file still waits in the outbox: "outbox/<file name>".
const PeekPrefix = "outbox/"

// PeekChanges reports what Changes would, writing nothing: the events of
// processed/ after cursor, then the files waiting in the outbox that
// Changes would pick up, with provisional ids (see [PeekPrefix]). Files
// Changes would set aside are left out. The cursor is returned unchanged.
func (a *Adapter) PeekChanges(ctx context.Context, cursor adapters.Cursor) ([]adapters.Event, adapters.Cursor, error) {
	var after int64
	if cursor != "" {
		n, err := strconv.ParseInt(string(cursor), 10, 64)
		if err != nil || n < 0 {
			return nil, cursor, fmt.Errorf("peek changes: cursor %q is not a sequence number: %w", cursor, adapters.ErrInvalid)
		}
		after = n
	}
	var evs []adapters.Event
	err := a.do(ctx, func() error {
		files, _, err := a.listProcessed()
		if err != nil {
			return err
		}
		for _, p := range files {
			if p.seq <= after {
				continue
			}
			original := p.name[strings.IndexByte(p.name, '-')+1:]
			ev, ok, err := a.peekFile(filepath.Join(a.processedDir(), p.name), nil, original, p.name)
			if err != nil {
				return err
			}
			if ok {
				evs = append(evs, ev)
			}
		}
		des, err := os.ReadDir(a.outboxDir())
		if err != nil && !errors.Is(err, fs.ErrNotExist) { // missing: read-only, nothing yet
			return fmt.Errorf("list outbox: %w", err)
		}
		now := time.Now()
		var cands []candidate
		for _, de := range des {
			if skipName(de.Name()) || !de.Type().IsRegular() {
				continue
			}
			info, err := de.Info()
			if err != nil {
				continue
			}
			if age := now.Sub(info.ModTime()); age < a.settle && age > -time.Minute {
				continue
			}
			cands = append(cands, candidate{de.Name(), info.ModTime(), info})
		}
		slices.SortFunc(cands, func(x, y candidate) int {
			if c := x.mod.Compare(y.mod); c != 0 {
				return c
			}
			return strings.Compare(x.name, y.name)
		})
		for _, c := range cands {
			if err := ctx.Err(); err != nil {
				return err
			}
			ev, ok, err := a.peekFile(filepath.Join(a.outboxDir(), c.name), c.info, c.name, PeekPrefix+c.name)
			if err != nil {
				return err
			}
			if ok {
				evs = append(evs, ev)
			}
		}
		return nil
	})
	if err != nil {
		return nil, cursor, fmt.Errorf("peek changes: %w", err)
	}
	return evs, cursor, nil
}

// peekFile reads one outbox file (waiting or processed; listed as
// [Adapter.readOutboxFile] takes it) into the event it makes, writing
// nothing; ok is false for a file that makes none.
func (a *Adapter) peekFile(path string, listed fs.FileInfo, name, id string) (adapters.Event, bool, error) {
	limit := int64(maxMaxOutboxBytes) // processed: accepted under whatever limit applied then
	if listed != nil {
		limit = a.maxOutbox
	}
	data, info, err := a.readOutboxFile(path, listed, limit)
	if errors.Is(err, fs.ErrNotExist) {
		return adapters.Event{}, false, nil
	}
	if err != nil {
		// Changes would set it aside, pass over it or try it again:
		// none of these makes an event now.
		return adapters.Event{}, false, nil
	}
	it, err := ParseOutbox(name, data)
	if err != nil {
		return adapters.Event{}, false, nil
	}
	event := ""
	if listed == nil {
		event = id // processed: its ticket may already hold it
	}
	t, _, err := a.resolve(it.Ticket, event)
	if err != nil || t == nil {
		return adapters.Event{}, false, err
	}
	var hd string
	if it.Kind == adapters.EventStatus {
		var ok bool
		if hd, _, ok = a.matchStatus(it.Status); !ok {
			return adapters.Event{}, false, nil
		}
	}
	return a.event(id, t, it, hd, info.ModTime()), true, nil
}
