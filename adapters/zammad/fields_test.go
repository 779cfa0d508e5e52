package zammad_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/zammad/zammadfake"
)

// writes returns the fake's requests that may write (all but GET).
func writes(e *env) []string {
	var out []string
	for _, r := range e.fake.Requests() {
		if r.Method != http.MethodGet {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return out
}

// Each field lands where the doc comment of Update says: group, title,
// due date and priority in one ticket update, the rating as a tag and a
// note, the comment as a note; a repeat writes nothing; the origin tag is
// set at creation.
func TestUpdateFields(t *testing.T) {
	e := newEnv(t, zammadfake.Options{})
	a := e.open(t, e.config(), e.options())
	ctx := t.Context()
	ref, id := mustEnsure(t, a, tk("up-f"))
	if got, _ := e.fake.Ticket(id); !slices.Equal(got.Tags, []string{"origin_guest"}) || got.Priority != "2 normal" {
		t.Errorf("at creation: tags %q priority %q, want the origin's tag and Zammad's default priority", got.Tags, got.Priority)
	}
	r := 4.5
	nw := adapters.Fields{Department: "maintenance", Title: "Kettle broken", Due: time.Date(2026, 5, 1, 23, 30, 0, 0, time.FixedZone("x", 2*3600)),
		Rating: &r, Comment: "VIP guest", Priority: adapters.PriorityUrgent, Origin: "guest"}
	u := adapters.FieldUpdate{UpstreamID: "up-f", Changed: adapters.AllFields, New: nw}
	e.fake.ResetRequests()
	if err := a.Update(ctx, ref, u); err != nil {
		t.Fatalf("Update: %v", err)
	}
	want := []string{"PUT /api/v1/tickets/1", "POST /api/v1/tags/add", "POST /api/v1/ticket_articles", "POST /api/v1/ticket_articles"}
	if got := writes(e); !slices.Equal(got, want) {
		t.Errorf("Update wrote %q, want %q (the fields in one update, the rating's tag, the two notes)", got, want)
	}
	got, _ := e.fake.Ticket(id)
	if got.Group != "Technical Service" || got.Title != "[maintenance] Kettle broken" || got.Priority != "3 high" ||
		got.Attributes[testDue] != "2026-05-01T21:30:00.000Z" || !slices.Equal(got.Tags, []string{"origin_guest", "guest_rating_4_5"}) {
		t.Errorf("ticket after Update: group %q title %q priority %q due %q tags %q", got.Group, got.Title, got.Priority, got.Attributes[testDue], got.Tags)
	}
	ratingNote, _ := adapters.RatingNote(r)
	commentNote, _ := adapters.CommentNote(nw.Comment)
	for _, note := range []string{ratingNote, commentNote} {
		if i := slices.IndexFunc(got.Articles, func(a zammadfake.Article) bool { return strings.Contains(a.Body, note) }); i < 0 || !got.Articles[i].Internal {
			t.Errorf("no internal note says %q", note)
		}
	}
	e.fake.ResetRequests()
	if err := e.open(t, e.config(), e.options()).Update(ctx, ref, u); err != nil {
		t.Fatalf("Update repeated: %v", err)
	}
	if got := writes(e); len(got) != 0 {
		t.Errorf("a repeat wrote %q, want nothing", got)
	}

	// A new rating replaces the tag; no due date clears the attribute
	// (null); no priority leaves Zammad's.
	five := 5.0
	nw2 := nw
	nw2.Rating, nw2.Due, nw2.Priority = &five, time.Time{}, ""
	if err := a.Update(ctx, ref, adapters.FieldUpdate{UpstreamID: "up-f", Changed: adapters.AllFields, New: nw2, Old: nw}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	got, _ = e.fake.Ticket(id)
	if _, ok := got.Attributes[testDue]; ok || !slices.Equal(got.Tags, []string{"origin_guest", "guest_rating_5"}) || got.Priority != "3 high" {
		t.Errorf("after the second Update: due %q tags %q priority %q", got.Attributes[testDue], got.Tags, got.Priority)
	}

	// Without a due attribute configured the due date is not carried.
	cfg := e.config()
	cfg.DueAttribute = ""
	nw3 := nw2
	nw3.Due = nw.Due
	e.fake.ResetRequests()
	if err := e.open(t, cfg, e.options()).Update(ctx, ref, adapters.FieldUpdate{UpstreamID: "up-f", Changed: adapters.FieldSet(adapters.FieldDue), New: nw3, Old: nw2}); err != nil {
		t.Fatalf("Update without a due attribute: %v", err)
	}
	if got := writes(e); len(got) != 0 {
		t.Errorf("an Update of the due date without a due attribute wrote %q", got)
	}
}

// A 429 on the fields update (from a proxy in front of Zammad: its REST
// API has no limit of its own) is a WaitError at Retry-After, returned
// without waiting; the update goes through after it.
func TestUpdateWaitsOn429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, zammadfake.Options{})
		a := e.open(t, e.config(), e.options())
		ref, id := mustEnsure(t, a, tk("up-w"))
		u := adapters.FieldUpdate{UpstreamID: "up-w", Changed: adapters.FieldSet(adapters.FieldTitle),
			New: adapters.Fields{Department: "housekeeping", Title: "Three towels"}}
		e.fake.Inject(zammadfake.Fault{Method: http.MethodPut, Status: http.StatusTooManyRequests, RetryAfter: 90 * time.Second})
		start := time.Now()
		err := a.Update(t.Context(), ref, u)
		var w *adapters.WaitError
		if !errors.As(err, &w) || !w.Until.Equal(start.Add(90*time.Second)) || w.Ref != ref {
			t.Fatalf("Update answered 429: %v, want a WaitError of ticket %s until %v", err, ref, start.Add(90*time.Second))
		}
		if time.Since(start) != 0 {
			t.Errorf("Update waited %v before returning the WaitError", time.Since(start))
		}
		time.Sleep(time.Until(w.Until))
		if err := a.Update(t.Context(), ref, u); err != nil {
			t.Fatalf("Update after Retry-After: %v", err)
		}
		if got, _ := e.fake.Ticket(id); got.Title != "[housekeeping] Three towels" {
			t.Errorf("title %q after the update", got.Title)
		}
	})
}

// The fake refuses what Zammad refuses, in its error form: a past due
// date in an attribute without "Allow past", and then any update of a
// ticket whose date there has passed; the adapter says which attribute
// and what to change.
func TestUpdateRefusedPastDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, zammadfake.Options{Attributes: []zammadfake.Attribute{{Name: testField},
			{Name: testDue, DataType: "datetime", RefusePast: true}}})
		a := e.open(t, e.config(), e.options())
		ref, id := mustEnsure(t, a, tk("up-p"))
		f := adapters.Fields{Department: "housekeeping", Title: "Two towels to room 214", Due: time.Now().Add(-time.Hour)}
		err := a.Update(t.Context(), ref, adapters.FieldUpdate{UpstreamID: "up-p", Changed: adapters.FieldSet(adapters.FieldDue), New: f})
		if !errors.Is(err, adapters.ErrInvalid) || !strings.Contains(err.Error(), "Guest due at does not allow past dates.") ||
			!strings.Contains(err.Error(), "TICKETBRIDGE_ZAMMAD_DUE_ATTRIBUTE") {
			t.Fatalf("Update with a past due date: %v, want ErrInvalid naming the attribute", err)
		}
		if got, _ := e.fake.Ticket(id); got.Attributes[testDue] != "" {
			t.Errorf("the refused due date was stored: %q", got.Attributes[testDue])
		}
		reqs := e.fake.Requests()
		if last := reqs[len(reqs)-1]; last.Status != http.StatusUnprocessableEntity {
			t.Errorf("the fake answered %d, want 422", last.Status)
		}

		// A due date that passes while it is stored blocks every update
		// that changes something, until the update moves or clears it.
		f.Due = time.Now().Add(time.Hour)
		if err := a.Update(t.Context(), ref, adapters.FieldUpdate{UpstreamID: "up-p", Changed: adapters.FieldSet(adapters.FieldDue), New: f}); err != nil {
			t.Fatalf("Update with a due date to come: %v", err)
		}
		time.Sleep(2 * time.Hour)
		f.Title = "Three towels"
		if err := a.Update(t.Context(), ref, adapters.FieldUpdate{UpstreamID: "up-p", Changed: adapters.FieldSet(adapters.FieldTitle), New: f}); !errors.Is(err, adapters.ErrInvalid) {
			t.Errorf("Update of the title of a ticket whose due date passed: %v, want ErrInvalid as Zammad refuses it", err)
		}
		f.Due = time.Time{}
		if err := a.Update(t.Context(), ref, adapters.FieldUpdate{UpstreamID: "up-p", Changed: adapters.FieldSet(adapters.FieldTitle | adapters.FieldDue), New: f}); err != nil {
			t.Errorf("Update clearing the due date with the title: %v", err)
		}
	})
}

// Zammad drops an attribute it does not have without a word: Update
// reads its answer and says so, rather than report a due date carried.
func TestUpdateUnknownDueAttribute(t *testing.T) {
	e := newEnv(t, zammadfake.Options{Attributes: []zammadfake.Attribute{{Name: testField}}})
	a := e.open(t, e.config(), e.options())
	ref, _ := mustEnsure(t, a, tk("up-u"))
	f := adapters.Fields{Department: "housekeeping", Title: "Two towels to room 214", Due: when.Add(24 * time.Hour)}
	err := a.Update(t.Context(), ref, adapters.FieldUpdate{UpstreamID: "up-u", Changed: adapters.FieldSet(adapters.FieldDue), New: f})
	if !errors.Is(err, adapters.ErrInvalid) || !strings.Contains(err.Error(), `no ticket attribute "guest_due_at"`) {
		t.Fatalf("Update into a missing attribute: %v, want ErrInvalid naming it", err)
	}
}

// The fake answers Zammad's error form for a refused date: error and
// error_human, both the validator's message.
func TestFakePastDateErrorForm(t *testing.T) {
	e := newEnv(t, zammadfake.Options{Attributes: []zammadfake.Attribute{{Name: testField},
		{Name: testDue, DataType: "datetime", RefusePast: true}}})
	_, id := mustEnsure(t, e.open(t, e.config(), e.options()), tk("up-e"))
	req, _ := http.NewRequest(http.MethodPut, e.url+"/api/v1/tickets/"+strconv.FormatInt(id, 10), strings.NewReader(`{"guest_due_at":"2001-01-01T00:00:00Z"}`))
	req.Header.Set("Authorization", "Token token="+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	msg := "Guest due at does not allow past dates."
	if resp.StatusCode != http.StatusUnprocessableEntity || body["error"] != msg || body["error_human"] != msg {
		t.Errorf("answer %d %v, want 422 with error and error_human %q", resp.StatusCode, body, msg)
	}
}
