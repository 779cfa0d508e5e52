package sync

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/ticketbridge/ticketbridge/internal/gopool"
)

// Scheduler runs a cycle at start and then on every activation of a cron
// schedule, never two at once: a tick that comes while a cycle runs is
// skipped and logged. It is what `ticketbridge run` drives; tests run it in a
// testing/synctest bubble.
//
// It measures each cycle's lag (Report.Lag): the time from the cycle's
// scheduled start to its end. The scheduled start is the activation of
// the schedule (the tick) the cycle serves, not when the timer fired or
// the cycle got going, so a timer that fires late and a cycle that waits
// for a slot count in it; the first cycle's is Run's start. A skipped tick
// does not vanish: the next cycle that starts serves it, and its lag is
// counted from the earliest tick skipped, so it is at least one interval
// longer than its own.
type Scheduler struct {
	// Schedule says when cycles run. Required.
	Schedule cron.Schedule
	// Cycle runs one cycle. Required. Its context ends when Run's does,
	// or Deadline after the cycle started.
	Cycle func(ctx context.Context) (Report, error)
	// Deadline, when positive, bounds each cycle: its context ends that
	// long after it started, with the cause [ErrCycleDeadline], and the
	// cycle ends as one that ran past its deadline rather than hang (the
	// daemon passes TICKETBRIDGE_CYCLE_MAX, after which the watchdog
	// would restart it). The next tick starts the next cycle.
	Deadline time.Duration
	// AfterCycle, when set, is called after each cycle with its report
	// (its Lag set) and error (metrics, the systemd watchdog), once the
	// scheduler counts the cycle as finished, while Run waits for it (on
	// a goroutine of its own: see afterCycle): a tick after AfterCycle
	// returned starts the next cycle.
	AfterCycle func(Report, error)
	// Logger receives skipped ticks; nil discards.
	Logger *slog.Logger
	// NewTimer returns a channel that receives once d has passed, and a
	// function that stops it; nil means a time.Timer. Kept for the
	// simulator's fault test (TestReliabilityFaults), which fires
	// the ticks itself: its fake servers share a clock of their own over
	// real sockets, where a testing/synctest bubble's clock cannot
	// advance. Other tests run the scheduler in a bubble, on time.Now.
	NewTimer func(d time.Duration) (<-chan time.Time, func() bool)
	// Workers, when set, runs each cycle and each AfterCycle on a
	// goroutine it keeps between them (see package internal/gopool); nil
	// starts a new goroutine for each.
	Workers *gopool.Pool
}

// Run runs one cycle at once and then one on every tick until ctx ends.
// When ctx ends, the cycle in flight sees its context cancelled; Run waits
// for it to return and then returns nil. A cycle that panics makes Run
// panic with a *CyclePanic on its caller's goroutine, where the caller
// may recover it: the cycle runs on a goroutine of its own, where no one
// could.
func (s *Scheduler) Run(ctx context.Context) error {
	newTimer := s.NewTimer
	if newTimer == nil {
		newTimer = func(d time.Duration) (<-chan time.Time, func() bool) {
			t := time.NewTimer(d)
			return t.C, t.Stop
		}
	}
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}

	type result struct {
		rep   Report
		err   error
		panic *CyclePanic
	}
	// Pointers: a Report is 400 bytes, and a copy of it in Run's frame
	// for each place it passes held every hotel's long-lived stack at 16
	// KB, where the collector can halve it to 8 (see afterCycle).
	done := make(chan *result)
	running := false
	// serving is the scheduled start of the cycle in flight; owed the
	// earliest tick skipped since the last start (zero: none).
	var serving, owed time.Time
	start := func(scheduled time.Time) {
		running = true
		serving = scheduled
		s.Workers.Go(func() {
			defer carryPanic(func(p *CyclePanic) { done <- &result{panic: p} })
			cctx, cancel := ctx, context.CancelFunc(func() {})
			if s.Deadline > 0 {
				cctx, cancel = context.WithTimeoutCause(ctx, s.Deadline, ErrCycleDeadline)
			}
			rep, err := s.Cycle(cctx)
			cancel()
			done <- &result{rep: rep, err: err}
		})
	}
	finished := func(r *result) {
		running = false
		if r.panic != nil {
			panic(r.panic) // on Run's goroutine, for its caller to recover
		}
		r.rep.Lag = time.Since(serving)
		if s.AfterCycle != nil {
			s.afterCycle(r.rep, r.err)
		}
	}
	// due is the activation the armed timer stands for.
	var due time.Time
	arm := func() (<-chan time.Time, func() bool) {
		t := time.Now()
		due = s.Schedule.Next(t)
		if due.IsZero() {
			// A schedule that never fires again: wait for the end.
			return nil, func() bool { return false }
		}
		return newTimer(due.Sub(t))
	}

	start(time.Now())
	tick, stop := arm()
	for {
		select {
		case <-ctx.Done():
			stop()
			if running {
				finished(<-done)
			}
			return nil
		case r := <-done:
			finished(r)
		case <-tick:
			switch {
			case running:
				log.LogAttrs(ctx, slog.LevelWarn, "cycle skipped: the previous one is still running",
					slog.String("op", "schedule"))
				if owed.IsZero() {
					owed = due
				}
			case !owed.IsZero():
				start(owed) // it serves the ticks skipped too
				owed = time.Time{}
			default:
				start(due)
			}
			tick, stop = arm()
		}
	}
}

// afterCycle calls AfterCycle on a goroutine of its own and waits for it,
// so that Run's goroutine, which lives as long as the hotel, keeps a small
// stack: what AfterCycle does (the status snapshot and its JSON, the
// metrics) grew it to about 20 KB, a hotel of a daemon of many each. A
// panic of AfterCycle comes back on Run's goroutine, as a cycle's does.
func (s *Scheduler) afterCycle(r Report, err error) {
	var p *CyclePanic
	done := make(chan struct{})
	s.Workers.Go(func() {
		defer close(done)
		defer carryPanic(func(cp *CyclePanic) { p = cp })
		s.AfterCycle(r, err)
	})
	<-done
	if p != nil {
		panic(p)
	}
}

// spreadBound is the most Spread moves the activations of a schedule that
// is not @every: a cron expression names times of day people expect.
const spreadBound = time.Minute

// Spread returns sched with its activations moved later by a phase drawn
// from key (a hotel's name), the same for the same key and schedule in
// every process, so that the hotels of a daemon, or of replicas, that
// share a schedule do not all start their cycles in the same second.
//
// An @every schedule ticks on a grid of its interval counted from the Unix
// epoch, shifted by a phase anywhere in the interval: the load of many
// hotels is flat over it, and a hotel keeps its instants across restarts
// and replicas. A cron expression keeps its times, each moved later by a
// phase under a minute (under the interval when that is shorter): "0 3 *
// * *" starts between 3:00:00 and 3:01:00. A schedule that never fires is
// returned as it is.
func Spread(sched cron.Schedule, key string) cron.Schedule {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	sum := h.Sum64()
	if c, ok := sched.(cron.ConstantDelaySchedule); ok && c.Delay > 0 {
		return gridSchedule{every: c.Delay, phase: time.Duration(sum % uint64(c.Delay))}
	}
	bound := min(interval(sched), spreadBound)
	if bound <= 0 {
		return sched
	}
	return shiftedSchedule{inner: sched, phase: time.Duration(sum % uint64(bound))}
}

// gridSchedule fires at every instant t where t - phase is a multiple of
// every since the Unix epoch.
type gridSchedule struct {
	every, phase time.Duration
}

func (g gridSchedule) Next(t time.Time) time.Time {
	off := (t.UnixNano() - int64(g.phase)) % int64(g.every)
	if off < 0 {
		off += int64(g.every)
	}
	return t.Add(g.every - time.Duration(off))
}

// shiftedSchedule fires phase after each activation of inner.
type shiftedSchedule struct {
	inner cron.Schedule
	phase time.Duration
}

func (s shiftedSchedule) Next(t time.Time) time.Time {
	n := s.inner.Next(t.Add(-s.phase))
	if n.IsZero() {
		return n
	}
	return n.Add(s.phase)
}

// CyclePanic is what Run panics with when a cycle panicked: the cycle's
// panic value and the stack of the goroutine it panicked on.
type CyclePanic struct {
	Value any
	Stack []byte
}

// Error says what the cycle panicked with, and where.
func (p *CyclePanic) Error() string {
	return fmt.Sprintf("cycle panicked: %v\n\n%s", p.Value, p.Stack)
}

// Unwrap returns the panic value when it is an error.
func (p *CyclePanic) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}
