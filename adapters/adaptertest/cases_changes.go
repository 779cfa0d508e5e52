package adaptertest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

func checkEvent(t testing.TB, ev adapters.Event, ref adapters.Ref, upstreamID string) {
	t.Helper()
	if ev.ID == "" {
		t.Errorf("event with an empty ID: %+v", ev)
	}
	if ev.Ref != ref || ev.UpstreamTicketID != upstreamID {
		t.Errorf("event %s: Ref %q, UpstreamTicketID %q; want %q, %q", ev.ID, ev.Ref, ev.UpstreamTicketID, ref, upstreamID)
	}
	if ev.At.IsZero() {
		t.Errorf("event %s: zero At", ev.ID)
	}
	switch ev.Kind {
	case adapters.EventReply, adapters.EventNote:
		if strings.TrimSpace(ev.Body) == "" {
			t.Errorf("event %s (%s): empty body", ev.ID, ev.Kind)
		}
	case adapters.EventStatus:
		if !ev.Status.Settable() {
			t.Errorf("event %s: status %q is not one the API can set", ev.ID, ev.Status)
		}
	default:
		t.Errorf("event %s: unknown kind %q", ev.ID, ev.Kind)
	}
}

func ids(evs []adapters.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

func (s *suite) testCursor(t *testing.T) {
	tk := s.ticket("Taxi to the airport")
	a, ref := s.ensure(t, tk)
	refs := []adapters.Ref{ref}
	c0 := s.drain(t, a, s.head)
	const author = "Anna (front desk)"
	replyA := fmt.Sprintf("Your taxi is booked for 7:15. [run %s A]", s.run)
	noteB := fmt.Sprintf("Driver confirmed by phone. [run %s B]", s.run)
	replyC := fmt.Sprintf("The driver will wait at the main entrance. [run %s C]", s.run)

	agentDo(t, "reply", s.h.Agent.Reply(s.ctx, ref, author, replyA))
	agentDo(t, "add a note", s.h.Agent.Note(s.ctx, ref, author, noteB))
	first, c1 := s.collect(t, a, c0, refs)
	if len(first) != 2 {
		t.Fatalf("Changes after a reply and a note returned %d events on the ticket, want 2: %+v", len(first), first)
	}
	checkAgentEvent(t, s.h.Caps, first[0], adapters.EventReply, author, replyA)
	checkAgentEvent(t, s.h.Caps, first[1], adapters.EventNote, author, noteB)
	for _, ev := range first {
		checkEvent(t, ev, ref, tk.UpstreamID)
	}
	if first[0].ID == first[1].ID {
		t.Fatalf("two events share the ID %q", first[0].ID)
	}
	if first[1].At.Before(first[0].At) {
		t.Errorf("events not oldest first: %s at %s before %s at %s", first[0].ID, first[0].At, first[1].ID, first[1].At)
	}

	agentDo(t, "reply", s.h.Agent.Reply(s.ctx, ref, author, replyC))
	second, _ := s.collect(t, a, c1, refs)
	if len(second) != 1 {
		t.Fatalf("Changes from the returned cursor gave %d events on the ticket, want only the newer reply: %+v", len(second), second)
	}
	checkAgentEvent(t, s.h.Caps, second[0], adapters.EventReply, author, replyC)

	again, _ := s.collect(t, a, c1, refs)
	if !slices.Equal(ids(again), ids(second)) {
		t.Errorf("the same cursor twice gave %v, then %v", ids(second), ids(again))
	}

	all, _ := s.collect(t, s.open(t), c0, refs)
	if want := append(ids(first), ids(second)...); !slices.Equal(ids(all), want) {
		t.Errorf("a fresh instance from the earlier cursor gave %v, want %v (IDs must be stable across instances)", ids(all), want)
	}

	fromStart, _ := s.collect(t, s.open(t), "", refs)
	if want := append(ids(first), ids(second)...); !slices.Equal(ids(fromStart), want) {
		t.Errorf("Changes from the empty cursor gave %v on the ticket, want %v", ids(fromStart), want)
	}
}

func checkAgentEvent(t testing.TB, caps Caps, ev adapters.Event, kind adapters.EventKind, author, body string) {
	t.Helper()
	if ev.Kind != kind {
		t.Errorf("event %s: kind %q, want %q", ev.ID, ev.Kind, kind)
	}
	if norm(ev.Body) != norm(body) {
		t.Errorf("event %s: body %q, want %q", ev.ID, ev.Body, body)
	}
	if caps.AuthorName && ev.AuthorName != author {
		t.Errorf("event %s: author %q, want %q", ev.ID, ev.AuthorName, author)
	}
}

func (s *suite) testOwnWrites(t *testing.T) {
	probe := s.open(t)
	c0 := s.drain(t, probe, s.head)
	tk := s.ticket("Room service menu")
	a, ref := s.ensure(t, tk)
	msgs := []adapters.Message{
		s.message(1, guestapi.AuthorGuest, "Ada Guest", true),
		s.message(2, guestapi.AuthorStaff, "Kitchen", false),
	}
	if _, err := a.Append(s.ctx, ref, msgs); err != nil {
		t.Fatalf("Append: %v", err)
	}
	for _, st := range []guestapi.Status{guestapi.StatusInProgress, guestapi.StatusDone, guestapi.StatusAssigned} {
		if err := a.SetStatus(s.ctx, ref, st); err != nil {
			t.Fatalf("SetStatus(%s): %v", st, err)
		}
	}
	if _, err := a.Append(s.ctx, ref, []adapters.Message{s.message(3, guestapi.AuthorGuest, "Ada Guest", true)}); err != nil {
		t.Fatalf("Append: %v", err)
	}
	if evs, _ := s.collect(t, probe, c0, []adapters.Ref{ref}); len(evs) != 0 {
		t.Errorf("Changes reported the bridge's own writes: %+v", evs)
	}
}
