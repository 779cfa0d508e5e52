package telemetry

import (
	"encoding/json"
	"testing"

	"github.com/ticketbridge/ticketbridge/internal/testutil"
	"github.com/ticketbridge/ticketbridge/sync"
)

// fullReport is a cycle's report as the state stores it, naming lists
// the API answered with its limit of requests.
func fullReport(t *testing.T, lists string) sync.Report {
	t.Helper()
	var r sync.Report
	if err := json.Unmarshal([]byte(`{"outcome":"ok","synced":true,"full_lists":`+lists+`}`), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFullListsMetric: ticketbridge_full_lists counts the lists of the
// last cycle that held the API's limit of requests (older ones of that
// status and department may be missing), for a daemon of one hotel and,
// with the hotel's label, of many; it is 0 before the first and once no
// list is full.
func TestFullListsMetric(t *testing.T) {
	two := `[{"status":"new","department":"busy"},{"status":"in_progress","department":"spa"}]`

	tel, _ := testTelemetry(t, Options{})
	h := tel.Handler(nil)
	if got := testutil.MetricValue(t, testutil.Scrape(t, h), "ticketbridge_full_lists"); got != 0 {
		t.Fatalf("ticketbridge_full_lists before the first cycle = %v, want 0", got)
	}
	tel.CycleDone(fullReport(t, two), nil)
	if got := testutil.MetricValue(t, testutil.Scrape(t, h), "ticketbridge_full_lists"); got != 2 {
		t.Fatalf("ticketbridge_full_lists = %v, want 2", got)
	}
	tel.CycleDone(fullReport(t, `[]`), nil)
	if got := testutil.MetricValue(t, testutil.Scrape(t, h), "ticketbridge_full_lists"); got != 0 {
		t.Fatalf("ticketbridge_full_lists once no list is full = %v, want 0", got)
	}

	fleet := NewFleet(nil, nil, Options{WatchdogEvery: -1})
	fleet.Hotel("alpha").CycleDone(fullReport(t, two), nil)
	fleet.Hotel("beta").CycleDone(fullReport(t, `[]`), nil)
	text := testutil.Scrape(t, fleet.Handler(nil))
	for series, want := range map[string]float64{
		`ticketbridge_full_lists{hotel="alpha"}`: 2,
		`ticketbridge_full_lists{hotel="beta"}`:  0,
	} {
		if got := testutil.MetricValue(t, text, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
}
