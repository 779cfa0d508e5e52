package main

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

const confirmMoveAbout = `Confirm that a hotel moved to another helpdesk, API or organisation, so
that the daemon syncs it again. The state remembers the API, the key's
organisation and the helpdesk it was synced with; a daemon started against
others (a copied or restored state on another machine, a helpdesk moved)
is held: it writes nothing upstream nor to the helpdesk, and its log,
ticketbridge status and the status page say what changed and the command
that confirms it.

Name each part that changed with its new value, as the configuration has
it and the daemon's error prints it: --helpdesk the helpdesk's place (the
folder, URL or queue), --api the API's URL, --key the new key's
fingerprint (only when the key reads none of the requests the state knows:
a key of the same organisation is taken by itself). A part named that did
not change, or named with another value, confirms nothing.

Stop the daemon first: it holds the state file, or on PostgreSQL the
hotel's lease. With TICKETBRIDGE_HOTELS_DIR, --hotel NAME (required) says
which hotel moved. TICKETBRIDGE_ALLOW_MOVE does the same at a start,
without this command.`

func runConfirmMove(ctx context.Context, sh shell, args []string) error {
	const name = "confirm-move"
	stdout, stderr := sh.stdout, sh.stderr
	fs := newFlagSet(name, confirmMoveAbout, stdout)
	var ef envFlag
	ef.register(fs, sh.layout)
	var hf hotelFlag
	fs.StringVar(&hf.name, "hotel", "", "with TICKETBRIDGE_HOTELS_DIR, the hotel `NAME` that moved (required there)")
	var named sync.Serves
	fs.StringVar(&named.Helpdesk, "helpdesk", "", "the helpdesk's new `PLACE` (folder, URL, queue), as the daemon's error names it")
	fs.StringVar(&named.API, "api", "", "the API's new `URL` (TICKETBRIDGE_API_URL)")
	fs.StringVar(&named.Key, "key", "", "the new API key's `FINGERPRINT`, as the daemon's error names it")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("%w: %s: unexpected argument %q", errUsage, name, fs.Arg(0))
	case named == sync.Serves{}:
		return fmt.Errorf("%w: %s: name what changed, with its new value: --helpdesk, --api or --key, as the daemon's error says (ticketbridge status shows it)", errUsage, name)
	}
	src, cfg, sc, log, err := loadEnv(ctx, &ef, stderr)
	if err != nil {
		return err
	}
	env := src.Env
	sec, err := hf.one(ctx, src, cfg, warnTo(log), name, "which moved")
	if err != nil {
		return err
	}
	if sec != nil {
		cfg, sc, env = sec.conf.Daemon, sec.conf.Sync, sec.conf.Env
	}
	if _, err := os.Stat(cfg.State.Value()); !cfg.State.IsDB() && errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("%s: no state file at %s: the bridge has not run yet, and its first start needs no confirmation", name, cfg.State)
	}
	// What the configuration serves: the API client and the adapter as a
	// dry run wires them, the adapter read-only, the state left closed.
	w, err := bridge.New(ctx, env, cfg, sc, log, bridge.Options{DryRun: true})
	if err != nil {
		return config.WithFix(err, cfg, env, config.CurrentAccount())
	}
	now := w.Serves()
	_ = w.Close()
	ctx, h, err := holdHotel(ctx, name, src.Env, cfg, log)
	if err != nil {
		return err
	}
	defer h.release()
	st, err := state.OpenAt(ctx, cfg.State, state.Options{LockTimeout: 300 * time.Millisecond, Hotel: cfg.Hotel, Fence: h.fence(), Logger: log})
	if errors.Is(err, state.ErrLocked) {
		return fmt.Errorf("%s: %w: the daemon runs, held; stop it (systemctl stop ticketbridge), run %s again, then start it", name, err, name)
	}
	if err != nil {
		return err
	}
	defer st.Close()
	done, err := sync.ConfirmMove(ctx, st, now, named)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if !done.Any() {
		fmt.Fprintf(stdout, "%s: the state serves this API and helpdesk already (%s); nothing to confirm.\n", name, now.Helpdesk)
		return nil
	}
	fmt.Fprintf(stdout, "%s: confirmed (%s): the state now serves the API %s and helpdesk %s; start the daemon (or run once): it syncs the hotel again.\n", name, done, now.API, now.Helpdesk)
	log.Info("a move was confirmed", "op", name, "moved", done.String(), "operator", operator(), "api", now.API, "helpdesk", now.Helpdesk)
	return nil
}
