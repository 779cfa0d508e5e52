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
