package sync_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
)

// TestEndToEndMemory plays the whole loop against the reference server
// over loopback HTTP with the in-memory helpdesk.
func TestEndToEndMemory(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("Two towels to room 214")
	e.guest(id, "second message")

	// A new ticket reaches the helpdesk with its whole thread.
	r := e.cycle()
	if r.Discovered != 1 || r.Created != 1 || r.Mirrored != 2 {
		t.Fatalf("first cycle: %s", r)
	}
	ref := e.ref(id)
	if got := len(e.backend.Messages(ref)); got != 2 {
		t.Fatalf("helpdesk holds %d messages, want 2", got)
	}

	// A later guest message arrives.
	e.clock.Advance(time.Minute)
	e.guest(id, "third message")
	r = e.tick()
	if r.Mirrored != 1 {
		t.Fatalf("guest message cycle: %s", r)
	}
	msgs := e.backend.Messages(ref)
	if len(msgs) != 3 || msgs[2].Body != "third message" || !msgs[2].Public {
		t.Fatalf("helpdesk messages: %+v", msgs)
	}

	// An agent reply reaches the guest, visible; a note stays internal.
	e.clock.Advance(time.Minute)
	if _, err := e.backend.Reply(ref, "Maria", "Towels are on the way."); err != nil {
		t.Fatal(err)
	}
	if _, err := e.backend.Note(ref, "Maria", "Housekeeping has been told."); err != nil {
		t.Fatal(err)
	}
	r = e.tick()
	if r.Events != 2 || r.Sent != 2 {
		t.Fatalf("reply cycle: %s", r)
	}
	view := e.upstream(id)
	var reply, note *guestapi.Message
	for i, m := range view.Messages {
		switch m.Body {
		case "Towels are on the way.":
			reply = &view.Messages[i].Message
		case "Housekeeping has been told.":
			note = &view.Messages[i].Message
		}
	}
	if reply == nil || !reply.VisibleToGuest || reply.AuthorName != "Maria" {
		t.Fatalf("reply upstream: %+v", reply)
	}
	if note == nil || note.VisibleToGuest {
		t.Fatalf("note upstream: %+v", note)
	}
	guestSees := false
	for _, m := range view.GuestView.Messages {
		if m.Body == "Housekeeping has been told." {
			t.Fatal("the guest sees the internal note")
		}
		if m.Body == "Towels are on the way." {
			guestSees = true
		}
	}
	if !guestSees {
		t.Fatal("the guest does not see the reply")
	}

	// Status both ways.
	e.clock.Advance(time.Minute)
	if err := e.backend.SetStatus(ref, "Maria", "working"); err != nil {
		t.Fatal(err)
	}
	e.tick()
	if got := e.upstream(id).Ticket.Status; got != guestapi.StatusInProgress {
		t.Fatalf("upstream status %s, want in_progress", got)
	}
	e.clock.Advance(time.Minute)
	if err := e.ts.Server.SetStatus(id, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(10 * time.Minute) // the ticket backed off meanwhile
	e.tick()
	snap, _ := e.backend.Ticket(ref)
	if snap.Status != "solved" {
		t.Fatalf("helpdesk status %s, want solved", snap.Status)
	}

	// Nothing echoes; a quiet cycle writes nothing anywhere.
	e.quiesce()
	e.checkExactlyOnce()
	posts, hdMsgs := e.posts(), len(e.backend.Messages(ref))
	e.clock.Advance(2 * time.Hour)
	for range 3 {
		r = e.tick()
		if r.Created+r.Mirrored+r.StatusDown+r.Events+r.Sent+r.Errors != 0 {
			t.Fatalf("quiet cycle did something: %s", r)
		}
	}
	if got := e.posts(); got != posts {
		t.Fatalf("quiet cycles made %d POSTs", got-posts)
	}
	if got := len(e.backend.Messages(ref)); got != hdMsgs {
		t.Fatalf("quiet cycles added %d helpdesk messages", got-hdMsgs)
	}
	if strings.Contains(e.logs.String(), "level=ERROR") {
		t.Fatalf("errors logged:\n%s", e.logs)
	}
}
