package telemetry

import (
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

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

// TestExpositionUnchanged: a daemon of one hotel's series scrape as
// testdata/exposition.txt records them (names, help, types, labels,
// buckets and values, and no hotel label), after cycles, API requests,
// held changes and state figures. The file was written by the
// client_golang series the compact ones replaced, through promhttp, so
// that neither that change nor the one exposition of one hotel and many
// could rename, retype or relabel anything the alert rules and dashboards
// read.
func TestExpositionUnchanged(t *testing.T) {
	// feed gives a hotel's telemetry the same cycles, requests and stats.
	feed := func(tel *Telemetry) {
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

	}
	tel := New(nil, Options{})
	feed(tel)

	text := oneHotelText(t, tel, "")
	if proto := oneHotelText(t, tel, string(expfmt.NewFormat(expfmt.TypeProtoDelim))); proto != text {
		t.Errorf("the scrape as protocol buffers differs from the text's:\n%s", lineDiff(text, proto))
	}
	golden := filepath.Join("testdata", "exposition.txt")
	if *updateExposition {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if text != string(want) {
		t.Errorf("the scrape differs from %s:\n%s", golden, lineDiff(string(want), text))
	}
	// The daemon of one hotel runs as a fleet of one: its scrape is the
	// same, with no hotel label and no series of a fleet's.
	one := NewOne(nil, Options{})
	feed(one.Hotel("default"))
	if got := oneHotelText(t, one, ""); got != text {
		t.Errorf("the scrape of a fleet of one differs from a daemon of one hotel's:\n%s", lineDiff(text, got))
	}
}

// oneHotelText scrapes the /metrics of tel, asking for the format accept
// ("": the text format), and returns the text exposition of its hotel's
// families that stay the same from run to run.
func oneHotelText(t *testing.T, tel *Telemetry, accept string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	tel.Handler(nil).ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	var mfs []*dto.MetricFamily
	if format := expfmt.ResponseFormat(rec.Header()); format.FormatType() == expfmt.TypeProtoDelim {
		dec := expfmt.NewDecoder(rec.Body, format)
		for {
			mf := &dto.MetricFamily{}
			if err := dec.Decode(mf); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("decode as %s: %v", format, err)
			}
			mfs = append(mfs, mf)
		}
	} else {
		p := expfmt.NewTextParser(model.LegacyValidation)
		parsed, err := p.TextToMetricFamilies(rec.Body)
		if err != nil {
			t.Fatalf("the exposition does not parse: %v", err)
		}
		mfs = slices.SortedFunc(maps.Values(parsed), func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
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
	return b.String()
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

// TestFleetExpositionUnchanged: a daemon of many hotels exports each
// hotel's series as client_golang did from a registry per hotel, wrapped
// with the hotel's label and merged with the daemon's own by
// prometheus.Gatherers: the same families, series, labels, buckets and
// values, in the same order, in each format a scrape may ask for.
func TestFleetExpositionUnchanged(t *testing.T) {
	tel := NewFleet(nil, nil, Options{WatchdogEvery: -1})
	gs := prometheus.Gatherers{tel.reg}
	for i, name := range []string{"zeta", "alpha", "mid-1", "mid-10", "mid-2", `q"uo\te`} {
		h := tel.Hotel(name)
		r := sync.Report{Outcome: sync.OutcomeOK, Synced: true, Duration: time.Duration(i+1) * 300 * time.Millisecond, Lag: time.Duration(i) * time.Second,
			Mirrored: i, Sent: 2 * i, Errors: i % 2, Signalled: i, Reconcile: map[string]int{sync.ReconcileOutcomes[i%len(sync.ReconcileOutcomes)]: i + 1}}
		r.Propagation.ToHelpdesk.Observe(time.Duration(i+1) * time.Second)
		r.Propagation.ToGuest.Observe(time.Duration(i) * time.Minute)
		h.CycleDone(r, nil)
		if i%2 == 1 {
			h.CycleDone(sync.Report{Outcome: sync.OutcomeFailed, Duration: time.Second}, sync.ErrKeyRefused)
		}
		for j, a := range []answerWith{200, 404, 0, 201}[:i%4+1] {
			req, _ := http.NewRequest([]string{http.MethodGet, http.MethodPost}[j%2], "http://api.test/v1/tickets/abc/messages", nil)
			if resp, err := h.CountRequests(a).RoundTrip(req); err == nil {
				resp.Body.Close()
			}
		}
		h.ObserveHeld([]adapters.HeldError{{Need: "a field"}}[:i%2], uint64(i))
		h.observeStats(state.Stats{ByStatus: map[string]int{"new": i, "open": 10 * i, "weird": i % 3}, Retired: i, JournalPending: i, FileSize: int64(4096 * i)})

		reg := prometheus.NewRegistry()
		prometheus.WrapRegistererWith(prometheus.Labels{"hotel": name}, reg).MustRegister(clientGolang{h.m, h.prop})
		gs = append(gs, reg)
	}
	want, err := gs.Gather()
	if err != nil {
		t.Fatal(err)
	}
	wantText, wantNames := hotelsText(t, want)
	if n := strings.Count(wantText, "\n"); n < 400 {
		t.Errorf("only %d lines compared", n)
	}
	hd := tel.Handler(nil)
	for _, c := range []struct{ accept, encoding string }{
		{"", ""},
		{"text/plain;version=0.0.4", "gzip, deflate"},
		{string(expfmt.NewFormat(expfmt.TypeProtoDelim)), "gzip;q=0, identity"},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if c.accept != "" {
			req.Header.Set("Accept", c.accept)
		}
		if c.encoding != "" {
			req.Header.Set("Accept-Encoding", c.encoding)
		}
		hd.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("Accept %q: %d %s", c.accept, rec.Code, rec.Body)
		}
		var body io.Reader = rec.Body
		if got, gz := rec.Header().Get("Content-Encoding"), strings.HasPrefix(c.encoding, "gzip,"); got != map[bool]string{true: "gzip"}[gz] {
			t.Fatalf("Accept-Encoding %q: Content-Encoding %q", c.encoding, got)
		} else if gz {
			zr, err := gzip.NewReader(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			body = zr
		}
		var gotText string
		var gotNames []string
		if format := expfmt.ResponseFormat(rec.Header()); format.FormatType() == expfmt.TypeProtoDelim {
			var got []*dto.MetricFamily
			dec := expfmt.NewDecoder(body, format)
			for {
				mf := &dto.MetricFamily{}
				if err := dec.Decode(mf); err == io.EOF {
					break
				} else if err != nil {
					t.Fatalf("Accept %q: decode as %s: %v", c.accept, format, err)
				}
				got = append(got, mf)
			}
			gotText, gotNames = hotelsText(t, got)
		} else {
			gotText, gotNames = rawHotelsText(t, body) // byte for byte
		}
		if !slices.Equal(gotNames, wantNames) {
			t.Errorf("Accept %q: the families, in order:\n%v\nwant\n%v", c.accept, gotNames, wantNames)
		}
		if gotText != wantText {
			t.Errorf("Accept %q: the hotels' series differ from client_golang's:\n%s", c.accept, lineDiff(wantText, gotText))
		}
	}
}

// clientGolang is a hotel's series as client_golang exports them: const
// metrics made from the same samples, to which the daemon's own
// exposition is held.
type clientGolang struct {
	m    metrics
	prop *propagationMetrics
}

func (c clientGolang) desc(f *family) *prometheus.Desc {
	return prometheus.NewDesc(f.name, f.help, f.labels, nil)
}

func (c clientGolang) Describe(ch chan<- *prometheus.Desc) {
	for _, hf := range hotelFamilies {
		ch <- c.desc(hf.f)
	}
}

func (c clientGolang) Collect(ch chan<- prometheus.Metric) {
	h := &hotelSeries{m: c.m, prop: c.prop}
	for _, hf := range hotelFamilies {
		f, desc := hf.f, c.desc(hf.f)
		hf.each(h, func(s sample) {
			switch f.kind {
			case dto.MetricType_HISTOGRAM:
				buckets := make(map[float64]uint64, len(f.buckets))
				for i, b := range f.buckets {
					buckets[b] = s.cum[i]
				}
				ch <- prometheus.MustNewConstHistogram(desc, s.count, s.sum, buckets, s.labels...)
			case dto.MetricType_COUNTER:
				ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, s.value, s.labels...)
			default:
				ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, s.value, s.labels...)
			}
		})
	}
}

// hotelsText returns the text exposition of the families of mfs whose
// series are the hotels' (the process's change from scrape to scrape),
// and the names of all of mfs in order.
func hotelsText(t *testing.T, mfs []*dto.MetricFamily) (string, []string) {
	t.Helper()
	var b bytes.Buffer
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
		if !strings.HasPrefix(mf.GetName(), "ticketbridge_") {
			continue
		}
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String(), names
}

// rawHotelsText is hotelsText of a text exposition as it was sent: the
// families of the hotels' series as they came, byte for byte, and the
// names of all. The exposition must parse.
func rawHotelsText(t *testing.T, r io.Reader) (string, []string) {
	t.Helper()
	text, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	if _, err := p.TextToMetricFamilies(bytes.NewReader(text)); err != nil {
		t.Fatalf("the exposition does not parse: %v", err)
	}
	var b strings.Builder
	var names []string
	for block := range strings.SplitSeq(string(text), "# HELP ") {
		if block == "" {
			continue
		}
		name, _, _ := strings.Cut(block, " ")
		names = append(names, name)
		if strings.HasPrefix(name, "ticketbridge_") {
			b.WriteString("# HELP " + block)
		}
	}
	return b.String(), names
}

// TestOneHotelCountersOutliveItsRestarts: the counters of a daemon of one
// hotel go on across its hotel's restarts (a secret file changed, its
// lease taken again), as they did when the hotel was rewired in place.
func TestOneHotelCountersOutliveItsRestarts(t *testing.T) {
	one := NewOne(nil, Options{})
	one.Hotel("default").CycleDone(sync.Report{Outcome: sync.OutcomeOK, Synced: true}, nil)
	one.DropHotel("default", "")
	one.Hotel("default").CycleDone(sync.Report{Outcome: sync.OutcomeOK, Synced: true}, nil)
	if text := oneHotelText(t, one, ""); !strings.Contains(text, `ticketbridge_cycles_total{outcome="ok"} 2`) {
		t.Errorf("after a restart the scrape does not count both cycles:\n%s", text)
	}
}
