package sync_test

import (
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
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
		if err := e.store.View(func(tx *state.Tx) error {
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
