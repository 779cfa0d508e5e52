package sync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/gopool"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/state"
)

// API is the part of the Guest Requests API the engine uses.
// *guestapi.Client satisfies it.
type API interface {
	ListTickets(ctx context.Context, opt guestapi.ListOptions) ([]guestapi.Ticket, error)
	GetTicket(ctx context.Context, id string) (*guestapi.Thread, error)
	PostMessage(ctx context.Context, id string, m guestapi.NewMessage, idempotencyKey string) (guestapi.PostMessageResult, error)
	SetStatus(ctx context.Context, id string, s guestapi.Status, idempotencyKey string) (guestapi.SetStatusResult, error)
}

// Deps is what the engine works with. API, Helpdesk and Store are
// required; the engine closes none of them.
type Deps struct {
	API      API
	Helpdesk adapters.Helpdesk
	Store    *state.Store
	// Logger receives the engine's log; nil discards. cmd hands in one that
	// already carries adapter=<name>.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now. Kept because the simulator
	// (env_test.go, sim_test.go) and internal/looptest run the engine on
	// one fake clock with the reference server over real sockets, where a
	// testing/synctest bubble's clock cannot advance, and because the
	// demo (internal/demo), a real process, moves its engine's clock on
	// ten minutes a step.
	Now func() time.Time
	// Advise, when set, returns a cycle's fatal error with what to do about
	// it; nil leaves it as it is. The daemon and once pass internal/config's
	// table of fixes (config.WithFix), so that the cycle's log line, its
	// stored report (status, the page) and its error say what to do.
	Advise func(error) error
	// Sleep waits d or until ctx ends; nil means a timer. The engine waits
	// only where the API asked it to (a 429's Retry-After); tests pass one
	// that returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// Imports, when set, bounds the large imports that run at once across
	// the engines sharing it (see [Imports]); nil bounds nothing.
	Imports *Imports
	// Workers, when set, runs the cycle's goroutines (its reads, its
	// workers) on goroutines kept between cycles, shared by the engines of
	// a fleet (see package internal/gopool); nil starts new ones.
	Workers *gopool.Pool
	// Serves, when set, is what the configuration serves, compared with
	// what the state was synced with before the first cycle ([ErrMoved]);
	// nil checks nothing (tests, the demo).
	Serves *Serves
}

// Meta keys the engine keeps in state.
const (
	// MetaAdapter is the adapter the state file was made with.
	MetaAdapter = "adapter"
	// MetaImportSince is when the first cycle started: tickets created
	// since are imported whatever their status.
	MetaImportSince = "import_since"
)

// ErrKeyRefused is matched by the error of a cycle the API refused the key
// for (401). It also matches guestapi.ErrUnauthorized.
// What to do about it is internal/config's table of fixes (see
// [Deps.Advise]).
var ErrKeyRefused = errors.New("the API key was refused (401): revoked, expired or mistyped")

// ErrMissingRight is matched by the error of a cycle stopped by a 403: the
// key lacks a right, which the error names. It also matches
// guestapi.ErrForbidden.
var ErrMissingRight = errors.New("the API key lacks a right (403)")

// ErrHelpdeskRefused is matched by the error of a cycle stopped because the
// helpdesk refused the bridge's credentials (401 or 403: adapters.ErrAuth,
// which it also matches). One refusal stops the cycle, instead of failing
// every ticket in turn. What to do about it is internal/config's table of
// fixes (see [Deps.Advise]).
var ErrHelpdeskRefused = errors.New("the helpdesk refused the credentials (401 or 403)")

// ErrAdapterMismatch is returned when the state file was made with another
// adapter than the configured one.
var ErrAdapterMismatch = errors.New("state file belongs to another adapter")

// ErrNoAPISuccess is matched by the error of a cycle in which no call of
// the Guest Requests API succeeded (the API unreachable, or answering only
// errors): such a cycle has synced nothing and fails. A cycle the API only
// throttled (429), or put off ([OutcomePutOff]), has synced nothing too
// but is not failed by the engine: it ends partial or put_off, not
// synced, with no error from RunCycle, and a daemon stays ready. It is
// still a cycle that did not sync: `ticketbridge once` exits 75
// (EX_TEMPFAIL, try again later) after a put-off one.
var ErrNoAPISuccess = errors.New("no call of the Guest Requests API succeeded")

// ErrCycleDeadline is the cause of the context of a cycle that ran past
// its deadline (TICKETBRIDGE_CYCLE_MAX, see [Scheduler.Deadline]), and is
// matched by that cycle's error: the cycle stopped where it was, and the
// next one goes on from there.
var ErrCycleDeadline = errors.New("the cycle ran past its deadline (TICKETBRIDGE_CYCLE_MAX)")

// ErrInterrupted is returned by RunCycle when its context was cancelled
// (Ctrl-C, SIGTERM, a daemon stopping a hotel) before the cycle ended:
// nothing failed, and what the cycle left undone the next run does (every
// write is journaled or idempotent). Such a cycle has the outcome
// [OutcomeInterrupted].
var ErrInterrupted = errors.New("interrupted; the next run resumes")

// Engine runs sync cycles. Make one with [New]; it is safe for concurrent
// use, but cycles never overlap: RunCycle waits for the one in flight.
type Engine struct {
	cfg     parsed
	pol     policy
	api     *countingAPI
	hd      adapters.Helpdesk
	up      adapters.Updater // hd when it keeps the platform's fields; nil otherwise
	st      *state.Store
	log     *slog.Logger
	clock   func() time.Time // Deps.Now as given, nil or not: read it through now
	sleep   func(ctx context.Context, d time.Duration) error
	advise  func(error) error
	imports *Imports
	workers *gopool.Pool
	serves  *Serves

	mu      gosync.Mutex // one cycle at a time; guards what follows and pol's changes
	checked bool
	// queueFits says that the last listing found fewer tickets than one
	// list holds: the next cycle first tries one list without a filter.
	queueFits bool
	// warnedFull is when each full department list (status, department)
	// was last warned about.
	warnedFull map[string]time.Time
	// fullLists are the lists that held the API's limit when the queue
	// was last listed in full (see [FullList]); every report carries them.
	fullLists []FullList
	// leftOut counts what the rules left out when the queue was last
	// listed in full (see [LeftOut]); every report carries it.
	leftOut []LeftOut
	// putOff holds the sides put off, by side (see [PutOff]); lastRead
	// says that they and fullLists were read from the last cycle stored,
	// which a restart keeps.
	putOff   map[string]PutOff
	lastRead bool
	// recorded is when the last cycle record was stored, and
	// recordedQuiet whether that cycle was quiet (see quietRecordEvery);
	// recordedFull are the full lists that record names.
	recorded      time.Time
	recordedQuiet bool
	recordedFull  []FullList
	// recordedLeftOut is what that record counts as left out.
	recordedLeftOut []LeftOut
	// tracked is how many tickets the last cycle's working set held.
	tracked int
	// deferred holds the schedules of quiet reads not yet stored, by
	// ticket id (see deferred.go).
	deferred map[string]deferredRead
	// auditPruned is when the audit trails were last pruned, auditMore
	// whether that prune left days for the next (see pruneAudit).
	auditPruned time.Time
	auditMore   bool
	// rawLists says that the API's list answers can be compared before
	// they are decoded; lists is what the last cycle whose lists agreed
	// with state kept of them, nil when none did (see listmemo.go).
	// sameLists counts the cycles whose lists were the last ones.
	rawLists  bool
	lists     *listMemo
	sameLists int
}

// quietRecordEvery is how often a run of quiet cycles (each a success
// that wrote nothing) stores its cycle record. A quiet cycle changes
// nothing the state must keep, and a record per cycle was the only write
// (two fsyncs on bbolt, a round trip on PostgreSQL) of every hotel's
// every quiet cycle; the daemon shows its last cycle from memory, so only
// a restart sees a record this old.
const quietRecordEvery = 10 * time.Minute

// New checks cfg and deps and returns an engine. It does no I/O; the
// checks of the state file and the adapter run at the first cycle (or
// through [Engine.Check]).
func New(cfg Config, deps Deps) (*Engine, error) {
	p, err := cfg.parse()
	if err != nil {
		return nil, fmt.Errorf("check sync config: %w", err)
	}
	switch {
	case deps.API == nil:
		return nil, errors.New("check sync deps: API is nil")
	case deps.Helpdesk == nil:
		return nil, errors.New("check sync deps: Helpdesk is nil")
	case deps.Store == nil:
		return nil, errors.New("check sync deps: Store is nil")
	}
	e := &Engine{
		cfg:     p,
		pol:     newPolicy(p),
		api:     &countingAPI{API: deps.API},
		hd:      deps.Helpdesk,
		st:      deps.Store,
		log:     deps.Logger,
		imports: deps.Imports,
		workers: deps.Workers,
		serves:  deps.Serves,
		clock:   deps.Now,
		sleep:   deps.Sleep,
		advise:  deps.Advise,

		queueFits: true,
		putOff:    map[string]PutOff{},
	}
	_, e.rawLists = deps.API.(rawLister)
	e.up = updater(deps.Helpdesk)
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.sleep == nil {
		e.sleep = httpretry.Sleep
	}
	return e, nil
}

// now is the time on the engine's clock: [Deps.Now], or time.Now.
func (e *Engine) now() time.Time {
	if e.clock != nil {
		return e.clock()
	}
	return time.Now()
}

// Schedule returns the parsed TICKETBRIDGE_SCHEDULE.
func (e *Engine) Schedule() cron.Schedule { return e.cfg.Schedule.Schedule }

// Interval returns the estimated time between two scheduled cycles.
func (e *Engine) Interval() time.Duration { return e.cfg.interval }

// Check verifies that the state file belongs to the configured adapter
// (recording the adapter in a new state file), that the state serves the
// API and helpdesk the engine was given (Deps.Serves; a *[MovedError]
// when it does not) and, when the adapter implements adapters.Checker,
// that the helpdesk is reachable and configured. RunCycle calls it before
// the first cycle, and before every cycle until it succeeds.
func (e *Engine) Check(ctx context.Context) error {
	name := e.hd.Name()
	var stored string
	var ok bool
	if err := e.st.View(ctx, func(tx *state.Tx) error {
		var err error
		stored, ok, err = tx.Meta(MetaAdapter)
		return err
	}); err != nil {
		return fmt.Errorf("read state adapter: %w", err)
	}
	switch {
	case ok && stored != name:
		return fmt.Errorf("check state file %s: %w: it was made with adapter %q, but TICKETBRIDGE_ADAPTER is %q; point TICKETBRIDGE_STATE at another file, or set TICKETBRIDGE_ADAPTER=%s",
			e.st.Path(), ErrAdapterMismatch, stored, name, stored)
	case !ok && !e.st.ReadOnly():
		if err := e.st.Update(ctx, func(tx *state.Tx) error { return tx.SetMeta(MetaAdapter, name) }); err != nil {
			return fmt.Errorf("record state adapter: %w", err)
		}
	}
	if err := e.checkServes(ctx); err != nil {
		return err
	}
	if c, ok := e.hd.(adapters.Checker); ok {
		if err := c.Check(ctx); err != nil {
			return fmt.Errorf("check adapter %s: %w", name, err)
		}
	}
	return nil
}

// RunCycle runs one cycle synchronously and returns its report. The error
// is non-nil when the cycle failed as a whole (a refused key, a state file
// that cannot be written, ctx ending); failures of single tickets or
// entries are in the report (Errors, Failures) and give a nil error with
// outcome partial. The report is stored in state and logged.
func (e *Engine) RunCycle(ctx context.Context) (Report, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.lastRead {
		e.readLastCycle(ctx)
	}
	c := e.newCycle(ctx)
	defer c.recycle()
	defer c.cancel(nil)
	defer c.keepEnd()
	defer c.dropImportRoom()

	if !e.checked && !c.skips("collect") {
		if err := e.Check(c.ctx); err != nil {
			if !c.apiFatal(err) && !c.putOffBy(SideHelpdesk, err) {
				c.stop(err)
			}
			return c.finish()
		}
		e.checked = true
	}
	c.phase("discover", &c.rep.Phases.Discover, c.discover)
	c.phase("collect", &c.rep.Phases.Collect, c.collect)
	c.phase("refresh", &c.rep.Phases.Refresh, c.refresh)
	c.phase("send", &c.rep.Phases.Send, c.send)
	return c.finish()
}

// ticketSlices holds the working sets' ticket slices between cycles. At
// 100 requests a slice was a sixth of what a quiet cycle allocated, made
// anew in every cycle; kept by each engine, it was 50 KB a hotel of a
// daemon of many, most of them between cycles. Shared, a daemon holds
// about as many as it runs cycles at once.
var ticketSlices = gosync.Pool{New: func() any { return new([]state.Ticket) }}

// maxPooledTickets is the largest ticket slice put back for reuse.
const maxPooledTickets = 1 << 14

// recycle puts the working set's ticket slice back into ticketSlices. It
// runs last in RunCycle, when every goroutine of the cycle has ended. The
// slice is cleared, so that it holds no ticket's strings until it is
// filled again.
func (c *cycle) recycle() {
	if c.ws == nil {
		return
	}
	ts := c.ws.tickets
	c.ws = nil
	if cap(ts) > maxPooledTickets {
		return
	}
	clear(ts[:cap(ts)])
	ts = ts[:0]
	ticketSlices.Put(&ts)
}

// readLastCycle takes the sides the last cycle stored put off, so that a
// restart does not call them before their wait is up, and the lists it
// found full, which the reports carry until the queue is listed in full
// again; e.mu is held. A report it cannot read puts nothing off and names
// no full list.
func (e *Engine) readLastCycle(ctx context.Context) {
	var last Report
	err := e.st.View(ctx, func(tx *state.Tx) error {
		c, ok, err := tx.LastCycle()
		if err != nil || !ok || len(c.Report) == 0 {
			return err
		}
		return json.Unmarshal(c.Report, &last)
	})
	if err != nil {
		e.log.LogAttrs(context.Background(), slog.LevelDebug, "read the last cycle stored", slog.Any("error", err), slog.String("op", "cycle"))
		return
	}
	e.lastRead = true
	for _, p := range last.PutOff {
		e.putOff[p.Side] = p
	}
	e.fullLists, e.recordedFull = last.FullLists, last.FullLists
	e.leftOut, e.recordedLeftOut = last.LeftOut, last.LeftOut
}

// cycle is the working set of one RunCycle.
type cycle struct {
	e        *Engine
	ctx      context.Context
	cancel   context.CancelCauseFunc
	now      time.Time // the cycle's start on the engine's clock: due times are computed from it
	began    time.Time // the cycle's start on the wall clock, for durations
	parent   context.Context
	req0     int64
	commits0 int64 // the store's commits when the cycle began
	ok0      int64
	limited0 int64

	mu       gosync.Mutex
	rep      Report
	fatal    error
	readFail map[string]bool // tickets whose refresh failed in this cycle
	// read200 says that a request of the hotel read 200 in this cycle,
	// and witnessed what cycle.witness found (see notours.go).
	read200   atomic.Bool
	witnessMu gosync.Mutex
	witnessed witness
	ws        *workingSet // what discover read of state (see workingSet); nil before
	// known holds the message ids state records for the tickets refresh
	// reads (see readKnown), by ticket id; set before the reads start,
	// then only read.
	known map[string]map[string]bool
	// dues are the listed due dates discover kept for the reads (see
	// fields.go); set before the reads start, then only read.
	dues map[string]time.Time

	storeBroken bool // a batch could not be stored: store no more (refresh's goroutine only)
	// importRoom gives back the import room discover took for a large
	// import (see takeImportRoom), until refresh takes it over.
	importRoom func()

	// lists are the lists this cycle asked, with their digests, and
	// replayed the answers of the last cycle's lists asked again, by
	// options (see listmemo.go); discover's goroutines only, under mu.
	lists    []listSeen
	replayed map[guestapi.ListOptions]replayedList
	// full are the lists listQueue found full (see [FullList]), in the
	// order asked; discover's goroutine only.
	full []FullList

	// keepCtx is the context of the cycle's writes (see keep); keepMu
	// guards keepTimer, which ends it storeGrace after ctx ended.
	keepCtx    context.Context
	keepCancel context.CancelFunc
	keepStop   func() bool
	keepMu     gosync.Mutex
	keepTimer  *time.Timer
}

// storeGrace is how long the cycle's writes outlive its context. A write
// records what the cycle did or learnt (a ticket the helpdesk now holds,
// a post the API took, the cycle's report): worth keeping when the cycle
// is stopped, interrupted or past its deadline. A database that does not
// answer within the grace costs the record, not a stopping daemon's wait.
const storeGrace = 5 * time.Second

// keep returns the context of the cycle's writes: the cycle's context,
// which ends storeGrace after the cycle's does (reads use c.ctx: they
// start new work, and end with the cycle).
func (c *cycle) keep() context.Context { return c.keepCtx }

// keepEnd ends the writes' context when RunCycle returns.
func (c *cycle) keepEnd() {
	c.keepStop()
	c.keepMu.Lock()
	if c.keepTimer != nil {
		c.keepTimer.Stop()
	}
	c.keepMu.Unlock()
	c.keepCancel()
}

// newCycle starts a cycle; e.mu is held. No call of the cycle waits
// longer than the schedule's interval (at most httpretry.DefaultMaxWait)
// for a retry: a server asking for longer puts its side off (see
// [PutOff]).
func (e *Engine) newCycle(ctx context.Context) *cycle {
	cctx, cancel := context.WithCancelCause(httpretry.WithMaxWait(ctx, min(e.cfg.interval, httpretry.DefaultMaxWait)))
	now := e.now()
	c := &cycle{
		e: e, ctx: cctx, cancel: cancel, now: now, began: time.Now(), parent: ctx,
		req0:     e.api.n.Load(),
		commits0: e.st.Commits(),
		ok0:      e.api.ok.Load(),
		limited0: e.api.limited.Load(),
		rep:      Report{Start: now, FullLists: e.fullLists, LeftOut: e.leftOut},
		readFail: map[string]bool{},
	}
	for _, side := range []string{SideAPI, SideHelpdesk} {
		if p, ok := e.putOff[side]; ok && p.Until.After(now) {
			c.rep.PutOff = append(c.rep.PutOff, p)
		}
	}
	c.keepCtx, c.keepCancel = context.WithCancel(context.WithoutCancel(cctx))
	c.keepStop = context.AfterFunc(cctx, func() {
		c.keepMu.Lock()
		c.keepTimer = time.AfterFunc(storeGrace, c.keepCancel)
		c.keepMu.Unlock()
	})
	e.api.cycle.Store(c)
	return c
}

// phase runs fn unless the cycle has stopped or fn calls a side put off,
// timing it into d.
func (c *cycle) phase(name string, d *time.Duration, fn func()) {
	if c.stopped() || c.skips(name) {
		return
	}
	start := time.Now()
	fn()
	*d = time.Since(start)
}

// stopped reports whether the cycle must not start more work.
func (c *cycle) stopped() bool { return c.ctx.Err() != nil }

// stop ends the cycle with err: no further writes are started. The first
// error wins; finish logs it, once, in the cycle's line. An error that
// came after the cycle's context ended (a read of state cut short by a
// shutdown, say) is the cycle's end, not an error of its own (see
// interrupted): finish names the end.
func (c *cycle) stop(err error) {
	if c.interrupted(err) {
		return
	}
	c.mu.Lock()
	first := c.fatal == nil
	if first {
		c.fatal = err
	}
	c.mu.Unlock()
	if first {
		c.cancel(err)
	}
}

// interrupted reports whether err came after the cycle's context ended (a
// stop, a shutdown, or a guard that ended it, such as a replica's lease):
// then the error is the cycle's end, whatever an adapter made of it, which
// is nobody's fault and is not recorded on a ticket; the next cycle tries
// again.
func (c *cycle) interrupted(err error) bool {
	return err != nil && c.ctx.Err() != nil
}

// failure records a failure of one ticket or entry in the report and logs
// it.
func (c *cycle) failure(ticket, message, op string, err error) {
	c.mu.Lock()
	c.rep.Errors++
	if len(c.rep.Failures) < maxReportedFailures {
		c.rep.Failures = append(c.rep.Failures, Failure{Ticket: ticket, Message: message, Op: op, Error: err.Error()})
	}
	c.mu.Unlock()
	attrs := []slog.Attr{slog.String("op", op), slog.Any("error", err)}
	if ticket != "" {
		attrs = append(attrs, slog.String("ticket", ticket))
	}
	if message != "" {
		attrs = append(attrs, slog.String("message", message))
	}
	c.e.log.LogAttrs(c.parent, slog.LevelWarn, op+" failed", attrs...)
}

// count adds to report counters under the lock.
func (c *cycle) count(fn func(r *Report)) {
	c.mu.Lock()
	fn(&c.rep)
	c.mu.Unlock()
}

// apiFatal turns a 401 or 403 into the cycle's stop; it reports whether it
// did.
func (c *cycle) apiFatal(err error) bool {
	switch {
	case errors.Is(err, guestapi.ErrUnauthorized):
		c.stop(fmt.Errorf("%w: %w", ErrKeyRefused, err))
		return true
	case errors.Is(err, guestapi.ErrForbidden):
		need := "tickets:read or tickets:write"
		var ae *guestapi.Error
		if errors.As(err, &ae) && ae.Need != "" {
			need = ae.Need
		}
		c.stop(fmt.Errorf("%w: it needs %s: %w", ErrMissingRight, need, err))
		return true
	}
	return false
}

// hdFatal turns the helpdesk's refusal of the credentials into the cycle's
// stop; it reports whether it did.
// A helpdesk that asked for a wait longer than the cycle may sit out
// puts it off instead (see [PutOff]).
func (c *cycle) hdFatal(err error) bool {
	if c.putOffBy(SideHelpdesk, err) {
		return true
	}
	if !errors.Is(err, adapters.ErrAuth) {
		return false
	}
	c.stop(fmt.Errorf("%w: %w", ErrHelpdeskRefused, err))
	return true
}

// finish completes the report, stores it and logs it.
func (c *cycle) finish() (Report, error) {
	c.mu.Lock()
	rep := c.rep
	fatal := c.fatal
	c.mu.Unlock()
	c.e.api.cycle.Store(nil)
	apiPutOff, interrupted := false, false
	for _, p := range rep.PutOff {
		c.e.putOff[p.Side] = p
		apiPutOff = apiPutOff || p.Side == SideAPI
	}
	switch {
	case fatal != nil:
	case errors.Is(context.Cause(c.parent), ErrCycleDeadline):
		fatal = fmt.Errorf("%w: it stopped after %s; the next cycle goes on", ErrCycleDeadline, time.Since(c.began).Round(time.Second))
	case errors.Is(context.Cause(c.parent), context.Canceled):
		interrupted = true
	case c.parent.Err() != nil:
		fatal = fmt.Errorf("stopped: %w", context.Cause(c.parent))
	}
	rep.APIRequests = int(c.e.api.n.Load() - c.req0)
	rep.Duration = time.Since(c.began)
	synced := c.e.api.ok.Load() > c.ok0
	// A cycle the API only throttled (429) or put off has synced nothing
	// but is not failed here: the API is there and asks the bridge to slow
	// down, which it does; readiness turns only if that lasts
	// TICKETBRIDGE_CYCLE_MAX. (once still exits 75 after a put-off cycle:
	// it did not sync.)
	throttled := c.e.api.limited.Load() > c.limited0
	if fatal == nil && !synced && !throttled && !apiPutOff && !interrupted {
		fatal = noAPISuccess(rep)
	}
	if fatal != nil && c.e.advise != nil {
		fatal = c.e.advise(fatal)
	}
	switch {
	case fatal != nil:
		rep.Outcome = OutcomeFailed
		rep.Fatal = fatal.Error()
	case interrupted:
		rep.Outcome = OutcomeInterrupted
	case len(rep.PutOff) > 0:
		rep.Outcome = OutcomePutOff
	case rep.Errors > 0:
		rep.Outcome = OutcomePartial
	default:
		rep.Outcome = OutcomeOK
	}
	rep.Synced = fatal == nil && !interrupted && synced
	// A cycle that found other lists full than the record names, or that
	// counts otherwise what the rules leave out, is not quiet: status,
	// with the daemon stopped, shows the record.
	quiet := rep.Outcome == OutcomeOK && rep.Synced && c.e.st.Commits() == c.commits0 &&
		slices.Equal(rep.FullLists, c.e.recordedFull) && slices.Equal(rep.LeftOut, c.e.recordedLeftOut)
	if !c.e.st.ReadOnly() && !(quiet && c.e.recordedQuiet && c.now.Sub(c.e.recorded) < quietRecordEvery) {
		body, err := json.Marshal(rep)
		if err == nil {
			end := c.e.now()
			if end.Before(rep.Start) {
				end = rep.Start
			}
			pruned := func() {}
			err = c.e.st.Update(c.keep(), func(tx *state.Tx) error {
				if err := c.e.storeDeferred(tx); err != nil {
					return err
				}
				var err error
				if pruned, err = c.e.pruneAudit(tx, c.now); err != nil {
					return err
				}
				return tx.PutCycle(state.Cycle{Start: rep.Start, End: end, Outcome: rep.Outcome,
					Success: rep.Synced, Report: body})
			})
			if err == nil {
				c.e.deferred = nil
				pruned()
			}
		}
		c.e.recorded, c.e.recordedQuiet = c.now, quiet && err == nil
		if err == nil {
			c.e.recordedFull, c.e.recordedLeftOut = rep.FullLists, rep.LeftOut
		}
		if err != nil {
			c.e.log.LogAttrs(context.WithoutCancel(c.parent), slog.LevelError, "store cycle report", slog.Any("error", err), slog.String("op", "cycle"))
			if fatal == nil && !interrupted {
				fatal = fmt.Errorf("store cycle report: %w", err)
				rep.Outcome, rep.Fatal, rep.Synced = OutcomeFailed, fatal.Error(), false
			}
		}
	}
	level := slog.LevelInfo
	switch rep.Outcome {
	case OutcomePartial, OutcomePutOff:
		level = slog.LevelWarn
	case OutcomeFailed:
		level = slog.LevelError
	}
	c.e.log.LogAttrs(context.WithoutCancel(c.parent), level, rep.String(), slog.String("op", "cycle"))
	c.e.log.LogAttrs(context.WithoutCancel(c.parent), slog.LevelDebug, "cycle details", slog.String("op", "cycle"), slog.Any("report", rep))
	switch {
	case fatal != nil:
		return rep, fmt.Errorf("run cycle: %w", fatal)
	case interrupted:
		return rep, ErrInterrupted
	}
	return rep, nil
}

// forEach runs fn over items with at most n at once, on goroutines of
// pool (see Deps.Workers), and returns when all started calls have
// returned. It starts no new call once ctx has ended.
func forEach[T any](ctx context.Context, pool *gopool.Pool, n int, items []T, fn func(T)) {
	if n < 1 {
		n = 1
	}
	sem := make(chan struct{}, n)
	var wg gosync.WaitGroup
	var first gosync.Once
	var panicked *CyclePanic
	for _, it := range items {
		sem <- struct{}{}
		// Checked once a slot is free: a worker that ended the cycle
		// (a fatal answer, a crash) stops the next item from starting.
		if ctx.Err() != nil {
			<-sem
			break
		}
		wg.Add(1)
		pool.Go(func() {
			defer func() { <-sem; wg.Done() }()
			defer carryPanic(func(p *CyclePanic) { first.Do(func() { panicked = p }) })
			fn(it)
		})
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked) // on the caller's goroutine, where it can be recovered
	}
}

// carryPanic, deferred on a goroutine of the cycle, recovers its panic and
// hands it to to, which carries it to the cycle's goroutine: a panic on a
// goroutine no one recovers ends the process, and a daemon of many hotels
// recovers one hotel's panic to fail that hotel alone.
func carryPanic(to func(*CyclePanic)) {
	v := recover()
	if v == nil {
		return
	}
	p, ok := v.(*CyclePanic)
	if !ok {
		p = &CyclePanic{Value: v, Stack: debug.Stack()}
	}
	to(p)
}

// validID reports whether id can key a state record (see state.CheckID).
func validID(id string) bool { return state.CheckID(id) == nil }
