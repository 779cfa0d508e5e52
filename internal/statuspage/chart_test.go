package statuspage

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/sync"
)

// TestChartOfANewDaemon: the cycles of a daemon started two minutes ago
// spread over the chart from a little before the first, instead of
// squeezing against the right edge of an hour.
func TestChartOfANewDaemon(t *testing.T) {
	var cycles []sync.Report
	for i := range 4 {
		cycles = append(cycles, sync.Report{Start: t0.Add(-2*time.Minute + time.Duration(i)*30*time.Second), Duration: time.Second, Outcome: sync.OutcomeOK, APIRequests: 3})
	}
	svg := string(cycleChart(cycles, t0, time.Hour))
	m := regexp.MustCompile(`<rect class="bar" x="([0-9.]+)"`).FindStringSubmatch(svg)
	if m == nil {
		t.Fatalf("no bar in\n%s", svg)
	}
	x, _ := strconv.ParseFloat(m[1], 64)
	if plotW := float64(chartW - 2*chartPad); x > chartPad+plotW*3/4 { // an hour would put it at 97 %
		t.Errorf("the first bar of a new daemon is at %.0f of %.0f: squeezed to the right", x-chartPad, plotW)
	}
	// From a tenth of the cycles' age before the first: 2m12s back.
	if start := t0.Add(-2*time.Minute - 12*time.Second).Format("15:04"); !strings.Contains(svg, ">"+start+"<") {
		t.Errorf("the chart of a new daemon does not start at %s:\n%s", start, svg)
	}
	// An hour of cycles still spans the hour.
	old := append([]sync.Report{{Start: t0.Add(-59 * time.Minute), Duration: time.Second, Outcome: sync.OutcomeOK}}, cycles...)
	if svg := string(cycleChart(old, t0, time.Hour)); !strings.Contains(svg, t0.Add(-time.Hour).Format("15:04")) {
		t.Errorf("an hour of cycles does not span the hour:\n%s", svg)
	}
}

// TestPageWording: one message is a message, an empty error is no alarm,
// and the table's columns say what they count.
func TestPageWording(t *testing.T) { atT0(t, testPageWording) }

func testPageWording(t *testing.T) {
	st := fixture(t, 3)
	h := NewHotel("", st)
	r := sync.Report{Start: t0.Add(-time.Minute), Duration: time.Second, Outcome: sync.OutcomeOK}
	r.Propagation.ToHelpdesk.Observe(time.Second)
	if err := h.CycleDone(r, nil); err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Hotels: only(h), One: true})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) string {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9464"+path, nil))
		if rec.Code != 200 {
			t.Fatalf("GET %s: %d", path, rec.Code)
		}
		return rec.Body.String()
	}
	if body := get("/"); !strings.Contains(body, "1 message ·") || strings.Contains(body, "1 messages") {
		t.Errorf("the overview counts one message as %q", regexp.MustCompile(`\d+ messages? ·`).FindString(body))
	}
	body := get("/tickets")
	if strings.Contains(body, `<td class="error">–</td>`) {
		t.Error("an empty error is drawn as an alarm")
	}
	for _, want := range []string{`title="messages mirrored into the helpdesk / posted upstream by the bridge"`, `title="` + sync.DueReasonText(sync.DueQuiet) + `"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the table lacks %s", want)
		}
	}
}
