package statuspage

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/sync"
)

// benchTickets is the size of the hotel the page must serve quickly.
const benchTickets = 10000

// BenchmarkPage measures the pages over 10,000 tracked requests, served
// from the snapshot the daemon refreshes after each cycle, and the
// refresh itself (sync.ReadStatus over the state file, once per cycle,
// never per page view). The target is a page in under 100 ms:
//
//	go test -run '^$' -bench BenchmarkPage ./internal/statuspage/
func BenchmarkPage(b *testing.B) {
	st := fixture(b, benchTickets)
	h := NewHotel("", st)
	// The hotel keeps the last hour's cycles on the runtime's clock.
	now := time.Now()
	for i := range 120 {
		r := sync.Report{Start: now.Add(-time.Hour + time.Duration(i)*30*time.Second), Duration: time.Duration(200+i) * time.Millisecond, Outcome: sync.OutcomeOK, APIRequests: 10 + i%7}
		r.Propagation.ToHelpdesk.Observe(time.Duration(i) * time.Second)
		r.Propagation.ToGuest.Observe(time.Duration(i) * 3 * time.Second)
		h.keepCycle(r)
	}
	if err := h.Refresh(); err != nil {
		b.Fatal(err)
	}
	s, err := New(Options{Hotels: only(h), One: true, Token: "0123456789abcdef-console", ViewRate: -1})
	if err != nil {
		b.Fatal(err)
	}
	first := h.Snapshot().Status.Tickets[0].ID
	for _, c := range []struct{ name, path string }{
		{"overview", "/"},
		{"table", "/tickets"},
		{"search", "/tickets?q=dept-17&page=2"},
		{"request", "/tickets/" + first},
		{"request-by-ref", "/tickets/hd-9999"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9464"+c.path, nil))
				if rec.Code != 200 {
					b.Fatalf("GET %s: %d", c.path, rec.Code)
				}
				b.SetBytes(int64(rec.Body.Len()))
			}
		})
	}
	b.Run("refresh", func(b *testing.B) {
		for b.Loop() {
			if err := h.Refresh(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
