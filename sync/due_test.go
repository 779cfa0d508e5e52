package sync

import (
	"fmt"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
)

func testPolicy() policy {
	return policy{interval: 30 * time.Second, quietMax: 30 * time.Minute, closedInterval: time.Hour, closedGrace: 72 * time.Hour, retired: 24 * time.Hour}
}

// TestDueQuietBacksOffToTheCap: once the lists have missed a change,
// recent activity is polled: every cycle, then less and less often.
func TestDueQuietBacksOffToTheCap(t *testing.T) {
	p := testPolicy()
	p.fullRead = 24 * time.Hour
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tk := &state.Ticket{ID: "t", Ref: "r", UpstreamStatus: "new", LastActivity: now}
	var waits []time.Duration
	for range 8 {
		p.afterRead(tk, now, false)
		waits = append(waits, tk.NextDue.Sub(now))
	}
	want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 30 * time.Minute, 30 * time.Minute, 30 * time.Minute}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("quiet waits %v, want %v", waits, want)
		}
	}
	p.afterRead(tk, now, true)
	if tk.NextDue != now || tk.QuietStreak != 0 || tk.DueReason != DueActive {
		t.Fatalf("activity: %+v", tk)
	}
	if !p.due(tk, now.Add(30*time.Second)) {
		t.Fatal("an active ticket is not due on the next cycle")
	}
}

func TestDueClosedRetiresAfterGrace(t *testing.T) {
	p := testPolicy()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tk := &state.Ticket{ID: "t", UpstreamStatus: "done"}
	p.afterRead(tk, now, true) // closed now: activity
	if tk.ClosedAt != now {
		t.Fatalf("closed at %s", tk.ClosedAt)
	}
	reads := 0
	for at := now.Add(30 * time.Second); at.Before(now.Add(80 * time.Hour)); at = at.Add(30 * time.Second) {
		if p.due(tk, at) {
			reads++
			p.afterRead(tk, at, false)
		}
	}
	if !tk.Retired || tk.DueReason != DueRetired {
		t.Fatalf("not retired after the grace: %+v", tk)
	}
	if reads < 72 || reads > 74 {
		t.Fatalf("%d reads in the grace period, want about one an hour", reads)
	}
	retiredAt := tk.NextDue.Add(-24 * time.Hour)
	if p.due(tk, retiredAt.Add(23*time.Hour)) {
		t.Fatal("a retired ticket is due before the retired interval")
	}
	if !p.due(tk, retiredAt.Add(24*time.Hour)) {
		t.Fatal("a retired ticket is not read again after the retired interval")
	}
	p.afterRead(tk, retiredAt.Add(24*time.Hour), false)
	if !tk.Retired || tk.NextDue != retiredAt.Add(48*time.Hour) {
		t.Fatalf("a quiet read of a retired ticket: %+v", tk)
	}
	later := now.Add(100 * time.Hour)
	p.wake(tk, later, DueUpdated)
	if !p.due(tk, later) || tk.Retired {
		t.Fatal("a list showing it updated does not bring it back")
	}
	tk.UpstreamStatus = "in_progress" // reopened
	p.afterRead(tk, later, true)
	if !tk.ClosedAt.IsZero() {
		t.Fatal("a reopened ticket keeps its closing time")
	}
}

func TestDueErrorsBackOffAndWakeKeepsIt(t *testing.T) {
	p := testPolicy()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tk := &state.Ticket{ID: "t"}
	p.afterError(tk, now, "boom")
	p.afterError(tk, now, "boom")
	if tk.Attempts != 2 || tk.NextDue != now.Add(time.Minute) || tk.DueReason != DueRetry {
		t.Fatalf("after two errors: %+v", tk)
	}
	p.wake(tk, now, DueEvent)
	if tk.NextDue != now.Add(time.Minute) {
		t.Fatal("a wake cut a failing ticket's backoff short")
	}
	p.afterRead(tk, now.Add(time.Minute), false)
	if tk.Attempts != 0 || tk.LastError != "" {
		t.Fatalf("a good read keeps the error: %+v", tk)
	}
}

// TestDueWhileListsShowAll: while the lists show every change, a read
// (quiet or not) leaves an open ticket to its full-read slot, at most one
// full-read interval away, and the slots of many tickets are spread evenly.
func TestDueWhileListsShowAll(t *testing.T) {
	p := testPolicy()
	p.fullRead, p.listsShowAll = 10*time.Minute, true
	now := time.Date(2026, 1, 1, 0, 0, 7, 0, time.UTC)
	buckets := make([]int, 20) // one per 30 s cycle
	for i := range 2000 {
		tk := &state.Ticket{ID: fmt.Sprintf("ticket-%d", i), Ref: "r", UpstreamStatus: "assigned"}
		p.afterRead(tk, now, i%2 == 0)
		wait := tk.NextDue.Sub(now)
		if tk.DueReason != DueFull || wait <= p.slack() || wait > p.fullRead+p.slack() {
			t.Fatalf("ticket %s: next read in %s (%s), want its slot within the full-read interval", tk.ID, wait, tk.DueReason)
		}
		buckets[min(int((wait-p.slack())/(30*time.Second)), 19)]++
		if p.due(tk, now.Add(30*time.Second)) && wait > 30*time.Second+p.slack() {
			t.Fatalf("ticket %s due before its slot", tk.ID)
		}
	}
	for i, n := range buckets {
		if n < 60 || n > 140 { // 100 expected
			t.Fatalf("slots not spread evenly: cycle %d gets %d of 2000 reads (%v)", i, n, buckets)
		}
	}
	// A ticket read a little before its slot is not read again at it.
	tk := &state.Ticket{ID: "x", Ref: "r", UpstreamStatus: "new"}
	p.afterRead(tk, now, false)
	early := tk.NextDue.Add(-p.slack() / 2)
	if !p.due(tk, early) {
		t.Fatal("not due within the slack")
	}
	p.afterRead(tk, early, false)
	if tk.NextDue.Sub(early) < p.fullRead-p.slack() {
		t.Fatalf("read early, then due again in %s", tk.NextDue.Sub(early))
	}
	// A shortened interval brings a ticket's next read forward.
	p.fullRead = 5 * time.Minute
	tk.NextDue = now.Add(9 * time.Minute)
	if !p.capFull(tk, now) || tk.NextDue.Sub(now) > 5*time.Minute+p.slack() {
		t.Fatalf("capFull left the next read %s away", tk.NextDue.Sub(now))
	}
	for _, c := range []state.Ticket{{ID: "a", UpstreamStatus: "done", Ref: "r"}, {ID: "b", UpstreamStatus: "new"}, {ID: "c", Ref: "r", UpstreamStatus: "new", Attempts: 2}} {
		c.NextDue = now.Add(time.Hour)
		if p.capFull(&c, now) {
			t.Errorf("capFull moved %+v: closed, not yet imported or backing off tickets keep their time", c)
		}
	}
}
