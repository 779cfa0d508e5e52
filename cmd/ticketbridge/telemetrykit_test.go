package main

import (
	"testing"

	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/telemetry"
)

// testTelemetry returns telemetry whose notifications go to the returned
// channel. Its clock is the runtime's: a test that moves it runs in a
// testing/synctest bubble.
func testTelemetry(t *testing.T, cfg config.Telemetry) (*telemetry.Telemetry, chan string) {
	t.Helper()
	sent := make(chan string, 100)
	tel := telemetry.New(nil, telemetry.Options{Listen: cfg.Listen, CycleMax: cfg.CycleMax, Notify: func(s string) error { sent <- s; return nil }, WatchdogEvery: -1})
	return tel, sent
}
