package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

// TestCheckBesideARunningWebhookDaemon: while a daemon with the webhook
// adapter serves its inbound endpoint, check and once --dry-run on the
// same configuration pass: making the adapter binds nothing.
func TestCheckBesideARunningWebhookDaemon(t *testing.T) {
	b := newWebhookBridge(t)
	b.vars["TICKETBRIDGE_WEBHOOK_DIR"] = filepath.Join(b.dir, "webhook")
	b.vars["TICKETBRIDGE_WEBHOOK_LISTEN"] = testutil.ClosedPort(t)
	b.vars["TICKETBRIDGE_STATE"] = filepath.Join(b.dir, "daemon.db")
	b.vars["TICKETBRIDGE_SCHEDULE"] = "@every 1h"
	d := startDaemon(t, b)
	if r := d.next(); !r.Synced || r.Created != 1 {
		t.Fatalf("the daemon's first cycle: %s", r)
	}
	// The daemon serves its inbound endpoint.
	resp, err := http.Get("http://" + b.vars["TICKETBRIDGE_WEBHOOK_LISTEN"] + "/events")
	if err != nil {
		t.Fatalf("the daemon does not serve the inbound endpoint: %v", err)
	}
	resp.Body.Close()

	out, errOut, code := b.cmd("check")
	if code != 0 || strings.Contains(out+errOut, "address already in use") {
		t.Fatalf("check beside the running daemon: exit %d\n%s%s", code, out, errOut)
	}
	// Another state file: the daemon holds its own.
	b.vars["TICKETBRIDGE_STATE"] = filepath.Join(b.dir, "other.db")
	out, errOut, code = b.cmd("once", "--dry-run")
	if code != 0 || !strings.Contains(out, "dry run: nothing was written") {
		t.Fatalf("once --dry-run beside the running daemon: exit %d\n%s%s", code, out, errOut)
	}
}

// TestWebhookRecordsBesideTheStateFile: without TICKETBRIDGE_WEBHOOK_DIR,
// once keeps the webhook's records beside the state file and leaves the
// working directory as it found it.
func TestWebhookRecordsBesideTheStateFile(t *testing.T) {
	b := newWebhookBridge(t)
	b.vars["TICKETBRIDGE_WEBHOOK_LISTEN"] = "off"
	work := t.TempDir()
	t.Chdir(work)
	if out, errOut, code := b.cmd("once"); code != 0 {
		t.Fatalf("once: exit %d\n%s%s", code, out, errOut)
	}
	dir := filepath.Join(filepath.Dir(b.vars["TICKETBRIDGE_STATE"]), webhook.DefaultDir)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Errorf("no webhook directory beside the state file: %v", err)
	}
	if left, err := os.ReadDir(work); err != nil || len(left) != 0 {
		t.Errorf("the working directory holds %v (%v), want nothing", left, err)
	}
}

// newWebhookBridge is a bridge with one request on the webhook adapter,
// delivering to a receiver that acknowledges everything.
func newWebhookBridge(t *testing.T) *hotelKit {
	t.Helper()
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	b := newBridge(t)
	b.ticket("towels")
	delete(b.vars, "TICKETBRIDGE_FILES_DIR")
	delete(b.vars, "TICKETBRIDGE_FILES_SETTLE")
	b.vars["TICKETBRIDGE_ADAPTER"] = "webhook"
	b.vars["TICKETBRIDGE_WEBHOOK_URL"] = receiver.URL + "/hooks"
	b.vars["TICKETBRIDGE_WEBHOOK_SECRET"] = "a-shared-secret-of-the-length-asked-for"
	return b
}
