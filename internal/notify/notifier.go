package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// Defaults of [Options].
const (
	DefaultRepeat             = time.Hour
	DefaultCyclesFailingAfter = 15 * time.Minute
	DefaultRequestErrorAfter  = time.Hour
	DefaultGroupWindow        = time.Minute
	DefaultClaimTimeout       = 10 * time.Minute
	DefaultQueueSize          = 64
)

// Options configure a [Notifier].
type Options struct {
	// Operators receive every notice but the deadlines; Support the
	// deadlines ([Deadline]), which go to Operators when Support is empty.
	Operators, Support []Target
	// Journal keeps the episodes; nil means a new [MemJournal].
	Journal Journal
	// Repeat is the least time between two notices of one open episode;
	// 0 means [DefaultRepeat].
	Repeat time.Duration
	// CyclesFailingAfter and RequestErrorAfter are how long a
	// [CyclesFailing] or [RequestError] condition holds before it fires;
	// 0 means the defaults. Every other kind fires at once.
	CyclesFailingAfter, RequestErrorAfter time.Duration
	// GroupWindow is how long a notice waits for others of the same kind,
	// cause, subject and phase from other hotels, to be one notice naming
	// them all; 0 means [DefaultGroupWindow], a negative value none.
	GroupWindow time.Duration
	// ClaimTimeout is how long after it was decided a notice not marked
	// sent is taken for lost (its process killed) and sent again; 0 means
	// [DefaultClaimTimeout].
	ClaimTimeout time.Duration
	// QueueSize bounds each target's queue and the queue of decided
	// notices; 0 means [DefaultQueueSize]. A notice that finds a queue
	// full is counted as dropped; one dropped before any target took it
	// stays pending in the journal and is sent after ClaimTimeout.
	QueueSize int
	// StatusURL is the status page's external address, linked from each
	// notice; "" for none.
	StatusURL string
	// Logger gets a line for each notice that could not be sent; nil
	// discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Condition is what the caller reports of a condition that holds.
type Condition struct {
	Key
	// Since is when it started holding; zero means now.
	Since time.Time
	// Cause says what happened ("the API answered 503 Service
	// Unavailable"); notices of many hotels are grouped by it.
	Cause string
	// Fix says what to do.
	Fix string
}

// Notifier decides the notices of the conditions it is told of and sends
// them on its own goroutines (see [Notifier.Run]).
type Notifier struct {
	o       Options
	j       Journal
	decided chan job
	targets map[Target]*worker
	mu      sync.Mutex
	// flying are the notices this process is sending: the episodes', by
	// when they were decided (PendingAt).
	flying map[Key]time.Time
	// open are the hotels' open episodes as last read from or written to
	// the journal here (see Notifier.Open).
	open map[string]map[Key]Episode
	// onWay counts the notices queued here and not yet done with (sent,
	// failed or dropped); settled is closed while it is 0 (see Settled).
	onWay   int
	settled chan struct{}
	c       counters
}

// job is one decided notice of one episode.
type job struct {
	ep    Episode
	phase Phase
}

// New returns a notifier of o; it sends nothing until [Notifier.Run].
func New(o Options) *Notifier {
	if o.Journal == nil {
		o.Journal = &MemJournal{}
	}
	if o.Repeat <= 0 {
		o.Repeat = DefaultRepeat
	}
	if o.CyclesFailingAfter <= 0 {
		o.CyclesFailingAfter = DefaultCyclesFailingAfter
	}
	if o.RequestErrorAfter <= 0 {
		o.RequestErrorAfter = DefaultRequestErrorAfter
	}
	if o.GroupWindow == 0 {
		o.GroupWindow = DefaultGroupWindow
	}
	if o.ClaimTimeout <= 0 {
		o.ClaimTimeout = DefaultClaimTimeout
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	n := &Notifier{o: o, j: o.Journal, decided: make(chan job, o.QueueSize), targets: map[Target]*worker{}, flying: map[Key]time.Time{}, open: map[string]map[Key]Episode{}, settled: make(chan struct{})}
	close(n.settled)
	for _, t := range slices.Concat(o.Operators, o.Support) {
		if n.targets[t] == nil {
			n.targets[t] = &worker{t: t, q: make(chan *delivery, o.QueueSize)}
		}
	}
	return n
}

func (n *Notifier) now() time.Time {
	if n.o.Now != nil {
		return n.o.Now()
	}
	return time.Now()
}

// delay is how long a condition of kind k holds before it fires.
func (n *Notifier) delay(k Kind) time.Duration {
	switch k {
	case CyclesFailing:
		return n.o.CyclesFailingAfter
	case RequestError:
		return n.o.RequestErrorAfter
	}
	return 0
}

// Set reports that c holds now. It fires the condition's notice once c
// has held for its kind's delay, and repeats it every Repeat while it
// holds. It writes the journal before any notice is queued, and returns
// the journal's error; it never waits for a notice to be sent.
func (n *Notifier) Set(ctx context.Context, c Condition) error {
	now := n.now()
	if c.Since.IsZero() || c.Since.After(now) {
		c.Since = now
	}
	ep, ok, err := n.j.Get(ctx, c.Key)
	if err != nil {
		return n.journalErr(c.Key, err)
	}
	prev := ep.Version
	isNew := !ok || ep.Resolved
	if isNew {
		ep = Episode{Key: c.Key, Since: c.Since}
	}
	changed := ep.Cause != c.Cause || ep.Fix != c.Fix
	ep.Cause, ep.Fix = c.Cause, c.Fix
	var phase Phase
	switch {
	case !ep.Fired && now.Sub(ep.Since) >= n.delay(c.Kind):
		phase = Fired
	case ep.Fired && now.Sub(ep.LastAt) >= n.o.Repeat:
		phase = Repeated
	case !isNew && !changed:
		return nil // nothing to write
	}
	if phase != "" {
		ep.Fired, ep.Count, ep.LastAt = true, ep.Count+1, now
		ep.Pending, ep.PendingAt = phase, now
	}
	// A write that decides no notice leaves the one pending, if any, to
	// whoever decided it, or to recover.
	return n.write(ctx, ep, prev, phase != "")
}

// Clear reports that the condition of k no longer holds: an episode that
// fired is resolved with one notice, one that had not is forgotten.
func (n *Notifier) Clear(ctx context.Context, k Key) error {
	ep, ok, err := n.j.Get(ctx, k)
	if err != nil {
		return n.journalErr(k, err)
	}
	if !ok || ep.Resolved {
		return nil
	}
	prev := ep.Version
	ep.Resolved = true
	if ep.Fired {
		now := n.now()
		ep.Pending, ep.PendingAt, ep.LastAt, ep.Count = Resolved, now, now, ep.Count+1
	}
	return n.write(ctx, ep, prev, ep.Fired)
}

// Reconcile reports every condition of the kinds that holds for hotel
// now: each in holding is [Notifier.Set], and each open episode of those
// kinds not in holding is [Notifier.Clear]ed. A caller that reports
// after each cycle thus resolves what ended, even across a restart.
func (n *Notifier) Reconcile(ctx context.Context, hotel string, kinds []Kind, holding []Condition) error {
	open, err := n.j.Open(ctx, hotel)
	if err != nil {
		return n.journalErr(Key{Hotel: hotel}, err)
	}
	n.remember(hotel, open)
	var errs []error
	held := map[Key]bool{}
	for _, c := range holding {
		c.Hotel = hotel
		held[c.Key] = true
		errs = append(errs, n.Set(ctx, c))
	}
	for _, ep := range open {
		if slices.Contains(kinds, ep.Kind) && !held[ep.Key] {
			errs = append(errs, n.Clear(ctx, ep.Key))
		}
	}
	return errors.Join(errs...)
}

// write stores ep over prev and, when decided, queues its pending notice:
// the write decided it. When another writer got there first, it leaves
// the episode, and its notice, to it.
func (n *Notifier) write(ctx context.Context, ep Episode, prev uint64, decided bool) error {
	ep.Version = prev + 1
	ok, err := n.j.Put(ctx, ep, prev)
	if err != nil {
		return n.journalErr(ep.Key, err)
	}
	if !ok {
		n.c.conflicts.Add(1)
		return nil
	}
	n.track(ep)
	if decided && ep.Pending != "" {
		n.c.decided.Add(1)
		n.queue(job{ep: ep, phase: ep.Pending})
	}
	return nil
}

// remember takes open as the hotel's open episodes, as the journal has
// them now.
func (n *Notifier) remember(hotel string, open []Episode) {
	m := make(map[Key]Episode, len(open))
	for _, ep := range open {
		m[ep.Key] = ep
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.open[hotel] = m
}

// track keeps ep, just written, among the open episodes, or drops it
// when it is resolved.
func (n *Notifier) track(ep Episode) {
	n.mu.Lock()
	defer n.mu.Unlock()
	m := n.open[ep.Hotel]
	if ep.Resolved {
		delete(m, ep.Key)
		return
	}
	if m == nil {
		m = map[Key]Episode{}
		n.open[ep.Hotel] = m
	}
	m[ep.Key] = ep
}

// Open returns the hotel's open episodes, sorted by key, as this notifier
// last read or wrote them: what the status page lists, read from memory
// so that a view costs no read of the journal. The first reconcile of a
// hotel (see [Notifier.Reconcile]) reads those a previous run left open.
func (n *Notifier) Open(hotel string) []Episode {
	n.mu.Lock()
	out := make([]Episode, 0, len(n.open[hotel]))
	for _, ep := range n.open[hotel] {
		out = append(out, ep)
	}
	n.mu.Unlock()
	slices.SortFunc(out, func(a, b Episode) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// Forget drops what the notifier holds in memory of the hotel's open
// episodes: the hotel no longer runs here.
func (n *Notifier) Forget(hotel string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.open, hotel)
}

func (n *Notifier) queue(j job) {
	n.mu.Lock()
	n.flying[j.ep.Key] = j.ep.PendingAt
	n.onWayAdd(1)
	n.mu.Unlock()
	select {
	case n.decided <- j:
	default:
		// Still pending in the journal: Run sends it after ClaimTimeout.
		n.c.dropped.Add(1)
		n.mu.Lock()
		delete(n.flying, j.ep.Key)
		n.onWayAdd(-1)
		n.mu.Unlock()
	}
}

// onWayAdd counts d notices more on their way. Hold n.mu.
func (n *Notifier) onWayAdd(d int) {
	if n.onWay == 0 && d > 0 {
		n.settled = make(chan struct{})
	}
	n.onWay += d
	if n.onWay == 0 && d < 0 {
		close(n.settled)
	}
}

// Settled returns a channel closed once every notice queued so far is
// done with: sent, refused by its targets, or dropped (left pending in
// the journal). A run of one cycle (ticketbridge once) waits for it
// before it exits; a daemon never needs to.
func (n *Notifier) Settled() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.settled
}

func (n *Notifier) journalErr(k Key, err error) error {
	n.c.journalErrors.Add(1)
	return fmt.Errorf("notify: journal of %s: %w", k, err)
}

// sent marks the notices of the jobs sent: their episodes lose their
// Pending notice unless another was decided since (a write that decided
// none, a cause in other words, leaves the notice the job's).
func (n *Notifier) sent(ctx context.Context, jobs []job) {
	defer func() {
		n.mu.Lock()
		n.onWayAdd(-len(jobs))
		n.mu.Unlock()
	}()
	for _, j := range jobs {
		n.mu.Lock()
		if n.flying[j.ep.Key].Equal(j.ep.PendingAt) {
			delete(n.flying, j.ep.Key)
		}
		n.mu.Unlock()
		if err := n.markSent(ctx, j); err != nil {
			n.o.Logger.LogAttrs(ctx, slog.LevelWarn, "notify: cannot mark a notice sent; it may be sent again",
				slog.String("condition", j.ep.Key.String()), slog.Any("error", err))
			n.c.journalErrors.Add(1)
		}
	}
}

// markSent clears the job's pending notice in the journal; a write of
// another writer in between (a cycle's reconcile) makes it read again, a
// few times.
func (n *Notifier) markSent(ctx context.Context, j job) error {
	for range 3 {
		ep, ok, err := n.j.Get(ctx, j.ep.Key)
		if err != nil {
			return err
		}
		if !ok || ep.Pending != j.phase || !ep.PendingAt.Equal(j.ep.PendingAt) {
			return nil // another notice was decided since, and is its own
		}
		prev := ep.Version
		ep.Version++
		ep.Pending, ep.PendingAt = "", time.Time{}
		if ok, err := n.j.Put(ctx, ep, prev); ok || err != nil {
			return err
		}
	}
	return errors.New("the episode kept changing")
}

// recover queues again the notices decided more than ClaimTimeout ago
// and never marked sent (a process killed while sending), once each.
func (n *Notifier) recover(ctx context.Context) {
	now := n.now()
	eps, err := n.j.Unsent(ctx, now.Add(-n.o.ClaimTimeout))
	if err != nil {
		n.c.journalErrors.Add(1)
		n.o.Logger.LogAttrs(ctx, slog.LevelWarn, "notify: cannot read the notices left unsent", slog.Any("error", err))
		return
	}
	for _, ep := range eps {
		n.mu.Lock()
		_, mine := n.flying[ep.Key]
		n.mu.Unlock()
		if mine {
			continue
		}
		prev := ep.Version
		ep.PendingAt = now
		if n.write(ctx, ep, prev, true) == nil {
			n.c.resent.Add(1)
		}
	}
}
