package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"sync"

	"github.com/ticketbridge/ticketbridge/internal/atomicfile"
)

// flushWorkers bounds the folders Flush syncs at once: syncs that wait
// together are committed together by the file system.
const flushWorkers = 16

// Flush makes durable the writes of EnsureTicket, Append and SetStatus
// that returned before it: each folder they changed is synced once, where
// they synced theirs at every write (see adapters.Flusher), several at a
// time. The engine calls it before it stores what those writes did. The
// adapter's other writes sync their folders themselves. A folder removed
// meanwhile has nothing left to sync.
func (a *Adapter) Flush(context.Context) error {
	a.flushMu.Lock()
	defer a.flushMu.Unlock()
	a.mu.Lock()
	if len(a.pending) == 0 {
		a.mu.Unlock()
		return nil
	}
	dirs := slices.Sorted(maps.Keys(a.pending))
	// A new map, not the old one cleared: a Go map keeps the room it grew,
	// and an import's hundreds of folders would stay a hotel's for good.
	a.pending = map[string]bool{}
	a.mu.Unlock()
	errs := make([]error, len(dirs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(len(dirs), flushWorkers) {
		wg.Go(func() {
			for i := range next {
				if err := atomicfile.SyncDir(dirs[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
					errs[i] = err
				}
			}
		})
	}
	for i := range dirs {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		a.mu.Lock()
		for i, d := range dirs {
			if errs[i] != nil {
				a.pending[d] = true // synced at the next Flush
			}
		}
		a.mu.Unlock()
		return fmt.Errorf("flush files helpdesk: %w", err)
	}
	return nil
}
