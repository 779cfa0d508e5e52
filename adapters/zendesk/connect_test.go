package zendesk_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/adapters/zendesk/zendeskfake"
)

// Connect refuses, without writing, what only Zendesk has: a ticket whose
// external_id another integration set, a closed ticket, and a request
// whose ticket is archived (found through the Search API). A repeat
// writes nothing; the update carries the external_id alone.
func TestConnectRefusals(t *testing.T) {
	e := newEnv(t, zendeskfake.Options{})
	a := e.open(t, e.config())
	anna := e.agent("Anna")
	ctx := t.Context()
	puts := func() int { return count(e.fake, "PUT", "/api/v2/tickets/") }

	foreign := e.fake.CreateTicket(anna, "From the CRM", "Call back.", "crm:42")
	if err := a.Connect(ctx, saas.RefOf(foreign), upstreamTicket("up-1")); !errors.Is(err, adapters.ErrInvalid) || !strings.Contains(err.Error(), `"crm:42"`) {
		t.Errorf("Connect of a ticket with another integration's external_id: %v, want ErrInvalid naming it", err)
	}
	closed := e.fake.CreateTicket(anna, "Lamp", "The lamp is broken.", "")
	if err := e.fake.SetStatus(closed, anna, "solved"); err != nil {
		t.Fatal(err)
	}
	if err := e.fake.Close(closed); err != nil {
		t.Fatal(err)
	}
	if err := a.Connect(ctx, saas.RefOf(closed), upstreamTicket("up-1")); !errors.Is(err, adapters.ErrInvalid) || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Connect of a closed ticket: %v, want ErrInvalid saying it is closed", err)
	}
	if err := a.Connect(ctx, "12a", upstreamTicket("up-1")); !errors.Is(err, adapters.ErrNotFound) {
		t.Errorf("Connect of a Ref that is no ticket number: %v, want ErrNotFound", err)
	}
	if err := a.Connect(ctx, saas.RefOf(foreign), upstreamTicket("up 1")); !errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("Connect to an upstream id with a space: %v, want ErrInvalid", err)
	}
	if n := puts(); n != 0 {
		t.Fatalf("the refusals sent %d ticket updates, want none", n)
	}

	// The bridge's ticket of up-2, closed and archived: List Tickets
	// leaves it out, the Search API finds it.
	ref, err := a.EnsureTicket(ctx, upstreamTicket("up-2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.fake.Close(mustRef(t, ref)); err != nil {
		t.Fatal(err)
	}
	if err := e.fake.Archive(mustRef(t, ref)); err != nil {
		t.Fatal(err)
	}
	hand := e.fake.CreateTicket(anna, "Towels", "The guest called.", "")
	if err := a.Connect(ctx, saas.RefOf(hand), upstreamTicket("up-2")); !errors.Is(err, adapters.ErrInvalid) || !strings.Contains(err.Error(), "ticket "+string(ref)+" mirrors") {
		t.Errorf("Connect to a request whose ticket is archived: %v, want ErrInvalid naming ticket %s", err, ref)
	}

	before := puts()
	for range 2 {
		if err := a.Connect(ctx, saas.RefOf(hand), upstreamTicket("up-3")); err != nil {
			t.Fatal(err)
		}
	}
	if n := puts() - before; n != 1 {
		t.Errorf("two Connects sent %d ticket updates, want 1", n)
	}
	for _, r := range e.fake.Requests() {
		if r.Method == "PUT" && strings.HasPrefix(r.Path, "/api/v2/tickets/") && string(r.Body) != `{"ticket":{"external_id":"ticketbridge:up-3"}}` {
			t.Errorf("Connect sent %s, want the external_id alone", r.Body)
		}
	}
	if tk, _ := e.fake.Ticket(hand); tk.ExternalID != "ticketbridge:up-3" || len(tk.Tags) != 0 || tk.GroupID != 0 {
		t.Errorf("connected ticket: %+v, want the external_id set and nothing else", tk)
	}
}

// An instance that met a ticket made by hand in the event export before
// another instance connected it (it mirrored nothing then) reports the
// team's work on it from then on.
func TestConnectSeenByAnotherInstance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, zendeskfake.Options{})
		anna := e.agent("Anna")
		id := e.fake.CreateTicket(anna, "Towels", "The guest called.", "")
		if _, err := e.fake.Reply(id, anna, "We are on it."); err != nil {
			t.Fatal(err)
		}
		a := e.open(t, e.config())
		e.settle(t)
		c := drain(t, a, "")
		b := e.open(t, e.config())
		if err := b.Connect(t.Context(), saas.RefOf(id), upstreamTicket("up-1")); err != nil {
			t.Fatal(err)
		}
		if _, err := e.fake.Reply(id, anna, "Two towels on their way."); err != nil {
			t.Fatal(err)
		}
		e.settle(t)
		evs, _, err := a.Changes(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 || evs[0].UpstreamTicketID != "up-1" || evs[0].Body != "Two towels on their way." || evs[0].Ref != saas.RefOf(id) {
			t.Errorf("Changes of the first instance after the second connected the ticket: %+v, want the reply, for up-1", evs)
		}
	})
}
