package freshdesk_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/freshdesk/freshdeskfake"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// Connect refuses, without writing, what only Freshdesk has: an id field
// an agent typed something into, and an archived ticket.
func TestConnectRefusals(t *testing.T) {
	e := newEnv(t, freshdeskfake.Options{})
	a := e.open(t, e.config())
	anna := e.agent("Anna")
	up := upstreamTicket("Towels")

	typed, err := e.fake.CreateTicket(anna, "Towels", "The guest called.")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.fake.SetField(typed, "cf_guest_request_id", "ROOM 12"); err != nil {
		t.Fatal(err)
	}
	if err := a.Connect(ctx, refOf(typed), up); !errors.Is(err, adapters.ErrInvalid) || !strings.Contains(err.Error(), "ROOM 12") {
		t.Errorf("Connect of a ticket whose id field an agent filled in: %v, want ErrInvalid naming what it holds", err)
	}
	archived, err := e.fake.CreateTicket(anna, "Lamp", "The lamp is broken.")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.fake.SetStatus(archived, anna, 5); err != nil {
		t.Fatal(err)
	}
	if err := e.fake.Archive(archived); err != nil {
		t.Fatal(err)
	}
	if err := a.Connect(ctx, refOf(archived), up); !errors.Is(err, adapters.ErrInvalid) || !strings.Contains(err.Error(), "archived") {
		t.Errorf("Connect of an archived ticket: %v, want ErrInvalid saying it is archived", err)
	}
	if err := a.Connect(ctx, "7x", up); !errors.Is(err, adapters.ErrNotFound) {
		t.Errorf("Connect of a Ref that is no ticket number: %v, want ErrNotFound", err)
	}
	if n := e.requests("PUT", ""); n != 0 {
		t.Errorf("the refusals sent %d ticket updates, want none", n)
	}
}

// Connect writes the id field and, as the bridge's baseline, the status
// the ticket has: Changes leaves that status alone and reports the
// agents' changes after it; a repeat writes nothing.
func TestConnectStatusBaseline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, freshdeskfake.Options{}, 0)
		a := e.open(t, e.config())
		anna := e.agent("Anna")
		id, err := e.fake.CreateTicket(anna, "Towels", "The guest called.")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.fake.SetStatus(id, anna, 4); err != nil {
			t.Fatal(err)
		}
		_, c := drain(t, a, "")
		up := upstreamTicket("Towels")
		for range 2 {
			if err := a.Connect(ctx, refOf(id), up); err != nil {
				t.Fatal(err)
			}
		}
		if n := e.requests("PUT", ""); n != 1 {
			t.Errorf("two Connects sent %d ticket updates, want 1", n)
		}
		tk := e.ticket(t, refOf(id))
		if tk.CustomFields["cf_guest_request_id"] != up.UpstreamID || tk.CustomFields["cf_guest_request_status"] != "4/1" || len(tk.Conversations) != 0 {
			t.Errorf("connected ticket: fields %v, %d conversations; want the id, status 4/1 and no note", tk.CustomFields, len(tk.Conversations))
		}
		time.Sleep(30 * time.Second)
		evs, c := drain(t, a, c)
		if len(evs) != 0 {
			t.Errorf("Changes right after Connect: %+v, want nothing (the status it had is the baseline)", evs)
		}
		if err := e.fake.SetStatus(id, anna, 2); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Second)
		evs, _ = drain(t, a, c)
		if len(evs) != 1 || evs[0].Kind != adapters.EventStatus || evs[0].Status != guestapi.StatusInProgress || evs[0].UpstreamTicketID != up.UpstreamID {
			t.Errorf("Changes after an agent reopened the connected ticket: %+v, want in_progress for %s", evs, up.UpstreamID)
		}
		f, ok, err := e.open(t, e.config()).Lookup(ctx, up.UpstreamID)
		if err != nil || !ok || f.Ref != refOf(id) {
			t.Errorf("Lookup by a fresh instance: %+v, %v, %v; want ticket %d", f, ok, err, id)
		}
	})
}
