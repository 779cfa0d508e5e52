package telemetry

import (
	"log/slog"

	"github.com/coreos/go-systemd/v22/daemon"
)

// sdNotify sends state to systemd; without NOTIFY_SOCKET it does nothing.
func sdNotify(state string) error {
	_, err := daemon.SdNotify(false, state)
	return err
}

// send passes a notification to systemd, logging the first failure only.
func (t *Telemetry) send(state string) {
	if err := t.notify(state); err != nil {
		t.mu.Lock()
		first := !t.notifyErr
		t.notifyErr = true
		t.mu.Unlock()
		if first {
			t.log.Warn("notify systemd", slog.Any("error", err))
		}
	}
}

// sendReady tells systemd the daemon is ready: at each call, or once for
// a fleet of one (see Telemetry.ready).
func (t *Telemetry) sendReady() {
	if t.ready == nil {
		t.send(daemon.SdNotifyReady)
		return
	}
	if t.ready.CompareAndSwap(false, true) {
		t.send(daemon.SdNotifyReady)
	}
}
