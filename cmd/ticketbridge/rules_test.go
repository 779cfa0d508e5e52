package main

import (
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/check"
)

// TestStatusAndCheckShowWhatRulesLeaveOut: with a rule leaving out a
// department, `status` (and its JSON) and `check` say which rule left out
// how many requests; an install that still sets the old
// TICKETBRIDGE_NOTES_UPSTREAM passes check without an unknown-variable
// warning.
func TestStatusAndCheckShowWhatRulesLeaveOut(t *testing.T) {
	b := newBridge(t)
	b.vars["TICKETBRIDGE_EXCLUDE_DEPARTMENTS"] = "maintenance"
	b.vars["TICKETBRIDGE_NOTES_UPSTREAM"] = "false"
	for _, dept := range []string{"maintenance", "maintenance", "housekeeping"} {
		if _, err := b.ts.Server.CreateTicket(b.ts.Org, refserver.NewTicket{Department: dept, Status: guestapi.StatusNew, TaskDescription: "request"}); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := b.cmd("once")
	if code != 0 {
		t.Fatalf("once: exit %d\n%s\n%s", code, out, errOut)
	}
	mustContain(t, "once", out, "helpdesk tickets created  1", "left out by the rules", `department "maintenance" (TICKETBRIDGE_EXCLUDE_DEPARTMENTS): 2 not created`)

	out, _, code = b.cmd("status")
	if code != 0 {
		t.Fatalf("status: exit %d\n%s", code, out)
	}
	mustContain(t, "status", out, "Left out", `department "maintenance" (TICKETBRIDGE_EXCLUDE_DEPARTMENTS): 2 not created`)
	out, _, _ = b.cmd("status", "--json")
	mustContain(t, "status --json", out, `"left_out"`, `"variable": "TICKETBRIDGE_EXCLUDE_DEPARTMENTS"`, `"department": "maintenance"`, `"not_created": 2`)

	out, code, _ = runChecks(t, b.envFile(), check.Options{Registry: bridge.Adapters(), Timeout: 5 * time.Second})
	if code != 0 {
		t.Fatalf("check: exit %d\n%s", code, out)
	}
	mustContain(t, "check", out, "PASS  rules", "leave out requests of department maintenance", "upstream: replies, status", "2 not created")
	if strings.Contains(out, "NOTES_UPSTREAM (in") {
		t.Errorf("check warns of the old variable as unknown:\n%s", out)
	}
}
