package freshdesk_test

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/freshdesk/freshdeskfake"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// Each field lands where the doc comment of Update says, in one update; a
// repeat writes nothing; the origin tag is set at creation.
func TestUpdateFields(t *testing.T) {
	e := newEnv(t, freshdeskfake.Options{})
	cfg := e.routed()
	a := e.open(t, cfg)
	tk := upstreamTicket("Kettle")
	ref, err := a.EnsureTicket(ctx, tk)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.ticket(t, ref); !slices.Contains(got.Tags, "origin_"+string(tk.Origin)) || got.Priority != 1 {
		t.Errorf("at creation: tags %q priority %d, want the origin's tag and Freshdesk's default priority", got.Tags, got.Priority)
	}
	created := e.ticket(t, ref).CreatedAt
	r := 4.5
	due := created.Add(48*time.Hour + 30*time.Minute)
	nw := adapters.Fields{Department: "maintenance", Title: "Kettle broken", Due: due.In(time.FixedZone("x", 2*3600)),
		Rating: &r, Priority: adapters.PriorityHigh, Origin: tk.Origin}
	u := adapters.FieldUpdate{UpstreamID: tk.UpstreamID, Changed: adapters.AllFields, New: nw}
	e.fake.ResetRequests()
	if err := a.Update(ctx, ref, u); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if puts, notes := e.requests("PUT", ""), e.requests("POST", "/notes"); puts != 1 || notes != 1 {
		t.Errorf("%d updates and %d notes, want 1 and 1 (the fields in one update, the rating's note)", puts, notes)
	}
	got := e.ticket(t, ref)
	if got.GroupID != cfg.Groups["maintenance"] || got.Subject != "[maintenance] Kettle broken" || got.Priority != 3 ||
		!got.DueBy.Equal(due) || !slices.Contains(got.Tags, "guest_rating_4_5") || !slices.Contains(got.Tags, "ticketbridge") {
		t.Errorf("ticket after Update: group %d subject %q priority %d due %v tags %q", got.GroupID, got.Subject, got.Priority, got.DueBy, got.Tags)
	}
	e.fake.ResetRequests()
	if err := e.open(t, cfg).Update(ctx, ref, u); err != nil {
		t.Fatalf("Update repeated: %v", err)
	}
	if n := e.requests("PUT", "") + e.requests("POST", ""); n != 0 {
		t.Errorf("a repeat sent %d writes, want none", n)
	}

	// A new rating replaces the tag; no due time leaves Freshdesk's (it
	// cannot be cleared); no priority leaves Freshdesk's.
	five := 5.0
	nw2 := nw
	nw2.Rating, nw2.Due, nw2.Priority = &five, time.Time{}, ""
	if err := a.Update(ctx, ref, adapters.FieldUpdate{UpstreamID: tk.UpstreamID, Changed: adapters.AllFields, New: nw2, Old: nw}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	got = e.ticket(t, ref)
	if slices.Contains(got.Tags, "guest_rating_4_5") || !slices.Contains(got.Tags, "guest_rating_5") || !got.DueBy.Equal(due) || got.Priority != 3 {
		t.Errorf("after the second Update: tags %q due %v priority %d", got.Tags, got.DueBy, got.Priority)
	}
}

// Freshdesk's rules for due_by: a time before the ticket's creation is
// sent as the creation time; one before fr_due_by moves fr_due_by with
// it; a ticket whose status stops the SLA clock takes none, and nothing
// is sent for it.
func TestUpdateDueFollowsFreshdeskRules(t *testing.T) {
	e := newEnv(t, freshdeskfake.Options{})
	a := e.open(t, e.config())
	tk := upstreamTicket("Late checkout")
	ref, err := a.EnsureTicket(ctx, tk)
	if err != nil {
		t.Fatal(err)
	}
	created := e.ticket(t, ref).CreatedAt
	due := func(d time.Time) adapters.FieldUpdate {
		return adapters.FieldUpdate{UpstreamID: tk.UpstreamID, Changed: adapters.FieldSet(adapters.FieldDue),
			New: adapters.Fields{Department: tk.Department, Title: tk.TaskDescription, Due: d}}
	}
	soon := created.Add(2 * time.Hour) // before the SLA's first response (24 hours)
	if err := a.Update(ctx, ref, due(soon)); err != nil {
		t.Fatalf("a due time before fr_due_by: %v", err)
	}
	if got := e.ticket(t, ref); !got.DueBy.Equal(soon) || !got.FrDueBy.Equal(soon) {
		t.Errorf("due_by %v fr_due_by %v, want both %v", got.DueBy, got.FrDueBy, soon)
	}
	if err := a.Update(ctx, ref, due(created.Add(-48*time.Hour))); err != nil {
		t.Fatalf("a due time before the ticket's creation: %v", err)
	}
	if got := e.ticket(t, ref); !got.DueBy.Equal(created) {
		t.Errorf("due_by %v, want the creation time %v (overdue)", got.DueBy, created)
	}

	if err := a.SetStatus(ctx, ref, guestapi.StatusDone); err != nil { // resolved: the SLA clock stops
		t.Fatal(err)
	}
	e.fake.ResetRequests()
	if err := a.Update(ctx, ref, due(created.Add(96*time.Hour))); err != nil {
		t.Fatalf("a due time on a resolved ticket: %v", err)
	}
	if n := e.requests("PUT", ""); n != 0 {
		t.Errorf("%d updates sent for a resolved ticket's due time, want none (Freshdesk refuses it)", n)
	}
}

// A 429 on the fields update is a WaitError at its Retry-After, not a
// wait inside Update; the update goes through after it.
func TestUpdateWaitsOn429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, freshdeskfake.Options{}, 0)
		a := e.open(t, e.config())
		tk := upstreamTicket("Kettle")
		ref, err := a.EnsureTicket(ctx, tk)
		if err != nil {
			t.Fatal(err)
		}
		u := adapters.FieldUpdate{UpstreamID: tk.UpstreamID, Changed: adapters.FieldSet(adapters.FieldTitle),
			New: adapters.Fields{Department: tk.Department, Title: "Kettle broken"}}
		e.fake.Inject(freshdeskfake.Fault{Method: "PUT", Status: 429, RetryAfter: "90", Times: 1})
		err = a.Update(ctx, ref, u)
		var w *adapters.WaitError
		if !errors.As(err, &w) || !w.Until.Equal(time.Now().Add(90*time.Second)) || w.Ref != ref {
			t.Fatalf("update answered 429: %v, want a WaitError of 90s on %s", err, ref)
		}
		if len(e.sleeps) != 0 {
			t.Errorf("Update waited %v, want it to return the wait", e.sleeps)
		}
		// The ticket update budget is blocked until then: the adapter sends
		// nothing meanwhile, and says so.
		puts := e.requests("PUT", "")
		if err := a.Update(ctx, ref, u); !errors.As(err, &w) {
			t.Fatalf("update before Retry-After passed: %v, want a WaitError", err)
		}
		if n := e.requests("PUT", ""); n != puts {
			t.Errorf("an update was sent while Freshdesk asked to wait")
		}
		time.Sleep(91 * time.Second)
		if err := a.Update(ctx, ref, u); err != nil {
			t.Fatalf("update after Retry-After: %v", err)
		}
		if got := e.ticket(t, ref); got.Subject != "[housekeeping] Kettle broken" {
			t.Errorf("subject %q after the wait", got.Subject)
		}
	})
}

// A priority the bridge does not know is refused for good.
func TestUpdateRefusesUnknownPriority(t *testing.T) {
	e := newEnv(t, freshdeskfake.Options{})
	a := e.open(t, e.config())
	tk := upstreamTicket("Kettle")
	ref, err := a.EnsureTicket(ctx, tk)
	if err != nil {
		t.Fatal(err)
	}
	err = a.Update(ctx, ref, adapters.FieldUpdate{UpstreamID: tk.UpstreamID, Changed: adapters.FieldSet(adapters.FieldPriority),
		New: adapters.Fields{Department: tk.Department, Title: tk.TaskDescription, Priority: "soonish"}})
	if !errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("Update with an unknown priority: %v, want ErrInvalid", err)
	}
}
