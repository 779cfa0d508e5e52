package main

import (
	"context"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
)

// TestRunRewiresOnSIGHUPWhenItsKeyFileChanged: `ticketbridge run` of one
// hotel, given SIGHUP, reads its secret files again: with none changed it
// says so and goes on; with a new key in its key file it rewires between
// cycles and logs one line naming the variable, never the key.
func TestRunRewiresOnSIGHUPWhenItsKeyFileChanged(t *testing.T) {
	b := newBridge(t)
	b.ticket("towels")
	b.vars["TICKETBRIDGE_SCHEDULE"] = "@every 1000h"
	b.vars["TICKETBRIDGE_LOG_LEVEL"] = "info"
	logs := &lineWatch{want: "msg=", lines: make(chan string, 1024)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"run", "--env-file", b.envFile()}, io.Discard, logs) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	waitFor := func(want string) string {
		t.Helper()
		for {
			select {
			case line := <-logs.lines:
				if strings.Contains(line, want) {
					return line
				}
			case err := <-done:
				t.Fatalf("run ended: %v", err)
			case <-time.After(time.Minute): // a hang's report, not a timing
				t.Fatalf("no log line %q within a minute", want)
			}
		}
	}
	waitFor("cycle")
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if line := waitFor("op=reload"); !strings.Contains(line, "no key or helpdesk secret file changed") {
		t.Errorf("SIGHUP with nothing changed logged %q", line)
	}

	k, err := b.ts.Server.IssueKey(b.ts.Org, refserver.KeySpec{Name: "rotated", Platform: refserver.PlatformRead, Tickets: refserver.TicketsWrite})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.vars["TICKETBRIDGE_API_KEY_FILE"], []byte(k.Value+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	line := waitFor("op=reload")
	if !strings.Contains(line, "TICKETBRIDGE_API_KEY_FILE") || !strings.Contains(line, "rewired") {
		t.Errorf("SIGHUP after the key file changed logged %q, want the rewiring naming TICKETBRIDGE_API_KEY_FILE", line)
	}
	if strings.Contains(line, k.Value) {
		t.Errorf("the log line shows the key: %q", line)
	}
}
