package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// noticeReceiver is a local ntfy and ping server: each request arrives on got
// as "METHOD /path Title"; a path ending in /refused is answered 400.
func noticeReceiver(t *testing.T) (url string, got <-chan string) {
	t.Helper()
	ch := make(chan string, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if strings.HasSuffix(r.URL.Path, "/refused") {
			http.Error(w, "no such topic", http.StatusBadRequest)
		}
		select {
		case ch <- strings.TrimSpace(r.Method + " " + r.URL.Path + " " + r.Header.Get("Title")):
		default:
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, ch
}

// TestRunNotifies: `ticketbridge run` whose key the API refuses pings the
// heartbeat's failure URL after its first cycle and sends the operators
// one "API key refused" notice, without the key in it.
func TestRunNotifies(t *testing.T) {
	url, got := noticeReceiver(t)
	b := newBridge(t)
	b.vars["TICKETBRIDGE_API_KEY_FILE"] = ""
	b.vars["TICKETBRIDGE_API_KEY"] = b.ts.Keys.Revoked
	b.vars["TICKETBRIDGE_NOTIFY_URLS"] = "ntfy+" + url + "/ops"
	b.vars["TICKETBRIDGE_NOTIFY_PING_URL"] = url + "/ping"
	b.vars["TICKETBRIDGE_NOTIFY_GROUP_WINDOW"] = "0s"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"run", "--env-file", b.envFile()}, io.Discard, io.Discard) }()
	defer func() {
		cancel()
		<-done
	}()
	seen := map[string]bool{}
	for !seen["GET /ping/fail"] || !seen["POST /ops API key refused for hotel default"] {
		select {
		case s := <-got:
			if strings.Contains(s, b.ts.Keys.Revoked) {
				t.Fatalf("a request shows the key: %q", s)
			}
			seen[s] = true
		case err := <-done:
			t.Fatalf("the daemon stopped: %v", err)
		case <-time.After(time.Minute): // a hang's report, not a timing
			t.Fatalf("within a minute only %v", seen)
		}
	}
}

// TestNotifyTest: `ticketbridge notify test` sends a test notice to each
// target and prints a line per target with its kind and host only, OK or
// FAILED with the error; one failed target makes the exit status 1, and
// no target at all is an error too.
func TestNotifyTest(t *testing.T) {
	url, got := noticeReceiver(t)
	b := newBridge(t)
	b.vars["TICKETBRIDGE_NOTIFY_URLS"] = "ntfy+" + url + "/ops-TOKENMARKER"
	out, errOut, code := b.cmd("notify", "test")
	if code != 0 || !strings.HasPrefix(out, "OK      ntfy 127.0.0.1") || strings.Contains(out+errOut, "TOKENMARKER") {
		t.Fatalf("notify test of a working target: exit %d\n%s\n%s", code, out, errOut)
	}
	if s := <-got; s != "POST /ops-TOKENMARKER ticketbridge test notice" {
		t.Fatalf("the receiver got %q", s)
	}
	b.vars["TICKETBRIDGE_NOTIFY_SUPPORT_URLS"] = "ntfy+" + url + "/refused"
	out, errOut, code = b.cmd("notify", "test")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 1 || len(lines) != 2 || !strings.HasPrefix(lines[0], "OK ") || !strings.HasPrefix(lines[1], "FAILED  ntfy 127.0.0.1") ||
		!strings.Contains(lines[1], "(support)") || !strings.Contains(errOut, "1 of 2 targets failed") {
		t.Fatalf("notify test with a refusing target: exit %d\n%s\n%s", code, out, errOut)
	}
	b.vars["TICKETBRIDGE_NOTIFY_URLS"], b.vars["TICKETBRIDGE_NOTIFY_SUPPORT_URLS"] = "", ""
	if _, errOut, code = b.cmd("notify", "test"); code != 1 || !strings.Contains(errOut, "no target is set") {
		t.Fatalf("notify test without targets: exit %d\n%s", code, errOut)
	}
	if _, errOut, code = b.cmd("notify"); code != 2 {
		t.Fatalf("notify without test: exit %d\n%s", code, errOut)
	}
}
