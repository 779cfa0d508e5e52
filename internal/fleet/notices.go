package fleet

// This file feeds the notifications (package notify) from the hotels'
// cycles: after each cycle, off the cycle's goroutine, what holds for the
// hotel (its cycles failing and why, its key refused, replies refused for
// good, files set aside, a request's error that persists) is reconciled
// with the notifier, which decides and sends the notices on goroutines of
// its own; and the heartbeat is told the cycle's outcome.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/notify"
	"github.com/ticketbridge/ticketbridge/internal/telemetry"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// Notices are the daemon's notifications: the notifier and the heartbeat
// of the settings, and the journal that keeps the episodes in each
// hotel's state (see [state.Store.Notices]).
type Notices struct {
	n  *notify.Notifier
	hb *notify.Heartbeat // the process's; nil: none, or one per hotel
	// process is told the cycles' outcomes for the process's ping: hb,
	// or nil when there is none. It is told success only while every
	// hotel's last cycle succeeded (see beat).
	process beater
	beatMu  gosync.Mutex
	failing map[string]bool // by hotel: its last cycle failed
	j       *journal
	cfg     config.Notify
	// watchers counts the hotels' watchers running (see watch).
	watchers atomic.Int64
}

// NewNotices builds the notifications of c, logging to log the notices
// that could not be sent; it sends nothing until a fleet runs it
// (Options.Notices).
func NewNotices(c config.Notify, log *slog.Logger) *Notices {
	j := &journal{stores: map[string]*state.Store{}}
	n, hb := c.Build(j, c.StatusURL, log)
	ns := &Notices{n: n, hb: hb, j: j, cfg: c}
	if hb != nil {
		ns.process = hb
	}
	return ns
}

// Notifier is the notifier, for its counters.
func (ns *Notices) Notifier() *notify.Notifier { return ns.n }

// run sends the notices and the process's pings until ctx ends.
func (ns *Notices) run(ctx context.Context, wg *gosync.WaitGroup) {
	wg.Go(func() { ns.n.Run(ctx) })
	if ns.hb != nil {
		wg.Go(func() { ns.hb.Run(ctx) })
	}
}

// hotelHeartbeat returns the heartbeat of a hotel whose file names its
// own ping URL (TICKETBRIDGE_NOTIFY_PING_PER=hotel); nil when it names
// none, or the pings are the process's.
func (ns *Notices) hotelHeartbeat(h config.Hotel) *notify.Heartbeat {
	if ns.cfg.PingPer != "hotel" || h.Ping == nil {
		return nil
	}
	return ns.cfg.Heartbeat(h.Ping)
}

// journal is the notifier's notify.Journal over the states of the hotels
// running here: each episode is kept in its hotel's state, so that a
// restart, or the replica that takes a hotel over, finds it.
type journal struct {
	mu     gosync.Mutex
	stores map[string]*state.Store
}

func (j *journal) add(hotel string, s *state.Store) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.stores[hotel] = s
}

// drop forgets the hotel's state s, before it closes.
func (j *journal) drop(hotel string, s *state.Store) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.stores[hotel] == s {
		delete(j.stores, hotel)
	}
}

func (j *journal) of(hotel string) (notify.Journal, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	s := j.stores[hotel]
	if s == nil {
		return nil, fmt.Errorf("hotel %s does not run here", hotel)
	}
	return s.Notices(), nil
}

func (j *journal) Get(ctx context.Context, k notify.Key) (notify.Episode, bool, error) {
	hj, err := j.of(k.Hotel)
	if err != nil {
		return notify.Episode{}, false, err
	}
	return hj.Get(ctx, k)
}

func (j *journal) Put(ctx context.Context, ep notify.Episode, prev uint64) (bool, error) {
	hj, err := j.of(ep.Hotel)
	if err != nil {
		return false, err
	}
	return hj.Put(ctx, ep, prev)
}

func (j *journal) Open(ctx context.Context, hotel string) ([]notify.Episode, error) {
	hj, err := j.of(hotel)
	if err != nil {
		return nil, err
	}
	return hj.Open(ctx, hotel)
}

// Unsent returns the unsent notices of the hotels running here.
func (j *journal) Unsent(ctx context.Context, before time.Time) ([]notify.Episode, error) {
	j.mu.Lock()
	stores := make(map[string]*state.Store, len(j.stores))
	maps.Copy(stores, j.stores)
	j.mu.Unlock()
	var out []notify.Episode
	var errs []error
	for hotel, s := range stores {
		eps, err := s.Notices().Unsent(ctx, before)
		for _, ep := range eps {
			ep.Hotel = hotel // the state's hotel, whatever name wrote it
			out = append(out, ep)
		}
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// beater is told each cycle's outcome: a notify.Heartbeat.
type beater interface{ Beat(ok bool) }

// beat tells the process's ping the outcome of the hotels' cycles after a
// cycle of hotel: success while the last cycle of every hotel running
// here succeeded, failure while any one's failed. Told each hotel's
// outcome in turn, one syncing and another failing, the ping would flap.
// The ping says no more (its failure URL names no hotel and no error).
func (ns *Notices) beat(hotel string, ok bool) {
	ns.process.Beat(ns.note(hotel, ok))
}

// note keeps the outcome of the hotel's last cycle, and reports whether
// the last cycle of every hotel succeeded.
func (ns *Notices) note(hotel string, ok bool) (all bool) {
	ns.beatMu.Lock()
	defer ns.beatMu.Unlock()
	if ns.failing == nil {
		ns.failing = map[string]bool{}
	}
	if ok {
		delete(ns.failing, hotel)
	} else {
		ns.failing[hotel] = true
	}
	return len(ns.failing) == 0
}

// forgetBeat drops the hotel's last outcome: it no longer runs here.
func (ns *Notices) forgetBeat(hotel string) {
	ns.beatMu.Lock()
	defer ns.beatMu.Unlock()
	delete(ns.failing, hotel)
}

// hotelNotices feeds one hotel's conditions to the notifier: the cycle's
// hooks (noticeReporter) note what they are told and return at once; its
// loop reads the hotel's state and reconciles, one cycle at a time, the
// newest when cycles come faster than it.
type hotelNotices struct {
	ns    *Notices
	hotel string
	store *state.Store
	own   beater // the hotel's own heartbeat; nil: the process's, if any
	log   *slog.Logger
	kick  chan struct{}
	// stop ends the loop (see end), which closes ended; cancel ends the
	// hotel's own heartbeat, which wg waits for.
	stop   chan struct{}
	ended  chan struct{}
	cancel context.CancelFunc
	wg     gosync.WaitGroup

	mu      gosync.Mutex
	failed  error // the last cycle's failure; nil when it synced
	noted   bool  // a cycle was noted and not yet reconciled
	held    []adapters.HeldError
	scanned bool // the requests were scanned once
	errored bool // the last scan found a request with an error
	// changed tells that a cycle changed a request or recorded an error
	// since the last scan; deadlines are the deadline warnings that scan
	// found, reported again until the next, and nextDeadline when the
	// earliest warning it saw ahead begins (zero: none).
	changed      bool
	deadlines    []notify.Condition
	nextDeadline time.Time
}

// watch starts the watcher of one run of the hotel whose state is store:
// it feeds the notifier the hotel's conditions until end is called (the
// run ended: a panic's restart starts a watcher of its own) or ctx ends.
// hb is the hotel's own heartbeat, run here; nil: the process's, if any.
func (ns *Notices) watch(ctx context.Context, hotel string, store *state.Store, hb *notify.Heartbeat, log *slog.Logger) *hotelNotices {
	hn := &hotelNotices{ns: ns, hotel: hotel, store: store, log: log, kick: make(chan struct{}, 1),
		stop: make(chan struct{}), ended: make(chan struct{})}
	ctx, hn.cancel = context.WithCancel(ctx)
	if hb != nil {
		hn.own = hb
		hn.wg.Go(func() { hb.Run(ctx) })
	}
	ns.j.add(hotel, store)
	ns.watchers.Add(1)
	go func() {
		defer close(hn.ended)
		defer ns.watchers.Add(-1)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hn.kick:
				hn.reconcile(ctx)
			case <-hn.stop:
				select {
				case <-hn.kick: // the last cycle's
					hn.reconcile(ctx)
				default:
				}
				return
			}
		}
	}()
	return hn
}

// end stops the watcher once it reconciled the run's last cycle, and the
// hotel's own heartbeat, and waits for both: the run's state is still
// open, and is closed after.
func (hn *hotelNotices) end() {
	close(hn.stop)
	<-hn.ended
	hn.cancel()
	hn.wg.Wait()
}

// cycleDone notes a cycle's outcome and tells the heartbeat; an
// interrupted cycle (the daemon stopping) tells nothing.
func (hn *hotelNotices) cycleDone(err error) {
	if errors.Is(err, sync.ErrInterrupted) {
		return
	}
	hn.mu.Lock()
	hn.failed, hn.noted = err, true
	hn.mu.Unlock()
	switch {
	case hn.own != nil:
		hn.own.Beat(err == nil)
	case hn.ns.process != nil:
		hn.ns.beat(hn.hotel, err == nil)
	}
}

// cycleChanged notes whether a cycle changed a request on either side or
// recorded an error: the requests are read again after it.
func (hn *hotelNotices) cycleChanged(rep sync.Report) {
	if rep.TouchedCount == 0 && rep.Errors == 0 {
		return
	}
	hn.mu.Lock()
	hn.changed = true
	hn.mu.Unlock()
}

// observeHeld notes what the helpdesk holds, the cycle's last hook, and
// wakes the loop.
func (hn *hotelNotices) observeHeld(held []adapters.HeldError) {
	hn.mu.Lock()
	hn.held = held
	noted := hn.noted
	hn.mu.Unlock()
	if !noted {
		return
	}
	select {
	case hn.kick <- struct{}{}:
	default: // the loop has one to do: it reads the newest
	}
}

// reconcileKinds are the kinds a cycle reports in full; the first two
// need no read of the state.
var reconcileKinds = []notify.Kind{notify.CyclesFailing, notify.KeyRefused, notify.Undeliverable, notify.RequestError, notify.Deadline}

// reconcileMax bounds one reconcile: a state that does not answer (a
// database down) holds the watcher, never the hotel's run, for no longer.
const reconcileMax = time.Minute

func (hn *hotelNotices) reconcile(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, reconcileMax)
	defer cancel()
	now := time.Now()
	hn.mu.Lock()
	failed, held := hn.failed, hn.held
	// The requests are read when the last read found an error, a cycle
	// changed one since, or a deadline's warning began: a quiet cycle
	// reads none.
	scan := !hn.scanned || hn.errored || hn.changed || (!hn.nextDeadline.IsZero() && !now.Before(hn.nextDeadline))
	hn.noted, hn.changed = false, false
	hn.mu.Unlock()
	var holding []notify.Condition
	if failed != nil {
		cause, fix := whyFailed(failed)
		holding = append(holding, notify.Condition{Key: notify.Key{Kind: notify.CyclesFailing}, Cause: cause, Fix: fix})
		if errors.Is(failed, sync.ErrKeyRefused) || errors.Is(failed, guestapi.ErrUnauthorized) {
			holding = append(holding, notify.Condition{Key: notify.Key{Kind: notify.KeyRefused}, Cause: cause, Fix: fix})
		}
	}
	for _, h := range held {
		switch {
		case h.SetAside() && h.Mail:
			holding = append(holding, notify.Condition{Key: notify.Key{Kind: notify.Undeliverable, Subject: "mail " + h.File},
				Since: h.Since, Cause: h.Error(), Fix: "read the mail in the helpdesk's mailbox: what it needs is on the status page and in ticketbridge check"})
		case h.SetAside():
			holding = append(holding, notify.Condition{Key: notify.Key{Kind: notify.Undeliverable, Subject: "file " + h.File},
				Since: h.Since, Cause: h.Error(), Fix: "fix what the helpdesk names and move the file back into the outbox, or delete it"})
		}
	}
	kinds := reconcileKinds
	fromState, found, err := hn.fromState(ctx, scan, now)
	if err != nil {
		// What the state holds is unknown: its episodes stay as they are.
		kinds = kinds[:2]
		hn.mu.Lock()
		hn.changed = hn.changed || scan
		hn.mu.Unlock()
		hn.log.Debug("notifications: read the state", slog.Any("error", err), slog.String("op", "notify"))
	} else {
		holding = append(holding, fromState...)
		hn.mu.Lock()
		if scan {
			hn.scanned, hn.errored = true, found.errored
			hn.deadlines, hn.nextDeadline = found.deadlines, found.next
		}
		holding = append(holding, hn.deadlines...)
		hn.mu.Unlock()
	}
	if err := hn.ns.n.Reconcile(ctx, hn.hotel, kinds, holding); err != nil && ctx.Err() == nil {
		hn.log.Warn("notifications: the hotel's conditions were not all recorded", slog.Any("error", err), slog.String("op", "notify"))
	}
}

// scanned is what a read of the requests found beside their errors.
type scanned struct {
	errored   bool               // a request's last try failed
	deadlines []notify.Condition // the deadline warnings that hold
	next      time.Time          // when the earliest warning ahead begins; zero: none
}

// fromState returns the conditions the hotel's state holds: the journal
// entries refused for good and, when scan, the requests whose last try
// failed; found holds, when scan, the deadline warnings at now.
func (hn *hotelNotices) fromState(ctx context.Context, scan bool, now time.Time) (out []notify.Condition, found scanned, err error) {
	warnBefore := hn.ns.cfg.DeadlineWarnBefore
	err = hn.store.View(ctx, func(tx *state.Tx) error {
		failed, err := tx.FailedJournal()
		if err != nil {
			return err
		}
		for _, e := range failed {
			out = append(out, notify.Condition{Key: notify.Key{Kind: notify.Undeliverable, Subject: "request " + e.TicketID + ", " + string(e.Kind) + " " + e.EventID},
				Cause: "refused for good: " + e.LastError,
				Fix:   "fix the cause, then ticketbridge retry " + e.EventID + " sends it again (ticketbridge skip gives it up)"})
		}
		if !scan {
			return nil
		}
		return tx.ForEachTicket(func(t state.Ticket) error {
			if c, ok, next := deadlineOf(t, now, warnBefore); ok {
				found.deadlines = append(found.deadlines, c)
			} else if !next.IsZero() && (found.next.IsZero() || next.Before(found.next)) {
				found.next = next
			}
			if t.LastError != "" && !t.Retired {
				found.errored = true
				out = append(out, notify.Condition{Key: notify.Key{Kind: notify.RequestError, Subject: "request " + t.ID},
					Cause: t.LastError, Fix: "see the request on the status page; the bridge tries it again at each cycle"})
			}
			return nil
		})
	})
	return out, found, err
}

// whyFailed says why a cycle failed, in words shared by every hotel it
// fails for (the notices of many are one), and what to do: the table of
// fixes' text when the error carries it (config.WithFix, through
// sync.Deps.Advise), as the log, check and the start errors say it.
func whyFailed(err error) (cause, fix string) {
	cause, fix = whyFailedKind(err)
	if _, f, ok := strings.Cut(err.Error(), "; fix: "); ok {
		fix = f
	}
	return cause, fix
}

func whyFailedKind(err error) (cause, fix string) {
	switch {
	case errors.Is(err, sync.ErrKeyRefused), errors.Is(err, guestapi.ErrUnauthorized):
		return "the API refused the key (401): revoked, expired or mistyped",
			"put a valid key in TICKETBRIDGE_API_KEY_FILE (or the credential api-key) and reload: systemctl reload ticketbridge"
	case errors.Is(err, sync.ErrMissingRight), errors.Is(err, guestapi.ErrForbidden):
		return "the API refused a right the key lacks (403)", "give the key the rights ticketbridge check names"
	case errors.Is(err, sync.ErrNoAPISuccess):
		return "the API did not answer: down or out of reach", "nothing while the API is down; otherwise check the network and TICKETBRIDGE_API_URL (ticketbridge check)"
	case errors.Is(err, sync.ErrHelpdeskRefused), errors.Is(err, adapters.ErrAuth):
		return "the helpdesk refused the bridge", "check the helpdesk's address, user and token or password (ticketbridge check)"
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	msg, _, _ = strings.Cut(msg, "; fix: ")
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return "the cycle failed: " + msg, "see the log and ticketbridge check"
}

// noticeReporter is a hotel's telemetry that also tells its notices of
// each cycle.
type noticeReporter struct {
	*telemetry.Telemetry
	hn *hotelNotices
}

func (r noticeReporter) CycleDone(rep sync.Report, err error) {
	r.Telemetry.CycleDone(rep, err)
	r.hn.cycleChanged(rep)
	r.hn.cycleDone(err)
}

func (r noticeReporter) ObserveHeld(held []adapters.HeldError, setAside uint64) {
	r.Telemetry.ObserveHeld(held, setAside)
	r.hn.observeHeld(held)
}
