package main

import (
	"strings"
	"testing"
	"time"

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
