package sync_test

import (
	"context"
	"fmt"
	gosync "sync"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
)

// flushRecorder is a helpdesk that makes its writes durable only at Flush
// (see adapters.Flusher). It records what each Flush covers, and whether
// state already recorded any of it then: a write state records before the
// Flush that covers it is what a crash could take from the helpdesk.
type flushRecorder struct {
	adapters.Helpdesk
	e *env

	mu       gosync.Mutex
	upstream map[adapters.Ref]string // ref -> upstream ticket id
	unsynced []string                // "ticket <id>" or "message <ticket id> <message id>": written since the last Flush
	flushes  int
	early    []string // writes state recorded before their Flush
}

var _ adapters.Flusher = (*flushRecorder)(nil)

func (h *flushRecorder) EnsureTicket(ctx context.Context, t adapters.Ticket) (adapters.Ref, error) {
	ref, err := h.Helpdesk.EnsureTicket(ctx, t)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		h.upstream[ref] = t.UpstreamID
		h.unsynced = append(h.unsynced, "ticket "+t.UpstreamID)
	}
	return ref, err
}

func (h *flushRecorder) Append(ctx context.Context, ref adapters.Ref, msgs []adapters.Message) ([]adapters.Appended, error) {
	app, err := h.Helpdesk.Append(ctx, ref, msgs)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range app {
		h.unsynced = append(h.unsynced, fmt.Sprintf("message %s %s", h.upstream[ref], a.UpstreamID))
	}
	return app, err
}

func (h *flushRecorder) SetStatus(ctx context.Context, ref adapters.Ref, s guestapi.Status) error {
	err := h.Helpdesk.SetStatus(ctx, ref, s)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unsynced = append(h.unsynced, "status "+h.upstream[ref])
	return err
}

// Flush checks that state records none of the writes it covers yet.
func (h *flushRecorder) Flush(ctx context.Context) error {
	h.mu.Lock()
	writes := h.unsynced
	h.unsynced = nil
	h.flushes++
	h.mu.Unlock()
	err := h.e.store.View(ctx, func(tx *state.Tx) error {
		for _, w := range writes {
			var kind, id, msg string
			fmt.Sscan(w, &kind, &id, &msg)
			switch kind {
			case "ticket":
				t, ok, err := tx.Ticket(id)
				if err != nil {
					return err
				}
				if ok && t.Ref != "" {
					h.early = append(h.early, w)
				}
			case "message":
				m, err := tx.Mirrored(id)
				if err != nil {
					return err
				}
				if _, ok := m[msg]; ok {
					h.early = append(h.early, w)
				}
			}
		}
		return nil
	})
	return err
}

// TestStateWaitsForHelpdeskFlush: the state transaction that records a
// ticket created or a message mirrored comes after the Flush of the
// helpdesk that made them durable, batch after batch.
func TestStateWaitsForHelpdeskFlush(t *testing.T) {
	e := newEnv(t)
	const n = 150 // two batches (a list shows 200 at most)
	for i := range n {
		e.newTicket(fmt.Sprintf("request %d", i))
	}
	var rec *flushRecorder
	e.wrapHD = func(h adapters.Helpdesk) adapters.Helpdesk {
		rec = &flushRecorder{Helpdesk: h, e: e, upstream: map[adapters.Ref]string{}}
		return rec
	}
	rep := e.cycle()
	if rep.Created != n || rep.Mirrored != n {
		t.Fatalf("import: %s", rep)
	}
	id := e.ts.Server.Tickets(e.ts.Org)[0].ID
	e.clock.Advance(time.Second) // so that the message moves updated_at, and a list shows it
	e.guest(id, "one more")
	if rep := e.tick(); rep.Mirrored != 1 {
		t.Fatalf("the guest message: %s, want it mirrored", rep)
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.early) > 0 {
		t.Fatalf("state recorded %d writes before the helpdesk's Flush, such as %q", len(rec.early), rec.early[0])
	}
	if len(rec.unsynced) > 0 {
		t.Fatalf("%d writes never flushed, such as %q", len(rec.unsynced), rec.unsynced[0])
	}
	if rec.flushes < 3 { // two in the import, one in the tick
		t.Fatalf("%d flushes for %d tickets, want one per batch", rec.flushes, n)
	}
}
