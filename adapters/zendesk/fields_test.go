package zendesk_test

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/zendesk/zendeskfake"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// puts counts the updates (PUT) the fake received.
func puts(e *env) int {
	n := 0
	for _, r := range e.fake.Requests() {
		if r.Method == "PUT" {
			n++
		}
	}
	return n
}

// Each field lands where the doc comment of Update says, in one update; a
// repeat writes nothing; the origin tag is set at creation.
func TestUpdateFields(t *testing.T) {
	e := newEnv(t, zendeskfake.Options{})
	a := e.open(t, e.config())
	ctx := t.Context()
	tk := upstreamTicket("up-f")
	ref, err := a.EnsureTicket(ctx, tk)
	if err != nil {
		t.Fatal(err)
	}
	id := mustRef(t, ref)
	if got, _ := e.fake.Ticket(id); !slices.Contains(got.Tags, "origin_"+string(tk.Origin)) {
		t.Errorf("tags at creation %q, want the origin's", got.Tags)
	}
	r := 4.5
	nw := adapters.Fields{Department: "maintenance", Title: "Kettle broken", Due: time.Date(2026, 5, 1, 23, 30, 0, 0, time.FixedZone("x", 2*3600)),
		Rating: &r, Priority: adapters.PriorityHigh, Origin: tk.Origin}
	u := adapters.FieldUpdate{UpstreamID: "up-f", Changed: adapters.AllFields, New: nw}
	e.fake.ResetRequests()
	if err := a.Update(ctx, ref, u); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if n := puts(e); n != 2 { // the fields, the rating's note
		t.Errorf("%d updates, want 2 (the fields in one, the rating's note)", n)
	}
	got, _ := e.fake.Ticket(id)
	cfg := e.config()
	if got.GroupID != cfg.Groups["maintenance"] || got.Subject != "[maintenance] Kettle broken" || got.Priority != "high" ||
		got.Fields[dueField.ID] != "2026-05-01" || !slices.Contains(got.Tags, "guest_rating_4_5") {
		t.Errorf("ticket after Update: group %d subject %q priority %q due %q tags %q", got.GroupID, got.Subject, got.Priority, got.Fields[dueField.ID], got.Tags)
	}
	e.fake.ResetRequests()
	if err := e.open(t, cfg).Update(ctx, ref, u); err != nil {
		t.Fatalf("Update repeated: %v", err)
	}
	if n := puts(e); n != 0 {
		t.Errorf("a repeat sent %d updates, want none", n)
	}

	// A new rating replaces the tag; no due date empties the field; no
	// priority leaves Zendesk's.
	five := 5.0
	nw2 := nw
	nw2.Rating, nw2.Due, nw2.Priority = &five, time.Time{}, ""
	if err := a.Update(ctx, ref, adapters.FieldUpdate{UpstreamID: "up-f", Changed: adapters.AllFields, New: nw2, Old: nw}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	got, _ = e.fake.Ticket(id)
	if slices.Contains(got.Tags, "guest_rating_4_5") || !slices.Contains(got.Tags, "guest_rating_5") || got.Fields[dueField.ID] != "" || got.Priority != "high" {
		t.Errorf("after the second Update: tags %q due %q priority %q", got.Tags, got.Fields[dueField.ID], got.Priority)
	}
}

// The adapter counts its updates of a ticket: the 31st in ten minutes is
// not sent but is a WaitError, which ends when the first update leaves the
// window; a 429 of Zendesk is one too.
func TestUpdateWaitsForTheTicketBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, zendeskfake.Options{})
		a := e.open(t, e.config())
		ctx := t.Context()
		ref, err := a.EnsureTicket(ctx, upstreamTicket("up-b"))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		title := func(i int) adapters.FieldUpdate {
			return adapters.FieldUpdate{UpstreamID: "up-b", Changed: adapters.FieldSet(adapters.FieldTitle),
				New: adapters.Fields{Department: "housekeeping", Title: "Title " + string(rune('A'+i%26)) + string(rune('a'+i/26))}}
		}
		for i := range 30 {
			if err := a.Update(ctx, ref, title(i)); err != nil {
				t.Fatalf("update %d: %v", i+1, err)
			}
			time.Sleep(time.Second)
		}
		e.fake.ResetRequests()
		err = a.Update(ctx, ref, title(30))
		var w *adapters.WaitError
		if !errors.As(err, &w) || !w.Until.Equal(start.Add(10*time.Minute)) || w.Ref != ref {
			t.Fatalf("31st update: %v, want a WaitError until %v", err, start.Add(10*time.Minute))
		}
		if n := puts(e); n != 0 {
			t.Errorf("the 31st update was sent (%d requests)", n)
		}
		time.Sleep(time.Until(w.Until))
		if err := a.Update(ctx, ref, title(30)); err != nil {
			t.Fatalf("update after the wait: %v", err)
		}

		// Zendesk's own 429 (another client of the same user spent the
		// budget) is a WaitError at its Retry-After.
		time.Sleep(time.Minute) // the updates of the first minute left the window
		e.fake.Inject(zendeskfake.Fault{Method: "PUT", Status: 429, RetryAfter: "90", Times: 1})
		err = a.Update(ctx, ref, title(31))
		if !errors.As(err, &w) || !w.Until.Equal(time.Now().Add(90*time.Second)) {
			t.Fatalf("update answered 429: %v, want a WaitError of 90s", err)
		}
		if err := a.Update(ctx, ref, title(31)); !errors.As(err, &w) {
			t.Fatalf("update before Retry-After passed: %v, want a WaitError", err)
		}
		time.Sleep(91 * time.Second)
		if err := a.Update(ctx, ref, title(31)); err != nil {
			t.Fatalf("update after Retry-After: %v", err)
		}
	})
}

// The fake refuses what Zendesk refuses: a due date that is not a day, an
// unknown priority.
func TestFakeRefusesBadFieldValues(t *testing.T) {
	e := newEnv(t, zendeskfake.Options{})
	a := e.open(t, e.config())
	ref, err := a.EnsureTicket(t.Context(), upstreamTicket("up-v"))
	if err != nil {
		t.Fatal(err)
	}
	err = a.Update(t.Context(), ref, adapters.FieldUpdate{UpstreamID: "up-v", Changed: adapters.FieldSet(adapters.FieldPriority),
		New: adapters.Fields{Department: "housekeeping", Title: "x", Priority: "soonish", Origin: guestapi.OriginGuest}})
	if !errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("Update with an unknown priority: %v, want ErrInvalid", err)
	}
}
