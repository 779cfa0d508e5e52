package zammad_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/zammad/zammadfake"
)

// TestConnectWritesTheAttributeOnly: Connect sets the attribute of a
// ticket made by hand with one update, and a repeat writes nothing; what
// the agent wrote before the connect (the ticket's first article, a
// reply) is listed by Lookup, for the engine to set aside, and left out
// of Changes, which reports what she writes after.
func TestConnectWritesTheAttributeOnly(t *testing.T) {
	e := newEnv(t, zammadfake.Options{})
	a := e.open(t, e.config(), e.options())
	ref, err := agent{e}.MakeTicket(t.Context(), "Towels for room 12", "The guest called for towels.")
	if err != nil {
		t.Fatal(err)
	}
	id, _ := ticketID(ref)
	anna := e.agent("Anna")
	if _, err := e.fake.Reply(id, anna, "Towels are coming."); err != nil {
		t.Fatal(err)
	}
	before, _ := e.fake.Ticket(id)
	hist := len(e.fake.History(id))
	if err := a.Connect(t.Context(), ref, tk("u-c")); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	after, _ := e.fake.Ticket(id)
	if after.Attributes[testField] != "u-c" || len(after.Articles) != len(before.Articles) || len(after.Tags) != len(before.Tags) || after.State != before.State {
		t.Errorf("after Connect the ticket is %+v; want only its attribute set, from %+v", after, before)
	}
	if h := e.fake.History(id)[hist:]; len(h) != 1 || h[0].Attribute != testField {
		t.Errorf("Connect left the history %+v; want one update of %s", h, testField)
	}
	n := len(e.fake.Requests())
	if err := a.Connect(t.Context(), ref, tk("u-c")); err != nil {
		t.Fatalf("Connect again: %v", err)
	}
	for _, r := range e.fake.Requests()[n:] {
		if r.Method != "GET" {
			t.Errorf("a repeated Connect wrote: %s %s", r.Method, r.Path)
		}
	}
	f, found, err := a.Lookup(t.Context(), "u-c")
	if err != nil || !found || f.Ref != ref || len(f.Events) != 2 {
		t.Fatalf("Lookup after Connect: %+v, %v, %v; want ticket %s with the agent's two articles before the connect", f, found, err, ref)
	}
	if _, err := e.fake.Reply(id, anna, "Anything else?"); err != nil {
		t.Fatal(err)
	}
	evs, _ := drain(t, a, "")
	if len(evs) != 1 || evs[0].UpstreamTicketID != "u-c" || !strings.Contains(evs[0].Body, "Anything else?") {
		t.Errorf("Changes from the beginning: %+v; want the reply after the connect alone", evs)
	}
}

// TestConnectRefusals: a ticket Zammad does not have, a Zammad without
// the attribute, and a ticket in a group the API user cannot read.
func TestConnectRefusals(t *testing.T) {
	e := newEnv(t, zammadfake.Options{})
	a := e.open(t, e.config(), e.options())
	for _, ref := range []adapters.Ref{"999", "abc"} {
		if err := a.Connect(t.Context(), ref, tk("u-1")); !errors.Is(err, adapters.ErrNotFound) {
			t.Errorf("Connect of ticket %q: %v, want ErrNotFound", ref, err)
		}
	}

	e = newEnv(t, zammadfake.Options{Attributes: []zammadfake.Attribute{dueAttribute}})
	a = e.open(t, e.config(), e.options())
	ref, err := agent{e}.MakeTicket(t.Context(), "Towels", "The guest called.")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Connect(t.Context(), ref, tk("u-1")); !errors.Is(err, adapters.ErrInvalid) || !strings.Contains(err.Error(), testField) {
		t.Errorf("Connect without the attribute: %v; want ErrInvalid naming %s", err, testField)
	}

	e = newEnv(t, zammadfake.Options{NoAccess: []string{"Technical Service"}})
	a = e.open(t, e.config(), e.options())
	ref, err = agent{e}.makeIn(t.Context(), "Technical Service", "A leak", "Room 12 reports a leak.")
	if err != nil {
		t.Fatal(err)
	}
	err = a.Connect(t.Context(), ref, tk("u-1"))
	if err == nil || !strings.Contains(err.Error(), "access to the ticket's group") || strings.Contains(err.Error(), testToken) {
		t.Errorf("Connect of a ticket in a group the API user cannot read: %v; want an error saying to grant access, without the token", err)
	}
	if tk, _ := e.fake.Ticket(mustID(t, ref)); tk.Attributes[testField] != "" {
		t.Errorf("the refused ticket holds %q", tk.Attributes[testField])
	}
}

func mustID(t *testing.T, ref adapters.Ref) int64 {
	t.Helper()
	id, err := ticketID(ref)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
