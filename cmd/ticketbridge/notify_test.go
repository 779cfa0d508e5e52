package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
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

// drain returns what got holds now.
func drain(got <-chan string) []string {
	var out []string
	for {
		select {
		case s := <-got:
			out = append(out, s)
		default:
			return out
		}
	}
}

// TestOnceNotifies: `ticketbridge once` run from cron tells a person as
// the daemon does: a run whose key the API refuses pings the failure URL
// and sends one "API key refused" notice, journaled in the state, before
// it exits; the next failing run sends none again (within the repeat);
// the first run that syncs sends "back to normal" and pings success. A
// dry run sends nothing.
func TestOnceNotifies(t *testing.T) {
	url, got := noticeReceiver(t)
	b := newBridge(t)
	keyFile := b.vars["TICKETBRIDGE_API_KEY_FILE"]
	b.vars["TICKETBRIDGE_API_KEY_FILE"] = ""
	b.vars["TICKETBRIDGE_API_KEY"] = b.ts.Keys.Revoked
	b.vars["TICKETBRIDGE_NOTIFY_URLS"] = "ntfy+" + url + "/ops"
	b.vars["TICKETBRIDGE_NOTIFY_PING_URL"] = url + "/ping"
	if _, errOut, code := b.cmd("once"); code != 1 {
		t.Fatalf("once with a revoked key: exit %d\n%s", code, errOut)
	}
	first := drain(got)
	want := []string{"GET /ping/fail", "POST /ops API key refused for hotel default"}
	for _, w := range want {
		if !slices.Contains(first, w) {
			t.Errorf("the first run sent %q, lacking %q", first, w)
		}
	}
	for _, s := range first {
		if strings.Contains(s, b.ts.Keys.Revoked) {
			t.Fatalf("a request shows the key: %q", s)
		}
	}
	if _, _, code := b.cmd("once"); code != 1 {
		t.Fatalf("the second run: exit %d", code)
	}
	if again := drain(got); !slices.Equal(again, []string{"GET /ping/fail"}) {
		t.Errorf("the second failing run sent %q, want the failure ping only", again)
	}
	if _, _, code := b.cmd("once", "--dry-run"); code != 1 {
		t.Fatalf("the dry run: exit %d", code)
	}
	if dry := drain(got); len(dry) != 0 {
		t.Errorf("a dry run sent %q, want nothing", dry)
	}
	b.vars["TICKETBRIDGE_API_KEY_FILE"], b.vars["TICKETBRIDGE_API_KEY"] = keyFile, ""
	if out, errOut, code := b.cmd("once"); code != 0 {
		t.Fatalf("once with a valid key: exit %d\n%s\n%s", code, out, errOut)
	}
	last := drain(got)
	for _, w := range []string{"GET /ping", "POST /ops Back to normal: hotel default (API key refused)"} {
		if !slices.Contains(last, w) {
			t.Errorf("the run that synced sent %q, lacking %q", last, w)
		}
	}
}
