package statuspage

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// TestOverviewShowsFullLists: a cycle whose lists held the API's limit
// of requests says on the overview which status and department, and that
// older requests of them may be missing; the section is gone once no list
// is full.
func TestOverviewShowsFullLists(t *testing.T) { atT0(t, testOverviewShowsFullLists) }

func testOverviewShowsFullLists(t *testing.T) {
	st := fixture(t, 3)
	h := NewHotel("", st)
	// cycle stores a cycle's report as the engine does, with lists as
	// its full_lists, and hands it to the page.
	cycle := func(start time.Time, lists string) {
		body := []byte(`{"start":"` + start.Format(time.RFC3339) + `","outcome":"ok","synced":true,"full_lists":` + lists + `}`)
		var r sync.Report
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		if err := st.Update(t.Context(), func(tx *state.Tx) error {
			return tx.PutCycle(state.Cycle{Start: r.Start, End: start, Outcome: r.Outcome, Success: true, Report: body})
		}); err != nil {
			t.Fatal(err)
		}
		if err := h.CycleDone(r, nil); err != nil {
			t.Fatal(err)
		}
	}
	cycle(t0.Add(-time.Minute), `[{"status":"new","department":"housekeeping"}]`)
	s, err := New(Options{Hotels: only(h), One: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	get := func() string { return getOK(t, s, "/") }
	page := get()
	for _, want := range []string{"Full lists (1)", "housekeeping", "older than the 200th"} {
		if !strings.Contains(page, want) {
			t.Errorf("the overview lacks %q", want)
		}
	}
	cycle(t0, `[]`)
	if page := get(); strings.Contains(page, "Full lists") {
		t.Error("the section stays once no list is full")
	}
}
