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

// TestOverviewShowsPutOff: a cycle that put a side off says so on the
// overview, with until when.
func TestOverviewShowsPutOff(t *testing.T) { atT0(t, testOverviewShowsPutOff) }

func testOverviewShowsPutOff(t *testing.T) {
	st := fixture(t, 3)
	until := t0.Add(time.Hour)
	r := sync.Report{Start: t0.Add(-time.Minute), Outcome: sync.OutcomePutOff,
		PutOff: []sync.PutOff{{Side: sync.SideAPI, Until: until, Reason: "HTTP 503 (retry after 1h0m0s)"}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Update(t.Context(), func(tx *state.Tx) error {
		return tx.PutCycle(state.Cycle{Start: r.Start, End: t0, Outcome: r.Outcome, Report: b})
	}); err != nil {
		t.Fatal(err)
	}
	h := NewHotel("", st)
	if err := h.CycleDone(r, nil); err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Hotels: only(h), One: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if body, want := getOK(t, s, "/"), "api put off until"; !strings.Contains(body, want) {
		t.Fatalf("GET /: want %q in\n%s", want, body)
	}
}
