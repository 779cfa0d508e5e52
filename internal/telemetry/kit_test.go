package telemetry

import (
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
)

// testTelemetry returns telemetry on a fake clock whose notifications go
// to the returned channel.
func testTelemetry(t *testing.T, cfg Options) (*Telemetry, *refservertest.Clock, chan string) {
	t.Helper()
	clock := refservertest.NewClock(t0)
	sent := make(chan string, 100)
	tel := New(nil, Options{Listen: cfg.Listen, CycleMax: cfg.CycleMax, Now: clock.Now, Notify: func(s string) error { sent <- s; return nil }, WatchdogEvery: -1})
	return tel, clock, sent
}

func drain(ch chan string) []string {
	var out []string
	for {
		select {
		case s := <-ch:
			out = append(out, s)
		default:
			return out
		}
	}
}

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
