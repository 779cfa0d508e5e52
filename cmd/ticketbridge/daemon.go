package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/fleet"
	"github.com/ticketbridge/ticketbridge/internal/notify"
	"github.com/ticketbridge/ticketbridge/internal/safefile"
	"github.com/ticketbridge/ticketbridge/internal/telemetry"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

const runAbout = `Run the daemon: a sync cycle at once and then on every tick of
TICKETBRIDGE_SCHEDULE, never two at once, until SIGINT or SIGTERM (the cycle
in flight is stopped cleanly). A failed cycle is logged and the next tick
tries again.

While it runs the daemon holds the state file. After each cycle it writes
<state>.status.json (mode 0600), which ` + "`ticketbridge status`" + ` shows meanwhile.
On SIGUSR1 it writes a consistent copy of the state file to <state>.backup
(systemctl kill -s USR1 ticketbridge). On SIGHUP (systemctl reload
ticketbridge) it reads its key and helpdesk secret files again and, when
one changed, wires the hotel anew with them after the cycle in flight.
A panic in the hotel's cycle, adapter or state is logged with its stack
and stops the daemon with an error, for systemd to restart it.

With TICKETBRIDGE_HOTELS_DIR=DIR it serves every hotel of DIR/<name>.env
instead, each with its own cycle, schedule, state file and errors; the main
configuration's values are every hotel's defaults. SIGHUP (systemctl reload
ticketbridge) re-reads DIR: a new file starts its hotel, a removed one stops
after its cycle in flight, an edited one restarts; the others go on.`

func runDaemon(ctx context.Context, sh shell, args []string) error {
	stdout, stderr := sh.stdout, sh.stderr
	// SIGUSR1 asks for a live copy of the state file. Its default action
	// ends the process, so it is caught from the start to the return,
	// also while the daemon wires itself up or closes; serve acts on it.
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	// SIGHUP re-reads the hotels directory, or the secret files of a
	// daemon of one hotel.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	fs := newFlagSet("run", runAbout, stdout)
	var ef envFlag
	ef.register(fs, sh.layout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: run: unexpected argument %q", errUsage, fs.Arg(0))
	}
	src, cfg, sc, log, err := loadEnv(ctx, &ef, stderr)
	if err != nil {
		return err
	}
	if src.Service {
		return fmt.Errorf("run: on an installed system the daemon runs as the service: systemctl start ticketbridge (the configuration is %s); to run it by hand, name a configuration with --env-file", src.File)
	}
	tc, err := config.LoadTelemetry(ctx, src.Env)
	if err != nil {
		return err
	}
	nc, err := config.LoadNotify(ctx, src.Env)
	if err != nil {
		return err
	}
	hc, err := config.LoadHotels(ctx, src.Env)
	if err != nil {
		return src.Explain(err)
	}
	fo := fleetOptions(src, cfg, sc, hc, log, telemetry.Options{Listen: tc.Listen, CycleMax: tc.CycleMax})
	if nc.Enabled() {
		fo.Notices = fleet.NewNotices(nc, log)
	}
	return serveFleet(ctx, fleet.New(ctx, fo), fo, hup, usr1)
}

// fleetOptions returns the options of the daemon's fleet, with telemetry
// of topts: the hotels of hc.Dir, or without a directory a fleet of one
// whose hotel is the main configuration (see ARCHITECTURE.md, "A daemon
// of one hotel").
func fleetOptions(src config.Source, cfg config.Daemon, sc sync.Config, hc config.Hotels, log *slog.Logger, topts telemetry.Options) fleet.Options {
	tel := telemetry.NewOne(log, topts)
	if hc.Dir != "" {
		tel = telemetry.NewFleet(log, hc.ReadyNames(), topts)
	}
	return fleet.Options{Source: src, Daemon: cfg, Sync: sc, Hotels: hc, Logger: log, Telemetry: tel}
}

const onceAbout = `Run one sync cycle and print its report. The exit status is 1 when the
cycle did not sync: it failed (a refused key, a missing right, an
unwritable state file) or no call of the API succeeded (the API
unreachable). Tickets that failed while the others went on are listed in
the report. When the API or the helpdesk asked for a long wait (a 503 or
429 with a long Retry-After), the cycle is put off: it did not sync, the
report says until when, and once exits 75 (EX_TEMPFAIL: try again later).
Interrupted (Ctrl-C, SIGTERM), it says "interrupted; the next run
resumes" and exits 130: nothing failed, and the next run does what this
one left undone, once.

With --dry-run both sides are read and the cycle's writes are printed
("would create", "would post") instead of made: nothing is written
upstream, in the helpdesk, in the helpdesk's folders or in the state file
(the cycle runs against a copy of it in a private temporary directory,
removed after). A daemon holding the state file must be stopped first.

With the state in PostgreSQL, once holds the hotel's lease while it runs,
as a daemon does; when a daemon holds it, once refuses and names it.

With notifications set (TICKETBRIDGE_NOTIFY_*), once sends the notices of
the conditions the cycle finds and pings the heartbeat, as a daemon does
after each cycle, and waits for them (up to 30s) before it exits; a dry
run sends nothing.`

func runOnce(ctx context.Context, sh shell, args []string) (err error) {
	stdout, stderr := sh.stdout, sh.stderr
	fs := newFlagSet("once", onceAbout, stdout)
	var ef envFlag
	ef.register(fs, sh.layout)
	dry := fs.Bool("dry-run", false, "print what the cycle would write; write nothing")
	var hf hotelFlag
	hf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: once: unexpected argument %q", errUsage, fs.Arg(0))
	}
	src, cfg, sc, log, err := loadEnv(ctx, &ef, stderr)
	if err != nil {
		return err
	}
	if src.Service && src.StateDirMissing && !*dry {
		return fmt.Errorf("once: %s does not exist yet: systemd makes it at the service's first start (systemctl start ticketbridge); until then, once --dry-run shows what a cycle would do", src.Layout.StateDir)
	}
	if src.Service && !*dry {
		// Run by root in a shell: make what the service would make.
		defer useUnitUmask(src.Layout)()
	}
	secs, err := hf.sections(ctx, src, cfg, warnTo(log))
	if err != nil {
		return err
	}
	var ns *fleet.Notices
	if !*dry {
		nc, err := config.LoadNotify(ctx, src.Env)
		if err != nil {
			return err
		}
		if nc.Enabled() {
			ns = fleet.NewOnceNotices(nc, log)
		}
	}
	if ns != nil {
		// The process's ping, after every hotel: success when each
		// synced, and the run failed for none.
		defer func() { ns.PingOnce(ctx, err == nil, log) }()
	}
	if secs == nil {
		return onceHotel(ctx, src, src.Env, cfg, sc, log, *dry, stdout, ns, nil)
	}
	return eachHotel(stdout, secs, func(h hotelSection, out io.Writer) error {
		return onceHotel(ctx, src, h.conf.Env, h.conf.Daemon, h.conf.Sync, log.With("hotel", h.name), *dry, out, ns, h.conf.Ping)
	})
}

// onceHotel runs one cycle of a hotel, or a dry run, and prints its report.
// On PostgreSQL it holds the hotel's lease for the run (a dry run writes
// nothing and needs none), or refuses when a replica holds it. With ns
// (the notifications are set) it then tells them the cycle, as a daemon
// does after each (see fleet.Notices.Once); ping is the hotel's own.
func onceHotel(ctx context.Context, src config.Source, env envconfig.Lookuper, cfg config.Daemon, sc sync.Config, log *slog.Logger, dry bool, stdout io.Writer, ns *fleet.Notices, ping *notify.Ping) error {
	opts := bridge.Options{DryRun: dry}
	if !dry {
		var h *hold
		var err error
		if ctx, h, err = holdHotel(ctx, "once", src.Env, cfg, log); err != nil {
			return err
		}
		defer h.release()
		h.options(&opts)
	}
	w, err := bridge.New(ctx, env, cfg, sc, log, opts)
	if err != nil {
		return config.WithFix(err, cfg, env, config.CurrentAccount())
	}
	defer w.Close()
	// The cycle has the daemon's deadline: a call that hangs ends it.
	tc, err := config.LoadTelemetry(ctx, env)
	if err != nil {
		return err
	}
	cycleCtx, cancel := context.WithTimeoutCause(ctx, tc.CycleMax, sync.ErrCycleDeadline)
	defer cancel()
	var rep sync.Report
	if dry {
		rep, err = w.DryRun(cycleCtx, stdout)
	} else {
		rep, err = w.Engine().RunCycle(cycleCtx)
		w.WriteSnapshot(ctx)
		if ns != nil {
			ns.Once(ctx, w.Store().Hotel(), w, ping, err, log)
		}
		if src.Service {
			// Run by root in a shell: what the cycle made in the service's
			// state directory, and in the staff's helpdesk folder, must
			// stay the service's.
			dirs := []string{src.Layout.StateDir}
			if d, ok := env.Lookup("TICKETBRIDGE_FILES_DIR"); ok && strings.TrimSpace(d) != "" && cfg.Adapter == "files" {
				dirs = append(dirs, strings.TrimSpace(d))
			}
			for _, d := range dirs {
				if oerr := safefile.HandOver(d); oerr != nil {
					log.Warn("give the files made to their folder's owner", slog.Any("error", oerr), slog.String("op", "once"), slog.Any("path", d))
				}
			}
		}
	}
	if rep.Outcome != "" {
		if terr := rep.WriteTable(stdout); terr != nil {
			return terr
		}
	}
	switch {
	case errors.Is(context.Cause(ctx), errHoldLost):
		return &exitError{code: 1, err: context.Cause(ctx)}
	case errors.Is(err, sync.ErrInterrupted):
		return &exitError{code: exitInterrupted, err: err}
	case err != nil:
		return &exitError{code: 1, err: err}
	case rep.Outcome == sync.OutcomePutOff:
		return &exitError{code: exitPutOff, err: putOffError(rep)}
	}
	return nil
}

// putOffError says that the cycle of rep was put off, until when, and
// what to do.
func putOffError(rep sync.Report) error {
	sides := make([]string, len(rep.PutOff))
	for i, p := range rep.PutOff {
		sides[i] = p.String()
	}
	return fmt.Errorf("the cycle was put off and did not sync: %s; run once again after that", strings.Join(sides, ", "))
}

const statusAbout = `Show what the bridge knows: the tracked tickets, the last cycle, and the
replies and status changes waiting to be sent or refused. With a TICKET (its
upstream id, the first 8 or more characters of it, or its helpdesk
reference) show that ticket: its mapping, the messages mirrored and posted,
and its journal.

While the daemon runs it holds the state file; status then shows the
snapshot the daemon writes after each cycle (<state>.status.json), with
each ticket's newest journal entries; the lists of messages need the daemon
stopped.

Every status lists what the helpdesk holds until its team acts: the outbox
files the files helpdesk set aside (with the daemon stopped, read from its
folder), and the changes another helpdesk refused until a field is filled
in. Only a running adapter knows the latter: with the daemon stopped they
are the last snapshot's, and status says how old it is.`

func runStatus(ctx context.Context, sh shell, args []string) error {
	stdout, stderr := sh.stdout, sh.stderr
	fs := newFlagSet("status", statusAbout, stdout)
	var ef envFlag
	ef.register(fs, sh.layout)
	asJSON := fs.Bool("json", false, "print JSON instead of tables")
	var hf hotelFlag
	hf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("%w: status: want at most one TICKET, got %d arguments", errUsage, fs.NArg())
	}
	src, cfg, err := loadPlain(ctx, &ef, stderr)
	if err != nil {
		return err
	}
	secs, err := hf.sections(ctx, src, cfg, warnStderr(stderr))
	if err != nil {
		return err
	}
	log := newLogger(stderr, cfg.LogFormat, "error")
	if secs == nil {
		return statusHotel(ctx, src.Env, cfg, fs.Arg(0), *asJSON, log, stdout)
	}
	each := eachHotel
	if *asJSON {
		each = eachHotelJSON
	}
	return each(stdout, secs, func(h hotelSection, out io.Writer) error {
		return statusHotel(ctx, h.conf.Env, h.conf.Daemon, fs.Arg(0), *asJSON, log, out)
	})
}

// statusHotel prints the status of a hotel's state, or of one ticket.
func statusHotel(ctx context.Context, env envconfig.Lookuper, cfg config.Daemon, ticket string, asJSON bool, log *slog.Logger, stdout io.Writer) error {
	if _, err := os.Stat(cfg.State.Value()); !cfg.State.IsDB() && errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("no state file at %s yet: the bridge has not run (ticketbridge once, or ticketbridge run); TICKETBRIDGE_STATE names the file", cfg.State)
	}
	st, err := state.OpenAt(ctx, cfg.State, state.Options{ReadOnly: true, LockTimeout: 300 * time.Millisecond, Logger: log, Hotel: cfg.Hotel})
	var snap *sync.Status
	switch {
	case errors.Is(err, state.ErrLocked):
		s, serr := bridge.ReadSnapshot(cfg.State.Value() + bridge.StatusSuffix)
		if serr != nil {
			return fmt.Errorf("the daemon holds %s and %w", cfg.State, serr)
		}
		snap = &s
	case err != nil:
		return err
	default:
		defer st.Close()
	}

	if ticket == "" {
		s := snap
		if s == nil {
			live, err := sync.ReadStatus(ctx, st, time.Now())
			if err != nil {
				return err
			}
			// What the helpdesk holds is not in the state: the running
			// daemon's snapshot has it, and so does this.
			if live.Held, live.HeldAt, err = bridge.ReadHeld(ctx, env, cfg, log); err != nil {
				log.Error("status lists no changes held", slog.Any("error", err), slog.String("op", "status"))
			}
			s = &live
		}
		if asJSON {
			return printJSON(stdout, s)
		}
		if snap != nil {
			fmt.Fprintf(stdout, "The daemon is running; this is its snapshot of %s.\n\n", snap.At.Local().Format(time.DateTime))
		}
		return sync.WriteStatus(stdout, cfg.State.String(), s)
	}
	if snap != nil {
		t, err := snap.Ticket(ticket)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(stdout, t)
		}
		fmt.Fprintf(stdout, "The daemon is running; this is its snapshot of %s (newest journal entries only).\n\n", snap.At.Local().Format(time.DateTime))
		return sync.WriteTicket(stdout, sync.TicketDetail{TicketStatus: t}, false, time.Now())
	}
	d, err := sync.ReadTicket(ctx, st, ticket)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(stdout, d)
	}
	return sync.WriteTicket(stdout, d, true, time.Now())
}

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

const stateAbout = `State file tools.

  ticketbridge state backup FILE   write a consistent copy of the state file to FILE

With TICKETBRIDGE_HOTELS_DIR, --hotel NAME copies that hotel's state file
to FILE; without --hotel, FILE is a directory that gets NAME.db of every
hotel.

The copy is made with the file's own lock: while the daemon runs it holds
the state file, so either stop it first, or send it SIGUSR1
(systemctl kill -s USR1 ticketbridge), and it writes <state>.backup itself.`

func runState(ctx context.Context, sh shell, args []string) error {
	stdout, stderr := sh.stdout, sh.stderr
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" || args[0] == "help" {
		fs := newFlagSet("state backup FILE", stateAbout, stdout)
		var ef envFlag
		ef.register(fs, sh.layout)
		fs.Usage()
		if len(args) == 0 {
			return &exitError{code: 2}
		}
		return nil
	}
	if args[0] != "backup" {
		return fmt.Errorf("%w: state: unknown command %q (want backup)", errUsage, args[0])
	}
	fs := newFlagSet("state backup FILE", stateAbout, stdout)
	var ef envFlag
	ef.register(fs, sh.layout)
	var hf hotelFlag
	hf.register(fs)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: state backup: want one FILE to write the copy to", errUsage)
	}
	dest := fs.Arg(0)
	src, cfg, err := loadPlain(ctx, &ef, stderr)
	if err != nil {
		return err
	}
	secs, err := hf.sections(ctx, src, cfg, warnStderr(stderr))
	if err != nil {
		return err
	}
	switch {
	case secs == nil:
		return backupHotel(ctx, cfg, dest, stdout)
	case hf.name != "":
		return eachHotel(stdout, secs, func(h hotelSection, out io.Writer) error {
			return backupHotel(ctx, h.conf.Daemon, dest, out)
		})
	}
	// Every hotel: FILE is a directory that gets <name>.db of each.
	if err := os.MkdirAll(dest, 0o700); err != nil {
		return fmt.Errorf("state backup: with every hotel FILE is a directory: %w", err)
	}
	return eachHotel(stdout, secs, func(h hotelSection, out io.Writer) error {
		return backupHotel(ctx, h.conf.Daemon, filepath.Join(dest, h.name+".db"), out)
	})
}

// backupHotel writes a consistent copy of a hotel's state file to dest.
func backupHotel(ctx context.Context, cfg config.Daemon, dest string, stdout io.Writer) error {
	if abs, err1 := filepath.Abs(dest); err1 == nil {
		if src, err2 := filepath.Abs(cfg.State.Value()); err2 == nil && abs == src {
			return fmt.Errorf("%w: state backup: FILE is the state file itself", errUsage)
		}
	}
	backup := func() error { return state.BackupFile(ctx, cfg.State.Value(), dest) }
	if cfg.State.IsDB() && cfg.Hotel != "" { // a hotel of many in one database
		backup = func() error {
			st, err := state.OpenAt(ctx, cfg.State, state.Options{ReadOnly: true, Hotel: cfg.Hotel})
			if err != nil {
				return err
			}
			defer st.Close()
			return st.BackupFile(ctx, dest)
		}
	}
	if err := backup(); err != nil {
		if errors.Is(err, state.ErrLocked) {
			return fmt.Errorf("%w\nthe daemon holds the state file: send it SIGUSR1 (systemctl kill -s USR1 ticketbridge) and it writes %s, or stop it and run this again", err, cfg.State.Value()+bridge.BackupSuffix)
		}
		return err
	}
	fi, err := os.Stat(dest)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote a copy of %s to %s (%d bytes)\n", cfg.State.String(), dest, fi.Size())
	return nil
}
