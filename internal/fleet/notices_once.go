package fleet

import (
	"context"
	"errors"
	"log/slog"
	gosync "sync"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/notify"
	"github.com/ticketbridge/ticketbridge/sync"
)

// OnceTimeout bounds what Once waits for the notices and the ping to be
// sent: a target that does not answer delays a cron job no longer.
const OnceTimeout = 30 * time.Second

// NewOnceNotices builds the notifications of c for runs of one cycle
// (ticketbridge once): no notice waits for others to be grouped with,
// since the hotels run one after another.
func NewOnceNotices(c config.Notify, log *slog.Logger) *Notices {
	c.GroupWindow = 0
	return NewNotices(c, log)
}

// Once tells the notifications of one cycle of the hotel named hotel,
// wired in w, run outside a daemon (ticketbridge once, from cron): as a
// daemon does after each cycle, it reconciles the hotel's conditions,
// journaled in its state before anything is sent, so that a condition
// fires, repeats and resolves across runs as it does in a daemon; it
// sends the notices that decides and those a killed run left unsent past
// their claim, and pings the hotel's own heartbeat (ping, with
// TICKETBRIDGE_NOTIFY_PING_PER=hotel) with the cycle's outcome; the
// process's is pinged once, after every hotel, by PingOnce. It waits for
// them up to OnceTimeout: what is not sent by then stays pending in the
// state, for the next run. An interrupted cycle tells nothing.
func (ns *Notices) Once(ctx context.Context, hotel string, w *bridge.Bridge, ping *notify.Ping, cycleErr error, log *slog.Logger) {
	if errors.Is(cycleErr, sync.ErrInterrupted) || w.Store() == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, OnceTimeout)
	defer cancel()
	run, stop := context.WithCancel(ctx)
	var wg gosync.WaitGroup
	defer wg.Wait()
	defer stop()
	wg.Go(func() { ns.n.Run(run) })
	ns.j.add(hotel, w.Store())
	defer ns.j.drop(hotel, w.Store())
	hn := &hotelNotices{ns: ns, hotel: hotel, store: w.Store(), log: log}
	hn.failed, hn.noted = cycleErr, true
	bridge.ReportHeld(ctx, heldOnly{&hn.held}, w.Helpdesk())
	switch {
	case ping != nil && ns.cfg.PingPer == "hotel":
		wg.Go(func() { pingOnce(ctx, ns.cfg.Heartbeat(ping), cycleErr == nil, log) })
	case ns.process != nil:
		ns.note(hotel, cycleErr == nil)
	}
	hn.reconcile(ctx)
	select {
	case <-ns.n.Settled():
	case <-ctx.Done():
		log.Warn("notifications: notices still on their way; the next run sends them", slog.String("op", "notify"))
	}
}

// PingOnce pings the process's heartbeat, if any, after the runs of one
// cycle of each hotel: success when ran (the run failed for no hotel,
// one that could not start included) and every cycle succeeded, as a
// daemon's ping says (see beat). Pinged after each hotel, it would flap.
func (ns *Notices) PingOnce(ctx context.Context, ran bool, log *slog.Logger) {
	if ns.hb == nil {
		return
	}
	ns.beatMu.Lock()
	ok := ran && len(ns.failing) == 0
	ns.beatMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, OnceTimeout)
	defer cancel()
	pingOnce(ctx, ns.hb, ok, log)
}

func pingOnce(ctx context.Context, hb *notify.Heartbeat, ok bool, log *slog.Logger) {
	if err := hb.Ping(ctx, ok); err != nil {
		log.Warn("notifications: the heartbeat's ping was not sent", slog.Any("error", err), slog.String("op", "notify"))
	}
}

// heldOnly keeps what the helpdesk holds, the one report Once needs.
type heldOnly struct{ held *[]adapters.HeldError }

func (heldOnly) CycleStarted()                {}
func (heldOnly) CycleDone(sync.Report, error) {}
func (h heldOnly) ObserveHeld(held []adapters.HeldError, _ uint64) {
	*h.held = held
}
