package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/adaptertest"
	"github.com/ticketbridge/ticketbridge/adapters/memory"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// agent acts on a Backend for the conformance suite.
type agent struct{ b *memory.Backend }

func (a agent) Reply(_ context.Context, ref adapters.Ref, author, body string) error {
	_, err := a.b.Reply(ref, author, body)
	return err
}

func (a agent) Note(_ context.Context, ref adapters.Ref, author, body string) error {
	_, err := a.b.Note(ref, author, body)
	return err
}

func (a agent) MakeTicket(_ context.Context, subject, body string) (adapters.Ref, error) {
	return a.b.MakeTicket("Anna", subject, body), nil
}

func (a agent) SetStatus(_ context.Context, ref adapters.Ref, author, status string) error {
	return a.b.SetStatus(ref, author, status)
}

func (a agent) Read(_ context.Context, ref adapters.Ref) (adaptertest.Snapshot, error) {
	t, ok := a.b.Ticket(ref)
	if !ok {
		return adaptertest.Snapshot{}, adapters.ErrNotFound
	}
	snap := adaptertest.Snapshot{Status: t.Status}
	for _, m := range t.Messages {
		snap.Messages = append(snap.Messages, adaptertest.SnapshotMessage{Text: m.Text(), Public: m.Public})
	}
	return snap, nil
}

// ReadFields reads the fields the backend holds: all of them natively,
// the department as the queue.
func (a agent) ReadFields(_ context.Context, ref adapters.Ref) (adaptertest.HeldFields, error) {
	t, ok := a.b.Ticket(ref)
	if !ok {
		return adaptertest.HeldFields{}, adapters.ErrNotFound
	}
	f := t.Fields
	return adaptertest.HeldFields{Queue: f.Department, Title: f.Title, Due: f.Due, Rating: f.Rating,
		Holds: adapters.AllFields}, nil
}

func TestConformance(t *testing.T) {
	for _, page := range []int{0, 1} { // the default, and one event per call
		t.Run(map[int]string{0: "DefaultPage", 1: "PageOfOne"}[page], func(t *testing.T) {
			b := memory.NewBackend()
			adaptertest.Run(t, adaptertest.Harness{
				New: func(testing.TB) adapters.Helpdesk {
					return memory.New(b, memory.Options{PageSize: page})
				},
				Agent:  agent{b},
				Status: memory.DefaultStatusMap(),
				Caps:   adaptertest.Caps{MarkSent: true, AuthorName: true, Events: true},
			})
		})
	}
}

func ticket(id string) adapters.Ticket {
	return adapters.Ticket{UpstreamID: id, Department: "spa", Status: guestapi.StatusNew, TaskDescription: "Massage at 5"}
}

func msg(id string) adapters.Message {
	return adapters.Message{UpstreamID: id, AuthorType: guestapi.AuthorGuest, AuthorName: "Ada", Body: "hello " + id, Public: true}
}

func TestFaultAfterApplyThenRetryMakesNoDuplicate(t *testing.T) {
	ctx := t.Context()
	b := memory.NewBackend()
	a := memory.New(b, memory.Options{})
	b.Inject(memory.Fault{Op: memory.OpEnsureTicket, Nth: 1, AfterApply: true})
	b.Inject(memory.Fault{Op: memory.OpAppend, Nth: 1, AfterApply: true})

	if _, err := a.EnsureTicket(ctx, ticket("t1")); !errors.Is(err, memory.ErrInjected) || errors.Is(err, adapters.ErrInvalid) {
		t.Fatalf("first EnsureTicket: %v, want a temporary injected error", err)
	}
	ref, err := a.EnsureTicket(ctx, ticket("t1"))
	if err != nil {
		t.Fatalf("retried EnsureTicket: %v", err)
	}
	if refs := b.Find("t1"); len(refs) != 1 || refs[0] != ref {
		t.Fatalf("Find(t1) = %v, want just %s", refs, ref)
	}
	if _, err := a.Append(ctx, ref, []adapters.Message{msg("m1")}); !errors.Is(err, memory.ErrInjected) {
		t.Fatalf("first Append: %v, want the injected error", err)
	}
	got, err := a.Append(ctx, ref, []adapters.Message{msg("m1")})
	if err != nil || len(got) != 1 || !got[0].Existed {
		t.Fatalf("retried Append = %+v, %v; want m1 Existed", got, err)
	}
	if n := len(b.Messages(ref)); n != 1 {
		t.Fatalf("ticket holds %d messages, want 1", n)
	}
	if n := b.Calls(memory.OpAppend); n != 2 {
		t.Errorf("Calls(Append) = %d, want 2", n)
	}
}

func TestFaultBeforeApplyWritesNothing(t *testing.T) {
	ctx := t.Context()
	b := memory.NewBackend()
	a := memory.New(b, memory.Options{})
	ref, err := a.EnsureTicket(ctx, ticket("t1"))
	if err != nil {
		t.Fatal(err)
	}
	b.Inject(memory.Fault{Op: memory.OpAppend, Nth: 2, Permanent: true})
	if _, err := a.Append(ctx, ref, []adapters.Message{msg("m1")}); err != nil {
		t.Fatalf("first Append: %v (the fault is for the second)", err)
	}
	if _, err := a.Append(ctx, ref, []adapters.Message{msg("m2")}); !errors.Is(err, adapters.ErrInvalid) || !errors.Is(err, memory.ErrInjected) {
		t.Fatalf("second Append: %v, want a permanent injected error", err)
	}
	if _, err := a.Append(ctx, ref, []adapters.Message{msg("m3")}); err != nil {
		t.Fatalf("third Append: %v (the fault is spent)", err)
	}
	var ids []string
	for _, m := range b.Messages(ref) {
		ids = append(ids, m.UpstreamID)
	}
	if len(ids) != 2 || ids[0] != "m1" || ids[1] != "m3" {
		t.Fatalf("messages %v, want [m1 m3]", ids)
	}
}

func TestFaultRateIsSeeded(t *testing.T) {
	run := func(seed uint64) []bool {
		b := memory.NewBackend()
		b.Seed(seed)
		a := memory.New(b, memory.Options{})
		b.Inject(memory.Fault{Op: memory.OpLookup, Rate: 0.5})
		var out []bool
		for range 64 {
			_, _, err := a.Lookup(t.Context(), "x")
			out = append(out, err != nil)
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	fails := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("the same seed gave different faults at call %d", i)
		}
		if a[i] {
			fails++
		}
	}
	if fails == 0 || fails == len(a) {
		t.Fatalf("rate 0.5 failed %d of %d calls", fails, len(a))
	}
	same := true
	for i := range a {
		same = same && a[i] == c[i]
	}
	if same {
		t.Error("different seeds gave the same faults")
	}
}

func TestFaultTimesCapsRate(t *testing.T) {
	b := memory.NewBackend()
	a := memory.New(b, memory.Options{})
	b.Inject(memory.Fault{Rate: 1, Times: 3})
	fails := 0
	for range 10 {
		if _, _, err := a.Changes(t.Context(), ""); err != nil {
			fails++
		}
	}
	if fails != 3 {
		t.Fatalf("%d failures, want 3", fails)
	}
	b.Inject(memory.Fault{Rate: 1})
	b.ClearFaults()
	if _, _, err := a.Changes(t.Context(), ""); err != nil {
		t.Fatalf("after ClearFaults: %v", err)
	}
}

func TestChangesReportsUnmappedStatusNever(t *testing.T) {
	ctx := t.Context()
	b := memory.NewBackend()
	a := memory.New(b, memory.Options{})
	ref, err := a.EnsureTicket(ctx, ticket("t1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetStatus(ref, "Anna", "on-hold"); err != nil {
		t.Fatal(err)
	}
	if err := b.SetStatus(ref, "Anna", "solved"); err != nil {
		t.Fatal(err)
	}
	evs, cur, err := a.Changes(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Status != guestapi.StatusDone || evs[0].AuthorName != "Anna" {
		t.Fatalf("events %+v, want one status change to done by Anna", evs)
	}
	if evs, _, _ := a.Changes(ctx, cur); len(evs) != 0 {
		t.Fatalf("after the cursor: %+v", evs)
	}
	if _, _, err := a.Changes(ctx, "minus one"); !errors.Is(err, adapters.ErrInvalid) {
		t.Fatalf("bad cursor: %v, want ErrInvalid", err)
	}
}

func TestStatusOverrideAndFactory(t *testing.T) {
	b := memory.NewBackend()
	reg := adapters.Registry{memory.Name: memory.Factory(b)}
	h, err := reg.Open(t.Context(), "memory", adapters.Deps{
		StatusToHelpdesk:   map[guestapi.Status]string{guestapi.StatusDone: "closed"},
		StatusFromHelpdesk: map[string]guestapi.Status{"closed": guestapi.StatusCompleted},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ref, err := h.EnsureTicket(t.Context(), ticket("t1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.SetStatus(t.Context(), ref, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	if tk, _ := b.Ticket(ref); tk.Status != "closed" {
		t.Fatalf("status %q, want the override closed", tk.Status)
	}
	if err := b.SetStatus(ref, "Anna", "closed"); err != nil {
		t.Fatal(err)
	}
	evs, _, err := h.Changes(t.Context(), "")
	if err != nil || len(evs) != 1 || evs[0].Status != guestapi.StatusCompleted {
		t.Fatalf("Changes = %+v, %v; want one change to completed", evs, err)
	}
}

func TestClosedAdapterRefuses(t *testing.T) {
	a := memory.New(memory.NewBackend(), memory.Options{})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.EnsureTicket(t.Context(), ticket("t1")); err == nil {
		t.Fatal("EnsureTicket after Close succeeded")
	}
}

func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	b := memory.NewBackend()
	a := memory.New(b, memory.Options{})
	if _, err := a.EnsureTicket(ctx, ticket("t1")); !errors.Is(err, context.Canceled) {
		t.Fatalf("EnsureTicket with a cancelled context: %v", err)
	}
	if len(b.Tickets()) != 0 {
		t.Fatal("a cancelled call created a ticket")
	}
}

func TestClockStampsAgentWork(t *testing.T) {
	b := memory.NewBackend()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	b.SetClock(func() time.Time { return at })
	a := memory.New(b, memory.Options{})
	ref, _ := a.EnsureTicket(t.Context(), ticket("t1"))
	if _, err := b.Reply(ref, "Anna", "On it"); err != nil {
		t.Fatal(err)
	}
	evs, _, err := a.Changes(t.Context(), "")
	if err != nil || len(evs) != 1 || !evs[0].At.Equal(at) {
		t.Fatalf("Changes = %+v, %v; want one reply at %s", evs, err, at)
	}
}

// An update that sets what the ticket holds makes no revision, and a
// spent budget (a fault) is an *adapters.WaitError.
func TestUpdateRevisions(t *testing.T) {
	b := memory.NewBackend()
	a := memory.New(b, memory.Options{})
	ctx := t.Context()
	ref, err := a.EnsureTicket(ctx, ticket("u1"))
	if err != nil {
		t.Fatal(err)
	}
	due := time.Date(2026, 5, 1, 18, 0, 0, 0, time.UTC)
	u := adapters.FieldUpdate{UpstreamID: "u1", Changed: adapters.FieldSet(adapters.FieldDue), New: adapters.Fields{Due: due}}
	for range 2 {
		if err := a.Update(ctx, ref, u); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := b.Ticket(ref); got.Updates != 1 || !got.Fields.Due.Equal(due) {
		t.Errorf("after two equal updates: %d revisions, due %v; want 1, %v", got.Updates, got.Fields.Due, due)
	}
	until := due.Add(time.Hour)
	b.Inject(memory.Fault{Op: memory.OpUpdate, Nth: 1, WaitUntil: until})
	var w *adapters.WaitError
	if err := a.Update(ctx, ref, u); !errors.As(err, &w) || !w.Until.Equal(until) {
		t.Errorf("Update with a spent budget: %v, want a WaitError until %v", err, until)
	}
}
