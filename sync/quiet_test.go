package sync_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/state/statetest"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
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

// TestQuietFullReadsRoundTrips: on PostgreSQL a cycle whose full reads
// find nothing takes two round trips however many it reads: the working
// set, and the message ids of the tickets it reads.
func TestQuietFullReadsRoundTrips(t *testing.T) {
	e := newQuietEnv(t)
	e.path = statetest.PostgresURL(t)
	for i := range 8 {
		e.newTicket(fmt.Sprintf("Request %d", i))
	}
	e.quiesce()
	e.clock.Advance(10 * time.Minute) // past every full-read slot, and the record's ten minutes
	e.cycle()
	reads := 0
	for range 36 { // nine minutes, within ten of that record
		e.clock.Advance(15 * time.Second)
		rt := e.store.RoundTrips()
		r := e.cycle()
		if r.Outcome != "ok" || r.Mirrored+r.Created+r.Sent+r.StatusDown+r.Events != 0 {
			t.Fatalf("quiet cycle: %s", r)
		}
		if n := e.store.RoundTrips() - rt; r.Refreshed > 0 && n > 2 {
			t.Errorf("a cycle whose %d full reads found nothing took %d round trips to PostgreSQL, want 2", r.Refreshed, n)
		}
		reads += r.Refreshed
	}
	if reads == 0 {
		t.Fatal("no full read in nine minutes")
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

// TestQuietFullReadsWriteNothing: the full reads of a quiet hotel (each
// ticket once per full-read interval, at a slot its id places) find
// nothing and commit nothing. Their next reads are kept in memory, so no
// ticket is read twice in the interval, and stored with the next cycle
// record: after it, a restart finds no ticket due.
func TestQuietFullReadsWriteNothing(t *testing.T) {
	e := newQuietEnv(t)
	var ids []string
	for i := range 6 {
		ids = append(ids, e.newTicket(fmt.Sprintf("Request %d", i)))
	}
	e.quiesce()
	e.clock.Advance(10 * time.Minute) // past every full-read slot, and the record's ten minutes
	e.cycle()

	// Nine minutes of cycles, all within ten minutes of that record.
	reads := 0
	for range 36 {
		e.clock.Advance(15 * time.Second)
		before := e.store.Commits()
		r := e.cycle()
		if r.Outcome != "ok" || r.Mirrored+r.Created+r.Sent+r.StatusDown+r.Events != 0 {
			t.Fatalf("quiet cycle: %s", r)
		}
		if n := e.store.Commits() - before; n != 0 {
			t.Fatalf("a quiet cycle that read %d tickets committed %d writes, want none: %s", r.Refreshed, n, r)
		}
		reads += r.Refreshed
	}
	if reads == 0 || reads > len(ids) {
		t.Fatalf("%d reads of %d tickets in nine minutes, want each ticket's full read at most once (and some)", reads, len(ids))
	}

	e.clock.Advance(90 * time.Second) // the record's ten minutes are up
	before := e.store.Commits()
	e.cycle()
	if n := e.store.Commits() - before; n != 1 {
		t.Fatalf("the cycle ten minutes on committed %d writes, want one (its record, with the next reads)", n)
	}
	for _, id := range ids {
		if st := e.stateTicket(id); !st.NextDue.After(e.clock.Now()) {
			t.Errorf("ticket %s: stored next read %s (%s), want after now (%s)", id, st.NextDue, st.DueReason, e.clock.Now())
		}
	}
	e.open() // a restart
	if r := e.cycle(); r.Refreshed != 0 {
		t.Errorf("after a restart the first cycle read %d tickets, want none: %s", r.Refreshed, r)
	}
}

// keptRead makes a hotel of one quiet ticket and runs cycles until one
// reads the ticket, finds nothing and commits nothing: its next read is
// kept in memory. It returns the ticket's id. The full-read interval is
// other than the cycle record's ten minutes: with ten, the full read of a
// single ticket can fall in the record's cycle (which stores the read
// too) every time once it did.
func keptRead(t *testing.T) (*env, string) {
	t.Helper()
	e := newQuietEnv(t)
	e.cfg.FullReadInterval = 7 * time.Minute
	id := e.newTicket("Two towels to room 214")
	e.quiesce()
	for range 3 * 28 { // three full-read intervals of 15 s steps
		e.clock.Advance(15 * time.Second)
		before := e.store.Commits()
		if r := e.cycle(); r.Refreshed == 1 && e.store.Commits() == before {
			return e, id
		}
	}
	t.Fatal("no quiet full read kept in memory in three intervals")
	return nil, ""
}

// TestDeferredReadYieldsToAWrite: a read kept in memory is not laid over
// a record written since: the stored record wins.
func TestDeferredReadYieldsToAWrite(t *testing.T) {
	e, id := keptRead(t)
	// Another write makes the ticket due now (as `ticketbridge retry`
	// does); the next cycle must read it, not the read kept in memory.
	e.editTicket(id, func(t *state.Ticket) { t.NextDue, t.DueReason = e.clock.Now(), "retry" })
	e.clock.Advance(time.Second)
	if r := e.cycle(); r.Refreshed != 1 {
		t.Errorf("after a write that made the ticket due, the cycle read %d tickets, want it: %s", r.Refreshed, r)
	}
}

// TestFlushStoresKeptReads: Flush, which the daemon calls when it stops,
// stores the next reads kept in memory, so that a restart does not read
// those tickets again at once.
func TestFlushStoresKeptReads(t *testing.T) {
	e, id := keptRead(t)
	stored := e.stateTicket(id)
	before := e.store.Commits()
	if err := e.engine.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := e.store.Commits() - before; n != 1 {
		t.Errorf("Flush committed %d writes, want one", n)
	}
	if err := e.engine.Flush(t.Context()); err != nil || e.store.Commits() != before+1 {
		t.Errorf("a second Flush: %v, %d commits; want nothing to store", err, e.store.Commits()-before-1)
	}
	if st := e.stateTicket(id); !st.NextDue.After(e.clock.Now()) || !st.NextDue.After(stored.NextDue) {
		t.Errorf("after Flush the stored next read is %s (%s), want after now (%s) and after the one stored before (%s)", st.NextDue, st.DueReason, e.clock.Now(), stored.NextDue)
	}
	e.open()
	e.clock.Advance(time.Second)
	if r := e.cycle(); r.Refreshed != 0 {
		t.Errorf("after a restart the first cycle read %d tickets, want none: %s", r.Refreshed, r)
	}
}

// TestInSyncReconcileWritesNothing: a reconcile that finds both sides in
// sync is a quiet read too: it commits nothing, and what it records (when
// the ticket was reconciled) is stored with the next cycle record.
func TestInSyncReconcileWritesNothing(t *testing.T) {
	e := newEnv(t)
	e.cfg.ReconcileInterval = 3 * time.Minute
	var ids []string
	for i := range 4 {
		ids = append(ids, e.newTicket(fmt.Sprintf("Request %d", i)))
	}
	e.quiesce()
	e.clock.Advance(10 * time.Minute) // past every slot, and the record's ten minutes
	e.cycle()
	reconciled := 0
	for range 36 { // nine minutes
		e.clock.Advance(15 * time.Second)
		before := e.store.Commits()
		r := e.cycle()
		if n := e.store.Commits() - before; n != 0 {
			t.Fatalf("a cycle that reconciled %v committed %d writes, want none: %s", r.Reconcile, n, r)
		}
		if len(r.Reconcile) > 0 && r.Reconcile[tbsync.ReconcileInSync] == 0 {
			t.Fatalf("reconcile outcomes %v in a quiet hotel, want in sync", r.Reconcile)
		}
		reconciled += r.Reconcile[tbsync.ReconcileInSync]
	}
	// Each ticket every three minutes: about twelve in nine minutes.
	if reconciled < len(ids) || reconciled > 4*len(ids) {
		t.Fatalf("%d reconciles of %d tickets in nine minutes, want each about three times", reconciled, len(ids))
	}
	e.clock.Advance(90 * time.Second)
	e.cycle() // stores the record, and what the reconciles recorded
	for _, id := range ids {
		if st := e.stateTicket(id); e.clock.Now().Sub(st.ReconciledAt) > 4*time.Minute || st.LastReconcile != tbsync.ReconcileInSync {
			t.Errorf("ticket %s: stored last reconcile %s at %s, want in sync within the last three minutes (now %s)", id, st.LastReconcile, st.ReconciledAt, e.clock.Now())
		}
	}
}

// TestQuietHotelCommitsOnceInTenMinutes: a quiet hotel on the default
// intervals (every request's full read once in ten minutes, its
// reconcile once an hour) commits once in ten minutes, its cycle record
// carrying what the reads kept in memory, over two hours of cycles.
func TestQuietHotelCommitsOnceInTenMinutes(t *testing.T) {
	e := newEnv(t)
	for i := range 20 {
		e.newTicket(fmt.Sprintf("Request %d", i))
	}
	e.quiesce()
	e.clock.Advance(time.Hour) // past every slot
	e.cycle()
	before, reads, reconciles := e.store.Commits(), 0, 0
	const cycles = 2 * 120 // two hours at 30 s
	for range cycles {
		r := e.tick()
		if r.Outcome != "ok" || r.Mirrored+r.Created+r.Sent+r.StatusDown+r.Events != 0 {
			t.Fatalf("quiet cycle: %s", r)
		}
		reads += r.Refreshed
		reconciles += r.Reconcile[tbsync.ReconcileInSync]
	}
	if reads < 12*20 || reconciles < 2*20 {
		t.Fatalf("%d reads and %d reconciles of 20 requests in two hours, want every request's full reads (12 each) and reconciles (2 each)", reads, reconciles)
	}
	n := e.store.Commits() - before
	t.Logf("%d commits in %d cycles (%d reads, %d reconciles)", n, cycles, reads, reconciles)
	if n > 12 {
		t.Errorf("a quiet hotel committed %d times in two hours (%d reads, %d reconciles), want once in ten minutes: 12", n, reads, reconciles)
	}
}
