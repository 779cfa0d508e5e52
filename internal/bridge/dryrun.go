package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// DryRun runs one cycle of w (wired with DryRun) that writes nothing: the
// engine records its work in a copy of the state file in a private
// temporary directory, removed afterwards (an empty state when there is no
// state file yet), and sync.DryRun prints the writes to plan instead of
// making them.
func (w *Bridge) DryRun(ctx context.Context, plan io.Writer) (sync.Report, error) {
	path := w.cfg.State.Value()
	url := w.cfg.State.IsDB() // PostgreSQL: copy the hotel, if it is there yet
	_, err := os.Stat(path)
	exists := err == nil || url
	if err != nil && !url && !errors.Is(err, fs.ErrNotExist) {
		return sync.Report{}, fmt.Errorf("dry run: %w", err)
	}
	if exists && !url {
		// A running daemon holds it; the copy would fail after the reads.
		st, err := state.Open(ctx, path, state.Options{ReadOnly: true, LockTimeout: 300 * time.Millisecond})
		if err != nil {
			return sync.Report{}, fmt.Errorf("dry run: %w", err)
		}
		st.Close()
	}
	dir, err := os.MkdirTemp("", "ticketbridge-dry-run-*")
	if err != nil {
		return sync.Report{}, fmt.Errorf("dry run: make temporary directory: %w", err)
	}
	defer os.RemoveAll(dir)
	scratch := filepath.Join(dir, "state.db")
	if exists {
		err := state.BackupFile(ctx, path, scratch)
		if err != nil && !(url && errors.Is(err, state.ErrNotStateFile)) { // a database without this hotel yet: empty state
			return sync.Report{}, fmt.Errorf("dry run: copy state: %w", err)
		}
	}
	st, err := state.Open(ctx, scratch, state.Options{Logger: w.log})
	if err != nil {
		return sync.Report{}, fmt.Errorf("dry run: open state copy: %w", err)
	}
	defer st.Close()
	deps := w.deps
	deps.Store = st
	fmt.Fprintln(plan, "Dry run: reading both sides; nothing will be written.")
	rep, err := sync.DryRun(ctx, w.syncCfg, deps, plan)
	fmt.Fprintln(plan)
	return rep, err
}
