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
// as "METHOD /path Title".
func noticeReceiver(t *testing.T) (url string, got <-chan string) {
	t.Helper()
	ch := make(chan string, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
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
