package rt_test

import (
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/rt"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// history returns the number of transactions of ticket ref and RT's
// Priority of it.
func (g *agent) history(t testing.TB, ref adapters.Ref) (txns int, priority string) {
	t.Helper()
	var hist struct{ Total, Count int }
	if err := g.do(t.Context(), http.MethodGet, "/ticket/"+string(ref)+"/history", url.Values{"per_page": {"100"}}, nil, &hist); err != nil {
		t.Fatal(err)
	}
	var tk struct{ Priority string }
	if err := g.do(t.Context(), http.MethodGet, "/ticket/"+string(ref), nil, nil, &tk); err != nil {
		t.Fatal(err)
	}
	return hist.Count, tk.Priority
}

// TestUpdateWritesOnlyWhatDiffers: every field lands where the adapter's
// doc says, a past due date is kept as it is, a repeat (from a fresh
// adapter, with the state lost) leaves no transaction, clearing the due
// date, the rating and the comment clears them once, and Changes reports
// none of it.
func TestUpdateWritesOnlyWhatDiffers(t *testing.T) {
	r := needRT(t)
	def, hk := r.queue(t, "fields-default"), r.queue(t, "fields-housekeeping")
	rating := r.ratingField(t)
	env := map[string]string{"TICKETBRIDGE_RT_QUEUE": def, "TICKETBRIDGE_RT_QUEUES": "housekeeping=" + hk, "TICKETBRIDGE_RT_RATING_FIELD": rating}
	a := r.open(t, env)
	g := r.agent()
	g.ratingField = rating
	tk := upTicket("maintenance", guestapi.StatusNew)
	ref, err := a.EnsureTicket(t.Context(), tk)
	if err != nil {
		t.Fatal(err)
	}
	from := head(t, a)
	three := 3.0
	past := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	nw := adapters.Fields{Department: "housekeeping", Title: "Extra pillows, room 12 (moved)", Due: past, Rating: &three,
		Comment: "VIP guest.\nUse the feather-free ones.", Origin: tk.Origin, Priority: adapters.PriorityHigh}
	u := adapters.FieldUpdate{UpstreamID: tk.UpstreamID, Changed: adapters.AllFields, New: nw,
		Old: adapters.Fields{Department: tk.Department, Title: tk.TaskDescription, Origin: tk.Origin}}
	if err := a.Update(t.Context(), ref, u); err != nil {
		t.Fatalf("Update: %v", err)
	}
	held, err := g.ReadFields(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if held.Queue != hk || held.Title != nw.Title || !held.Due.Equal(past) {
		t.Errorf("RT holds queue %q, subject %q, due %v; want %q, %q, %v (a past date as it is)", held.Queue, held.Title, held.Due, hk, nw.Title, past)
	}
	if rating != "" && (held.Rating == nil || *held.Rating != 3) {
		t.Errorf("RT's rating field holds %v, want 3", held.Rating)
	}
	txns, prio := g.history(t, ref)
	if prio != "100" {
		t.Errorf("RT's Priority is %s after high, want 100 (rt.Priorities)", prio)
	}
	notes := func() (rated, commented, removed int) {
		for _, m := range g.thread(t, ref) {
			rated += strings.Count(m.text, "Guest rated 3.")
			commented += strings.Count(m.text, "Use the feather-free ones.")
			removed += strings.Count(m.text, "Console comment removed.")
		}
		return
	}
	if rated, commented, _ := notes(); rated != 1 || commented != 1 {
		t.Errorf("the ticket holds %d rating notes and %d comment notes, want 1 each", rated, commented)
	}

	// A repeat from a fresh adapter, the state lost: no transaction.
	lost := u
	lost.Old = adapters.Fields{}
	if err := r.open(t, env).Update(t.Context(), ref, lost); err != nil {
		t.Fatalf("Update repeated: %v", err)
	}
	if again, _ := g.history(t, ref); again != txns {
		t.Errorf("a repeated update made %d transactions, want none", again-txns)
	}

	// Clearing: the due date, the rating, the comment.
	cleared := nw
	cleared.Due, cleared.Rating, cleared.Comment = time.Time{}, nil, ""
	clear := adapters.FieldUpdate{UpstreamID: tk.UpstreamID, New: cleared, Old: nw,
		Changed: adapters.FieldSet(adapters.FieldDue | adapters.FieldRating | adapters.FieldComment)}
	for range 2 {
		if err := a.Update(t.Context(), ref, clear); err != nil {
			t.Fatalf("Update clearing: %v", err)
		}
	}
	if held, err = g.ReadFields(t.Context(), ref); err != nil {
		t.Fatal(err)
	}
	if !held.Due.IsZero() || held.Rating != nil {
		t.Errorf("after clearing RT holds due %v and rating %v, want neither", held.Due, held.Rating)
	}
	if _, _, removed := notes(); removed != 1 {
		t.Errorf("the ticket holds %d notes of the comment's removal, want 1", removed)
	}
	txns, _ = g.history(t, ref)
	if err := a.Update(t.Context(), ref, clear); err != nil {
		t.Fatal(err)
	}
	if again, _ := g.history(t, ref); again != txns {
		t.Errorf("repeating the clearing made %d transactions, want none", again-txns)
	}
	for _, ev := range eventsOn(t, r.open(t, env), from, ref) {
		t.Errorf("Changes reported the bridge's own update: %s %q (status %q)", ev.Kind, ev.Body, ev.Status)
	}
	if err := a.Update(t.Context(), ref, adapters.FieldUpdate{UpstreamID: tk.UpstreamID, Changed: adapters.FieldSet(adapters.FieldPriority),
		New: adapters.Fields{Priority: "critical"}}); err == nil {
		t.Error("Update with an unknown priority: no error")
	}
	if want := map[adapters.Priority]int64{"low": 0, "normal": 50, "high": 100, "urgent": 150}; !maps.Equal(rt.Priorities, want) {
		t.Errorf("rt.Priorities = %v, want %v", rt.Priorities, want)
	}
}
