package check

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// checkServes says whether the state serves the API, key and helpdesk
// the configuration names (sync.CheckServes): a copied or restored state
// started against another helpdesk, API or organisation is held by the
// daemon until the move is confirmed, and fails here. It prints nothing
// without a state that knows requests; with the daemon running it reads
// the hold from its status snapshot.
func (c *checker) checkServes(cfg config.Daemon, key string) {
	const name = "copy"
	st, err := state.OpenAt(c.ctx, cfg.State, state.Options{ReadOnly: true, LockTimeout: 300 * time.Millisecond, Logger: c.opts.Logger, Hotel: cfg.Hotel})
	if errors.Is(err, state.ErrLocked) {
		snap, err := bridge.ReadSnapshot(cfg.State.Value() + bridge.StatusSuffix)
		if err == nil && snap.LastCycle != nil && strings.HasPrefix(snap.LastCycle.Fatal, sync.ErrMoved.Error()) {
			c.report(fail(name, config.Moved.Fix(config.Where{}), "as the daemon saw at %s: %s", when(snap.At), snap.LastCycle.Fatal))
		}
		return
	}
	if err != nil {
		return // the state's row says why
	}
	defer st.Close()
	if _, ok, tickets, err := sync.ReadServes(c.ctx, st); err != nil || !ok || tickets == 0 {
		return
	}
	hd, err := c.opts.Registry.Open(c.ctx, cfg.Adapter, adapters.Deps{
		ReadOnly: true, Env: c.env, Logger: c.opts.Logger.With("adapter", cfg.Adapter),
		StatusToHelpdesk: cfg.StatusToHelpdesk, StatusFromHelpdesk: cfg.StatusFromHelpdesk, StateDir: cfg.StateDir(),
	})
	if err != nil {
		return // the helpdesk's row says why
	}
	defer hd.Close()
	cl, err := c.client(cfg, key)
	if err != nil {
		return // the API's row says why
	}
	sc, err := sync.LoadConfig(c.ctx, c.env)
	if err != nil {
		return // the configuration's row says why
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.Timeout)
	defer cancel()
	now := sync.ServesOf(cfg.APIURL, sync.KeyFingerprint(key), hd)
	err = sync.CheckServes(ctx, st, cl, now, sc.AllowMove)
	var moved *sync.MovedError
	switch {
	case errors.As(err, &moved):
		c.report(fail(name, config.Moved.Fix(config.Where{}), "%v", err))
	case err != nil:
		c.report(warn(name, "run check again once the API answers", "could not tell whether the new API key is the same organisation's: %v", err))
	case sc.AllowMove.Any():
		c.report(warn(name, "remove TICKETBRIDGE_ALLOW_MOVE once the daemon started: it lets any start move unconfirmed",
			"the state serves %s and helpdesk %s (TICKETBRIDGE_ALLOW_MOVE=%s lets a start move it)", now.API, now.Helpdesk, sc.AllowMove))
	default:
		c.report(pass(name, "the state serves this API and helpdesk (%s)", now.Helpdesk))
	}
}
