package sync_test

import (
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/state/statetest"
)

// TestQuietCycleWritesNothing: once a run of quiet cycles has stored one
// record, a quiet cycle commits nothing to the state; a cycle that
// changed something, and a quiet one ten minutes after the last record,
// store theirs.
func TestQuietCycleWritesNothing(t *testing.T) {
	e := newQuietEnv(t)
	id := e.newTicket("Two towels to room 214")
	e.quiesce()
	lastStored := func() time.Time {
		t.Helper()
		var start time.Time
		if err := e.store.View(t.Context(), func(tx *state.Tx) error {
			c, _, err := tx.LastCycle()
			start = c.Start
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return start
	}
	// A cycle that read a ticket (a full read's slot, which the ticket's
	// id places, and the reference server draws the id) writes what it
	// read, and so stores its record. The rule is about a cycle that read
	// nothing after one that read nothing either: it commits nothing.
	checked, prevQuiet := 0, false
	for range 10 {
		e.clock.Advance(time.Second)
		before, stored := e.store.Commits(), lastStored()
		r := e.cycle()
		if r.Outcome != "ok" || r.Mirrored+r.Created+r.Sent+r.StatusDown != 0 {
			t.Fatalf("quiet cycle: %s", r)
		}
		quiet := r.Refreshed == 0 && len(r.Reconcile) == 0
		if quiet && prevQuiet {
			checked++
			if n := e.store.Commits() - before; n != 0 {
				t.Errorf("a quiet cycle after a quiet one committed %d writes, want none: %s", n, r)
			}
			if got := lastStored(); !got.Equal(stored) {
				t.Errorf("a quiet cycle after a quiet one stored its record (start %s, want the earlier %s)", got, stored)
			}
		}
		prevQuiet = quiet
	}
	if checked < 2 {
		t.Fatalf("only %d quiet cycles after a quiet one, of ten", checked)
	}

	e.guest(id, "And a bathrobe, please.")
	r := e.cycle()
	if r.Mirrored != 1 || !lastStored().Equal(r.Start) {
		t.Errorf("a cycle that mirrored a message: %s; its record start %s, want %s", r, lastStored(), r.Start)
	}
	e.quiesce()
	stored := lastStored()
	e.clock.Advance(10 * time.Minute)
	r = e.cycle()
	if got := lastStored(); got.Equal(stored) {
		t.Errorf("ten minutes on, cycle %s stored no record (last stored %s)", r, got)
	}
}

// maxQuietRoundTrips is what a quiet cycle may cost on PostgreSQL: one
// read of the cycle's working set (state.Store.ViewWorkingSet), no write.
const maxQuietRoundTrips = 1

// TestQuietCycleRoundTrips: on PostgreSQL a quiet cycle takes one round
// trip, and a busy one after it still carries each change across.
func TestQuietCycleRoundTrips(t *testing.T) {
	e := newQuietEnv(t)
	e.path = statetest.PostgresURL(t)
	id := e.newTicket("Two towels to room 214")
	e.newTicket("A taxi at six")
	e.quiesce()
	// As in TestQuietCycleWritesNothing: a cycle that reads a ticket (a
	// full read's slot) writes; the bound is on a cycle that read nothing
	// after one that read nothing either.
	checked, prevQuiet := 0, false
	for range 10 {
		e.clock.Advance(time.Second)
		rt := e.store.RoundTrips()
		r := e.cycle()
		if r.Outcome != "ok" || r.Events != 0 {
			t.Fatalf("quiet cycle: %s", r)
		}
		quiet := r.Refreshed == 0 && len(r.Reconcile) == 0
		if quiet && prevQuiet {
			checked++
			if n := e.store.RoundTrips() - rt; n > maxQuietRoundTrips {
				t.Errorf("a quiet cycle took %d round trips to PostgreSQL, want at most %d", n, maxQuietRoundTrips)
			}
		}
		prevQuiet = quiet
	}
	if checked < 2 {
		t.Fatalf("only %d quiet cycles after a quiet one, of ten", checked)
	}

	e.guest(id, "And a bathrobe, please.")
	if _, err := e.backend.Reply(e.ref(id), "Ana", "On its way."); err != nil {
		t.Fatal(err)
	}
	if r := e.cycle(); r.Mirrored != 1 || r.Sent != 1 {
		t.Errorf("a cycle with a guest message and a staff reply: %s, want one mirrored and one sent", r)
	}
}

// newQuietEnv is an env whose tickets' reconcile slots stay out of the
// test's minutes: a slot follows from the ticket's id, which the reference
// server draws, and a reconcile is a read and a write of its own. With
// one slot in some eleven years, one falls in a test's few minutes about
// once in a million runs.
func newQuietEnv(t *testing.T) *env {
	e := newEnv(t)
	e.cfg.ReconcileInterval = 100_000 * time.Hour
	return e
}
