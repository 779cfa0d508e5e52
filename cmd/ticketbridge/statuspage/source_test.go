package statuspage

import (
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/sync"
)

// The recent cycles are kept without their lists of requests and
// failures: a daemon of many hotels keeps an hour of each hotel's.
func TestHotelKeepsBriefCycles(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	h := NewHotel("alpha", nil, func() time.Time { return now })
	h.CycleReported(sync.Report{Start: now.Add(-time.Minute), Outcome: sync.OutcomePartial, APIRequests: 7,
		Touched: []string{"t1", "t2"}, TouchedCount: 2, Errors: 1,
		Failures: []sync.Failure{{Ticket: "t1", Op: "read", Error: "boom"}}})
	cs := h.Snapshot().Cycles
	if len(cs) != 1 {
		t.Fatalf("%d cycles kept, want 1", len(cs))
	}
	c := cs[0]
	if c.Touched != nil || c.Failures != nil {
		t.Errorf("a kept cycle holds its lists: %v, %v", c.Touched, c.Failures)
	}
	if c.TouchedCount != 2 || c.Errors != 1 || c.APIRequests != 7 || c.Outcome != sync.OutcomePartial {
		t.Errorf("a kept cycle lost its counts: %+v", c)
	}
}
