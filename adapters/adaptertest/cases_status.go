package adaptertest

import (
	"slices"
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

func (s *suite) testStatusDown(t *testing.T) {
	a, ref := s.ensure(t, s.ticket("Noise from room 301"))
	for _, st := range guestapi.Statuses() {
		if err := a.SetStatus(s.ctx, ref, st); err != nil {
			t.Fatalf("SetStatus(%s): %v", st, err)
		}
		if got, want := s.read(t, ref).Status, s.h.Status.Down(st); got != want {
			t.Errorf("after SetStatus(%s) the helpdesk shows %q, want %q", st, got, want)
		}
	}
	last := guestapi.Statuses()[len(guestapi.Statuses())-1]
	if err := s.open(t).SetStatus(s.ctx, ref, last); err != nil {
		t.Errorf("SetStatus to the status the ticket has: %v", err)
	}
}

func (s *suite) agentStatuses() []string {
	if s.h.AgentStatuses != nil {
		return s.h.AgentStatuses
	}
	var out []string
	for h := range s.h.Status.FromHelpdesk {
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

func (s *suite) testStatusUp(t *testing.T) {
	tk := s.ticket("Minibar refill")
	a, ref := s.ensure(t, tk)
	from := s.drain(t, a, s.head)
	current := s.h.Status.Down(tk.Status)
	var want []guestapi.Status
	for _, h := range s.agentStatuses() {
		if h == current {
			continue
		}
		up, ok := s.h.Status.Up(h)
		if !ok {
			t.Fatalf("AgentStatuses lists %q, which Status.FromHelpdesk does not map", h)
		}
		agentDo(t, "set status "+h, s.h.Agent.SetStatus(s.ctx, ref, "Anna (front desk)", h))
		want = append(want, up)
		current = h
	}
	if len(want) == 0 {
		t.Skip("no helpdesk status maps to an upstream one")
	}
	evs, _ := s.collect(t, s.open(t), from, []adapters.Ref{ref})
	var got []guestapi.Status
	for _, ev := range evs {
		checkEvent(t, ev, ref, tk.UpstreamID)
		if ev.Kind != adapters.EventStatus {
			t.Errorf("event %s: kind %q, want %q", ev.ID, ev.Kind, adapters.EventStatus)
			continue
		}
		got = append(got, ev.Status)
	}
	if !slices.Equal(got, want) {
		t.Errorf("agent status changes came back as %v, want %v", got, want)
	}
}

// testLookupStatus checks the status Lookup reports: after each status
// the bridge sets, one that stands for it; after each status an agent
// sets, the one it maps to, with a time.
func (s *suite) testLookupStatus(t *testing.T) {
	tk := s.ticket("Extra towels")
	a, ref := s.ensure(t, tk)
	lookup := func(what string) adapters.FoundStatus {
		t.Helper()
		s.settle(t)
		f, ok, err := s.open(t).Lookup(s.ctx, tk.UpstreamID)
		if err != nil || !ok {
			t.Fatalf("Lookup after %s: ok %v, %v", what, ok, err)
		}
		return f.Status
	}
	if s.h.Caps.NoStatus {
		if st := lookup("creating the ticket"); st.Known {
			t.Errorf("Lookup reports status %+v, want adapters.NoStatus (Caps.NoStatus)", st)
		}
		return
	}
	for _, st := range guestapi.Statuses() {
		if err := a.SetStatus(s.ctx, ref, st); err != nil {
			t.Fatalf("SetStatus(%s): %v", st, err)
		}
		got := lookup("SetStatus(" + string(st) + ")")
		if !got.Known || !got.Agrees(st) {
			t.Errorf("after SetStatus(%s) Lookup reports status %+v, which does not stand for %s", st, got, st)
		}
	}
	for _, h := range s.agentStatuses() {
		up, ok := s.h.Status.Up(h)
		if !ok {
			t.Fatalf("AgentStatuses lists %q, which Status.FromHelpdesk does not map", h)
		}
		agentDo(t, "set status "+h, s.h.Agent.SetStatus(s.ctx, ref, "Anna (front desk)", h))
		// A helpdesk may take the change in when its feed is read (the
		// files adapter's outbox).
		s.drain(t, a, s.head)
		if slices.Contains(s.h.Unsearchable, h) {
			s.settle(t)
			if _, ok, err := s.open(t).Lookup(s.ctx, tk.UpstreamID); ok || err != nil {
				t.Errorf("Lookup after the agent set %q (Unsearchable): ok %v, %v; want not found", h, ok, err)
			}
			continue
		}
		got := lookup("the agent set " + h)
		if !got.Known || got.Up != up || !got.Agrees(up) {
			t.Errorf("after the agent set %q Lookup reports status %+v, want %s", h, got, up)
		}
		if got.At.IsZero() {
			t.Errorf("after the agent set %q Lookup reports no time of the status", h)
		}
	}
}
