package main

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

const logAbout = `Print a request's audit trail, oldest first: what crossed between the
platform and the helpdesk for it, and why. One line per entry: when, the
direction, what crossed (ticket, message, status, fields; reply, note,
status; an operator's retry, skip or read now), the outcome (ok, nothing to
send, refused, retrying, abandoned), the cause (list change, full read,
reconcile, helpdesk change, operator command, with the operator's name),
the ids on both sides and the Idempotency-Key of what went up, and the
error or reason. No message text is kept. ID is the request's upstream id,
the first 8 or more characters of it, or its helpdesk reference.

--json prints one JSON object per line instead, for export.

Entries are kept TICKETBRIDGE_AUDIT_DAYS days (default 90; 0 keeps them).

While the daemon runs it holds the state file: the command then asks the
daemon, on TICKETBRIDGE_LISTEN. With the state in PostgreSQL it reads the
database, daemon or not.

With TICKETBRIDGE_HOTELS_DIR, --hotel NAME (required) says whose request it
is.`

func runLog(ctx context.Context, sh shell, args []string) error {
	stdout, stderr := sh.stdout, sh.stderr
	fs := newFlagSet("log ID", logAbout, stdout)
	var ef envFlag
	ef.register(fs, sh.layout)
	asJSON := fs.Bool("json", false, "print JSON lines (one entry each) instead of a table")
	var hf hotelFlag
	fs.StringVar(&hf.name, "hotel", "", "with TICKETBRIDGE_HOTELS_DIR, the hotel `NAME` whose request it is (required there)")
	// Flags may come before and after ID.
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var id string
	if fs.NArg() > 0 {
		id = fs.Arg(0)
		if err := parseFlags(fs, fs.Args()[1:]); err != nil {
			return err
		}
	}
	switch {
	case id == "":
		return fmt.Errorf("%w: log: want the ID of a request (see ticketbridge status)", errUsage)
	case fs.NArg() > 0:
		return fmt.Errorf("%w: log: unexpected argument %q", errUsage, fs.Arg(0))
	}
	src, cfg, err := loadPlain(ctx, &ef, stderr)
	if err != nil {
		return err
	}
	hotel := ""
	sec, err := hf.one(ctx, src, cfg, warnStderr(stderr), "log", "whose request it is")
	if err != nil {
		return err
	}
	if sec != nil {
		cfg, hotel = sec.conf.Daemon, sec.name
	}
	if _, err := os.Stat(cfg.State.Value()); !cfg.State.IsDB() && errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("no state file at %s yet: the bridge has not run (ticketbridge once, or ticketbridge run); TICKETBRIDGE_STATE names the file", cfg.State)
	}
	log := newLogger(stderr, cfg.LogFormat, "error")
	var trail []state.Audit
	st, err := state.OpenAt(ctx, cfg.State, state.Options{ReadOnly: true, LockTimeout: 300 * time.Millisecond, Logger: log, Hotel: cfg.Hotel})
	switch {
	case errors.Is(err, state.ErrLocked):
		c, err := consoleClient(ctx, src.Env, "log", hotel, false)
		if err != nil {
			return err
		}
		if trail, err = c.Trail(ctx, id); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		defer st.Close()
		d, err := sync.ReadTicket(ctx, st, id)
		if err != nil {
			return err
		}
		trail = d.Audit
	}
	if *asJSON {
		return sync.WriteTrailJSON(stdout, trail)
	}
	return sync.WriteTrail(stdout, id, trail)
}
