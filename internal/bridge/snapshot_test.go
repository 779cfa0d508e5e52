package bridge

import (
	"encoding/json"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/sync"
)

// The status snapshot is taken after a cycle that did not sync, after one
// that changed the state (at most as often as its cost allows), and after
// quiet ones once a minute.
func TestSnapshotTimer(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	synced := sync.Report{Outcome: sync.OutcomeOK, Synced: true}
	var timer snapshotTimer
	if !timer.due(t0, synced, 0) {
		t.Error("the first cycle took no snapshot")
	}
	timer.cost = 10 * time.Millisecond
	timer.taken(t0, 0, nil)
	for _, c := range []struct {
		what    string
		after   time.Duration
		r       sync.Report
		commits int64
		want    bool
	}{
		{"a quiet cycle a second on", time.Second, synced, 0, false},
		{"a quiet cycle 59 s on", 59 * time.Second, synced, 0, false},
		{"a quiet cycle a minute on", time.Minute, synced, 0, true},
		{"a cycle that wrote, a second on", time.Second, synced, 1, true},
		{"a cycle that wrote, 0.1 s on (twenty times the cost is 0.2 s)", 100 * time.Millisecond, synced, 1, false},
		{"a cycle that did not sync, a second on", time.Second, sync.Report{Outcome: sync.OutcomeFailed}, 0, true},
	} {
		if got := timer.due(t0.Add(c.after), c.r, c.commits); got != c.want {
			t.Errorf("%s: due %t, want %t", c.what, got, c.want)
		}
	}
	timer.cost = time.Minute
	timer.taken(t0, 0, nil)
	if timer.due(t0.Add(9*time.Second), synced, 1) || !timer.due(t0.Add(10*time.Second), synced, 1) {
		t.Error("a snapshot that cost a minute: a cycle that wrote does not take the next one after snapshotEvery")
	}
}

// A quiet cycle's snapshot is the last one restamped, not read from the
// state again: only after a cycle that synced, with nothing committed
// since the last one was read.
func TestSnapshotReuse(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	synced := sync.Report{Outcome: sync.OutcomeOK, Synced: true}
	var timer snapshotTimer
	if timer.reuse(synced, 0) != nil {
		t.Fatal("a snapshot reused before any was taken")
	}
	timer.taken(t0, 0, nil) // could not be read
	if timer.reuse(synced, 0) != nil {
		t.Error("a snapshot that could not be read reused")
	}
	s := &sync.Status{At: t0}
	timer.taken(t0, 4, s)
	if timer.reuse(synced, 4) != s {
		t.Error("a quiet cycle's snapshot read the state again")
	}
	if timer.reuse(synced, 5) != nil {
		t.Error("a snapshot reused after the state committed")
	}
	if timer.reuse(sync.Report{Outcome: sync.OutcomeFailed}, 4) != nil {
		t.Error("a snapshot reused after a cycle that did not sync")
	}
}

// A lean hotel (a hotel of many: its page reads its request lines on
// demand) keeps its last snapshot without them. Writing a file, it reads
// a quiet snapshot from the state again, every snapshotLeanQuietEvery;
// on PostgreSQL (no file) it restamps the counts it keeps.
func TestSnapshotLean(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	synced := sync.Report{Outcome: sync.OutcomeOK, Synced: true}
	full := &sync.Status{At: t0, Counts: sync.StatusCounts{Tickets: 1}, Tickets: []sync.TicketStatus{{ID: "t-1"}},
		Pending: []sync.EntryStatus{{EventID: "e-1"}}, Failed: []sync.EntryStatus{{EventID: "e-2"}}}
	for _, file := range []bool{true, false} {
		timer := snapshotTimer{lean: true, file: file}
		timer.taken(t0, 4, full)
		if p := timer.prev; p == nil || p.Tickets != nil || p.Pending != nil || p.Failed != nil || p.Counts.Tickets != 1 {
			t.Errorf("file %t: a lean timer keeps %+v, want the counts only", file, p)
		}
		if len(full.Tickets) != 1 {
			t.Fatal("taking the snapshot emptied the caller's")
		}
		reused := timer.reuse(synced, 4)
		if file && reused != nil {
			t.Error("a lean hotel writing a file restamps a snapshot without its request lines")
		}
		if !file && reused == nil {
			t.Error("a lean hotel on PostgreSQL reads the state again for a quiet snapshot")
		}
		quiet := snapshotQuietEvery
		if file {
			quiet = snapshotLeanQuietEvery
		}
		if timer.due(t0.Add(quiet-time.Second), synced, 4) || !timer.due(t0.Add(quiet), synced, 4) {
			t.Errorf("file %t: a quiet snapshot is not due after %s", file, quiet)
		}
	}
}

// The snapshot taken after a cycle shows that cycle as the last, though a
// quiet cycle does not store its record every time.
func TestSnapshotShowsTheLastCycle(t *testing.T) {
	b, cfg := newTestBridge(t)
	var last sync.Report
	for range 3 {
		r, err := b.Engine().RunCycle(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		last = r
	}
	last.Start = last.Start.Add(time.Hour) // a report the state does not hold
	b.snapshotAfter(t.Context(), &last)
	body, err := os.ReadFile(cfg + StatusSuffix)
	if err != nil {
		t.Fatal(err)
	}
	var s sync.Status
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatal(err)
	}
	if s.LastCycle == nil || !s.LastCycle.Start.Equal(last.Start) {
		t.Errorf("snapshot's last cycle %+v, want the one that started at %s", s.LastCycle, last.Start)
	}
	if want := last.Start.Add(last.Duration); !s.LastSuccess.Equal(want) {
		t.Errorf("snapshot's last success %s, want %s", s.LastSuccess, want)
	}
}

// newTestBridge returns a Bridge of hotel(t), closed when t ends, and the
// path of its state file.
func newTestBridge(t *testing.T) (*Bridge, string) {
	t.Helper()
	env, cfg, sc := hotel(t)
	b, err := New(t.Context(), env, cfg, sc, slog.New(slog.DiscardHandler), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, cfg.State.Value()
}
