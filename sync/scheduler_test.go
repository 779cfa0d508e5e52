package sync_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/ticketbridge/ticketbridge/internal/testutil"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// fakeTimers hands the scheduler timers the test fires by hand.
type fakeTimers struct {
	armed chan chan time.Time // each timer the scheduler arms
}

func (f *fakeTimers) newTimer(time.Duration) (<-chan time.Time, func() bool) {
	c := make(chan time.Time, 1)
	f.armed <- c
	return c, func() bool { return true }
}

// TestSchedulerNeverOverlaps runs the first cycle blocked, fires ticks while
// it runs and checks that no second cycle starts until it ends.
func TestSchedulerNeverOverlaps(t *testing.T) {
	timers := &fakeTimers{armed: make(chan chan time.Time, 10)}
	started := make(chan int, 10)
	release := make(chan struct{})
	var running, maxRunning, n atomic.Int32
	after := make(chan error, 10)
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
		NewTimer:   timers.newTimer,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()

	if got := <-started; got != 1 {
		t.Fatalf("first cycle is number %d", got)
	}
	// Two ticks while the first cycle is blocked: both skipped.
	for range 2 {
		tick := <-timers.armed
		tick <- time.Now()
	}
	next := <-timers.armed // re-armed after the second tick: both were handled
	select {
	case k := <-started:
		t.Fatalf("cycle %d started while the first still ran", k)
	default:
	}
	release <- struct{}{}
	if err := <-after; err != nil {
		t.Fatalf("first cycle: %v", err)
	}
	// The next tick starts the second cycle.
	next <- time.Now()
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
}

// TestSchedulerLag checks each cycle's lag: from Run's start for the first
// cycle, from its tick (not from when the timer fired) for the next, and,
// when a tick was skipped while a cycle ran, from the skipped tick for the
// cycle that serves it.
func TestSchedulerLag(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	clock := testutil.NewClock(t0)
	timers := &fakeTimers{armed: make(chan chan time.Time, 10)}
	started := make(chan struct{}, 10)
	release := make(chan struct{})
	after := make(chan tbsync.Report, 10)
	s := &tbsync.Scheduler{
		Schedule: cron.Every(30 * time.Second),
		Cycle: func(ctx context.Context) (tbsync.Report, error) {
			started <- struct{}{}
			select {
			case <-release:
				return tbsync.Report{Outcome: tbsync.OutcomeOK}, nil
			case <-ctx.Done():
				return tbsync.Report{}, ctx.Err()
			}
		},
		AfterCycle: func(r tbsync.Report, _ error) { after <- r },
		NewTimer:   timers.newTimer,
		Now:        clock.Now,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	at := func(d time.Duration) { clock.Set(t0.Add(d)) }
	finish := func(end, want time.Duration) {
		t.Helper()
		at(end)
		release <- struct{}{}
		if r := <-after; r.Lag != want {
			t.Fatalf("cycle ending at +%s: lag %s, want %s", end, r.Lag, want)
		}
	}

	<-started
	tick := <-timers.armed // due at +30s
	finish(2*time.Second, 2*time.Second)

	// The timer fires a second late: the lag counts from the tick.
	at(31 * time.Second)
	tick <- clock.Now()
	<-started
	tick = <-timers.armed // due at +61s
	finish(32*time.Second, 2*time.Second)

	// A cycle runs past the next tick (+91s), which is skipped; the cycle
	// that starts at the tick after (+121s) serves it.
	at(61 * time.Second)
	tick <- clock.Now()
	<-started
	tick = <-timers.armed // due at +91s
	at(91 * time.Second)
	tick <- clock.Now()
	tick = <-timers.armed // due at +121s: the tick at +91s was handled
	finish(100*time.Second, 39*time.Second)
	at(121 * time.Second)
	tick <- clock.Now()
	<-started
	<-timers.armed
	finish(122*time.Second, 31*time.Second)

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v", err)
	}
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
