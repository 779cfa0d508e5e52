package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// Maker is an [Agent] that can make a ticket by hand, as a member of the
// team does outside the bridge: a ticket that mirrors no upstream
// ticket. The case Connect needs it.
type Maker interface {
	// MakeTicket makes a ticket with subject and a first message body,
	// in the helpdesk's default place (queue, group, folder).
	MakeTicket(ctx context.Context, subject, body string) (adapters.Ref, error)
}

// testConnect checks adapters.Connector: a ticket made by hand, connected
// to an upstream ticket, is found by Lookup and takes the bridge's
// appends; the team's reply on it comes from Changes with the upstream
// id; Connect writes nothing it shows, and a repeat nothing at all; an
// unknown ticket is ErrNotFound; a ticket that mirrors another request,
// or a second ticket for one request, is ErrInvalid.
func (s *suite) testConnect(t *testing.T) {
	hd := s.open(t)
	c, ok := hd.(adapters.Connector)
	if !ok {
		t.Skip("the adapter is no adapters.Connector")
	}
	mk, ok := s.h.Agent.(Maker)
	if !ok {
		t.Skip("the harness's Agent cannot make a ticket by hand (adaptertest.Maker)")
	}
	ref, err := mk.MakeTicket(s.ctx, fmt.Sprintf("Towels for room 12 [run %s connect]", s.run), fmt.Sprintf("The guest called for towels. [run %s by hand]", s.run))
	agentDo(t, "make a ticket", err)
	tk := s.ticket("Connected by hand")
	c0 := s.drain(t, hd, s.head)
	if _, found, err := hd.Lookup(s.ctx, tk.UpstreamID); err != nil || found {
		t.Fatalf("Lookup before Connect: found %v, %v; want nothing", found, err)
	}
	before := s.read(t, ref)
	for i := range 2 {
		if err := c.Connect(s.ctx, ref, tk); err != nil {
			t.Fatalf("Connect (call %d): %v", i+1, err)
		}
	}
	s.settle(t)
	if after := s.read(t, ref); len(after.Messages) != len(before.Messages) {
		t.Errorf("Connect wrote messages: %d before, %d after:\n%s", len(before.Messages), len(after.Messages), dump(after))
	}
	f, found, err := s.open(t).Lookup(s.ctx, tk.UpstreamID)
	if err != nil || !found || f.Ref != ref {
		t.Fatalf("Lookup after Connect: %+v, found %v, %v; want ticket %s", f, found, err, ref)
	}
	msg := s.message(1, guestapi.AuthorGuest, "Ada Guest", true)
	if _, err := hd.Append(s.ctx, ref, []adapters.Message{msg}); err != nil {
		t.Fatalf("Append to the connected ticket: %v", err)
	}
	if snap := s.read(t, ref); count(snap, msg.Body) != 1 {
		t.Errorf("the connected ticket holds the appended message %d times, want 1:\n%s", count(snap, msg.Body), dump(snap))
	}
	reply := fmt.Sprintf("Two towels on their way. [run %s connect reply]", s.run)
	agentDo(t, "reply", s.h.Agent.Reply(s.ctx, ref, "Anna", reply))
	evs, _ := s.collect(t, hd, c0, []adapters.Ref{ref})
	if len(evs) != 1 || evs[0].UpstreamTicketID != tk.UpstreamID || evs[0].Kind != adapters.EventReply {
		t.Errorf("Changes after a reply on the connected ticket: %+v; want the reply, with upstream id %s", evs, tk.UpstreamID)
	}

	other := s.ticket("Another request")
	if err := c.Connect(s.ctx, ref, other); !errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("Connect of a ticket that mirrors another request: %v, want ErrInvalid", err)
	}
	second, err := mk.MakeTicket(s.ctx, fmt.Sprintf("Towels again [run %s connect]", s.run), "A second ticket by hand.")
	agentDo(t, "make a ticket", err)
	s.settle(t)
	if err := c.Connect(s.ctx, second, tk); !errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("Connect of a second ticket to one request: %v, want ErrInvalid", err)
	}
	if err := c.Connect(s.ctx, s.unknownRef(), other); !errors.Is(err, adapters.ErrNotFound) {
		t.Errorf("Connect of an unknown ticket: %v, want ErrNotFound", err)
	}
}
