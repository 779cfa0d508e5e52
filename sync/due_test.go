package sync

import (
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
)

func testPolicy() policy {
	return policy{interval: 30 * time.Second, quietMax: 30 * time.Minute, closedInterval: time.Hour, closedGrace: 72 * time.Hour, retired: 24 * time.Hour}
}

func TestDueQuietBacksOffToTheCap(t *testing.T) {
	p := testPolicy()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tk := &state.Ticket{ID: "t", UpstreamStatus: "new"}
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
