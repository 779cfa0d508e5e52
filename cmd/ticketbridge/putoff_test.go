package main

import (
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/sync"
)

// TestStatusShowsPutOff: `ticketbridge status` says which side the last
// cycle put off, until when and why.
func TestStatusShowsPutOff(t *testing.T) {
	until := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	s := &sync.Status{LastCycle: &sync.Report{Outcome: sync.OutcomePutOff, Start: until.Add(-time.Hour),
		PutOff: []sync.PutOff{{Side: sync.SideHelpdesk, Until: until, Reason: "HTTP 503 (retry after 1h0m0s)"}}}}
	var b strings.Builder
	if err := printStatus(&b, "state.db", s); err != nil {
		t.Fatal(err)
	}
	want := "no calls to the helpdesk before " + until.Local().Format(time.DateTime) + ": HTTP 503"
	if !strings.Contains(b.String(), want) {
		t.Errorf("status output lacks %q:\n%s", want, b.String())
	}
}

// TestPutOffCycleKeepsReadiness: a cycle put off by a side's long wait is
// no failure: the daemon stays ready until nothing has synced for
// TICKETBRIDGE_CYCLE_MAX past the next scheduled cycle.
func TestPutOffCycleKeepsReadiness(t *testing.T) {
	tel, clock, _ := testTelemetry(t, config.Telemetry{CycleMax: 20 * time.Minute})
	sched, _ := sync.ParseSchedule("@every 30s")
	if err := tel.Start(t.Context(), nil, sched, 30*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	defer tel.Stop()
	tel.CycleDone(sync.Report{Outcome: sync.OutcomeOK, Synced: true}, nil)
	clock.Advance(30 * time.Second)
	tel.CycleDone(sync.Report{Outcome: sync.OutcomePutOff,
		PutOff: []sync.PutOff{{Side: sync.SideAPI, Until: clock.Now().Add(time.Hour)}}}, nil)
	if ok, why := tel.Ready(clock.Now()); !ok {
		t.Errorf("not ready after a put-off cycle: %s", why)
	}
	if ok, _ := tel.Ready(clock.Now().Add(21 * time.Minute)); ok {
		t.Error("still ready although nothing synced for TICKETBRIDGE_CYCLE_MAX")
	}
}
