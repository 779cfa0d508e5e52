package demo

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/internal/mailtest"
)

// TestEmailDemoWithoutAMailServer: with no local mail server in the
// environment, the email demo says how to start one, and starts nothing.
func TestEmailDemoWithoutAMailServer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	var out bytes.Buffer
	_, err := Start(context.Background(), Options{Dir: dir, Helpdesk: "email", Getenv: func(string) string { return "" },
		Log: slog.New(slog.DiscardHandler), Out: &out})
	if !errors.Is(err, ErrNoMailServer) || !strings.Contains(err.Error(), "deploy/dev/mail.sh start") {
		t.Fatalf("the email demo without a mail server: %v; want ErrNoMailServer saying how to start one", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the demo made its folder anyway: %v", err)
	}
	if _, err := Start(context.Background(), Options{Helpdesk: "jira", Log: slog.New(slog.DiscardHandler), Out: &out}); err == nil || !strings.Contains(err.Error(), "want files or email") {
		t.Errorf("an unknown helpdesk: %v", err)
	}
}

// TestEmailScript plays the email demo against the local Postfix and
// Dovecot; it skips without them.
func TestEmailScript(t *testing.T) {
	mailtest.FromEnv(t) // skips without the servers; waits while another package's tests use them
	var out, logs bytes.Buffer
	d, err := Start(t.Context(), Options{Dir: filepath.Join(t.TempDir(), "demo"), Helpdesk: "email",
		Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError})), Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Script(t.Context()); err != nil {
		t.Fatalf("script: %v\n%s", err, out.String())
	}
	for _, want := range []string{"in housekeeping@", "Subject: [GR 0d9a7c1e]", "the guest's page now shows", "not visible to the guest", "now \"done\""} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the script's output lacks %q:\n%s", want, out.String())
		}
	}
	if logs.Len() != 0 {
		t.Errorf("the demo logged errors:\n%s", logs.String())
	}
	t.Logf("\n%s", out.String())
}
