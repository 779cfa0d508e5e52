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
	"github.com/ticketbridge/ticketbridge/state"
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

	tel, _ := testTelemetry(t, config.Telemetry{})
	bridge.ReportHeld(t.Context(), tel, hd)
	text := testutil.Scrape(t, tel.Handler(nil))
	if testutil.MetricValue(t, text, "ticketbridge_outbox_failed_total") != 1 || testutil.MetricValue(t, text, "ticketbridge_outbox_failed_files") != 1 ||
		testutil.MetricValue(t, text, "ticketbridge_helpdesk_held_changes") != 0 {
		t.Fatalf("metrics after one file set aside:\n%s", testutil.GrepLines(text, "ticketbridge_"))
	}

	snap := &sync.Status{At: time.Now(), Adapter: files.Name, Tickets: []sync.TicketStatus{}, Held: hd.Held(t.Context())}
	var b strings.Builder
	if err := sync.WriteStatus(&b, "state.db", snap); err != nil {
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

// TestStatusListsSetAsideWithTheDaemonStopped: with the daemon stopped,
// status (text and JSON) lists the outbox files the files helpdesk set
// aside, as its explanation promises, from a look at the helpdesk's
// folder: a file taken away since the last snapshot is no longer listed.
func TestStatusListsSetAsideWithTheDaemonStopped(t *testing.T) {
	b := newBridge(t)
	b.ticket("towels")
	if out, errOut, code := b.cmd("once"); code != 0 {
		t.Fatalf("once: exit %d\n%s\n%s", code, out, errOut)
	}
	const secret = "the safe code is 4711"
	b.drop("reply.txt", "ticket: 00000000\nkind: reply\n\n"+secret+"\n")
	b.drop("note.txt", "ticket: 00000001\nkind: note\n\n"+secret+"\n")
	if out, errOut, code := b.cmd("once"); code != 0 {
		t.Fatalf("once with two files to set aside: exit %d\n%s\n%s", code, out, errOut)
	}
	// The team takes one away after the cycle.
	failed := filepath.Join(b.vars["TICKETBRIDGE_FILES_DIR"], "outbox", "failed")
	for _, name := range []string{"note.txt", "note.txt.error.txt"} {
		if err := os.Remove(filepath.Join(failed, name)); err != nil {
			t.Fatal(err)
		}
	}

	out, errOut, code := b.cmd("status")
	if code != 0 {
		t.Fatalf("status: exit %d\n%s\n%s", code, out, errOut)
	}
	mustContain(t, "status", out, "Staff file set aside  outbox/failed/reply.txt")
	if strings.Contains(out, "note.txt") || strings.Contains(out, secret) {
		t.Errorf("status lists a file taken away, or a file's content:\n%s", out)
	}
	s := statusHeldJSON(t, b)
	if a := (sync.Status{Held: s.Held}).SetAside(); len(a) != 1 || a[0].File != "outbox/failed/reply.txt" || !s.HeldAt.IsZero() {
		t.Errorf("status --json lists %+v (seen at %v), want reply.txt seen now", s.Held, s.HeldAt)
	}
}

// TestStatusListsHeldChangesOfTheLastSnapshot: with the daemon stopped,
// status lists the changes a helpdesk held as the last snapshot has
// them, saying how old they are: only a running adapter knows them.
func TestStatusListsHeldChangesOfTheLastSnapshot(t *testing.T) {
	b := newBridge(t)
	path := b.vars["TICKETBRIDGE_STATE"]
	st, err := state.Open(t.Context(), path, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Update(t.Context(), func(tx *state.Tx) error { return tx.SetMeta(sync.MetaAdapter, "zendesk") }); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	b.vars["TICKETBRIDGE_ADAPTER"] = "zendesk"
	seen := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	held := adapters.HeldError{Ref: "4711", Op: "set status done", Need: "fill in the field Room number"}
	body, err := json.Marshal(sync.Status{At: seen, Adapter: "zendesk", Tickets: []sync.TicketStatus{}, Held: []adapters.HeldError{held}})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path+bridge.StatusSuffix, string(body), 0o600)

	out, errOut, code := b.cmd("status")
	if code != 0 {
		t.Fatalf("status: exit %d\n%s\n%s", code, out, errOut)
	}
	mustContain(t, "status", out, "Held by the helpdesk  "+held.Error(), "as the snapshot of "+seen.Local().Format(time.DateTime)+" has them (2h0m")
	s := statusHeldJSON(t, b)
	if len(s.Held) != 1 || s.Held[0] != held || !s.HeldAt.Equal(seen) {
		t.Errorf("status --json lists %+v seen at %v, want %+v seen at %v", s.Held, s.HeldAt, held, seen)
	}
}

// heldJSON is what status --json says of the changes held.
type heldJSON struct {
	Held   []adapters.HeldError `json:"held"`
	HeldAt time.Time            `json:"held_at"`
}

// statusHeldJSON runs status --json and returns what it says of the
// changes held.
func statusHeldJSON(t *testing.T, b *hotelKit) heldJSON {
	t.Helper()
	out, errOut, code := b.cmd("status", "--json")
	var s heldJSON
	if err := json.Unmarshal([]byte(out), &s); code != 0 || err != nil {
		t.Fatalf("status --json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	return s
}
