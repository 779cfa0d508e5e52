package sync

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
)

// Quiet reads are kept in memory.
//
// A read that found nothing changes only when the ticket is read next:
// its NextDue, DueReason and QuietStreak, and for a reconcile that found
// both sides in sync, when and how it was last reconciled. Storing that
// after every such read was most of what a quiet hotel still wrote: each
// ticket's full read (once per TICKETBRIDGE_FULL_READ_INTERVAL) and its
// reconcile (once per TICKETBRIDGE_RECONCILE_INTERVAL) find nothing in a
// quiet hotel, so a hotel of 100 requests at a 30 s schedule committed in
// most of its cycles (two fsyncs on bbolt, a round trip on PostgreSQL).
//
// The engine keeps what such a read changed in memory instead, against
// the revision of the record it read (state.Ticket.Revision), and lays it
// over the record each time the cycle reads the tickets, while the stored
// record is still that revision. Any write of the ticket (a list showed
// it changed, a failure, a command) makes a new revision, and the stored
// record wins. What is kept is stored with the next cycle record (a busy
// cycle's, or a quiet run's once in ten minutes: quietRecordEvery), and
// when the daemon stops (Flush). A crash loses it, which costs
// a read (or a reconcile) of those tickets in the next cycle: a read
// finds what it finds, so nothing is missed and nothing is sent twice.

// deferredRead is what a quiet read changed in a ticket's record (its
// schedule, and what a reconcile that found both sides in sync records),
// and the revision of the record it read. Its times are Unix nanoseconds
// (0: the zero time): a daemon of thousands of hotels keeps up to one a
// ticket, and a time.Time is three times the size.
type deferredRead struct {
	rev           uint64
	nextDue       int64
	reconciledAt  int64
	reason        string
	lastReconcile string
	streak        int32
	reconcileSoon bool
}

// deferredOf returns what d keeps of t. Its times come back as state
// stores them, in UTC and without the clock's monotonic reading: two times
// that both carry one compare by it, and the monotonic and the wall clock
// drift apart, so a next read kept with it came out a few microseconds
// after the full-read slot computed from the wall clock, and discover
// stored it again in most cycles.
func deferredOf(t state.Ticket) deferredRead {
	return deferredRead{rev: t.Revision(), nextDue: packTime(t.NextDue), reason: t.DueReason, streak: int32(t.QuietStreak),
		reconciledAt: packTime(t.ReconciledAt), lastReconcile: t.LastReconcile, reconcileSoon: t.ReconcileSoon}
}

func (d deferredRead) apply(t *state.Ticket) {
	t.NextDue, t.DueReason, t.QuietStreak = unpackTime(d.nextDue), d.reason, int(d.streak)
	t.ReconciledAt, t.LastReconcile, t.ReconcileSoon = unpackTime(d.reconciledAt), d.lastReconcile, d.reconcileSoon
}

// packTime returns t as Unix nanoseconds, 0 for the zero time.
func packTime(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// unpackTime is packTime's inverse: the time in UTC, with no monotonic
// reading.
func unpackTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// quietRead reports whether r is a read that found nothing, a reconcile
// that found both sides in sync included: the record it would store
// differs from the one read only in what a deferredRead holds.
func quietRead(r refreshResult) bool {
	inSync := r.reconciled == "" || (r.reconciled == ReconcileInSync && !r.recUp && r.recAppended == 0)
	if !r.read || r.created || r.adopted || r.statusDown || r.unsignalled || r.limited != nil ||
		r.seed != nil || len(r.mirrored) > 0 || len(r.supersede) > 0 || len(r.journal) > 0 ||
		len(r.conflictNote) > 0 || len(r.audit) > 0 || !inSync || r.reconciledTouch || r.orig.Revision() == 0 {
		return false
	}
	t := r.t
	d := deferredOf(r.orig)
	d.apply(&t)
	return t.Same(r.orig)
}

// deferRead keeps what quiet read r changed in memory.
func (e *Engine) deferRead(r refreshResult) {
	if e.deferred == nil {
		e.deferred = map[string]deferredRead{}
	}
	d := deferredOf(r.t)
	d.rev = r.orig.Revision()
	e.deferred[r.t.ID] = d
}

// overlay lays the schedules kept in memory over tickets as read from
// state, and forgets those whose record was written since.
func (e *Engine) overlay(tickets []state.Ticket) {
	if len(e.deferred) == 0 {
		return
	}
	for i := range tickets {
		t := &tickets[i]
		d, ok := e.deferred[t.ID]
		if !ok {
			continue
		}
		if t.Revision() != d.rev {
			delete(e.deferred, t.ID) // written since: the record wins
			continue
		}
		d.apply(t)
	}
}

// storeDeferred writes the schedules kept in memory into tx, each onto
// its record if that is still the revision it was read from.
func (e *Engine) storeDeferred(tx *state.Tx) error {
	if len(e.deferred) == 0 {
		return nil
	}
	ids := slices.Sorted(maps.Keys(e.deferred))
	cur, err := tx.Tickets(ids)
	if err != nil {
		return err
	}
	for _, id := range ids {
		t, ok := cur[id]
		if d := e.deferred[id]; ok && t.Revision() == d.rev {
			d.apply(&t)
			if err := putTicket(tx, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// Flush stores the schedules of the quiet reads the engine keeps in
// memory (see above), between cycles: the daemon calls it when it stops
// or replaces the engine. It is a no-op when there are none, and on a
// read-only state.
func (e *Engine) Flush(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.deferred) == 0 || e.st.ReadOnly() {
		return nil
	}
	if err := e.st.Update(ctx, e.storeDeferred); err != nil {
		return fmt.Errorf("store the next reads of %d tickets: %w", len(e.deferred), err)
	}
	e.deferred = nil
	return nil
}
