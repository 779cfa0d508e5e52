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

// testLateCommit checks that a cursor cannot skip a reply that became
// visible after the poll its time lies before.
func (s *suite) testLateCommit(t *testing.T) {
	if s.h.Late == nil {
		t.Skip("the harness cannot commit late (Harness.Late); the adapter's own tests cover its cursor")
	}
	tk := s.ticket("Late checkout")
	a, ref := s.ensure(t, tk)
	refs := []adapters.Ref{ref}
	cur := s.drain(t, a, s.head)
	const author = "Anna (front desk)"
	body := fmt.Sprintf("Committed late. [run %s L]", s.run)
	s.h.Late(t, func() { agentDo(t, "reply", s.h.Agent.Reply(s.ctx, ref, author, body)) })
	evs, next := s.collect(t, a, cur, refs)
	if len(evs) != 1 {
		t.Fatalf("Changes after a reply committed late gave %d events on the ticket, want the reply: %+v", len(evs), evs)
	}
	checkAgentEvent(t, s.h.Caps, evs[0], adapters.EventReply, author, body)
	if again, _ := s.collect(t, a, next, refs); len(again) != 0 {
		t.Errorf("the late reply was reported again: %+v", again)
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

// testLookupEvents checks that Lookup lists the team's reply and note on
// the ticket as Changes reports them (the same ids, kinds, bodies, authors
// and times: reconcile recognises an event as journaled or delivered by
// its id alone), and none of the bridge's own writes.
func (s *suite) testLookupEvents(t *testing.T) {
	tk := s.ticket("Late checkout")
	a, ref := s.ensure(t, tk)
	refs := []adapters.Ref{ref}
	c0 := s.drain(t, a, s.head)
	own := []adapters.Message{
		s.message(1, guestapi.AuthorGuest, "Ada Guest", true),
		s.message(2, guestapi.AuthorStaff, "Front desk", false),
	}
	if _, err := a.Append(s.ctx, ref, own); err != nil {
		t.Fatalf("Append: %v", err)
	}
	const author = "Anna (front desk)"
	reply := fmt.Sprintf("Checkout at 14:00 is fine. [run %s lookup reply]", s.run)
	note := fmt.Sprintf("Told housekeeping to leave the room for last. [run %s lookup note]", s.run)
	agentDo(t, "reply", s.h.Agent.Reply(s.ctx, ref, author, reply))
	agentDo(t, "add a note", s.h.Agent.Note(s.ctx, ref, author, note))
	evs, _ := s.collect(t, a, c0, refs)
	if len(evs) != 2 {
		t.Fatalf("Changes after a reply and a note returned %d events on the ticket, want 2: %+v", len(evs), evs)
	}
	if s.h.Caps.MarkSent {
		if err := a.MarkSent(s.ctx, ref, evs[0].ID, own[0].UpstreamID); err != nil {
			t.Fatalf("MarkSent: %v", err)
		}
	}
	s.checkLookupEvents(t, tk.UpstreamID, evs, own...)
}

// checkLookupEvents checks that a fresh instance's Lookup of upstreamID
// lists in Found.Events exactly the replies and notes want, as Changes
// reported them, oldest first, and no event holding the body of one of
// the bridge's messages own. Without Caps.Events it checks that
// Found.Events is nil.
func (s *suite) checkLookupEvents(t *testing.T, upstreamID string, want []adapters.Event, own ...adapters.Message) {
	t.Helper()
	s.settle(t)
	f, ok, err := s.open(t).Lookup(s.ctx, upstreamID)
	if err != nil || !ok {
		t.Fatalf("Lookup(%s) = ok %v, %v; want the ticket", upstreamID, ok, err)
	}
	if !s.h.Caps.Events {
		if f.Events != nil {
			t.Errorf("Lookup lists events %+v, but the harness says it cannot (Caps.Events)", f.Events)
		}
		return
	}
	if f.Events == nil {
		t.Fatal("Lookup's Found.Events is nil: it says it cannot list the ticket's events")
	}
	var got []adapters.Event
	for _, ev := range f.Events {
		for _, m := range own {
			if strings.Contains(ev.Body, m.Body) {
				t.Errorf("Lookup lists the bridge's own message %s as the team's event %+v", m.UpstreamID, ev)
			}
		}
		if ev.Kind == adapters.EventStatus {
			continue // reconcile merges the status itself
		}
		got = append(got, ev)
	}
	byID := func(x, y adapters.Event) int { return strings.Compare(x.ID, y.ID) }
	wantIDs, gotIDs := ids(slices.SortedFunc(slices.Values(want), byID)), ids(slices.SortedFunc(slices.Values(got), byID))
	if !slices.Equal(gotIDs, wantIDs) {
		t.Fatalf("Lookup lists the replies and notes %v, want those Changes reported: %v", gotIDs, wantIDs)
	}
	for _, ev := range got {
		i := slices.IndexFunc(want, func(w adapters.Event) bool { return w.ID == ev.ID })
		w := want[i]
		if ev.Ref != w.Ref || ev.UpstreamTicketID != w.UpstreamTicketID || ev.Kind != w.Kind || ev.Body != w.Body ||
			ev.AuthorName != w.AuthorName || !ev.At.Equal(w.At) {
			t.Errorf("Lookup's event %s differs from Changes':\n  Lookup  %+v\n  Changes %+v", ev.ID, ev, w)
		}
	}
	for i := 1; i < len(f.Events); i++ {
		if f.Events[i].At.Before(f.Events[i-1].At) {
			t.Errorf("Lookup's events not oldest first: %s at %s after %s at %s", f.Events[i].ID, f.Events[i].At, f.Events[i-1].ID, f.Events[i-1].At)
		}
	}
}
