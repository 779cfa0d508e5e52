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
	e := newEnv(t)
	id := e.newTicket("Two towels to room 214")
	e.quiesce() // the first quiet cycle after work stores its record
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
	before, stored := e.store.Commits(), lastStored()
	for range 3 {
		e.clock.Advance(time.Second)
		if r := e.cycle(); r.Outcome != "ok" {
			t.Fatalf("quiet cycle: %s", r)
		}
	}
	if n := e.store.Commits() - before; n != 0 {
		t.Errorf("three quiet cycles committed %d writes, want none", n)
	}
	if got := lastStored(); !got.Equal(stored) {
		t.Errorf("a quiet cycle stored its record (start %s, want the earlier %s)", got, stored)
	}

	e.guest(id, "And a bathrobe, please.")
	r := e.cycle()
	if r.Mirrored != 1 || !lastStored().Equal(r.Start) {
		t.Errorf("a cycle that mirrored a message: %s; its record start %s, want %s", r, lastStored(), r.Start)
	}
	e.quiesce()
	stored = lastStored()
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
	e := newEnv(t)
	e.path = statetest.PostgresURL(t)
	id := e.newTicket("Two towels to room 214")
	e.newTicket("A taxi at six")
	e.quiesce()
	e.clock.Advance(time.Second)
	e.cycle() // the first quiet cycle stores its record
	for range 3 {
		e.clock.Advance(time.Second)
		rt := e.store.RoundTrips()
		if r := e.cycle(); r.Outcome != "ok" || r.Refreshed+r.Events != 0 {
			t.Fatalf("quiet cycle: %s", r)
		}
		if n := e.store.RoundTrips() - rt; n > maxQuietRoundTrips {
			t.Errorf("a quiet cycle took %d round trips to PostgreSQL, want at most %d", n, maxQuietRoundTrips)
		}
	}

	e.guest(id, "And a bathrobe, please.")
	if _, err := e.backend.Reply(e.ref(id), "Ana", "On its way."); err != nil {
		t.Fatal(err)
	}
	if r := e.cycle(); r.Mirrored != 1 || r.Sent != 1 {
		t.Errorf("a cycle with a guest message and a staff reply: %s, want one mirrored and one sent", r)
	}
}
