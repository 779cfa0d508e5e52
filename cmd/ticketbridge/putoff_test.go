package main

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/sync"
)

// TestPutOffCycleKeepsReadiness: a cycle put off by a side's long wait is
// no failure: the daemon stays ready until nothing has synced for
// TICKETBRIDGE_CYCLE_MAX past the next scheduled cycle. It runs in a
// bubble: the time between the cycles passes on its clock.
func TestPutOffCycleKeepsReadiness(t *testing.T) { synctest.Test(t, testPutOffCycleKeepsReadiness) }

func testPutOffCycleKeepsReadiness(t *testing.T) {
	tel, _ := testTelemetry(t, config.Telemetry{CycleMax: 20 * time.Minute})
	sched, _ := sync.ParseSchedule("@every 30s")
	if err := tel.Start(t.Context(), nil, sched, 30*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	defer tel.Stop()
	tel.CycleDone(sync.Report{Outcome: sync.OutcomeOK, Synced: true}, nil)
	time.Sleep(30 * time.Second)
	tel.CycleDone(sync.Report{Outcome: sync.OutcomePutOff,
		PutOff: []sync.PutOff{{Side: sync.SideAPI, Until: time.Now().Add(time.Hour)}}}, nil)
	if ok, why := tel.Ready(time.Now()); !ok {
		t.Errorf("not ready after a put-off cycle: %s", why)
	}
	if ok, _ := tel.Ready(time.Now().Add(21 * time.Minute)); ok {
		t.Error("still ready although nothing synced for TICKETBRIDGE_CYCLE_MAX")
	}
}

// exitTempFail is once's exit status for a cycle put off: 75, EX_TEMPFAIL
// of sysexits.h, which scripts and timers rely on.
const exitTempFail = 75

// TestOncePutOffExitsTempFail: a cycle put off (the API answering 503
// with Retry-After: 3600) synced nothing: once prints the report, says
// until when and exits 75 (EX_TEMPFAIL, try again later), not 0.
func TestOncePutOffExitsTempFail(t *testing.T) {
	b := newBridge(t)
	b.ticket("towels")
	b.ts.Server.SetHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		w.Header().Set("Retry-After", "3600")
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	})
	out, errOut, code := b.cmd("once")
	if code != exitTempFail {
		t.Fatalf("once put off: exit %d, want %d\n%s\n%s", code, exitTempFail, out, errOut)
	}
	mustContain(t, "once's report", out, "cycle "+sync.OutcomePutOff, "helpdesk tickets created 0")
	mustContain(t, "once's error", errOut, "put off and did not sync", "api put off until", "run once again after")
}

// TestOnceOfManyHotelsPutOff: with many hotels, once exits 75 when the
// hotels that did not sync were all put off, and 1 when one failed.
func TestOnceOfManyHotelsPutOff(t *testing.T) {
	putOff := &exitError{code: exitTempFail, err: errors.New("api put off until later")}
	failed := errors.New("the key was refused")
	secs := []hotelSection{{name: "alpha"}, {name: "beta"}, {name: "gamma"}}
	for _, c := range []struct {
		name string
		errs map[string]error
		want int
	}{
		{"one put off", map[string]error{"beta": putOff}, exitTempFail},
		{"two put off", map[string]error{"alpha": putOff, "gamma": putOff}, exitTempFail},
		{"one put off, one failed", map[string]error{"alpha": putOff, "beta": failed}, 1},
		{"all synced", nil, 0},
	} {
		err := eachHotel(io.Discard, secs, func(s hotelSection, _ io.Writer) error { return c.errs[s.name] })
		var errb strings.Builder
		if code := exitCode(err, &errb); code != c.want {
			t.Errorf("%s: exit %d, want %d (%s)", c.name, code, c.want, errb.String())
		}
	}
}
