package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/files"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
	"github.com/ticketbridge/ticketbridge/sync"
)

// TestStaffFileSetAsideIsShown: an outbox file the files helpdesk sets
// aside is counted in the metrics and listed by status and check, with
// its reason and none of its content, until it is taken away.
func TestStaffFileSetAsideIsShown(t *testing.T) {
	dir := t.TempDir()
	hd, err := files.New(t.Context(), files.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer hd.Close()
	ref, err := hd.EnsureTicket(t.Context(), adapters.Ticket{UpstreamID: "3f2a9c1b-7d4e-4f60-9a8b-0c1d2e3f4a5b",
		Department: "Housekeeping", Status: guestapi.StatusNew, TaskDescription: "Towels",
		CreatedAt: time.Date(2026, 3, 14, 8, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "the safe code is 4711"
	bad := filepath.Join(dir, "outbox", "reply.txt")
	if err := os.WriteFile(bad, []byte("ticket: 3f2a9c1c\nkind: reply\n\n"+secret), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := hd.Changes(t.Context(), ""); err != nil {
		t.Fatal(err)
	}

	tel, _, _ := testTelemetry(t, config.Telemetry{})
	bridge.ReportHeld(t.Context(), tel, hd)
	text := testutil.Scrape(t, tel.Handler(nil))
	if testutil.MetricValue(t, text, "ticketbridge_outbox_failed_total") != 1 || testutil.MetricValue(t, text, "ticketbridge_outbox_failed_files") != 1 ||
		testutil.MetricValue(t, text, "ticketbridge_helpdesk_held_changes") != 0 {
		t.Fatalf("metrics after one file set aside:\n%s", testutil.GrepLines(text, "ticketbridge_"))
	}

	snap := &sync.Status{At: time.Now(), Adapter: files.Name, Tickets: []sync.TicketStatus{}, Held: hd.Held(t.Context())}
	var b strings.Builder
	if err := printStatus(&b, "state.db", snap); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "Staff file set aside  outbox/failed/reply.txt") ||
		!strings.Contains(out, "no ticket folder") || !strings.Contains(out, string(ref)) || strings.Contains(out, secret) {
		t.Errorf("status:\n%s", out)
	}

	h := newHotel(t)
	body, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, h.vars["TICKETBRIDGE_STATE"]+bridge.StatusSuffix, string(body), 0o600)
	out, code, _ := h.check()
	if code != 0 || !strings.Contains(out, "WARN  file set aside") || !strings.Contains(out, "outbox/failed/reply.txt") ||
		!strings.Contains(out, "fix: fix it as its .error.txt says") || strings.Contains(out, secret) {
		t.Errorf("check: exit %d\n%s", code, out)
	}

	// Taken away: the gauge drops, the counter stays.
	if err := os.Remove(filepath.Join(dir, "outbox", "failed", "reply.txt")); err != nil {
		t.Fatal(err)
	}
	bridge.ReportHeld(t.Context(), tel, hd)
	text = testutil.Scrape(t, tel.Handler(nil))
	if testutil.MetricValue(t, text, "ticketbridge_outbox_failed_total") != 1 || testutil.MetricValue(t, text, "ticketbridge_outbox_failed_files") != 0 {
		t.Fatalf("metrics after the file was removed:\n%s", testutil.GrepLines(text, "ticketbridge_outbox"))
	}
	if s := (sync.Status{Held: hd.Held(t.Context())}); len(s.SetAside()) != 0 {
		t.Errorf("still listed: %+v", s.Held)
	}
}
