package sync

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/ticketbridge/ticketbridge/state"
)

// importGateMin is the smallest import that takes one of a fleet's import
// slots: a hotel's few new requests never wait for another hotel's import.
const importGateMin = 20

// Imports bounds how many large imports (a hotel's first cycle, a
// backlog of importGateMin or more requests) the engines sharing it run at
// once. A daemon of many hotels shares one: when 2,000 hotels start
// together, each import holds its planned reads and results in memory
// until its batches are stored, and with every hotel importing at once
// they all hold them for the whole start, although the API's request
// slots let only a few progress at a time. Bounded, the hotels import a
// few at a time at the same total speed: the first are served early,
// not all at the end, and the memory is a few hotels' imports. A slot
// is held for the refresh phase only, which the cycle's deadline
// (TICKETBRIDGE_CYCLE_MAX) bounds; a cycle whose context ends while it
// waits ends without reading, and its imports stay due.
type Imports struct {
	slots   chan struct{}
	waiting atomic.Int64
}

// NewImports returns room for n large imports at once; n < 1 means 1.
func NewImports(n int) *Imports {
	return &Imports{slots: make(chan struct{}, max(1, n))}
}

// acquire waits for a slot or the end of ctx; release gives it back.
func (im *Imports) acquire(ctx context.Context) (release func(), err error) {
	select {
	case im.slots <- struct{}{}:
		return func() { <-im.slots }, nil
	default:
	}
	im.waiting.Add(1)
	defer im.waiting.Add(-1)
	select {
	case im.slots <- struct{}{}:
		return func() { <-im.slots }, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
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
	release, err := c.e.imports.acquire(c.ctx)
	if err != nil {
		c.stop(fmt.Errorf("wait for an import slot: %w", err))
		return nil, false
	}
	return release, true
}
