package zendesk_test

import (
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/ticketbridge/ticketbridge/adapters/zendesk/zendeskfake"
	"github.com/ticketbridge/ticketbridge/guestapi"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// upstreamHas reports whether request id holds a message with body.
func (l *loop) upstreamHas(id, body string) bool {
	for _, m := range l.Upstream(id).Messages {
		if m.Body == body {
			return true
		}
	}
	return false
}

// zendeskHas reports whether the Zendesk ticket of id holds a comment
// containing text.
func (l *loop) zendeskHas(id, text string) bool {
	for _, c := range l.zendeskTicket(id).Comments {
		if strings.Contains(c.Body, text) {
			return true
		}
	}
	return false
}

// TestEndToEndPauseResumeResync: a paused request crosses nothing
// between the platform and Zendesk while the agent and the guest both
// write and change its status; resumed, each message crosses once and
// the later status change (the agent's) wins upstream; a resync then
// finds the sides in agreement and changes nothing.
func TestEndToEndPauseResumeResync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLoop(t)
		id := l.Request("housekeeping", "Two towels to room 214")
		l.Settle()
		zt := l.zendeskTicket(id)

		if d := l.Command(tbsync.CommandPause, id); d.Ticket.PausedBy != "cli:looptest" {
			t.Fatalf("paused record %+v", d.Ticket)
		}
		const guest, reply = "Could they be blue?", "Blue towels are on the way."
		l.Guest(id, guest)
		if err := l.Server.SetStatus(id, guestapi.StatusAssigned); err != nil {
			t.Fatal(err)
		}
		l.Tick()
		maria := l.fake.AddAgent("Maria")
		if _, err := l.fake.Update(zt.ID, maria, zendeskfake.AgentUpdate{Body: reply, Public: true, Status: "pending"}); err != nil {
			t.Fatal(err)
		}
		comments := len(l.zendeskTicket(id).Comments)
		for range 5 {
			l.Tick()
		}
		if l.upstreamHas(id, reply) || l.zendeskHas(id, guest) || len(l.zendeskTicket(id).Comments) != comments {
			t.Fatalf("while paused: reply upstream %v, guest's message in Zendesk %v, %d comments (had %d)",
				l.upstreamHas(id, reply), l.zendeskHas(id, guest), len(l.zendeskTicket(id).Comments), comments)
		}
		if got := l.zendeskTicket(id).Status; got != "pending" {
			t.Errorf("while paused Zendesk's status became %s", got)
		}

		l.Command(tbsync.CommandResume, id)
		l.Tick()
		if !l.upstreamHas(id, reply) || !l.zendeskHas(id, guest) {
			t.Errorf("a cycle after resume: reply upstream %v, guest's message in Zendesk %v", l.upstreamHas(id, reply), l.zendeskHas(id, guest))
		}
		l.Settle()
		if got := l.Upstream(id).Ticket.Status; got != guestapi.StatusInProgress {
			t.Errorf("upstream status %s, want in_progress (the agent's pending, the later change)", got)
		}
		// (Zendesk itself reopens the pending ticket when the guest's
		// message lands, as it does for any requester's comment.)
		l.checkExactlyOnce(id)

		before := l.zendeskTicket(id)
		l.Command(tbsync.CommandResync, id)
		r := l.Tick()
		if r.Reconcile[tbsync.ReconcileInSync] != 1 {
			t.Errorf("resync of agreeing sides: reconcile %v, want in_sync", r.Reconcile)
		}
		l.Settle()
		if after := l.zendeskTicket(id); len(after.Comments) != len(before.Comments) || after.Status != before.Status {
			t.Errorf("resync of agreeing sides changed Zendesk: %d comments (had %d), status %s", len(after.Comments), len(before.Comments), after.Status)
		}
		l.checkExactlyOnce(id)
	})
}

// TestEndToEndUnlinkConnect: an unlinked request's Zendesk ticket gets
// the note and then nothing: the guest's message stays upstream, the
// agent's reply stays in Zendesk. Connected back, the guest's message is
// appended once and the reply written while unlinked is set aside, not
// sent. A request connected, before the bridge made a ticket of its own,
// to a ticket an agent made by hand is mirrored there and nowhere else.
func TestEndToEndUnlinkConnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLoop(t)
		id := l.Request("housekeeping", "Two towels to room 214")
		l.Settle()
		zt := l.zendeskTicket(id)

		l.Command(tbsync.CommandUnlink, id)
		l.Tick()
		if !l.zendeskHas(id, "unlinked this ticket from guest request "+id) {
			t.Fatal("the unlinked ticket has no note saying so")
		}
		const guest, reply = "Could they be blue?", "Blue towels are on the way."
		l.Guest(id, guest)
		maria := l.fake.AddAgent("Maria")
		if _, err := l.fake.Update(zt.ID, maria, zendeskfake.AgentUpdate{Body: reply, Public: true}); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			l.Tick()
		}
		if l.upstreamHas(id, reply) || l.zendeskHas(id, guest) {
			t.Fatalf("while unlinked: reply upstream %v, guest's message in Zendesk %v", l.upstreamHas(id, reply), l.zendeskHas(id, guest))
		}

		l.Connect(id, strconv.FormatInt(zt.ID, 10))
		l.Settle()
		if !l.zendeskHas(id, guest) || l.upstreamHas(id, reply) {
			t.Errorf("connected back: guest's message in Zendesk %v, the reply written while unlinked upstream %v", l.zendeskHas(id, guest), l.upstreamHas(id, reply))
		}

		byHand := l.fake.CreateTicket(maria, "Late checkout, room 9", "The guest phoned: checkout at 14:00?", "")
		other := l.Request("front_desk", "Late checkout")
		l.Connect(other, strconv.FormatInt(byHand, 10))
		l.Settle()
		if got := l.zendeskTicket(other); got.ID != byHand {
			t.Fatalf("request %s mirrored in Zendesk ticket %d, want %d, the one made by hand", other, got.ID, byHand)
		}
		if !l.zendeskHas(other, "The guest phoned") {
			t.Error("the ticket made by hand lost its first comment")
		}
		// Its own comment, and each message of the request once; the
		// agent's comment, written before the connect, is not sent.
		if got, want := len(l.zendeskTicket(other).Comments), 1+len(l.Upstream(other).Messages); got != want {
			t.Errorf("the connected ticket has %d comments, want %d", got, want)
		}
		if l.upstreamHas(other, "The guest phoned: checkout at 14:00?") {
			t.Error("the comment made before the connect was sent to the guest")
		}
	})
}
