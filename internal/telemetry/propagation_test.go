package telemetry

import (
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/testutil"
	"github.com/ticketbridge/ticketbridge/sync"
)

// TestPropagationHistograms: the engine's per-cycle measurements add up
// in ticketbridge_propagation_seconds, one series per direction.
func TestPropagationHistograms(t *testing.T) {
	tel, _ := testTelemetry(t, Options{CycleMax: 20 * time.Minute})
	h := tel.Handler(nil)
	text := testutil.Scrape(t, h)
	for _, want := range []string{
		`ticketbridge_propagation_seconds_count{direction="to_helpdesk"} 0`,
		`ticketbridge_propagation_seconds_count{direction="to_api"} 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("before any cycle: no %s", want)
		}
	}
	var p sync.Propagation
	p.ToHelpdesk.Observe(3 * time.Second)
	p.ToGuest.Observe(90 * time.Second)
	tel.CycleDone(sync.Report{Outcome: sync.OutcomeOK, Propagation: p}, nil)
	tel.CycleDone(sync.Report{Outcome: sync.OutcomeOK, Propagation: p}, nil)
	text = testutil.Scrape(t, h)
	for _, want := range []string{
		`ticketbridge_propagation_seconds_bucket{direction="to_helpdesk",le="1"} 0`,
		`ticketbridge_propagation_seconds_bucket{direction="to_helpdesk",le="5"} 2`,
		`ticketbridge_propagation_seconds_bucket{direction="to_api",le="60"} 0`,
		`ticketbridge_propagation_seconds_bucket{direction="to_api",le="120"} 2`,
		`ticketbridge_propagation_seconds_bucket{direction="to_api",le="+Inf"} 2`,
		`ticketbridge_propagation_seconds_sum{direction="to_api"} 180`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %s in\n%s", want, testutil.GrepLines(text, "propagation"))
		}
	}
}
