package telemetry

import (
	"testing"
	"testing/synctest"
	"time"
)

// testTelemetry returns telemetry whose notifications go to the returned
// channel. Its clock is the runtime's: a test that moves it runs in a
// bubble (see atT0).
func testTelemetry(t *testing.T, cfg Options) (*Telemetry, chan string) {
	t.Helper()
	sent := make(chan string, 100)
	tel := New(nil, Options{Listen: cfg.Listen, CycleMax: cfg.CycleMax, Notify: func(s string) error { sent <- s; return nil }, WatchdogEvery: -1})
	return tel, sent
}

// atT0 runs f in a testing/synctest bubble whose clock is first moved to
// t0; f moves it on with time.Sleep.
func atT0(t *testing.T, f func(t *testing.T)) {
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Until(t0))
		f(t)
	})
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
