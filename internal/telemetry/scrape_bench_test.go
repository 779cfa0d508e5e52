package telemetry

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// BenchmarkScrape is what one Prometheus scrape of /metrics costs a
// daemon of many hotels: each hotel has run a cycle, made API requests
// and reported its state's figures, so that every series a running
// hotel has is there. It prints the exposition's size; ns/op and B/op
// are the scrape's CPU and allocation, which a daemon pays at every
// scrape interval whatever its hotels do.
func BenchmarkScrape(b *testing.B) {
	for _, hotels := range []int{200, 2000} {
		b.Run(fmt.Sprintf("hotels=%d", hotels), func(b *testing.B) {
			tel := NewFleet(nil, nil, Options{WatchdogEvery: -1})
			for i := range hotels {
				h := tel.Hotel(fmt.Sprintf("hotel-%04d", i))
				r := sync.Report{Outcome: sync.OutcomeOK, Synced: true, Duration: 50 * time.Millisecond, Lag: 50 * time.Millisecond}
				r.Propagation.ToHelpdesk.Observe(2 * time.Second)
				h.CycleDone(r, nil)
				for _, path := range []string{"/v1/tickets", "/v1/tickets/abc", "/v1/tickets/abc/messages"} {
					req, _ := http.NewRequest(http.MethodGet, "http://api.test"+path, nil)
					if resp, err := h.CountRequests(answerWith(200)).RoundTrip(req); err == nil {
						resp.Body.Close()
					}
				}
				h.ObserveHeld(nil, 0)
				h.observeStats(state.Stats{ByStatus: map[string]int{"new": 3, "open": 90, "closed": 7}, FileSize: 1 << 20})
			}
			hd := tel.Handler(nil)
			var size int
			b.ReportAllocs()
			for b.Loop() {
				w := &countingWriter{header: http.Header{}}
				hd.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
				if w.code != http.StatusOK {
					b.Fatalf("scrape: %d", w.code)
				}
				size = w.n
			}
			b.ReportMetric(float64(size)/(1<<20), "MB/scrape")
			b.ReportMetric(float64(size)/float64(hotels)/1024, "KB/hotel")
			b.ReportMetric(float64(scrapeHeld(hd))/(1<<20), "held-MB")
		})
	}
}

// scrapeHeld returns the most heap one scrape of hd held at once beyond
// what was live before it: the live heap is read after a collection at
// the scrape's first write and then after every MB written, where an
// exposition built whole before it is sent is all held. It is memory
// the daemon's heap must make room for at every scrape interval.
func scrapeHeld(hd http.Handler) uint64 {
	live := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base := live()
	var held uint64
	w := &countingWriter{header: http.Header{}, every: 1 << 20, sample: func() {
		if l := live(); l > base {
			held = max(held, l-base)
		}
	}}
	hd.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return held
}

// countingWriter is a response sent nowhere, as a network connection
// takes it: only its status and length are kept.
type countingWriter struct {
	header http.Header
	code   int
	n      int
	// sample, if set, is called at the first write and then once every
	// so many bytes written.
	sample func()
	every  int
	next   int
}

func (w *countingWriter) Header() http.Header { return w.header }

func (w *countingWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if w.sample != nil && w.n >= w.next {
		w.sample()
		w.next = w.n + w.every
	}
	w.n += len(p)
	return len(p), nil
}
