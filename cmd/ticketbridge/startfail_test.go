package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunFailsWithoutItsState: a daemon of one hotel that cannot open its
// state at start (a PostgreSQL that refuses connections, a state file
// whose folder is a file) stops with the error and exit status 1, as it
// did before it ran as a fleet of one, for systemd to try again later.
func TestRunFailsWithoutItsState(t *testing.T) {
	for _, c := range []struct{ name, state, want string }{
		{"postgres", "postgres://ticketbridge:secret@127.0.0.1:1/ticketbridge", "open leases postgres://ticketbridge:xxxxx@127.0.0.1:1/ticketbridge"},
		{"file", "", "not a directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBridge(t)
			if c.state == "" {
				c.state = filepath.Join(b.vars["TICKETBRIDGE_API_KEY_FILE"], "state.db")
			}
			b.vars["TICKETBRIDGE_STATE"] = c.state
			env := b.envFile()
			done := make(chan error, 1)
			go func() { done <- run(context.Background(), []string{"run", "--env-file", env}, io.Discard, io.Discard) }()
			select {
			case err := <-done:
				var stderr strings.Builder
				code := exitCode(err, &stderr)
				if code != 1 || !strings.Contains(stderr.String(), c.want) || strings.Contains(stderr.String(), "secret") {
					t.Errorf("run without its state: exit %d, %q; want 1 and %q", code, stderr.String(), c.want)
				}
			case <-time.After(time.Minute): // a hang's report, not a timing
				t.Fatal("run goes on without its state")
			}
		})
	}
}

// TestRunFailsOnABadNotifyTarget: a notification target the daemon cannot
// parse stops it at start with exit status 1 and an error naming the
// variable, not the URL's token.
func TestRunFailsOnABadNotifyTarget(t *testing.T) {
	b := newBridge(t)
	b.vars["TICKETBRIDGE_NOTIFY_URLS"] = "https://hooks.slack.com/services/T0/B0/tokenMARKER"
	err := run(context.Background(), []string{"run", "--env-file", b.envFile()}, io.Discard, io.Discard)
	var stderr strings.Builder
	code := exitCode(err, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "TICKETBRIDGE_NOTIFY_URLS, item 1") || strings.Contains(stderr.String(), "tokenMARKER") {
		t.Errorf("run with a bare Slack URL: exit %d, %q; want 1 and TICKETBRIDGE_NOTIFY_URLS named", code, stderr.String())
	}
}
