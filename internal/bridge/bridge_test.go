package bridge

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/gopool"
	"github.com/ticketbridge/ticketbridge/sync"
)

// reporter records what a Bridge's scheduler reports.
type reporter struct {
	started int
	done    []sync.Report
	held    int
	after   func()
}

func (r *reporter) CycleStarted() { r.started++ }
func (r *reporter) CycleDone(rep sync.Report, _ error) {
	r.done = append(r.done, rep)
	r.after()
}
func (r *reporter) ObserveHeld([]adapters.HeldError, uint64) { r.held++ }

// TestBridgeRunsAHotel wires one hotel on the files adapter against the
// reference server, runs one cycle through its scheduler, and checks what
// the cycle leaves: the report, the ticket in the helpdesk, the status
// snapshot next to the state, a backup on demand, and everything closed.
// hotel gives a test a hotel on the files adapter against the reference
// server, holding one ticket, and returns its configuration.
func hotel(t *testing.T) (envconfig.Lookuper, config.Daemon, sync.Config) {
	t.Helper()
	env, cfg, sc, _ := hotelOn(t)
	return env, cfg, sc
}

// hotelOn is hotel, with its reference server.
func hotelOn(t *testing.T) (envconfig.Lookuper, config.Daemon, sync.Config, *refservertest.TestServer) {
	t.Helper()
	ts := refservertest.New(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "api-key")
	if err := os.WriteFile(keyFile, []byte(ts.Keys.TicketsWrite+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := envconfig.MapLookuper(map[string]string{
		"TICKETBRIDGE_API_URL":      ts.URL,
		"TICKETBRIDGE_API_KEY_FILE": keyFile,
		"TICKETBRIDGE_ADAPTER":      "files",
		"TICKETBRIDGE_FILES_DIR":    filepath.Join(dir, "helpdesk"),
		"TICKETBRIDGE_FILES_SETTLE": "0s",
		"TICKETBRIDGE_STATE":        filepath.Join(dir, "state.db"),
		"TICKETBRIDGE_SCHEDULE":     "@every 1h",
	})
	ctx := t.Context()
	cfg, err := config.LoadDaemon(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := sync.LoadConfig(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Server.CreateTicket(ts.Org, refserver.NewTicket{Department: "housekeeping", TaskDescription: "Towels to 214"}); err != nil {
		t.Fatal(err)
	}
	return env, cfg, sc, ts
}

func TestBridgeRunsAHotel(t *testing.T) {
	ctx := t.Context()
	env, cfg, sc := hotel(t)
	var backups []string
	workers := gopool.New(time.Minute)
	b, err := New(ctx, env, cfg, sc, slog.New(slog.DiscardHandler), Options{Workers: workers, AfterBackup: func(path string, err error) {
		if err == nil {
			backups = append(backups, path)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	rep := &reporter{after: stop}
	page := NewConsole(b, "")
	sched := b.Scheduler(rep, time.Minute, page, ctx)
	if sched.Workers != workers {
		t.Error("the scheduler runs its cycles on goroutines of its own, not on the workers given")
	}
	if err := sched.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if rep.started != 1 || len(rep.done) != 1 || !rep.done[0].Synced || rep.held != 1 {
		t.Fatalf("reported %d started, %+v done, %d held; want one synced cycle", rep.started, rep.done, rep.held)
	}
	// Besides the cycle and the work after it, the engine's goroutines
	// (the new ticket's reader and its read) ran on the workers.
	if n := workers.Ran(); n < 4 {
		t.Errorf("%d functions ran on the workers given, want at least 4", n)
	}
	if _, err := os.Stat(cfg.State.Value() + StatusSuffix); err != nil {
		t.Errorf("no status snapshot after the cycle: %v", err)
	}
	if page.Hotel == nil {
		t.Error("no page source")
	}
	dest, err := b.Backup(ctx)
	if err != nil || dest != cfg.State.Value()+BackupSuffix || len(backups) != 1 {
		t.Fatalf("backup: %q, %v (AfterBackup saw %q)", dest, err, backups)
	}
	if _, err := os.Stat(dest); err != nil {
		t.Errorf("no backup file: %v", err)
	}
	if err := b.Close(); err != nil || !b.Closed() {
		t.Errorf("close: %v, closed %v", err, b.Closed())
	}
}
