package telemetry

// The daemon's health as the systemd watchdog and /readyz judge it, from
// what telemetry records of the cycles.

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/ticketbridge/ticketbridge/sync"
)

// AliveUntil is the instant until which the daemon counts as alive for
// the watchdog (see the comment at the top of telemetry.go).
func (t *Telemetry) AliveUntil() time.Time {
	if t.hotels != nil {
		return t.hotels.aliveUntil(time.Now(), t.cfg.CycleMax)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running {
		return t.runningFrom.Add(t.cfg.CycleMax)
	}
	return t.nextDue.Add(t.cfg.CycleMax)
}

// runWatchdog pings systemd on every tick while the daemon counts as
// alive, until ctx ends.
func (t *Telemetry) runWatchdog(ctx context.Context, tick <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			t.FeedWatchdog()
		}
	}
}

// FeedWatchdog sends one WATCHDOG=1 when the daemon counts as alive and
// reports whether it did.
func (t *Telemetry) FeedWatchdog() bool {
	if t.ready != nil && !t.ready.Load() {
		return false // a fleet of one's hotel not started yet: READY comes first
	}
	now := time.Now()
	until := t.AliveUntil()
	alive := now.Before(until)
	t.mu.Lock()
	changed := t.starved == alive
	t.starved = !alive
	t.mu.Unlock()
	if !alive {
		if changed {
			t.log.Error("no cycle completed in time: not feeding the systemd watchdog, which will restart the daemon", slog.Any("due_by", until.Format(time.DateTime)), slog.Any("cycle_max", t.cfg.CycleMax))
			t.send("STATUS=stuck: no cycle completed since " + t.lastEndText())
		}
		return false
	}
	if changed {
		t.log.Info("cycles complete again: feeding the systemd watchdog")
	}
	t.send(daemon.SdNotifyWatchdog)
	return true
}

func (t *Telemetry) lastEndText() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lastEnd.IsZero() {
		return "the start at " + t.begun.Format(time.DateTime)
	}
	return t.lastEnd.Format(time.DateTime)
}

// syncDue is the instant after which the daemon counts as not ready for
// want of a cycle that synced: TICKETBRIDGE_CYCLE_MAX past the scheduled
// start that followed the last sync (or the daemon's start).
func (t *Telemetry) syncDue() time.Time {
	from := t.lastOK
	if from.IsZero() {
		from = t.begun
	}
	next := from
	if t.sched != nil {
		if n := t.sched.Next(from); !n.IsZero() {
			next = n
		}
	}
	return next.Add(t.cfg.CycleMax)
}

// Ready reports whether the last cycle synced and the next is not overdue,
// and why not.
func (t *Telemetry) Ready(now time.Time) (bool, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.begun.IsZero():
		return false, "not started"
	case t.lastEnd.IsZero():
		return false, "starting: no cycle has finished yet"
	case t.lastOutcome == sync.OutcomeFailed:
		reason := "the last cycle failed at " + t.lastEnd.Format(time.DateTime) + ": " + oneLine(t.lastFatal)
		if t.lastOK.IsZero() {
			return false, reason + "; no cycle has synced yet"
		}
		return false, reason + "; last sync " + t.lastOK.Format(time.DateTime)
	case now.After(t.syncDue()):
		return false, fmt.Sprintf("nothing synced since %s: a cycle was due and TICKETBRIDGE_CYCLE_MAX (%s) has passed",
			t.lastOK.Format(time.DateTime), t.cfg.CycleMax)
	}
	return true, fmt.Sprintf("ok: last cycle %s at %s", t.lastOutcome, t.lastEnd.Format(time.DateTime))
}

// oneLine keeps the first line of s, at most 300 bytes of it.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	if s == "" {
		s = "(no reason recorded)"
	}
	return s
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
