package main

import (
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/check"
	"github.com/ticketbridge/ticketbridge/state"
)

// TestStatusAndCheckShowFullLists: with more open requests of one status
// and department than the API lists (200, no paging), `status` and
// `check` say which list is full and that older requests may be missing:
// from the state file with the daemon stopped, and from its snapshot
// while it runs.
func TestStatusAndCheckShowFullLists(t *testing.T) {
	b := newBridge(t)
	base := time.Now().Add(-time.Hour)
	for i := range 205 {
		if _, err := b.ts.Server.CreateTicket(b.ts.Org, refserver.NewTicket{Department: "busy", Status: guestapi.StatusNew,
			TaskDescription: "request", CreatedAt: base.Add(-time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := b.cmd("once")
	if code != 0 {
		t.Fatalf("once: exit %d\n%s\n%s", code, out, errOut)
	}
	mustContain(t, "once", out, "helpdesk tickets created  200")

	out, _, code = b.cmd("status")
	if code != 0 {
		t.Fatalf("status: exit %d\n%s", code, out)
	}
	mustContain(t, "status", out, "Full lists", "new in busy", "older than the 200th")
	out, _, _ = b.cmd("status", "--json")
	mustContain(t, "status --json", out, `"full_lists"`, `"department": "busy"`)

	out, code, _ = runChecks(t, b.envFile(), check.Options{Registry: bridge.Adapters(), Timeout: 5 * time.Second})
	if code != 0 {
		t.Fatalf("check: exit %d, want 0 (a warning only):\n%s", code, out)
	}
	mustContain(t, "check", out, "WARN  full lists", "new in busy", "split the department")

	// The daemon runs: it holds the state file, and status and check read
	// its snapshot.
	st, err := state.Open(t.Context(), b.vars["TICKETBRIDGE_STATE"], state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	snap := `{"at":"` + time.Now().Format(time.RFC3339) + `","tickets":[],"counts":{},` +
		`"last_cycle":{"start":"` + time.Now().Format(time.RFC3339) + `","outcome":"ok","synced":true,` +
		`"full_lists":[{"status":"in_progress","department":"spa"}]}}`
	writeFile(t, b.vars["TICKETBRIDGE_STATE"]+bridge.StatusSuffix, snap, 0o600)
	out, _, code = b.cmd("status")
	if code != 0 {
		t.Fatalf("status while running: exit %d\n%s", code, out)
	}
	mustContain(t, "status while running", out, "The daemon is running", "Full lists", "in_progress in spa")
	out, _, _ = runChecks(t, b.envFile(), check.Options{Registry: bridge.Adapters(), Timeout: 5 * time.Second})
	mustContain(t, "check while running", out, "WARN  full lists", "in_progress in spa")
}
