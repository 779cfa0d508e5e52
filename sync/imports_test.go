package sync_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// cycleWaitingForImport starts a cycle on ctx and returns once it waits
// for room among the imports; the channel gets the cycle's error. It fails
// the test when the cycle ends without waiting.
func (e *env) cycleWaitingForImport(ctx context.Context) <-chan error {
	e.t.Helper()
	done := make(chan error, 1)
	go func() { _, err := e.engine.RunCycle(ctx); done <- err }()
	for e.imports.Waiting() == 0 {
		select {
		case err := <-done:
			e.t.Fatalf("the cycle ended without waiting for room among the imports: %v", err)
		default:
			runtime.Gosched()
		}
	}
	return done
}

// TestLargeImportWaitsForASlot: while another hotel holds the only import
// slot, a hotel's import of 25 requests waits for it, reading nothing; a
// cycle that ends while it waits ends without an error of its own and
// imports nothing, and the next cycle, with the slot free, imports them
// all. A hotel with a few new requests does not wait at all.
func TestLargeImportWaitsForASlot(t *testing.T) {
	e := newEnv(t)
	e.imports = tbsync.NewImports(1)
	for range 25 {
		e.newTicket("towels")
	}
	e.open()
	release, err := e.imports.Take(t.Context(), 1) // another hotel's import: all the room
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := e.cycleWaitingForImport(ctx)
	if n := len(e.backend.Tickets()); n != 0 {
		t.Errorf("the helpdesk holds %d tickets while the import waits, want 0", n)
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("a cycle stopped while it waited for an import slot ended as a success")
	}
	if n := len(e.backend.Tickets()); n != 0 {
		t.Errorf("the helpdesk holds %d tickets after the waiting cycle ended, want 0", n)
	}

	release()
	e.tick()
	if n := len(e.backend.Tickets()); n != 25 {
		t.Errorf("the helpdesk holds %d tickets once the slot was free, want 25", n)
	}
	if n := e.imports.Waiting(); n != 0 {
		t.Errorf("%d imports still wait", n)
	}

	// A few new requests import while another hotel holds the slot.
	release, err = e.imports.Take(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for range 3 {
		e.newTicket("a lamp")
	}
	e.tick()
	if n := len(e.backend.Tickets()); n != 28 {
		t.Errorf("the helpdesk holds %d tickets after 3 more came in, want 28", n)
	}
}

// TestImportsCountReadsInFlight: the room is in reads in flight. With 8,
// two imports of 4 reads at once run together and a third waits for one
// of them; an import wider than the room takes all of it.
func TestImportsCountReadsInFlight(t *testing.T) {
	im := tbsync.NewImports(8)
	r1, err := im.Take(t.Context(), 4)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := im.Take(t.Context(), 4)
	if err != nil {
		t.Fatal(err)
	}
	taken := make(chan func(), 1)
	go func() {
		r, err := im.Take(t.Context(), 4)
		if err != nil {
			t.Error(err)
		}
		taken <- r
	}()
	for im.Waiting() == 0 {
		runtime.Gosched()
	}
	r1()
	r3 := <-taken
	r2()
	r3()
	wide, err := im.Take(t.Context(), 64)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := im.Take(ctx, 1); err == nil {
		t.Error("an import fitted beside one that took all the room")
	}
	wide()
	if _, err := im.Take(ctx, 8); err != nil {
		t.Errorf("the whole room, free again: %v", err)
	}
}

// TestWaitingImportReadsStateAgain: an import that finds no room drops
// its reads of state while it waits, and once room frees in the same
// cycle it reads the state again and imports every request, each once;
// the next cycle creates nothing more.
func TestWaitingImportReadsStateAgain(t *testing.T) {
	e := newEnv(t)
	e.imports = tbsync.NewImports(1)
	for range 25 {
		e.newTicket("towels")
	}
	e.open()
	release, err := e.imports.Take(t.Context(), 1) // another hotel's import: all the room
	if err != nil {
		t.Fatal(err)
	}
	done := e.cycleWaitingForImport(t.Context())
	release()
	if err := <-done; err != nil {
		t.Fatalf("the cycle that waited: %v", err)
	}
	if n := len(e.backend.Tickets()); n != 25 {
		t.Errorf("the helpdesk holds %d tickets after the wait, want 25", n)
	}
	e.tick()
	if n := len(e.backend.Tickets()); n != 25 {
		t.Errorf("the helpdesk holds %d tickets after the next cycle, want 25: created twice", n)
	}
}

// TestImportWaitsBeforeItIsStored: a large import that finds no room
// waits before discover stores its plan, holding neither its lists nor
// the plan: while it waits the state holds no ticket, and once room frees
// the cycle lists the queue again and imports every request, each once.
func TestImportWaitsBeforeItIsStored(t *testing.T) {
	e := newEnv(t)
	e.imports = tbsync.NewImports(1)
	for range 25 {
		e.newTicket("towels")
	}
	e.open()
	lists := e.countLists(nil)
	release, err := e.imports.Take(t.Context(), 1) // another hotel's import: all the room
	if err != nil {
		t.Fatal(err)
	}
	done := e.cycleWaitingForImport(t.Context())
	stored := 0
	if err := e.store.View(t.Context(), func(tx *state.Tx) error {
		return tx.ForEachTicket(func(state.Ticket) error { stored++; return nil })
	}); err != nil {
		t.Fatal(err)
	}
	if stored != 0 {
		t.Errorf("the state holds %d tickets while the import waits, want none", stored)
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("the cycle that waited: %v", err)
	}
	if n := lists.Load(); n != 2 {
		t.Errorf("the cycle that waited asked %d lists, want 2 (once more after the wait)", n)
	}
	if n := len(e.backend.Tickets()); n != 25 {
		t.Errorf("the helpdesk holds %d tickets after the wait, want 25", n)
	}
	e.tick()
	if n := len(e.backend.Tickets()); n != 25 {
		t.Errorf("the helpdesk holds %d tickets after the next cycle, want 25: created twice", n)
	}
	e.checkExactlyOnce()
}
