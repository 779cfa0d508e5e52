package main

import (
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/sync"
)

// TestStatusCountsNotSynced: `ticketbridge status` counts the requests
// deleted on the platform and the helpdesk tickets of another hotel, and
// says a deleted request is never read.
func TestStatusCountsNotSynced(t *testing.T) {
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	s := &sync.Status{At: at, Counts: sync.StatusCounts{Tickets: 1, Deleted: 1, NotOurs: 2},
		Tickets: []sync.TicketStatus{{ID: "0b6c7e1d-0000-4000-8000-000000000001", Retired: true, Deleted: at, DueReason: sync.DueDeleted}}}
	var b strings.Builder
	if err := printStatus(&b, "state.db", s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 deleted on the platform, 2 helpdesk tickets of another hotel", "never (deleted on the platform)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status output lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := printStatus(&b, "state.db", &sync.Status{At: at}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Not synced") {
		t.Errorf("status says what is not synced when nothing is:\n%s", b.String())
	}
}
