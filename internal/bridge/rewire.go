package bridge

import (
	"context"
	"errors"
	"log/slog"

	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/sync"
)

// errUnwired is the error of a cycle after a Rewire that failed: the
// daemon stops with Rewire's error.
var errUnwired = errors.New("run cycle: the hotel's wiring failed at the last reload")

// Rewire reads the hotel's secret files again (its API key's, its
// helpdesk's token or password, the webhook secret: see
// config.SecretFiles) and, when one changed, waits for the cycle in flight
// and wires the hotel anew between two cycles: a new API client with the
// key read now, the adapter closed and opened again with its secret read
// now, and started (its listeners and the helpdesk check), and a new
// engine on the same state, which stays open. It returns the names of the
// variables (or credentials) whose files changed, nil when none did; it
// never reads their contents into a log. On error the caller stops, as a
// daemon started with those secrets would not have started: the hotel may
// be left without a helpdesk, and its cycles then fail. ctx is the
// daemon's: the adapter's listeners run until it ends or Close.
func (w *Bridge) Rewire(ctx context.Context) ([]string, error) {
	now := config.ReadSecretFiles(w.env, w.cfg.Adapter)
	w.cycle.Lock()
	defer w.cycle.Unlock()
	changed := w.secrets.Changed(now)
	if len(changed) == 0 {
		return nil, nil
	}
	client, err := w.newClient()
	if err != nil {
		return changed, err
	}
	w.flush("reload")
	// The old adapter lets its folder's lock and its listener go first.
	w.mu.Lock()
	old := w.hd
	w.hd, w.engine = nil, nil
	w.mu.Unlock()
	if old != nil {
		if err := old.Close(); err != nil {
			w.log.Warn("close the helpdesk adapter to rewire it", slog.Any("error", err), slog.String("op", "reload"))
		}
	}
	hd, err := w.openHelpdesk(ctx)
	if err != nil {
		return changed, err
	}
	deps := w.depsOf(client, hd)
	eng, err := sync.New(w.syncCfg, deps)
	if err != nil {
		_ = hd.Close()
		return changed, err
	}
	w.mu.Lock()
	w.client, w.hd, w.deps, w.engine, w.secrets = client, hd, deps, eng, now
	w.mu.Unlock()
	return changed, w.Start(ctx)
}
