package adaptertest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

func (s *suite) testBadInput(t *testing.T) {
	hd := s.open(t)
	bad := s.ticket("Bad input")
	bad.UpstreamID = ""
	if _, err := hd.EnsureTicket(s.ctx, bad); !errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("EnsureTicket with an empty upstream id: %v, want ErrInvalid", err)
	}

	tk := s.ticket("Pillow menu")
	a, ref := s.ensure(t, tk)
	before := s.read(t, ref)
	good := s.message(1, guestapi.AuthorGuest, "Ada Guest", true)
	empty := s.message(2, guestapi.AuthorGuest, "Ada Guest", true)
	empty.Body = " \n\t "
	if _, err := a.Append(s.ctx, ref, []adapters.Message{good, empty}); !errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("Append with an empty body: %v, want ErrInvalid", err)
	}
	noID := s.message(3, guestapi.AuthorGuest, "Ada Guest", true)
	noID.UpstreamID = ""
	if _, err := a.Append(s.ctx, ref, []adapters.Message{noID}); !errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("Append of a message without upstream id: %v, want ErrInvalid", err)
	}
	for _, st := range []guestapi.Status{"", "archived"} {
		if err := a.SetStatus(s.ctx, ref, st); !errors.Is(err, adapters.ErrInvalid) {
			t.Errorf("SetStatus(%q): %v, want ErrInvalid", st, err)
		}
	}
	after := s.read(t, ref)
	if len(after.Messages) != len(before.Messages) || count(after, good.Body) != 0 || count(after, noID.Body) != 0 {
		t.Errorf("rejected input was written; before:\n%s\nafter:\n%s", dump(before), dump(after))
	}
	if after.Status != before.Status {
		t.Errorf("a rejected status changed the ticket's status from %q to %q", before.Status, after.Status)
	}
	if got, err := a.Append(s.ctx, ref, nil); err != nil || len(got) != 0 {
		t.Errorf("Append of no messages = %v, %v; want nothing, nil", got, err)
	}
}

// tricky is a body that exercises what helpdesks like to mangle.
const tricky = "Grüße aus Zimmer 12 — Привет, 你好, مرحبا 🙏🏽\n" +
	"\n" +
	"**Bitte** _zwei_ `Handtücher`:\n" +
	"- one\n" +
	"- two\n" +
	"\n" +
	"> quoted line\n" +
	"    indented code\n" +
	"<b>not html</b> & \"quotes\" 'single' \\backslash\n" +
	"last line"

func (s *suite) testText(t *testing.T) {
	tk := s.ticket("Ünïcödé request — 🧺")
	a, ref := s.ensure(t, tk)
	m := s.message(1, guestapi.AuthorGuest, "Zoë Ærøskøbing", true)
	m.Body = tricky + "\n[run " + s.run + " " + m.UpstreamID + "]"
	if _, err := a.Append(s.ctx, ref, []adapters.Message{m}); err != nil {
		t.Fatalf("Append: %v", err)
	}
	snap := s.read(t, ref)
	find(t, snap, m.Body)

	c0 := s.drain(t, a, s.head)
	body := tricky + "\n[run " + s.run + " reply]"
	agentDo(t, "reply", s.h.Agent.Reply(s.ctx, ref, "Zoë (concierge)", body))
	evs, _ := s.collect(t, a, c0, []adapters.Ref{ref})
	if len(evs) != 1 {
		t.Fatalf("Changes after one reply: %d events, want 1: %+v", len(evs), evs)
	}
	checkAgentEvent(t, s.h.Caps, evs[0], adapters.EventReply, "Zoë (concierge)", body)
}

func (s *suite) testClosed(t *testing.T) {
	tk := s.ticket("Lost and found: umbrella")
	a, ref := s.ensure(t, tk)
	c0 := s.drain(t, a, s.head)
	for i, st := range []guestapi.Status{guestapi.StatusDone, guestapi.StatusCancelled} {
		if err := a.SetStatus(s.ctx, ref, st); err != nil {
			t.Fatalf("SetStatus(%s): %v", st, err)
		}
		m := s.message(i+1, guestapi.AuthorGuest, "Ada Guest", true)
		if _, err := a.Append(s.ctx, ref, []adapters.Message{m}); err != nil {
			t.Fatalf("Append to a ticket closed as %s: %v", st, err)
		}
		snap := s.read(t, ref)
		if !snap.Messages[find(t, snap, m.Body)].Public {
			t.Errorf("a public message on a closed ticket is not public")
		}
	}
	if evs, _ := s.collect(t, a, c0, []adapters.Ref{ref}); len(evs) != 0 {
		t.Errorf("Changes reported the bridge's own writes (a reopen?): %+v", evs)
	}
	f, ok, err := s.open(t).Lookup(s.ctx, tk.UpstreamID)
	if err != nil || !ok || f.Ref != ref {
		t.Errorf("Lookup = %+v, %v, %v; want the one ticket %q", f, ok, err, ref)
	}
}

func (s *suite) testConcurrent(t *testing.T) {
	hd := s.open(t)
	const n = 4
	var wg sync.WaitGroup
	refs := make([]adapters.Ref, n)
	msgs := make([]adapters.Message, n)
	for i := range n {
		tk := s.ticket(fmt.Sprintf("Concurrent request %d", i))
		msgs[i] = s.message(i, guestapi.AuthorGuest, "Ada Guest", true)
		wg.Go(func() {
			ref, err := hd.EnsureTicket(s.ctx, tk)
			if err != nil {
				t.Errorf("EnsureTicket %d: %v", i, err)
				return
			}
			if _, err := hd.Append(s.ctx, ref, []adapters.Message{msgs[i]}); err != nil {
				t.Errorf("Append %d: %v", i, err)
				return
			}
			if err := hd.SetStatus(s.ctx, ref, guestapi.StatusAssigned); err != nil {
				t.Errorf("SetStatus %d: %v", i, err)
			}
			refs[i] = ref
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, ref := range refs {
		for j := range i {
			if refs[j] == ref {
				t.Fatalf("tickets %d and %d share the Ref %q", j, i, ref)
			}
		}
		snap := s.read(t, ref)
		find(t, snap, msgs[i].Body)
		if want := s.h.Status.Down(guestapi.StatusAssigned); snap.Status != want {
			t.Errorf("ticket %d: status %q, want %q", i, snap.Status, want)
		}
	}
}
