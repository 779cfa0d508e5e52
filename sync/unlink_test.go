package sync_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// TestUnlinkLeavesTheTicketWithOneNote: an unlinked request's helpdesk
// ticket gets one note saying so, and then nothing: the guest's messages
// and the console's status stay upstream, the team's replies and status
// on the ticket stay in the helpdesk, unjournaled, and no second ticket is
// made. A reply the bridge had journaled before the unlink still goes up,
// once; a status change waiting is set aside. The other requests go on,
// and the trail names the command and the note.
func TestUnlinkLeavesTheTicketWithOneNote(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("unlinked")
	other := e.newTicket("goes on")
	e.quiesce()
	ref := e.ref(id)

	// Journaled before the unlink, and waiting: the API fails the posts.
	const before = "Written before the unlink."
	e.ts.Server.SetHook(refserver.Match(http.MethodPost, postPrefix, fail500))
	if _, err := e.backend.Reply(ref, "Ana", before); err != nil {
		t.Fatal(err)
	}
	if err := e.backend.SetStatus(ref, "Ana", "working"); err != nil {
		t.Fatal(err)
	}
	e.tick()
	e.ts.Server.SetHook(nil)
	if en := entry(t, e.store, id, before); en.State != state.Pending {
		t.Fatalf("reply before the unlink: %+v, want pending", en)
	}

	d := e.command(tbsync.CommandUnlink, id)
	if d.Ticket.Unlinked.IsZero() || d.Ticket.UnlinkedBy != "cli:mara" || d.Ticket.UnlinkNoted {
		t.Fatalf("unlinked record: %+v", d.Ticket)
	}
	if len(d.Abandoned) != 1 || d.Abandoned[0].Kind != state.KindStatus {
		t.Errorf("set aside %+v, want the status change alone", d.Abandoned)
	}
	if _, err := tbsync.Apply(t.Context(), e.store, tbsync.Command{Name: tbsync.CommandUnlink, Ticket: id}, e.clock.Now()); !errors.Is(err, tbsync.ErrNotActionable) {
		t.Errorf("unlinking an unlinked request: %v, want ErrNotActionable", err)
	}

	const guestBody, after, otherBody = "Anyone?", "Written after the unlink.", "And soap."
	e.guest(id, guestBody)
	if err := e.ts.Server.SetStatus(id, guestapi.StatusAssigned); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute) // past the reply's backoff
	if _, err := e.backend.Reply(ref, "Ana", after); err != nil {
		t.Fatal(err)
	}
	held, _ := e.backend.Ticket(ref)
	e.guest(other, otherBody)
	for range 5 {
		e.tick()
	}
	got, _ := e.backend.Ticket(ref)
	if len(got.Messages) != len(held.Messages)+1 {
		t.Fatalf("the unlinked ticket has %d messages, want %d: the note alone", len(got.Messages), len(held.Messages)+1)
	}
	if note := got.Messages[len(got.Messages)-1]; note.Public || !strings.Contains(note.Body, "unlinked this ticket from guest request "+id) {
		t.Errorf("last message %+v, want the internal note of the unlink", note)
	}
	if got.Status != "working" || e.helpdeskHas(id, guestBody) {
		t.Errorf("the unlinked ticket changed: status %s, guest's message there %v", got.Status, e.helpdeskHas(id, guestBody))
	}
	if n := e.upstreamCount(id, before); n != 1 {
		t.Errorf("the reply journaled before the unlink went up %d times, want 1", n)
	}
	if e.upstreamHas(id, after) {
		t.Error("a reply written after the unlink went up")
	}
	if e.upstream(id).Ticket.Status != guestapi.StatusAssigned {
		t.Errorf("upstream status %s: the set-aside change went up", e.upstream(id).Ticket.Status)
	}
	if refs := e.backend.Find(id); len(refs) != 1 {
		t.Errorf("%d helpdesk tickets, want the one", len(refs))
	}
	if !e.helpdeskHas(other, otherBody) {
		t.Error("the other request was not mirrored")
	}
	var trail []string
	if err := e.store.View(t.Context(), func(tx *state.Tx) error {
		as, err := tx.AuditTrail(id)
		for _, a := range as {
			if a.Kind == "unlink" || a.Kind == "unlink note" || a.Outcome == state.AuditAbandoned {
				trail = append(trail, a.Kind+" "+a.Outcome+" by "+a.Operator)
			}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"status abandoned by an operator", "unlink ok by cli:mara", "unlink note ok by an operator"}
	if !slices.Equal(trail, want) {
		t.Errorf("trail %q, want %q", trail, want)
	}
}

// TestUnlinkQuietCycleWritesNothing: once the note is written, an
// unlinked request changed upstream leaves the cycles quiet.
func TestUnlinkQuietCycleWritesNothing(t *testing.T) {
	e := newQuietEnv(t)
	id := e.newTicket("unlinked")
	e.quiesce()
	e.command(tbsync.CommandUnlink, id)
	// The note's cycle, and the two after a busy cycle: the helpdesk's
	// cursor past the bridge's own write, the cycle's record.
	for range 3 {
		e.clock.Advance(time.Second)
		e.cycle()
	}
	e.clock.Advance(time.Second)
	e.guest(id, "are you there?")
	e.cycle()
	e.checkQuietCycles("an unlinked request changed upstream")
}

// TestUnlinkDuringACycleHolds: an unlink applied while a cycle writes
// the request's ticket is kept by what the cycle then stores, and the
// next cycle writes the note; a request unlinked before its helpdesk
// ticket was made never gets one.
func TestUnlinkDuringACycleHolds(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("unlinked mid-cycle")
	e.quiesce()
	armed := false
	e.wrapHD = func(h adapters.Helpdesk) adapters.Helpdesk {
		return appendHook{Helpdesk: h, hook: func() {
			if armed {
				armed = false
				e.command(tbsync.CommandUnlink, id)
			}
		}}
	}
	e.open()
	armed = true
	e.guest(id, "while the unlink comes")
	e.tick()
	if armed {
		t.Fatal("the cycle appended nothing: the unlink was not applied during it")
	}
	if tk := e.stateTicket(id); tk.Unlinked.IsZero() || tk.UnlinkNoted {
		t.Fatalf("an unlink applied during a cycle was lost: %+v", tk)
	}
	e.tick()
	if tk := e.stateTicket(id); !tk.UnlinkNoted {
		t.Errorf("no note after the unlink: %+v", tk)
	}
	notes := 0
	got, _ := e.backend.Ticket(e.ref(id))
	for _, m := range got.Messages {
		if strings.Contains(m.Body, "unlinked this ticket") {
			notes++
		}
	}
	if notes != 1 {
		t.Errorf("%d notes of the unlink, want 1", notes)
	}

	never := e.newTicket("unlinked before it crossed")
	e.editTicket0(never)
	if d := e.command(tbsync.CommandUnlink, never); !d.Ticket.UnlinkNoted {
		t.Errorf("a request without a helpdesk ticket waits for a note: %+v", d.Ticket)
	}
	for range 3 {
		e.tick()
	}
	if refs := e.backend.Find(never); len(refs) != 0 {
		t.Errorf("a request unlinked before it crossed got helpdesk tickets %v", refs)
	}
}
