package telemetry

import (
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/sync"
)

// TestFleetReadinessEveryHotel: without TICKETBRIDGE_READY_HOTELS every
// hotel counts for /readyz, so one failing hotel makes the daemon not
// ready and is named; with the set, a hotel outside it does not count.
func TestFleetReadinessEveryHotel(t *testing.T) { atT0(t, testFleetReadinessEveryHotel) }

func testFleetReadinessEveryHotel(t *testing.T) {
	opts := Options{CycleMax: time.Hour}
	sched, err := sync.ParseSchedule("@every 30s")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ready  []string
		ok     bool
		prefix string
	}{
		{nil, false, "hotels failing: revoked\n"},
		{[]string{"good"}, true, ""},
	} {
		tel := NewFleet(nil, tc.ready, opts)
		good := tel.Hotel("good")
		if err := good.Start(t.Context(), nil, sched, 30*time.Second, nil); err != nil {
			t.Fatal(err)
		}
		good.CycleDone(sync.Report{Outcome: sync.OutcomeOK, Synced: true}, nil)
		tel.Hotel("revoked")
		tel.DropHotel("revoked", "the API refused the key")
		ok, reason := tel.Readiness(time.Now())
		if ok != tc.ok || !strings.HasPrefix(reason, tc.prefix) || !strings.Contains(reason, "hotel revoked: not ready") {
			t.Errorf("ready hotels %q: readiness %v, %q; want %v, starting %q and naming revoked", tc.ready, ok, reason, tc.ok, tc.prefix)
		}
	}
}
