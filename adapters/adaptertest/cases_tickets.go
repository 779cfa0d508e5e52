package adaptertest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

func (s *suite) testName(t *testing.T) {
	hd := s.open(t)
	if hd.Name() == "" {
		t.Fatal("Name() is empty")
	}
	if a, b := hd.Name(), s.open(t).Name(); a != b {
		t.Fatalf("Name() differs between instances: %q and %q", a, b)
	}
}

func (s *suite) testEnsureIdempotent(t *testing.T) {
	tk := s.ticket("Extra towels for room 214")
	a, ref := s.ensure(t, tk)
	again, err := a.EnsureTicket(s.ctx, tk)
	if err != nil {
		t.Fatalf("second EnsureTicket: %v", err)
	}
	if again != ref {
		t.Fatalf("second EnsureTicket returned %q, want %q", again, ref)
	}
	b := s.open(t)
	other, err := b.EnsureTicket(s.ctx, tk)
	if err != nil {
		t.Fatalf("EnsureTicket on a fresh instance: %v", err)
	}
	if other != ref {
		t.Fatalf("EnsureTicket on a fresh instance returned %q, want %q (a duplicate ticket)", other, ref)
	}
	s.settle(t)
	f, ok, err := s.open(t).Lookup(s.ctx, tk.UpstreamID)
	if err != nil || !ok || f.Ref != ref {
		t.Fatalf("Lookup = %+v, %v, %v; want Ref %q", f, ok, err, ref)
	}
	snap := s.read(t, ref)
	if want := s.h.Status.Down(tk.Status); snap.Status != want {
		t.Errorf("new ticket has status %q, want %q", snap.Status, want)
	}
}

func (s *suite) testAppendIdempotent(t *testing.T) {
	a, ref := s.ensure(t, s.ticket("Wake-up call at 6:30"))
	m1 := s.message(1, guestapi.AuthorGuest, "Ada Guest", true)
	m2 := s.message(2, guestapi.AuthorStaff, "Front desk", false)
	m3 := s.message(3, guestapi.AuthorGuest, "Ada Guest", true)

	first, err := a.Append(s.ctx, ref, []adapters.Message{m1, m2})
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	checkAppended(t, first, []adapters.Message{m1, m2}, []bool{false, false})
	if first[0].HelpdeskID == "" || first[1].HelpdeskID == "" || first[0].HelpdeskID == first[1].HelpdeskID {
		t.Fatalf("HelpdeskIDs %q and %q: want two distinct non-empty ids", first[0].HelpdeskID, first[1].HelpdeskID)
	}

	second, err := s.open(t).Append(s.ctx, ref, []adapters.Message{m1, m2, m3})
	if err != nil {
		t.Fatalf("second Append on a fresh instance: %v", err)
	}
	checkAppended(t, second, []adapters.Message{m1, m2, m3}, []bool{true, true, false})
	for i := range 2 {
		if second[i].HelpdeskID != first[i].HelpdeskID {
			t.Errorf("message %d: HelpdeskID %q the second time, %q the first", i+1, second[i].HelpdeskID, first[i].HelpdeskID)
		}
	}
	if _, err := a.Append(s.ctx, ref, []adapters.Message{m3}); err != nil {
		t.Fatalf("third Append: %v", err)
	}

	snap := s.read(t, ref)
	var order []int
	for _, m := range []adapters.Message{m1, m2, m3} {
		order = append(order, find(t, snap, m.Body))
	}
	if !slices.IsSorted(order) {
		t.Errorf("messages shown in order %v, want oldest first:\n%s", order, dump(snap))
	}
}

func checkAppended(t *testing.T, got []adapters.Appended, msgs []adapters.Message, existed []bool) {
	t.Helper()
	if len(got) != len(msgs) {
		t.Fatalf("Append returned %d results for %d messages: %+v", len(got), len(msgs), got)
	}
	for i, a := range got {
		if a.UpstreamID != msgs[i].UpstreamID {
			t.Errorf("result %d: UpstreamID %q, want %q", i, a.UpstreamID, msgs[i].UpstreamID)
		}
		if a.HelpdeskID == "" {
			t.Errorf("result %d: empty HelpdeskID", i)
		}
		if a.Existed != existed[i] {
			t.Errorf("result %d: Existed = %v, want %v", i, a.Existed, existed[i])
		}
	}
}

func (s *suite) testPublicInternal(t *testing.T) {
	a, ref := s.ensure(t, s.ticket("Broken kettle"))
	pub := s.message(1, guestapi.AuthorGuest, "Ada Guest", true)
	note := s.message(2, guestapi.AuthorStaff, "Night manager", false)
	if _, err := a.Append(s.ctx, ref, []adapters.Message{pub, note}); err != nil {
		t.Fatalf("Append: %v", err)
	}
	snap := s.read(t, ref)
	if m := snap.Messages[find(t, snap, pub.Body)]; !m.Public {
		t.Errorf("a visible_to_guest message became an internal note: %q", m.Text)
	}
	if m := snap.Messages[find(t, snap, note.Body)]; m.Public {
		t.Errorf("an internal message became public correspondence: %q", m.Text)
	}
}

func (s *suite) testAuthorVisible(t *testing.T) {
	a, ref := s.ensure(t, s.ticket("Late checkout"))
	msgs := []adapters.Message{
		s.message(1, guestapi.AuthorGuest, "Grace Hopper", true),
		s.message(2, guestapi.AuthorStaff, "Linus at reception", true),
		s.message(3, guestapi.AuthorAI, "Concierge bot", true),
		s.message(4, guestapi.AuthorSystem, "Platform", false),
	}
	if _, err := a.Append(s.ctx, ref, msgs); err != nil {
		t.Fatalf("Append: %v", err)
	}
	snap := s.read(t, ref)
	for _, m := range msgs {
		text := snap.Messages[find(t, snap, m.Body)].Text
		at := m.CreatedAt.UTC()
		for _, want := range []string{m.AuthorName, string(m.AuthorType), at.Format("2006-01-02"), at.Format("15:04")} {
			if !strings.Contains(text, want) {
				t.Errorf("the mirrored text of a message by %s (%s) at %s lacks %q:\n%s", m.AuthorName, m.AuthorType, at.Format(time.RFC3339), want, text)
			}
		}
	}
}

func (s *suite) testLookup(t *testing.T) {
	tk := s.ticket("Baby cot for room 12")
	a, ref := s.ensure(t, tk)
	msgs := []adapters.Message{
		s.message(1, guestapi.AuthorGuest, "Ada Guest", true),
		s.message(2, guestapi.AuthorStaff, "Housekeeping", false),
	}
	app, err := a.Append(s.ctx, ref, msgs)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	wantMsgs := map[string]string{}
	for _, x := range app {
		wantMsgs[x.UpstreamID] = x.HelpdeskID
	}

	wantSent := map[string]string{}
	c0 := s.drain(t, a, s.head)
	reply := fmt.Sprintf("The cot is on its way. [run %s]", s.run)
	err = s.h.Agent.Reply(s.ctx, ref, "Anna (front desk)", reply)
	if err != nil && !errors.Is(err, ErrUnsupported) {
		t.Fatalf("agent reply: %v", err)
	}
	if err == nil {
		evs, c1 := s.collect(t, a, c0, []adapters.Ref{ref})
		if len(evs) != 1 {
			t.Fatalf("Changes after one reply: %d events, want 1: %+v", len(evs), evs)
		}
		upMsg := uuid.NewString()
		for range 2 { // MarkSent is idempotent
			if err := a.MarkSent(s.ctx, ref, evs[0].ID, upMsg); err != nil {
				t.Fatalf("MarkSent: %v", err)
			}
		}
		wantSent[evs[0].ID] = upMsg
		if evs, _ := s.collect(t, a, c1, []adapters.Ref{ref}); len(evs) != 0 {
			t.Errorf("Changes reported what MarkSent wrote: %+v", evs)
		}
	}

	b := s.open(t)
	s.settle(t)
	f, ok, err := b.Lookup(s.ctx, tk.UpstreamID)
	if err != nil || !ok {
		t.Fatalf("Lookup on a fresh instance = %v, %v; want the ticket", ok, err)
	}
	if f.Ref != ref {
		t.Errorf("Lookup: Ref %q, want %q", f.Ref, ref)
	}
	if !mapsEqual(f.Messages, wantMsgs) {
		t.Errorf("Lookup: Messages %v, want %v", f.Messages, wantMsgs)
	}
	if s.h.Caps.MarkSent && !mapsEqual(f.Sent, wantSent) {
		t.Errorf("Lookup: Sent %v, want %v", f.Sent, wantSent)
	}

	if _, ok, err := b.Lookup(s.ctx, uuid.NewString()); err != nil || ok {
		t.Errorf("Lookup of an unknown upstream id = %v, %v; want false, nil", ok, err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func (s *suite) unknownRef() adapters.Ref {
	if s.h.UnknownRef != "" {
		return s.h.UnknownRef
	}
	return adapters.Ref("no-such-ticket-" + uuid.NewString())
}

func (s *suite) testUnknownRef(t *testing.T) {
	hd := s.open(t)
	ref := s.unknownRef()
	if _, err := hd.Append(s.ctx, ref, []adapters.Message{s.message(1, guestapi.AuthorGuest, "Ada Guest", true)}); !errors.Is(err, adapters.ErrNotFound) {
		t.Errorf("Append to an unknown ticket: %v, want ErrNotFound", err)
	}
	if err := hd.SetStatus(s.ctx, ref, guestapi.StatusDone); !errors.Is(err, adapters.ErrNotFound) {
		t.Errorf("SetStatus of an unknown ticket: %v, want ErrNotFound", err)
	}
	if err := hd.MarkSent(s.ctx, ref, "some-event", uuid.NewString()); err != nil && !errors.Is(err, adapters.ErrNotFound) {
		t.Errorf("MarkSent on an unknown ticket: %v, want nil or ErrNotFound", err)
	}
}
