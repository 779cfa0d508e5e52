package main

// This file is `ticketbridge hotels adopt NAME`: the move from one hotel
// to many that keeps what the one hotel has. Its state and its helpdesk
// folder become those of a hotel of the hotels directory, so that the
// hotel goes on where the single one stopped: nothing is imported again,
// and what staff left in the outbox is read by the hotel.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/safefile"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

const hotelsAbout = `Tools for the hotels of TICKETBRIDGE_HOTELS_DIR.

  hotels adopt NAME   make the one hotel served so far the hotel NAME

adopt moves the state file of the configuration's one hotel
(TICKETBRIDGE_STATE, or state.db in the service's state directory) to the
state of the hotel NAME (hotels/NAME.db unless its file sets one), and the
content of its helpdesk folder (TICKETBRIDGE_FILES_DIR, or the webhook's
TICKETBRIDGE_WEBHOOK_DIR) into the folder NAME's file names. The hotel then
goes on where the one hotel stopped: nothing is imported again, and the
replies staff left in the outbox are read. Folders of other hotels inside
the old folder stay where they are.

Before: stop the daemon, set TICKETBRIDGE_HOTELS_DIR in the main
configuration, and write NAME's file (its key, its adapter, its folder).
The hotel must use the same adapter, and its key the same hotel's
organisation. adopt refuses, changing nothing, when the hotel already has
a state or an entry of its folder would overwrite one.`

func runHotels(ctx context.Context, sh shell, args []string) error {
	stdout, stderr := sh.stdout, sh.stderr
	fs := newFlagSet("hotels adopt NAME", hotelsAbout, stdout)
	var ef envFlag
	ef.register(fs, sh.layout)
	if len(args) == 0 {
		fs.SetOutput(stderr)
		fs.Usage()
		return &exitError{code: 2}
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	names := fs.Args()
	if len(names) == 0 || names[0] != "adopt" {
		return fmt.Errorf("%w: hotels: want the command adopt NAME", errUsage)
	}
	names = names[1:]
	if len(names) != 1 {
		return fmt.Errorf("%w: hotels adopt: want one NAME, the hotel of TICKETBRIDGE_HOTELS_DIR to become", errUsage)
	}
	src, main, err := loadPlain(ctx, &ef, stderr)
	if err != nil {
		return err
	}
	return adoptHotel(ctx, src, main, names[0], stdout)
}

// adoptHotel moves the state and helpdesk folder of main's one hotel to
// the hotel name (see hotelsAbout), after checking that nothing stands in
// the way; it changes nothing when something does.
func adoptHotel(ctx context.Context, src config.Source, main config.Daemon, name string, out io.Writer) error {
	hc, err := config.LoadHotels(ctx, src.Env)
	if err != nil {
		return src.Explain(err)
	}
	if hc.Dir == "" {
		return fmt.Errorf("hotels adopt: TICKETBRIDGE_HOTELS_DIR is not set: set it in the main configuration and write %s%s there first", name, config.HotelSuffix)
	}
	var warnings []string
	good, bad, err := config.LoadHotelDir(ctx, src, main, hc.Dir, func(w string) { warnings = append(warnings, w) })
	if err != nil {
		return fmt.Errorf("hotels adopt: %w", err)
	}
	if err := bad[name]; err != nil {
		return fmt.Errorf("hotels adopt: %w", err)
	}
	i := slices.IndexFunc(good, func(h config.Hotel) bool { return h.Name() == name })
	if i < 0 {
		return fmt.Errorf("hotels adopt: no hotel %s in %s: write %s first", name, hc.Dir, filepath.Join(hc.Dir, name+config.HotelSuffix))
	}
	h := good[i]
	switch {
	case main.State.IsDB() || h.Daemon.State.IsDB():
		return errors.New("hotels adopt: the state is in PostgreSQL: adopt moves state files only")
	case main.Adapter != h.Daemon.Adapter:
		return fmt.Errorf("hotels adopt: hotel %s uses the adapter %s and the one hotel %s: the state holds the one hotel's helpdesk tickets; set TICKETBRIDGE_ADAPTER=%s in %s", name, h.Daemon.Adapter, main.Adapter, main.Adapter, h.File.Path)
	}
	from, to := main.State.Value(), h.Daemon.State.Value()
	if _, err := os.Stat(from); err != nil {
		return fmt.Errorf("hotels adopt: no state of the one hotel to adopt: %w", err)
	}
	if _, err := os.Stat(to); err == nil {
		return fmt.Errorf("hotels adopt: hotel %s has a state already (%s): it ran; adopt only into a hotel that never ran", name, to)
	}
	// The daemon holds the state while it runs.
	st, err := state.Open(ctx, from, state.Options{LockTimeout: 300 * time.Millisecond})
	if errors.Is(err, state.ErrLocked) {
		return fmt.Errorf("hotels adopt: %s is in use: stop the daemon first (systemctl stop ticketbridge)", from)
	}
	if err != nil {
		return fmt.Errorf("hotels adopt: %w", err)
	}
	if err := st.Close(); err != nil {
		return fmt.Errorf("hotels adopt: %w", err)
	}

	moves, err := config.FolderMoves(ctx, main, src.Env, h, good)
	if err != nil {
		return fmt.Errorf("hotels adopt: %w", err)
	}
	if err := safefile.MoveInto(filepath.Dir(from), filepath.Dir(to), []string{filepath.Base(from), filepath.Base(from) + bridge.StatusSuffix}, []string{filepath.Base(to), filepath.Base(to) + bridge.StatusSuffix}); err != nil {
		return fmt.Errorf("hotels adopt: move state: %w", err)
	}
	fmt.Fprintf(out, "moved the state %s to %s\n", from, to)
	for _, m := range moves {
		if err := safefile.MoveInto(m.From, m.To, m.Entries, m.Entries); err != nil {
			return fmt.Errorf("hotels adopt: move helpdesk folder: %w", err)
		}
		fmt.Fprintf(out, "moved %s of %s into %s\n", strings.Join(m.Entries, ", "), m.From, m.To)
	}
	if err := adoptServes(ctx, h, to); err != nil {
		fmt.Fprintf(out, "warning: the state still names the one hotel's helpdesk (%v): the hotel's first start is held until ticketbridge confirm-move --hotel %s names its helpdesk\n", err, name)
	}
	if src.Service {
		// Run by root: the folders made stay the service's.
		_ = safefile.HandOver(src.Layout.StateDir)
	}
	for _, w := range warnings {
		fmt.Fprintln(out, "warning:", w)
	}
	fmt.Fprintf(out, "hotel %s goes on where the one hotel stopped; start the daemon (systemctl start ticketbridge)\n", name)
	return nil
}

// adoptServes records in the state adopted, at path, that it serves the
// helpdesk of hotel h: adopt moved it there, so the hotel's start is not
// held as a copy (sync.ErrMoved). The API and key are left for the
// daemon to check as it does at every start.
func adoptServes(ctx context.Context, h config.Hotel, path string) error {
	w, err := bridge.New(ctx, h.Env, h.Daemon, h.Sync, slog.New(slog.DiscardHandler), bridge.Options{DryRun: true})
	if err != nil {
		return err
	}
	now := w.Serves()
	_ = w.Close()
	st, err := state.Open(ctx, path, state.Options{LockTimeout: 300 * time.Millisecond})
	if err != nil {
		return err
	}
	_, err = sync.RecordMove(ctx, st, now, sync.Moves{Helpdesk: true})
	return errors.Join(err, st.Close())
}
