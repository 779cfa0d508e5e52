package sync_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/ticketbridge/ticketbridge/internal/testutil"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// TestSchedulerNeverOverlaps runs the first cycle blocked past two ticks,
// on a testing/synctest bubble's clock, and checks that both ticks are
// skipped (and logged), and that no second cycle starts until it ends.
func TestSchedulerNeverOverlaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := make(chan int, 10)
		release := make(chan struct{})
		var running, maxRunning, n atomic.Int32
		after := make(chan error, 10)
		logs := &testutil.Buffer{}
		s := &tbsync.Scheduler{
			Schedule: cron.Every(30 * time.Second),
			Cycle: func(ctx context.Context) (tbsync.Report, error) {
				r := running.Add(1)
				defer running.Add(-1)
				if r > maxRunning.Load() {
					maxRunning.Store(r)
				}
				started <- int(n.Add(1))
				select {
				case <-release:
					return tbsync.Report{Outcome: tbsync.OutcomeOK}, nil
				case <-ctx.Done():
					return tbsync.Report{Outcome: tbsync.OutcomeFailed}, ctx.Err()
				}
			},
			AfterCycle: func(_ tbsync.Report, err error) { after <- err },
			Logger:     slog.New(slog.NewTextHandler(logs, nil)),
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- s.Run(ctx) }()

		if got := <-started; got != 1 {
			t.Fatalf("first cycle is number %d", got)
		}
		// Two ticks (+30s, +60s) while the first cycle is blocked: both
		// skipped.
		time.Sleep(70 * time.Second)
		synctest.Wait()
		select {
		case k := <-started:
			t.Fatalf("cycle %d started while the first still ran", k)
		default:
		}
		if got := strings.Count(logs.String(), "cycle skipped"); got != 2 {
			t.Fatalf("%d ticks logged as skipped, want 2:\n%s", got, logs)
		}
		release <- struct{}{}
		if err := <-after; err != nil {
			t.Fatalf("first cycle: %v", err)
		}
		// The next tick (+90s) starts the second cycle, not before.
		synctest.Wait()
		if len(started) != 0 {
			t.Fatal("a cycle started before the next tick")
		}
		if got := <-started; got != 2 {
			t.Fatalf("second cycle is number %d", got)
		}
		if maxRunning.Load() != 1 {
			t.Fatalf("%d cycles ran at once", maxRunning.Load())
		}

		// Cancel while the second cycle is blocked: it sees its context end,
		// Run waits for it and returns nil.
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run returned %v", err)
		}
		if err := <-after; !errors.Is(err, context.Canceled) {
			t.Fatalf("second cycle ended with %v, want context.Canceled", err)
		}
		if running.Load() != 0 {
			t.Fatal("a cycle still runs after Run returned")
		}
	})
}

// TestSchedulerLag checks each cycle's lag, on a testing/synctest
// bubble's clock: from Run's start for the first cycle, from its tick
// (not from when the scheduler got to it) for the next, and, when a tick
// was skipped while a cycle ran, from the skipped tick for the cycle that
// serves it.
func TestSchedulerLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		begin := time.Now()
		type cycle struct {
			runs  time.Duration // how long the cycle takes
			after time.Duration // how long its AfterCycle takes
		}
		cycles := []cycle{
			// +0s to +2s. Its AfterCycle holds the scheduler past the tick
			// at +30s, which it gets to a second late, at +31s.
			{runs: 2 * time.Second, after: 29 * time.Second},
			// +31s to +32s, serving +30s.
			{runs: time.Second},
			// +61s to +100s, past the tick at +91s, which is skipped.
			{runs: 39 * time.Second},
			// +121s to +122s, serving the tick skipped at +91s.
			{runs: time.Second},
		}
		type end struct{ at, lag time.Duration }
		var ends []end
		var n int
		ctx, cancel := context.WithCancel(t.Context())
		s := &tbsync.Scheduler{
			Schedule: cron.Every(30 * time.Second),
			Cycle: func(ctx context.Context) (tbsync.Report, error) {
				time.Sleep(cycles[n].runs)
				return tbsync.Report{Outcome: tbsync.OutcomeOK}, nil
			},
			AfterCycle: func(r tbsync.Report, _ error) {
				ends = append(ends, end{at: time.Since(begin), lag: r.Lag})
				time.Sleep(cycles[n].after)
				if n++; n == len(cycles) {
					cancel()
				}
			},
		}
		if err := s.Run(ctx); err != nil {
			t.Fatalf("Run returned %v", err)
		}
		want := []end{
			{at: 2 * time.Second, lag: 2 * time.Second},
			{at: 32 * time.Second, lag: 2 * time.Second},
			{at: 100 * time.Second, lag: 39 * time.Second},
			{at: 122 * time.Second, lag: 31 * time.Second},
		}
		if !slices.Equal(ends, want) {
			t.Fatalf("cycles ended (time, lag) %v, want %v", ends, want)
		}
	})
}

// TestSpread checks the phases Spread gives: an @every schedule's hotels
// spread flat over the interval, each on a grid of the interval, the same
// in every process; a cron expression's activations kept, each moved less
// than a minute later.
func TestSpread(t *testing.T) {
	every := cron.Every(30 * time.Second)
	from := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	perSecond := map[int64]int{}
	const hotels = 2000
	for i := range hotels {
		name := fmt.Sprintf("hotel-%04d", i)
		s := tbsync.Spread(every, name)
		a := s.Next(from)
		if !a.After(from) || a.Sub(from) > 30*time.Second {
			t.Fatalf("%s: first tick %s after %s", name, a, from)
		}
		if b := s.Next(a); b.Sub(a) != 30*time.Second {
			t.Fatalf("%s: ticks %s and %s are not 30s apart", name, a, b)
		}
		if again := tbsync.Spread(every, name).Next(from.Add(-time.Hour)); (a.Sub(again) % (30 * time.Second)) != 0 {
			t.Fatalf("%s: another process's grid %s is not %s's", name, again, a)
		}
		perSecond[a.Unix()]++
	}
	if len(perSecond) != 30 {
		t.Fatalf("the ticks of %d hotels fall in %d seconds of 30", hotels, len(perSecond))
	}
	for sec, n := range perSecond {
		if n > 2*hotels/30 {
			t.Errorf("%d hotels tick in the second %d: more than twice the mean", n, sec-from.Unix())
		}
	}

	daily, err := tbsync.ParseSchedule("CRON_TZ=UTC 0 3 * * *")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[time.Duration]bool{}
	for i := range 50 {
		a := tbsync.Spread(daily, fmt.Sprintf("hotel-%d", i)).Next(from)
		at3 := time.Date(2026, 3, 3, 3, 0, 0, 0, time.UTC)
		if a.Before(at3) || !a.Before(at3.Add(time.Minute)) {
			t.Fatalf("a daily cycle at 3:00 spread to %s", a)
		}
		seen[a.Sub(at3)] = true
	}
	if len(seen) < 40 {
		t.Errorf("50 hotels of a daily schedule got %d phases", len(seen))
	}
}
