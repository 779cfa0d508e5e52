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
// while 24 of them waited for a request slot. A slot is taken before
// discover stores a large import (or, for imports stored earlier, when
// refresh starts) and held to refresh's end, which the cycle's deadline
// (TICKETBRIDGE_CYCLE_MAX) bounds; a cycle whose context ends while it
// waits ends without storing or reading, and its imports stay due.
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

// weight is the room an import of reads reads at once takes: an import
// wider than the whole bound takes all of it.
func (im *Imports) weight(reads int) int64 { return min(max(1, int64(reads)), im.reads) }

// tryAcquire takes room for an import of reads reads at once if it is
// free now; release gives it back.
func (im *Imports) tryAcquire(reads int) (release func(), ok bool) {
	w := im.weight(reads)
	if !im.sem.TryAcquire(w) {
		return nil, false
	}
	return func() { im.sem.Release(w) }, true
}

// acquire waits until an import of reads reads at once fits, or for the
// end of ctx; release gives its room back.
func (im *Imports) acquire(ctx context.Context, reads int) (release func(), err error) {
	if release, ok := im.tryAcquire(reads); ok {
		return release, nil
	}
	w := im.weight(reads)
	release = func() { im.sem.Release(w) }
	im.waiting.Add(1)
	defer im.waiting.Add(-1)
	if err := im.sem.Acquire(ctx, w); err != nil {
		return nil, context.Cause(ctx)
	}
	return release, nil
}

// Waiting is how many imports wait for a slot now.
func (im *Imports) Waiting() int { return int(im.waiting.Load()) }

// importGate takes room in the engine's import slots when tracked holds
// importGateMin tickets or more to import and the room is free now; wait
// is true when it is not, and the cycle is to wait for it
// (waitForImport). release gives the room back.
func (c *cycle) importGate(tracked []state.Ticket) (release func(), wait bool) {
	none := func() {}
	if c.e.imports == nil {
		return none, false
	}
	if release := c.importRoom; release != nil {
		c.importRoom = nil // refresh gives it back
		return release, false
	}
	n := 0
	for _, t := range tracked {
		if t.Ref == "" {
			n++
		}
	}
	if n < importGateMin {
		return none, false
	}
	if release, ok := c.e.imports.tryAcquire(c.e.cfg.Concurrency); ok {
		return release, false
	}
	c.e.log.LogAttrs(c.ctx, slog.LevelDebug, fmt.Sprintf("import of %d tickets: waiting for room among the imports", n), slog.String("op", "import"))
	return nil, true
}

// takeImportRoom takes room in the engine's import slots for the import
// discover planned (importGateMin tickets or more) if it is free now: the
// room is then the cycle's until its refresh has read them (importRoom).
// It reports false when there is none free; without import slots there is
// nothing to take.
func (c *cycle) takeImportRoom() bool {
	if c.e.imports == nil {
		return true
	}
	release, ok := c.e.imports.tryAcquire(c.e.cfg.Concurrency)
	if ok {
		c.importRoom = release
	}
	return ok
}

// waitImportRoom waits for room for an import of n tickets, then lists
// the queue again into in: the caller let go of its lists and its plan
// while it waited, and plans again. It reports false when the cycle ended
// while it waited or listed.
func (c *cycle) waitImportRoom(n int, in *discoverInput) bool {
	c.e.log.LogAttrs(c.ctx, slog.LevelDebug, fmt.Sprintf("import of %d tickets: waiting for room among the imports", n), slog.String("op", "import"))
	release, ok := c.waitForImport()
	if !ok {
		return false
	}
	c.importRoom = release
	in.listed, in.cover, in.listOK = c.listQueue(*in)
	c.endLists()
	return !c.stopped()
}

// dropImportRoom gives back the import room discover took, when the
// cycle's refresh did not take it over.
func (c *cycle) dropImportRoom() {
	if c.importRoom != nil {
		c.importRoom()
		c.importRoom = nil
	}
}

// waitForImport waits for room in the engine's import slots and returns
// what gives it back; false when the cycle ended while it waited (it
// stopped; the imports stay due).
func (c *cycle) waitForImport() (release func(), ok bool) {
	release, err := c.e.imports.acquire(c.ctx, c.e.cfg.Concurrency)
	if err != nil {
		c.stop(fmt.Errorf("wait for an import slot: %w", err))
		return nil, false
	}
	return release, true
}
