package sync_test

import (
	"strings"
	"testing"
	"time"
)

// TestReportNamesTheRequests: the cycle's line names the requests it
// changed, a few of them, then "and N more"; a quiet cycle names none.
func TestReportNamesTheRequests(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for _, d := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		ids = append(ids, e.newTicket("request "+d))
	}
	r := e.cycle()
	if r.TouchedCount != 7 || len(r.Touched) != 7 {
		t.Fatalf("touched %d (%v), want 7", r.TouchedCount, r.Touched)
	}
	line := r.String()
	if !strings.Contains(line, "; requests ") || !strings.HasSuffix(line, " and 2 more") {
		t.Fatalf("line does not name the requests: %s", line)
	}
	for _, id := range r.Touched[:5] {
		if !strings.Contains(line, id[:8]) {
			t.Errorf("line lacks %s: %s", id[:8], line)
		}
	}

	e.clock.Advance(time.Minute)
	e.guest(ids[3], "one more thing")
	r = e.cycle()
	if r.TouchedCount != 1 || !strings.HasSuffix(r.String(), "; requests "+ids[3][:8]) {
		t.Fatalf("a cycle that mirrored one message: %s", r)
	}
	e.clock.Advance(time.Minute)
	if r = e.cycle(); r.TouchedCount != 0 || strings.Contains(r.String(), "; requests") {
		t.Fatalf("a quiet cycle: %s", r)
	}
}
