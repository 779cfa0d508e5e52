package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/sync"
)

var (
	screenshotDir = flag.String("screenshots", "", "save the browser test's screenshot of each page in `DIR` (default: a temporary folder, removed after)")
	updateDocs    = flag.Bool("update-docs", false, "write the browser test's screenshot of the status page to docs/status-page.png")
)

// TestStatusPageInBrowser drives Debian's headless Chromium against a
// running daemon (reference server, files helpdesk): it loads every page,
// finds the failing request and the refused reply, signs in, presses Retry
// and sees the reply go through on a following cycle, once. It saves a
// screenshot of each page. It skips when Chromium is missing.
//
//	go test ./cmd/ticketbridge/ -run TestStatusPageInBrowser -screenshots /tmp/shots -update-docs
func TestStatusPageInBrowser(t *testing.T) {
	chromiumPath(t)
	shots := screenshotsDir(t)

	b := newBridge(t)
	var ids []string
	for _, r := range []struct{ dept, desc string }{
		{"housekeeping", "Two more towels, please"}, {"front_desk", "Late checkout at 14:00?"},
		{"maintenance", "The heating is not working"}, {"room_service", "Breakfast in the room at 7"},
		{"housekeeping", "Extra pillows"}, {"concierge", "Taxi to the airport"},
	} {
		tv, err := b.ts.Server.CreateTicket(b.ts.Org, refserver.NewTicket{Department: r.dept, TaskDescription: r.desc})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tv.ID)
		guest(t, b, tv.ID, r.desc+".")
	}
	if _, errOut, code := b.cmd("once"); code != 0 {
		t.Fatalf("once: %s", errOut)
	}
	const reply = "Two fresh towels are on their way to your room."
	b.drop("towels.txt", "ticket: "+ids[0]+"\nkind: reply\nauthor: Ana (front desk)\n\n"+reply+"\n")
	guest(t, b, ids[1], "Thank you!")
	guest(t, b, ids[2], "It is getting cold.")
	guest(t, b, ids[3], "Coffee and croissants.")

	d := startConsoleDaemon(t, b, func(d *consoleDaemon) {
		d.refuse.Store(true)
		d.broken.Store(ids[3])
	})
	var snap sync.Status
	for range snapshotCycles {
		if snap = d.snapshot(t); len(snap.Failed) == 1 && snap.Counts.Failing == 1 {
			break
		}
		d.next(t)
	}
	if len(snap.Failed) != 1 || snap.Counts.Failing != 1 {
		t.Fatalf("no refused entry and failing request in %d cycles: %+v", snapshotCycles, snap.Counts)
	}
	event := snap.Failed[0].EventID
	d.next(t)

	c := startChromium(t)
	tab := c.newTab()
	base := "http://" + d.addr
	n := 0
	visit := func(path, name string, wants ...string) string {
		t.Helper()
		tab.navigate(base + path)
		text := tab.text()
		for _, w := range wants {
			if !strings.Contains(text, w) {
				t.Errorf("%s lacks %q:\n%s", path, w, text)
			}
		}
		n++
		tab.screenshot(filepath.Join(shots, filepathName(n, name)))
		return text
	}

	text := visit("/", "overview", "Entries refused for good (1)", event, "injected refusal",
		"Requests with errors (1)", ids[3][:8], "injected failure", "Guest → helpdesk")
	if !strings.Contains(text, "Sign in") || strings.Contains(text, reply) {
		t.Errorf("the overview before sign-in offers no sign-in or shows a reply's text")
	}
	var bg string
	json.Unmarshal(tab.eval("getComputedStyle(document.querySelector('header')).backgroundColor"), &bg)
	if bg != "rgb(29, 35, 48)" {
		t.Errorf("the stylesheet did not apply under the page's CSP: header background %q", bg)
	}
	visit("/tickets", "requests", "6 of 6 tracked requests", ids[5][:8])
	visit("/tickets?q=maintenance", "search", "1 of 6 tracked requests", ids[2][:8])
	text = visit("/tickets/"+ids[0], "request", ids[0], event, "failed", "Message text is shown to signed-in users only")
	if strings.Contains(text, reply) || strings.Contains(text, "Retry") {
		t.Errorf("the request page shows a reply's text or an action before sign-in:\n%s", text)
	}

	visit("/login", "sign-in", "Console token")
	tab.fill("input[name=name]", "Ines")
	tab.fill("input[name=token]", consoleToken)
	tab.click("form.login button")
	if text := tab.text(); !strings.Contains(text, "Signed in as Ines") {
		t.Fatalf("after sign-in:\n%s", text)
	}
	var cookie string
	json.Unmarshal(tab.eval("document.cookie"), &cookie)
	if cookie != "" {
		t.Errorf("the session cookie is readable by scripts: %q", cookie)
	}
	n++
	overview := filepath.Join(shots, filepathName(n, "overview-signed-in"))
	tab.screenshot(overview)

	visit("/tickets/"+ids[0], "request-signed-in", reply, "Retry", "Skip")
	d.refuse.Store(false)
	d.broken.Store("")
	d.drain()
	tab.click(`form[action^="/retry"] button`)
	if text = tab.text(); !strings.Contains(text, "pending again") {
		t.Fatalf("after pressing Retry:\n%s", text)
	}
	d.until(t, 5, "sending the retried reply", func(r sync.Report) bool { return r.Sent == 1 })
	d.next(t)
	text = visit("/tickets/"+ids[0], "request-after-retry", event, "operator command (Ines)")
	// The journal shows the entry as it is now; the audit trail below it
	// keeps its refusal and the retry.
	journal, _, _ := strings.Cut(text, "Audit trail")
	if !strings.Contains(journal, "sent") || strings.Contains(journal, "failed") {
		t.Errorf("the retried entry is not shown sent:\n%s", text)
	}
	if got := countUpstream(t, b, ids[0], reply); got != 1 {
		t.Errorf("the guest got the retried reply %d times, want 1", got)
	}
	if !strings.Contains(d.logs.String(), "action=retry who=Ines") {
		t.Errorf("the daemon did not log the retry with who did it")
	}
	if *screenshotDir != "" {
		t.Logf("screenshots of %d pages in %s", n, shots)
	} else {
		t.Logf("screenshots of %d pages taken and dropped; keep them with -screenshots DIR", n)
	}

	if *updateDocs {
		b, err := os.ReadFile(overview)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "status-page.png"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func filepathName(n int, name string) string { return fmt.Sprintf("%02d-%s.png", n, name) }

func guest(t *testing.T, b *hotelKit, id, body string) {
	t.Helper()
	if _, err := b.ts.Server.AddMessage(id, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, AuthorName: "Guest", Body: body}); err != nil {
		t.Fatal(err)
	}
}

// screenshotsDir returns the folder -screenshots names, made when missing,
// or a temporary one.
func screenshotsDir(t *testing.T) string {
	t.Helper()
	if *screenshotDir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(*screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return *screenshotDir
}
