package notify

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// worker sends one target's notices, one at a time, from its own queue:
// a slow or failing target delays no other.
type worker struct {
	t      Target
	q      chan *delivery
	sent   atomic.Uint64
	failed atomic.Uint64
	mu     sync.Mutex
	last   string // the last error's text
	lastAt time.Time
}

// delivery is one notice on its way to the targets of its audience; the
// last target done with it marks its episodes' notices sent.
type delivery struct {
	notice Notice
	jobs   []job
	left   atomic.Int32
}

type counters struct {
	decided, dropped, resent, conflicts, journalErrors atomic.Uint64
}

// Counters are the notifier's numbers since it was made, for the metrics
// and the status page.
type Counters struct {
	// Decided counts the notices written to the journal to be sent (one
	// per episode, before grouping); Resent those among them sent again
	// after a process left them unsent.
	Decided, Resent uint64
	// Dropped counts notices that found a queue full.
	Dropped uint64
	// Conflicts counts writes another replica got to first.
	Conflicts uint64
	// JournalErrors counts failed reads and writes of the journal.
	JournalErrors uint64
	// Targets are each target's, in the order of the options.
	Targets []TargetCounters
}

// TargetCounters are one target's numbers.
type TargetCounters struct {
	Target       string // kind and host
	Sent, Failed uint64
	LastError    string // "" when none failed yet
	LastErrorAt  time.Time
}

// Counters returns the numbers now.
func (n *Notifier) Counters() Counters {
	c := Counters{
		Decided: n.c.decided.Load(), Resent: n.c.resent.Load(), Dropped: n.c.dropped.Load(),
		Conflicts: n.c.conflicts.Load(), JournalErrors: n.c.journalErrors.Load(),
	}
	for _, w := range n.workers() {
		w.mu.Lock()
		c.Targets = append(c.Targets, TargetCounters{Target: w.t.String(), Sent: w.sent.Load(), Failed: w.failed.Load(),
			LastError: w.last, LastErrorAt: w.lastAt})
		w.mu.Unlock()
	}
	return c
}

// workers are the targets' workers in the order of the options.
func (n *Notifier) workers() []*worker {
	var out []*worker
	for _, t := range slices.Concat(n.o.Operators, n.o.Support) {
		if w := n.targets[t]; !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// Run sends the notices until ctx ends: it groups them, hands them to
// each target's goroutine, marks them sent, and every ClaimTimeout (and
// at once) sends again those a process left unsent. Call it once.
func (n *Notifier) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, w := range n.workers() {
		wg.Go(func() { n.work(ctx, w) })
	}
	n.recover(ctx)
	n.dispatch(ctx)
	wg.Wait()
}

func (n *Notifier) work(ctx context.Context, w *worker) {
	for {
		select {
		case <-ctx.Done():
			return
		case d := <-w.q:
			if err := w.t.Send(ctx, d.notice); err != nil {
				if ctx.Err() != nil {
					return // shutting down: the notice stays pending
				}
				w.failed.Add(1)
				w.mu.Lock()
				w.last, w.lastAt = err.Error(), n.now()
				w.mu.Unlock()
				n.o.Logger.LogAttrs(ctx, slog.LevelWarn, "notice not sent", slog.String("target", w.t.String()),
					slog.String("title", d.notice.Title()), slog.Any("error", err))
			} else {
				w.sent.Add(1)
			}
			n.done(ctx, d)
		}
	}
}

// markTimeout bounds the marking of a delivery sent, which outlives the
// notifier's context: a notice sent as the daemon stops is marked, not
// sent again by the next process.
const markTimeout = 30 * time.Second

func (n *Notifier) done(ctx context.Context, d *delivery) {
	if d.left.Add(-1) == 0 {
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
		defer cancel()
		n.sent(mctx, d.jobs)
	}
}

// groupKey is what notices of many hotels share to be one notice.
type groupKey struct {
	kind    Kind
	cause   string
	subject string
	phase   Phase
}

type group struct {
	due  time.Time
	jobs []job
}

func (n *Notifier) dispatch(ctx context.Context) {
	groups := map[groupKey]*group{}
	tick := time.NewTicker(n.o.ClaimTimeout)
	defer tick.Stop()
	for {
		var (
			wake  <-chan time.Time
			timer *time.Timer
		)
		if len(groups) > 0 {
			first := time.Time{}
			for _, g := range groups {
				if first.IsZero() || g.due.Before(first) {
					first = g.due
				}
			}
			timer = time.NewTimer(first.Sub(n.now()))
			wake = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			n.recover(ctx)
		case j := <-n.decided:
			k := groupKey{kind: j.ep.Kind, cause: j.ep.Cause, subject: j.ep.Subject, phase: j.phase}
			g := groups[k]
			if g == nil {
				g = &group{due: n.now().Add(max(n.o.GroupWindow, 0))}
				groups[k] = g
			}
			g.jobs = append(g.jobs, j)
		case <-wake:
		}
		if timer != nil {
			timer.Stop()
		}
		now := n.now()
		for k, g := range groups {
			if !g.due.After(now) {
				delete(groups, k)
				n.flush(ctx, g.jobs)
			}
		}
	}
}

// flush hands one notice of jobs to each target of their audience.
func (n *Notifier) flush(ctx context.Context, jobs []job) {
	first := jobs[0].ep
	notice := Notice{Phase: jobs[0].phase, Kind: first.Kind, Subject: first.Subject, Cause: first.Cause, Fix: first.Fix,
		Since: first.Since, At: n.now(), StatusURL: n.o.StatusURL}
	for _, j := range jobs {
		notice.Hotels = append(notice.Hotels, j.ep.Hotel)
		if j.ep.Since.Before(notice.Since) {
			notice.Since = j.ep.Since
		}
	}
	notice.Hotels = sortedUnique(notice.Hotels)
	targets := n.o.Operators
	if first.Kind.Audience() == Support && len(n.o.Support) > 0 {
		targets = n.o.Support
	}
	if len(targets) == 0 {
		n.sent(ctx, jobs)
		return
	}
	d := &delivery{notice: notice, jobs: jobs}
	d.left.Store(int32(len(targets)))
	for _, t := range targets {
		select {
		case n.targets[t].q <- d:
		default:
			n.c.dropped.Add(1)
			n.targets[t].failed.Add(1)
			n.done(ctx, d)
		}
	}
}

// TestResult is what [Notifier.Test] found of one target.
type TestResult struct {
	Target string // kind and host
	// Support tells a target of the support team's list.
	Support bool
	Err     error
}

// Test sends a test notice to every target, all at once, and returns
// what each answered, in the order of the options. It does not go
// through the queues, the journal or the counters.
func (n *Notifier) Test(ctx context.Context) []TestResult {
	ws := n.workers()
	out := make([]TestResult, len(ws))
	notice := Notice{Phase: Testing, At: n.now(), StatusURL: n.o.StatusURL}
	var wg sync.WaitGroup
	for i, w := range ws {
		out[i] = TestResult{Target: w.t.String(), Support: !slices.Contains(n.o.Operators, w.t)}
		wg.Go(func() { out[i].Err = w.t.Send(ctx, notice) })
	}
	wg.Wait()
	return out
}
