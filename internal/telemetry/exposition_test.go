package telemetry

import (
	"bytes"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

var updateExposition = flag.Bool("update-exposition", false, "rewrite testdata/exposition.txt from this run")

type answerWith int

func (a answerWith) RoundTrip(*http.Request) (*http.Response, error) {
	if a == 0 {
		return nil, errors.New("connection refused")
	}
	return &http.Response{StatusCode: int(a), Body: http.NoBody}, nil
}

// TestExpositionUnchanged: the hotel's series scrape as
// testdata/exposition.txt records them (names, help, types, labels,
// buckets and values), after cycles, API requests, held changes and state
// figures. The file was written by the client_golang series the compact
// ones replaced, so that the change could not rename, retype or relabel
// anything the alert rules and dashboards read.
func TestExpositionUnchanged(t *testing.T) {
	tel := New(nil, Options{})
	r := sync.Report{Outcome: sync.OutcomePartial, Synced: true, Duration: 1500 * time.Millisecond, Lag: 3 * time.Second,
		Mirrored: 4, Sent: 2, Errors: 1, Failed: 1, Signalled: 5, Unsignalled: 1, Throttled: 3}
	r.Propagation.ToHelpdesk.Observe(2 * time.Second)
	tel.CycleDone(r, nil)
	tel.CycleDone(sync.Report{Outcome: sync.OutcomeFailed, Duration: 2 * time.Second, Lag: 5 * time.Second}, sync.ErrKeyRefused)
	tel.CycleDone(sync.Report{Outcome: sync.OutcomeOK, Synced: true, Duration: 0.05e9, Lag: 0.05e9}, nil)
	for _, a := range []answerWith{200, 200, 404, 0} {
		req, _ := http.NewRequest(http.MethodGet, "http://api.test/v1/tickets/abc/messages", nil)
		if resp, err := tel.CountRequests(a).RoundTrip(req); err == nil {
			resp.Body.Close()
		}
	}
	req, _ := http.NewRequest(http.MethodPost, "http://api.test/v1/tickets/abc/messages", nil)
	if resp, err := tel.CountRequests(answerWith(201)).RoundTrip(req); err == nil {
		resp.Body.Close()
	}
	tel.ObserveHeld([]adapters.HeldError{{Need: "a field"}}, 2)
	tel.observeStats(state.Stats{ByStatus: map[string]int{"new": 3, "": 1, "weird": 2}, Retired: 1, JournalPending: 2, FileSize: 4096})

	mfs, err := tel.gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		name := mf.GetName()
		if !strings.HasPrefix(name, "ticketbridge_") || name == "ticketbridge_build_info" || strings.HasSuffix(name, "_timestamp_seconds") {
			continue // the build's and the clock's differ from run to run
		}
		if name == "ticketbridge_api_request_duration_seconds" {
			for _, m := range mf.Metric { // durations of the run: only the counts are stable
				m.Histogram.SampleSum = new(float64)
				for _, bk := range m.Histogram.Bucket {
					bk.CumulativeCount = m.Histogram.SampleCount
				}
			}
		}
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	golden := filepath.Join("testdata", "exposition.txt")
	if *updateExposition {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("the scrape differs from %s:\n%s", golden, lineDiff(string(want), got))
	}
}

// lineDiff lists the lines only one of want and got has.
func lineDiff(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var out []string
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}
