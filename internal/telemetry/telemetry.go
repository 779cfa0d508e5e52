package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	gosync "sync"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/statuspage"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/robfig/cron/v3"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/version"
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

// Bounds of the telemetry's timings.
const (
	telemetryBodyMax  = 1 << 10
	telemetryHeadMax  = 16 << 10
	scrapeTimeout     = 10 * time.Second
	shutdownTelemetry = 5 * time.Second
)

// Telemetry holds the metrics, the health state and the systemd
// notifications of one daemon. Make one with newTelemetry before the API
// client (whose transport it instruments), then call start once the engine
// exists and stop when the daemon shuts down.
type Telemetry struct {
	cfg    Options
	log    *slog.Logger
	now    func() time.Time
	notify func(state string) error
	// WatchdogEvery is the ping period; 0 asks systemd's environment
	// (WATCHDOG_USEC), negative disables the watchdog.
	watchdogEvery time.Duration

	reg  *prometheus.Registry
	m    metrics
	prop *propagationMetrics
	// hotels is set when the daemon serves a hotels directory (see
	// hotels_telemetry.go): each hotel then has a telemetry of its own.
	hotels *hotelBoard

	mu          gosync.Mutex
	sched       cron.Schedule
	interval    time.Duration
	stats       func() (state.Stats, error)
	begun       time.Time // when start ran
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

// metrics are the daemon's Prometheus series. Every label takes a bounded
// set of values: no ticket id, URL, key or free text ever becomes a label.
type metrics struct {
	cycles        *prometheus.CounterVec
	cycleDuration prometheus.Histogram
	apiRequests   *prometheus.CounterVec
	apiDuration   *prometheus.HistogramVec
	mirrored      *prometheus.CounterVec
	errors        *prometheus.CounterVec
	tickets       *prometheus.GaugeVec
	retired       prometheus.Gauge
	journal       *prometheus.GaugeVec
	stateBytes    prometheus.Gauge
	lastSuccess   prometheus.Gauge
	lastCycle     prometheus.Gauge
	ready         prometheus.Gauge
	detect        *prometheus.CounterVec
	held          prometheus.Gauge
	setAside      prometheus.Gauge
	setAsideTotal prometheus.Counter
}

// Label values.
const (
	dirToHelpdesk = "to_helpdesk"
	dirToAPI      = "to_api"

	errKindTicket       = "ticket"           // a ticket or journal entry failed; it is retried with backoff
	errKindRefused      = "refused"          // a journal entry was refused for good
	errKindKeyRefused   = "key_refused"      // a cycle stopped: the API refused the key (401)
	errKindMissingRight = "missing_right"    // a cycle stopped: the key lacks a right (403)
	errKindAPIDown      = "api_down"         // a cycle failed: no API call succeeded
	errKindHelpdesk     = "helpdesk_refused" // a cycle stopped: the helpdesk refused the credentials (401/403)
	errKindState        = "state"            // a cycle stopped: the state file belongs to another adapter
	errKindCanceled     = "canceled"         // a cycle was cut short by the daemon stopping
	errKindCycle        = "cycle"            // a cycle stopped for another reason
)

var errorKinds = []string{errKindTicket, errKindRefused, errKindKeyRefused, errKindMissingRight, errKindAPIDown, errKindHelpdesk, errKindState, errKindCanceled, errKindCycle}

func newMetrics(reg prometheus.Registerer) metrics {
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	m := metrics{
		cycles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketbridge_cycles_total",
			Help: "Sync cycles run, by outcome: ok, partial (some tickets failed, the rest went on) or failed (the cycle stopped).",
		}, []string{"outcome"}),
		cycleDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ticketbridge_cycle_duration_seconds",
			Help:    "How long sync cycles took.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200},
		}),
		apiRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketbridge_api_requests_total",
			Help: "HTTP requests to the Guest Requests API, by endpoint (a path template such as /tickets/{id}/messages), method and status code (\"error\" when no answer came).",
		}, []string{"endpoint", "method", "code"}),
		apiDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ticketbridge_api_request_duration_seconds",
			Help:    "How long requests to the Guest Requests API took until their answer's headers, by endpoint.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"endpoint"}),
		mirrored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketbridge_messages_mirrored_total",
			Help: "Messages carried across, by direction: to_helpdesk counts guest and staff messages appended to the helpdesk; to_api counts the helpdesk's replies, notes and status changes confirmed by the API.",
		}, []string{"direction"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketbridge_errors_total",
			Help: "Errors by kind: ticket (a ticket or outbound entry failed and is retried), refused (an outbound entry was refused for good), key_refused, missing_right, api_down (no API call of a cycle succeeded), helpdesk_refused (the helpdesk refused the credentials), state, canceled, cycle (a cycle stopped).",
		}, []string{"kind"}),
		tickets: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ticketbridge_tickets",
			Help: "Tickets in the state file by the last upstream status seen (unknown: never read yet; other: a status this version does not know), retired ones included.",
		}, []string{"status"}),
		retired: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ticketbridge_tickets_retired",
			Help: "Tickets closed long enough to be read no more.",
		}),
		journal: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ticketbridge_journal_entries",
			Help: "Outbound journal entries by state: pending (the backlog to send upstream), failed (refused for good), unmarked (sent, not yet recorded in the helpdesk), abandoned (set aside by an operator: never sent).",
		}, []string{"state"}),
		stateBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ticketbridge_state_file_bytes",
			Help: "Size of the state file; 0 when the state is in PostgreSQL.",
		}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ticketbridge_last_success_timestamp_seconds",
			Help: "When the last cycle that synced (ok or partial, with at least one successful API call) ended, as a Unix time; 0 before the first.",
		}),
		lastCycle: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ticketbridge_last_cycle_timestamp_seconds",
			Help: "When the last cycle ended, whatever its outcome, as a Unix time; 0 before the first.",
		}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ticketbridge_ready",
			Help: "1 while /readyz answers 200, else 0.",
		}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ticketbridge_helpdesk_held_changes",
			Help: "Changes the helpdesk holds until its team acts (such as a field required before a ticket may be solved), as the adapter last saw them; each is tried again every few minutes.",
		}),
		setAside: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ticketbridge_outbox_failed_files",
			Help: "Files the team handed the helpdesk (the files helpdesk's outbox) that could not be used and wait in outbox/failed/, as the adapter last saw them; nothing of them is sent until they are fixed and dropped again.",
		}),
		setAsideTotal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ticketbridge_outbox_failed_total",
			Help: "Files the team handed the helpdesk (the files helpdesk's outbox) that could not be used and were set aside in outbox/failed/.",
		}),
		detect: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketbridge_ticket_reads_total",
			Help: "How tickets came to be read, by cause: signalled (a list showed the ticket changed), unsignalled (a read found a change no list showed: the API did not move updated_at, and the full-read interval shortens), throttled (a read answered with 429, put off).",
		}, []string{"cause"}),
	}
	for _, c := range []prometheus.Collector{m.cycles, m.cycleDuration, m.apiRequests, m.apiDuration, m.mirrored,
		m.errors, m.tickets, m.retired, m.journal, m.stateBytes, m.lastSuccess, m.lastCycle, m.ready, m.detect, m.held, m.setAside, m.setAsideTotal} {
		f(c)
	}

	// Series that exist from the start, so that rate() and alerts see a
	// zero before the first event.
	for _, o := range []string{sync.OutcomeOK, sync.OutcomePartial, sync.OutcomePutOff, sync.OutcomeFailed} {
		m.cycles.WithLabelValues(o)
	}
	for _, d := range []string{dirToHelpdesk, dirToAPI} {
		m.mirrored.WithLabelValues(d)
	}
	for _, k := range errorKinds {
		m.errors.WithLabelValues(k)
	}
	for _, c := range []string{"signalled", "unsignalled", "throttled"} {
		m.detect.WithLabelValues(c)
	}
	for _, s := range []string{"pending", "failed", "unmarked", "abandoned"} {
		m.journal.WithLabelValues(s)
	}
	return m
}

// registerProcessMetrics registers the series of the process, which a
// daemon of many hotels has once: the build, the Go runtime, the process.
func registerProcessMetrics(reg prometheus.Registerer) {
	v, c, g := version.Get()
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "ticketbridge_build_info",
		Help:        "Always 1; the labels say which build runs.",
		ConstLabels: prometheus.Labels{"version": v, "commit": c, "goversion": g},
	})
	info.Set(1)
	reg.MustRegister(info, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// Options are the telemetry's settings: the listener and the cycle bound
// from the daemon's configuration, and what tests replace of the process
// (the clock, systemd's notifications, the watchdog's period), whose zero
// values are the daemon's.
type Options struct {
	// Listen is the host:port of the metrics and health endpoints
	// (TICKETBRIDGE_LISTEN); empty serves none.
	Listen string
	// CycleMax is how long a cycle may take past its scheduled start
	// before the daemon counts as stuck (TICKETBRIDGE_CYCLE_MAX); 0 means
	// 20 minutes.
	CycleMax time.Duration

	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Notify sends systemd a notification; nil: sdNotify.
	Notify func(state string) error
	// WatchdogEvery is the ping period; 0 asks systemd's environment
	// (WATCHDOG_USEC), negative disables the watchdog.
	WatchdogEvery time.Duration
}

// New returns the telemetry of a daemon of one hotel: its series,
// with the process's, carry no hotel label.
func New(log *slog.Logger, opts Options) *Telemetry {
	t := newProcessTelemetry(log, opts)
	t.prop = newPropagationMetrics()
	t.reg.MustRegister(t.prop)
	t.m = newMetrics(t.reg)
	return t
}

// NewFleet returns the telemetry of a daemon of many hotels: its
// own registry keeps only the process's series, each hotel gets one of
// its own (see [telemetry.hotel]), and /readyz answers for the hotels
// named in ready (nil: all).
func NewFleet(log *slog.Logger, ready []string, opts Options) *Telemetry {
	t := newProcessTelemetry(log, opts)
	t.m = newMetrics(prometheus.NewRegistry()) // the cycle's series are the hotels'
	t.prop = newPropagationMetrics()
	t.hotels = &hotelBoard{tels: map[string]*Telemetry{}, broken: map[string]string{}, pages: map[string]statuspage.Source{}, ready: ready}
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
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Notify == nil {
		opts.Notify = sdNotify
	}
	reg := prometheus.NewRegistry()
	registerProcessMetrics(reg)
	return &Telemetry{
		cfg:           opts,
		log:           log,
		now:           opts.Now,
		notify:        opts.Notify,
		watchdogEvery: opts.WatchdogEvery,
		reg:           reg,
	}
}

// sdNotify sends state to systemd; without NOTIFY_SOCKET it does nothing.
func sdNotify(state string) error {
	_, err := daemon.SdNotify(false, state)
	return err
}

// Start begins serving the endpoints (when TICKETBRIDGE_LISTEN is set),
// starts feeding the watchdog (when systemd asks for it) and tells systemd
// that the daemon is ready. page is the status page served at / (nil: a
// line naming the endpoints). sched and interval are the engine's schedule;
// stats summarises the state file after each cycle (nil: not summarised).
// A listener that cannot be bound is an error: nothing is started then.
func (t *Telemetry) Start(ctx context.Context, page Page, sched cron.Schedule, interval time.Duration, stats func() (state.Stats, error)) error {
	t.mu.Lock()
	t.sched, t.interval, t.stats = sched, interval, stats
	t.begun = t.now()
	t.nextDue = t.begun // the first cycle runs at once
	t.mu.Unlock()
	t.m.ready.Set(0)

	if t.cfg.Listen != "" {
		ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", t.cfg.Listen)
		if err != nil {
			return fmt.Errorf("start metrics listener: %w", err)
		}
		t.addr = ln.Addr()
		t.srv = &http.Server{
			Handler:           t.Handler(page),
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       10 * time.Second,
			WriteTimeout:      scrapeTimeout + 5*time.Second,
			IdleTimeout:       time.Minute,
			MaxHeaderBytes:    telemetryHeadMax,
			ErrorLog:          slog.NewLogLogger(t.log.Handler(), slog.LevelDebug),
		}
		t.served = make(chan error, 1)
		go func() { t.served <- t.srv.Serve(ln) }()
		t.log.Info("metrics and health endpoints listening", slog.Any("addr", t.addr.String()), slog.Any("metrics", "http://"+t.addr.String()+"/metrics"))
	}

	every := t.watchdogEvery
	if every == 0 {
		d, err := daemon.SdWatchdogEnabled(false)
		if err != nil {
			t.log.Warn("systemd watchdog setting unreadable; not feeding it", slog.Any("error", err))
		}
		every = d / 2
	}
	if every > 0 {
		wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		t.stopWD, t.wdDone = cancel, make(chan struct{})
		ticker := time.NewTicker(every)
		go func() {
			defer close(t.wdDone)
			defer ticker.Stop()
			t.runWatchdog(wctx, ticker.C)
		}()
		t.log.Info("feeding the systemd watchdog while cycles complete", slog.Any("every", every), slog.Any("cycle_max", t.cfg.CycleMax))
	}
	t.send(daemon.SdNotifyReady)
	t.send("STATUS=started; the first cycle is running")
	return nil
}

// Addr returns the address the endpoints listen on, nil when off.
func (t *Telemetry) Addr() net.Addr { return t.addr }

// Stop tells systemd the daemon is stopping, stops the watchdog and shuts
// the endpoints down, waiting at most a few seconds for scrapes in flight.
func (t *Telemetry) Stop() error {
	if t.stopWD != nil {
		t.stopWD()
		<-t.wdDone
		t.stopWD = nil
	}
	t.send(daemon.SdNotifyStopping)
	if t.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTelemetry)
	defer cancel()
	var first error
	if err := t.srv.Shutdown(ctx); err != nil {
		_ = t.srv.Close()
		first = fmt.Errorf("shut down metrics listener: %w", err)
	}
	if err := <-t.served; err != nil && !errors.Is(err, http.ErrServerClosed) && first == nil {
		first = fmt.Errorf("serve metrics: %w", err)
	}
	t.srv = nil
	return first
}

// send passes a notification to systemd, logging the first failure only.
func (t *Telemetry) send(state string) {
	if err := t.notify(state); err != nil {
		t.mu.Lock()
		first := !t.notifyErr
		t.notifyErr = true
		t.mu.Unlock()
		if first {
			t.log.Warn("notify systemd", slog.Any("error", err))
		}
	}
}

// CycleStarted marks a cycle as in flight. Calling it is optional: without
// it the watchdog bound still holds, counted from the scheduled start.
func (t *Telemetry) CycleStarted() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.running = true
	t.runningFrom = t.now()
}

// CycleDone records a finished cycle: it is the engine's after-cycle hook.
func (t *Telemetry) CycleDone(r sync.Report, err error) {
	now := t.now()
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
	t.m.mirrored.WithLabelValues(dirToHelpdesk).Add(float64(r.Mirrored))
	t.m.mirrored.WithLabelValues(dirToAPI).Add(float64(r.Sent))
	t.m.errors.WithLabelValues(errKindTicket).Add(float64(r.Errors))
	t.m.errors.WithLabelValues(errKindRefused).Add(float64(r.Failed))
	t.m.detect.WithLabelValues("signalled").Add(float64(r.Signalled))
	t.m.detect.WithLabelValues("unsignalled").Add(float64(r.Unsignalled))
	t.m.detect.WithLabelValues("throttled").Add(float64(r.Throttled))
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

// errorKind names the kind of error that stopped a cycle.
func errorKind(err error) string {
	switch {
	case errors.Is(err, sync.ErrKeyRefused), errors.Is(err, guestapi.ErrUnauthorized):
		return errKindKeyRefused
	case errors.Is(err, sync.ErrMissingRight), errors.Is(err, guestapi.ErrForbidden):
		return errKindMissingRight
	case errors.Is(err, sync.ErrNoAPISuccess):
		return errKindAPIDown
	case errors.Is(err, sync.ErrHelpdeskRefused), errors.Is(err, adapters.ErrAuth):
		return errKindHelpdesk
	case errors.Is(err, sync.ErrAdapterMismatch), errors.Is(err, state.ErrLocked),
		errors.Is(err, state.ErrReadOnly), errors.Is(err, state.ErrNewerSchema):
		return errKindState
	case errors.Is(err, context.Canceled):
		return errKindCanceled
	}
	return errKindCycle
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

// Handler serves /metrics, /healthz, /readyz and the status page; GET and
// HEAD only (and POST to the page's forms), with request bodies capped;
// page is the status page at / (nil: a line naming the endpoints).
func (t *Telemetry) Handler(page Page) http.Handler {
	mux := http.NewServeMux()
	metrics := promhttp.HandlerFor(t.gatherer(), promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(t.log.Handler(), slog.LevelWarn),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             scrapeTimeout,
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		// Readiness depends on the clock too (nothing synced for
		// TICKETBRIDGE_CYCLE_MAX): judge it at each scrape.
		t.Readiness(t.now()) // sets the ready gauges
		metrics.ServeHTTP(w, r)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		plain(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, reason := t.Readiness(t.now())
		if !ok {
			plain(w, http.StatusServiceUnavailable, "not ready: "+reason)
			return
		}
		plain(w, http.StatusOK, reason)
	})
	if page != nil {
		mux.Handle("/", page)
	} else {
		mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) {
			plain(w, http.StatusOK, "ticketbridge: /metrics /healthz /readyz")
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		postOK := r.Method == http.MethodPost && page != nil && page.AcceptsPost(r)
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !postOK {
			w.Header().Set("Allow", "GET, HEAD")
			plain(w, http.StatusMethodNotAllowed, "method not allowed")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, telemetryBodyMax)
		mux.ServeHTTP(w, r)
	})
}

func plain(w http.ResponseWriter, code int, line string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = fmt.Fprintln(w, line)
}

// CountRequests returns base wrapped so that every request is counted by
// endpoint template, method and status code.
func (t *Telemetry) CountRequests(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &countingTransport{base: base, m: &t.m}
}

// Listens reports whether the telemetry serves HTTP
// (TICKETBRIDGE_LISTEN), and with it the status page.
func (t *Telemetry) Listens() bool { return t.cfg.Listen != "" }

// CycleMax is each cycle's deadline (TICKETBRIDGE_CYCLE_MAX).
func (t *Telemetry) CycleMax() time.Duration { return t.cfg.CycleMax }

// countingTransport counts the requests it carries.
type countingTransport struct {
	base http.RoundTripper
	m    *metrics
}

func (ct *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ep := endpointOf(req.URL.EscapedPath())
	method := req.Method
	if method != http.MethodGet && method != http.MethodPost {
		method = "other"
	}
	start := time.Now()
	resp, err := ct.base.RoundTrip(req)
	ct.m.apiDuration.WithLabelValues(ep).Observe(time.Since(start).Seconds())
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	ct.m.apiRequests.WithLabelValues(ep, method, code).Inc()
	return resp, err
}

// endpointOf maps a request path to its template: ids never become labels.
// The API may sit below a path prefix, so the known parts are found from
// the right.
func endpointOf(p string) string {
	switch {
	case strings.HasSuffix(p, guestapi.TokenPath):
		return guestapi.TokenPath
	case strings.HasSuffix(p, guestapi.VerifyPath):
		return guestapi.VerifyPath
	}
	i := strings.LastIndex(p, guestapi.TicketsPrefix+"/tickets")
	if i < 0 {
		return "other"
	}
	rest := p[i+len(guestapi.TicketsPrefix+"/tickets"):]
	if rest == "" || rest == "/" {
		return "/tickets"
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] != "":
		return "/tickets/{id}"
	case len(parts) == 2 && parts[0] != "" && (parts[1] == "messages" || parts[1] == "status"):
		return "/tickets/{id}/" + parts[1]
	}
	return "other"
}

// Page is what the telemetry listener needs of the status page.
type Page interface {
	http.Handler
	AcceptsPost(r *http.Request) bool
}
