package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/robfig/cron/v3"

	"github.com/ticketbridge/ticketbridge/internal/httpserve"
	"github.com/ticketbridge/ticketbridge/state"
)

// Bounds of the telemetry's timings.
const (
	telemetryBodyMax  = 1 << 10
	telemetryHeadMax  = 16 << 10
	scrapeTimeout     = 10 * time.Second // the longest a scrape is written for
	shutdownTelemetry = 5 * time.Second
)

// Start begins serving the endpoints (when TICKETBRIDGE_LISTEN is set),
// starts feeding the watchdog (when systemd asks for it) and tells systemd
// that the daemon is ready. page is the status page served at / (nil: a
// line naming the endpoints). sched and interval are the engine's schedule;
// stats summarises the state file after each cycle (nil: not summarised).
// A listener that cannot be bound is an error: nothing is started then.
//
// A fleet of one's telemetry tells systemd nothing at its start: its
// hotel's does, once started (or the daemon once it stands by, see
// SetElsewhere). Started again (the hotel restarted), a telemetry keeps
// the health of its last cycle and tells systemd nothing new.
func (t *Telemetry) Start(ctx context.Context, page Page, sched cron.Schedule, interval time.Duration, stats func() (state.Stats, error)) error {
	t.mu.Lock()
	first := t.begun.IsZero()
	t.sched, t.interval, t.stats = sched, interval, stats
	t.begun = time.Now()
	t.nextDue = t.begun // the first cycle runs at once
	t.running = false
	t.mu.Unlock()
	if first {
		t.m.ready.Set(0)
	}

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
		httpserve.CloseUnusedOnShutdown(t.srv)
		t.served = make(chan error, 1)
		go func() { t.served <- t.srv.Serve(ln) }()
		t.log.Info("metrics and health endpoints listening", slog.Any("addr", t.addr.String()), slog.Any("metrics", "http://"+t.addr.String()+"/metrics"))
	}

	// READY first, then the watchdog: a ping never comes before it,
	// however late the watchdog's goroutine runs.
	if first && (t.hotels == nil || !t.hotels.one) {
		t.sendReady()
		t.send("STATUS=started; the first cycle is running")
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

// Handler serves /metrics, /healthz, /readyz and the status page; GET and
// HEAD only (and POST to the page's forms), with request bodies capped;
// page is the status page at / (nil: a line naming the endpoints).
func (t *Telemetry) Handler(page Page) http.Handler {
	mux := http.NewServeMux()
	// No timeout of its own: a scrape is bounded by the server's
	// WriteTimeout and the scraper's own timeout; gathering waits for
	// nothing.
	metrics := t.exposition()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		// Readiness depends on the clock too (nothing synced for
		// TICKETBRIDGE_CYCLE_MAX): judge it at each scrape.
		t.Readiness(time.Now()) // sets the ready gauges
		metrics.ServeHTTP(w, r)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		plain(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, reason := t.Readiness(time.Now())
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

// Page is what the telemetry listener needs of the status page.
type Page interface {
	http.Handler
	AcceptsPost(r *http.Request) bool
}
