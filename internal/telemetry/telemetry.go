package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/statuspage"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// This file is what a running daemon shows the world: Prometheus metrics
// and two health endpoints on TICKETBRIDGE_LISTEN, and systemd's
// notification protocol (READY, STATUS, STOPPING and the watchdog).
//
// # The watchdog
//
// Under a unit with WatchdogSec, systemd kills and restarts a service that
// stops sending WATCHDOG=1. The daemon sends it every WatchdogSec/2, but
// only while cycles complete: it counts as alive until
//
//	the next scheduled start after the last completed cycle + TICKETBRIDGE_CYCLE_MAX
//
// (before the first cycle: the start of the daemon + TICKETBRIDGE_CYCLE_MAX).
// A cycle that hangs, or a scheduler that stops starting cycles, therefore
// stops the pings TICKETBRIDGE_CYCLE_MAX after the cycle should have
// started, and systemd restarts the daemon at most WatchdogSec later.
// Because the bound follows the schedule's own next start, long cron
// schedules ("@daily", "0 3 * * *") work without tuning: the daemon is not
// declared stuck during the hours between two cycles. A failed cycle (the
// API down, a refused key) still completes: restarting would not help, so
// it keeps the watchdog fed; /readyz and the metrics report it instead.
//
// # Readiness
//
// /readyz answers 200 while the last cycle synced (see sync.Report.Synced:
// nothing stopped it and at least one API call succeeded; some tickets may
// have failed while the rest went on) and the next cycle is not overdue,
// and 503 with a one-line reason otherwise: at once when a cycle failed
// (the API unreachable, a refused key), and when nothing synced for
// TICKETBRIDGE_CYCLE_MAX past the start the schedule set after the last
// sync. The bound follows the schedule, like the watchdog's, so a daily
// schedule stays ready between its cycles. /healthz answers 200 while the
// process serves HTTP at all.

// Telemetry holds the metrics, the health state and the systemd
// notifications of one daemon. Make one with [NewOne] or [NewFleet] before
// the API client (whose transport it instruments), then call
// [Telemetry.Start] once the engine exists and [Telemetry.Stop] when the
// daemon shuts down.
type Telemetry struct {
	cfg    Options
	log    *slog.Logger
	notify func(state string) error
	// ready, when set, is whether READY=1 was sent, once for a fleet of
	// one, shared by the daemon's telemetry and its hotel's: once the
	// hotel started, or when it stands by (see sendReady). The watchdog
	// is fed after it only.
	ready *atomic.Bool
	// WatchdogEvery is the ping period; 0 asks systemd's environment
	// (WATCHDOG_USEC), negative disables the watchdog.
	watchdogEvery time.Duration

	reg  *prometheus.Registry
	m    metrics
	prop *propagationMetrics
	// hotels is set when the daemon serves a hotels directory (see
	// board.go): each hotel then has a telemetry of its own.
	hotels *hotelBoard

	mu          gosync.Mutex
	sched       cron.Schedule
	interval    time.Duration
	stats       func() (state.Stats, error)
	begun       time.Time // when Start ran
	running     bool      // a cycle reported through cycleStarted is in flight
	runningFrom time.Time
	nextDue     time.Time // when the next cycle is due to start at the latest
	lastEnd     time.Time // when the last cycle ended; zero before the first
	lastOK      time.Time // when the last cycle that synced ended
	lastOutcome string
	lastFatal   string
	starved     bool // the watchdog is not being fed (logged once per episode)
	notifyErr   bool // a notification failed (logged once)
	// setAside is the adapter's count of files set aside when last seen
	// (adapters.SetAsideCounter), for ticketbridge_outbox_failed_total.
	setAside uint64

	srv    *http.Server
	addr   net.Addr
	served chan error
	stopWD context.CancelFunc
	wdDone chan struct{}
}

// Options are the telemetry's settings: the listener and the cycle bound
// from the daemon's configuration, and what tests replace of the process
// (systemd's notifications, the watchdog's period), whose zero values are
// the daemon's. The clock is the runtime's (time.Now): tests move it in a
// testing/synctest bubble.
type Options struct {
	// Listen is the host:port of the metrics and health endpoints
	// (TICKETBRIDGE_LISTEN); empty serves none.
	Listen string
	// CycleMax is how long a cycle may take past its scheduled start
	// before the daemon counts as stuck (TICKETBRIDGE_CYCLE_MAX); 0 means
	// 20 minutes.
	CycleMax time.Duration

	// Notify sends systemd a notification; nil: sdNotify.
	Notify func(state string) error
	// WatchdogEvery is the ping period; 0 asks systemd's environment
	// (WATCHDOG_USEC), negative disables the watchdog.
	WatchdogEvery time.Duration
}

// New returns the telemetry of one hotel on its own, without a board of
// hotels: its series, with the process's, carry no hotel label. A daemon
// of one hotel's is NewOne's, which builds on it.
func New(log *slog.Logger, opts Options) *Telemetry {
	t := newProcessTelemetry(log, opts)
	t.m, t.prop = newMetrics(), newPropagationMetrics()
	return t
}

// NewFleet returns the telemetry of a daemon of many hotels: its
// own registry keeps only the process's series, each hotel gets one of
// its own (see [Telemetry.Hotel]), and /readyz answers for the hotels
// named in ready (nil: all).
func NewFleet(log *slog.Logger, ready []string, opts Options) *Telemetry {
	t := newProcessTelemetry(log, opts)
	t.m = newMetrics() // not sent: the cycle's series are the hotels'
	t.prop = newPropagationMetrics()
	t.hotels = newHotelBoard(t.reg, ready)
	return t
}

// NewOne returns the telemetry of a daemon of one hotel, run as a fleet
// of one: the hotel gets a telemetry of its own (see [Telemetry.Hotel])
// as a hotel of many does, but its series carry no hotel label, /readyz
// answers with its own readiness, and nothing is added of a fleet's (no
// count of panics): its metrics are those a daemon of one hotel always
// had.
func NewOne(log *slog.Logger, opts Options) *Telemetry {
	t := New(log, opts) // its series are the hotel's (see Hotel)
	t.hotels = &hotelBoard{one: true, tels: map[string]*Telemetry{}, broken: map[string]string{}, pages: map[string]statuspage.Source{}}
	t.ready = &atomic.Bool{}
	return t
}

// newProcessTelemetry returns a telemetry whose registry (its own, never
// Prometheus' global one) holds the process's series only. A nil logger
// discards.
func newProcessTelemetry(log *slog.Logger, opts Options) *Telemetry {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.CycleMax <= 0 {
		opts.CycleMax = 20 * time.Minute
	}
	if opts.Notify == nil {
		opts.Notify = sdNotify
	}
	reg := prometheus.NewRegistry()
	registerProcessMetrics(reg)
	return &Telemetry{
		cfg:           opts,
		log:           log,
		notify:        opts.Notify,
		watchdogEvery: opts.WatchdogEvery,
		reg:           reg,
	}
}

// CycleStarted marks a cycle as in flight. Calling it is optional: without
// it the watchdog bound still holds, counted from the scheduled start.
func (t *Telemetry) CycleStarted() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.running = true
	t.runningFrom = time.Now()
}

// CycleDone records a finished cycle: it is the engine's after-cycle hook.
func (t *Telemetry) CycleDone(r sync.Report, err error) {
	now := time.Now()
	outcome := r.Outcome
	interrupted := errors.Is(err, sync.ErrInterrupted)
	if interrupted {
		// Cancelled, not failed: the next run resumes.
		outcome, err = sync.OutcomeInterrupted, nil
	}
	if outcome == "" {
		outcome = sync.OutcomeOK
		if err != nil {
			outcome = sync.OutcomeFailed
		}
	}
	if err != nil {
		outcome = sync.OutcomeFailed
	}
	t.m.cycles.WithLabelValues(outcome).Inc()
	t.m.cycleDuration.Observe(r.Duration.Seconds())
	if r.Lag > 0 { // 0: a cycle no scheduler ran
		t.m.cycleLag.Observe(r.Lag.Seconds())
	}
	t.m.mirrored.WithLabelValues(dirToHelpdesk).Add(float64(r.Mirrored))
	t.m.mirrored.WithLabelValues(dirToAPI).Add(float64(r.Sent))
	t.m.errors.WithLabelValues(errKindTicket).Add(float64(r.Errors))
	t.m.errors.WithLabelValues(errKindRefused).Add(float64(r.Failed))
	t.m.detect.WithLabelValues("signalled").Add(float64(r.Signalled))
	t.m.detect.WithLabelValues("unsignalled").Add(float64(r.Unsignalled))
	t.m.detect.WithLabelValues("throttled").Add(float64(r.Throttled))
	for o, n := range r.Reconcile {
		t.m.reconcile.WithLabelValues(o).Add(float64(n))
	}
	// Every report carries the lists found full when the queue was last
	// listed, also one whose lists failed.
	t.m.fullLists.Set(float64(len(r.FullLists)))
	t.prop.add(r.Propagation)
	if err != nil {
		t.m.errors.WithLabelValues(errorKind(err)).Inc()
	}
	synced := r.Synced && err == nil && outcome != sync.OutcomeFailed
	t.m.lastCycle.Set(float64(now.UnixMilli()) / 1e3)
	if synced {
		t.m.lastSuccess.Set(float64(now.UnixMilli()) / 1e3)
	}

	t.mu.Lock()
	t.running = false
	t.lastEnd = now
	t.lastOutcome = outcome
	t.lastFatal = ""
	switch {
	case synced:
		t.lastOK = now
	case outcome == sync.OutcomePutOff && err == nil, interrupted:
		// A side asked the bridge to stay away for a while, or the cycle
		// was cancelled: no failure; readiness turns if nothing syncs for
		// TICKETBRIDGE_CYCLE_MAX.
	default:
		t.lastOutcome = sync.OutcomeFailed
		t.lastFatal = r.Fatal
		if t.lastFatal == "" && err != nil {
			t.lastFatal = err.Error()
		}
	}
	t.nextDue = now
	if t.sched != nil {
		if next := t.sched.Next(now); !next.IsZero() {
			t.nextDue = next
		}
	}
	stats := t.stats
	t.mu.Unlock()

	if stats != nil {
		if st, serr := stats(); serr != nil {
			t.log.Warn("summarise state for metrics", slog.Any("error", serr))
		} else {
			t.observeStats(st)
		}
	}
	ok, _ := t.Ready(now)
	t.m.ready.Set(boolFloat(ok))
	t.send(fmt.Sprintf("STATUS=last cycle %s at %s: mirrored %d, sent %d, errors %d",
		outcome, now.Format(time.TimeOnly), r.Mirrored, r.Sent, r.Errors))
}

// ObserveHeld sets the gauges of the changes the helpdesk holds and of
// the files it set aside (h), and counts the files set aside since the
// last call from the adapter's count (setAside).
func (t *Telemetry) ObserveHeld(h []adapters.HeldError, setAside uint64) {
	files := 0
	for _, e := range h {
		if e.SetAside() {
			files++
		}
	}
	t.m.held.Set(float64(len(h) - files))
	t.m.setAside.Set(float64(files))
	t.mu.Lock()
	last := t.setAside
	t.setAside = setAside
	t.mu.Unlock()
	if setAside < last {
		last = 0 // a new adapter counts from zero
	}
	t.m.setAsideTotal.Add(float64(setAside - last))
}

// observeStats sets the gauges taken from the state file.
func (t *Telemetry) observeStats(st state.Stats) {
	t.m.tickets.Reset()
	for _, s := range guestapi.Statuses() {
		t.m.tickets.WithLabelValues(string(s))
	}
	known := map[string]bool{}
	for _, s := range guestapi.Statuses() {
		known[string(s)] = true
	}
	for s, n := range st.ByStatus {
		label := s
		switch {
		case s == "":
			label = "unknown"
		case !known[s]:
			label = "other"
		}
		t.m.tickets.WithLabelValues(label).Add(float64(n))
	}
	t.m.retired.Set(float64(st.Retired))
	t.m.journal.WithLabelValues("pending").Set(float64(st.JournalPending))
	t.m.journal.WithLabelValues("failed").Set(float64(st.JournalFailed))
	t.m.journal.WithLabelValues("unmarked").Set(float64(st.JournalUnmarked))
	t.m.journal.WithLabelValues("abandoned").Set(float64(st.JournalAbandoned))
	t.m.stateBytes.Set(float64(st.FileSize))
}

// Listens reports whether the telemetry serves HTTP
// (TICKETBRIDGE_LISTEN), and with it the status page.
func (t *Telemetry) Listens() bool { return t.cfg.Listen != "" }

// Listen is the host:port the endpoints are asked to listen on
// (TICKETBRIDGE_LISTEN), as configured: its port may be 0.
func (t *Telemetry) Listen() string { return t.cfg.Listen }

// CycleMax is each cycle's deadline (TICKETBRIDGE_CYCLE_MAX).
func (t *Telemetry) CycleMax() time.Duration { return t.cfg.CycleMax }

// Register adds c's series to the process's: those a part of the daemon
// keeps beside the hotels' (the notifications' counters).
func (t *Telemetry) Register(c prometheus.Collector) error { return t.reg.Register(c) }
