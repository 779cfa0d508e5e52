package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
)

// TestDemoPlaysTheScript runs the demo as a new user would and checks each
// step's visible outcome.
func TestDemoPlaysTheScript(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"demo", "--dir", dir}, &out, &errb); err != nil {
		t.Fatalf("demo: %v\n%s\n%s", err, out.String(), errb.String())
	}
	got := out.String()
	mustContain(t, "demo", got,
		"1. The first cycle imports",
		"cycle: 4 helpdesk tickets created",
		"Thank you! Could we also have a second pillow?",
		"Maria (front desk): Towels and a second pillow are on their way to 214!",
		`visible_to_guest false`,
		"the guest's page does not show it.",
		`upstream, the towels request is now "done".`,
		"thread.md now says: Status: assigned",
		"cycle: nothing to do",
		"no writes upstream, none in the helpdesk.",
		"Done. The helpdesk folder stays in "+dir,
	)
	des, err := os.ReadDir(filepath.Join(dir, "helpdesk", "tickets"))
	if err != nil || len(des) != 4 {
		t.Fatalf("helpdesk folders: %d, %v", len(des), err)
	}
	if errb.Len() != 0 {
		t.Errorf("the demo logged warnings:\n%s", errb.String())
	}
	// The folder is in use now: a second demo into it is refused.
	if err := run(context.Background(), []string{"demo", "--dir", dir}, &out, &errb); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("demo into a used folder: %v", err)
	}
}

// signalWriter reports on seen when the output first contains want.
type signalWriter struct {
	mu   gosync.Mutex
	b    bytes.Buffer
	want string
	seen chan struct{}
	once gosync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.b.Write(p)
	if strings.Contains(w.b.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

// TestDemoKeepRunsUntilCancelled: with --keep the demo keeps the server and
// the daemon running, prints how to reach them, and stops on Ctrl-C.
func TestDemoKeepRunsUntilCancelled(t *testing.T) {
	out := &signalWriter{want: "Write as a guest through the console", seen: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"demo", "--keep", "--schedule", "@every 1h", "--dir", filepath.Join(t.TempDir(), "d")}, out, &bytes.Buffer{})
	}()
	select {
	case <-out.seen:
	case err := <-done:
		t.Fatalf("demo --keep ended early: %v\n%s", err, out.b.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("demo --keep: %v", err)
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	mustContain(t, "demo --keep", out.b.String(), "Running until Ctrl-C", "key        rta_", "helpdesk   ")
}

// TestDemoCommand: the demo's last line names a command that runs where
// the demo was started: go run's binary is not on the PATH.
func TestDemoCommand(t *testing.T) {
	for arg0, want := range map[string]string{
		"/tmp/go-build1234/b001/exe/ticketbridge": "go run ./cmd/ticketbridge demo",
		"/usr/bin/ticketbridge":                   "ticketbridge demo",
		"ticketbridge":                            "ticketbridge demo",
	} {
		if got := demoCommand(arg0); got != want {
			t.Errorf("demoCommand(%q) = %q, want %q", arg0, got, want)
		}
	}
}
