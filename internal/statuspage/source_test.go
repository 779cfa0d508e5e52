package statuspage

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// The recent cycles are kept without their lists of requests and
// failures: a daemon of many hotels keeps an hour of each hotel's.
func TestHotelKeepsBriefCycles(t *testing.T) { atT0(t, testHotelKeepsBriefCycles) }

func testHotelKeepsBriefCycles(t *testing.T) {
	now := time.Now()
	h := NewHotel("alpha", nil)
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

// On demand, a hotel keeps counts only and reads its requests from the
// state when a page of it is viewed.
func TestHotelOnDemand(t *testing.T) { atT0(t, testHotelOnDemand) }

func testHotelOnDemand(t *testing.T) {
	st, err := state.Open(t.Context(), filepath.Join(t.TempDir(), "state.db"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	put := func(id string) {
		t.Helper()
		if err := st.Update(t.Context(), func(tx *state.Tx) error { return tx.PutTicket(state.Ticket{ID: id, UpstreamStatus: "new"}) }); err != nil {
			t.Fatal(err)
		}
	}
	put("t1")
	h := NewHotel("alpha", st).OnDemand()
	if err := h.Refresh(); err != nil {
		t.Fatal(err)
	}
	sum := h.Summary()
	if sum.Status.Tickets != nil || sum.Status.Counts.Tickets != 1 {
		t.Errorf("kept in memory: %d tickets listed, counts %+v; want none listed, 1 counted", len(sum.Status.Tickets), sum.Status.Counts)
	}
	put("t2")
	if got := h.Snapshot().Status.Tickets; len(got) != 2 {
		t.Errorf("a page view lists %d tickets, want the 2 in the state", len(got))
	}
}

// A hotel keeps of each recent cycle what the chart and the overview
// show, the newest whole; the list of hotels is given the newest only;
// and a cycle kept once the hour is full allocates nothing (a copy of the
// hour in every cycle was its largest allocation).
func TestHotelKeepsCompactCycles(t *testing.T) { atT0(t, testHotelKeepsCompactCycles) }

func testHotelKeepsCompactCycles(t *testing.T) {
	now := time.Now()
	h := NewHotel("alpha", nil)
	cycle := func(i int) sync.Report {
		r := sync.Report{Start: now, Duration: time.Duration(i) * time.Millisecond, Outcome: sync.OutcomeOK, APIRequests: i % 7,
			TouchedCount: i, Errors: 1}
		if i%2 == 0 {
			r.Propagation.ToGuest.Observe(time.Duration(i) * time.Second)
		}
		return r
	}
	for i := range 240 {
		time.Sleep(30 * time.Second)
		now = time.Now()
		h.CycleReported(cycle(i))
	}
	cs := h.Snapshot().Cycles
	if len(cs) != 121 {
		t.Fatalf("%d cycles kept, want the hour's 121 (both ends in)", len(cs))
	}
	for i, c := range cs {
		want := cycle(119 + i)
		if !c.Start.Equal(now.Add(-time.Duration(120-i)*30*time.Second)) || c.Duration != want.Duration || c.Outcome != want.Outcome ||
			c.APIRequests != want.APIRequests || c.Propagation.ToGuest.Count() != want.Propagation.ToGuest.Count() {
			t.Fatalf("cycle %d kept as %+v, want %+v", i, c, want)
		}
	}
	if last := cs[len(cs)-1]; last.TouchedCount != 239 || last.Errors != 1 {
		t.Errorf("the newest cycle lost its counts: %+v", last)
	}
	if sum := h.Summary().Cycles; len(sum) != 1 || sum[0].TouchedCount != 239 {
		t.Errorf("the summary holds %d cycles (%+v), want the newest", len(sum), sum)
	}
	quiet := cycle(1)
	allocs := testing.AllocsPerRun(100, func() {
		now = now.Add(30 * time.Second)
		h.CycleReported(quiet)
	})
	if allocs != 0 {
		t.Errorf("keeping a cycle in a full hour allocates %.0f times, want 0", allocs)
	}
}
