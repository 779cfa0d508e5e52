package sync

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"golang.org/x/sync/semaphore"

	"github.com/ticketbridge/ticketbridge/state"
)

// importGateMin is the smallest import that takes one of a fleet's import
// slots: a hotel's few new requests never wait for another hotel's import.
const importGateMin = 20

// Imports bounds the large imports (a hotel's first cycle, a backlog of
// importGateMin or more requests) the engines sharing it run at once. A
// daemon of many hotels shares one: when 2,000 hotels start together,
// each import holds its planned reads and results in memory until its
// batches are stored, and with every hotel importing at once they all
// hold them for the whole start, although the API's request slots let
// only a few progress at a time. Bounded, the hotels import a few at a
// time at the same total speed: the first are served early, not all at
// the end, and the memory is a few hotels' imports.
//
// The bound is in reads in flight: an import takes as many of them as it
// reads at once (its TICKETBRIDGE_CONCURRENCY), so that the imports at
// once are just enough to keep the fleet's request slots busy. Counted in
// imports, 32 slots let 32 imports of 4 reads each hold their memory
// while 24 of them waited for a request slot. A slot is held for the
// refresh phase only, which the cycle's deadline (TICKETBRIDGE_CYCLE_MAX)
// bounds; a cycle whose context ends while it waits ends without reading,
// and its imports stay due.
type Imports struct {
	reads   int64
	sem     *semaphore.Weighted
	waiting atomic.Int64
}

// NewImports returns room for large imports with n reads in flight among
// them (the fleet's requests in flight); n < 1 means 1.
func NewImports(n int) *Imports {
	n = max(1, n)
	return &Imports{reads: int64(n), sem: semaphore.NewWeighted(int64(n))}
}

// acquire waits until an import of reads reads at once fits, or for the
// end of ctx; release gives its room back. An import wider than the whole
// bound takes all of it.
func (im *Imports) acquire(ctx context.Context, reads int) (release func(), err error) {
	w := min(max(1, int64(reads)), im.reads)
	release = func() { im.sem.Release(w) }
	if im.sem.TryAcquire(w) {
		return release, nil
	}
	im.waiting.Add(1)
	defer im.waiting.Add(-1)
	if err := im.sem.Acquire(ctx, w); err != nil {
		return nil, context.Cause(ctx)
	}
	return release, nil
}

// Waiting is how many imports wait for a slot now.
func (im *Imports) Waiting() int { return int(im.waiting.Load()) }

// waitForImport takes one of the engine's import slots when tracked holds
// importGateMin tickets or more to import, waiting for one, and returns
// what gives it back; false when the cycle ended while it waited (it
// stopped; the imports stay due).
func (c *cycle) waitForImport(tracked []state.Ticket) (release func(), ok bool) {
	none := func() {}
	if c.e.imports == nil {
		return none, true
	}
	n := 0
	for _, t := range tracked {
		if t.Ref == "" {
			n++
		}
	}
	if n < importGateMin {
		return none, true
	}
	c.e.log.LogAttrs(c.ctx, slog.LevelDebug, fmt.Sprintf("import of %d tickets: taking an import slot", n), slog.String("op", "import"))
	release, err := c.e.imports.acquire(c.ctx, c.e.cfg.Concurrency)
	if err != nil {
		c.stop(fmt.Errorf("wait for an import slot: %w", err))
		return nil, false
	}
	return release, true
}
