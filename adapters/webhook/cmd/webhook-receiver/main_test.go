package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunRefusesBadSetups(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("tiny\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noEnv := func(string) string { return "" }
	withSecret := func(k string) string {
		if k == "TICKETBRIDGE_WEBHOOK_SECRET" {
			return "a-secret-long-enough-for-the-receiver"
		}
		return ""
	}
	cases := []struct {
		name   string
		args   []string
		getenv func(string) string
		want   string
	}{
		{"no secret", []string{"-listen", "127.0.0.1:0"}, noEnv, "no secret"},
		{"short secret", []string{"-listen", "127.0.0.1:0", "-secret-file", short}, noEnv, "-secret-file " + short + ": the secret is 4 bytes long; want at least 32"},
		{"31-byte secret", []string{"-listen", "nowhere"}, func(k string) string {
			if k == "TICKETBRIDGE_WEBHOOK_SECRET" {
				return "a-secret-long-enough-for-the-re"
			}
			return ""
		}, "TICKETBRIDGE_WEBHOOK_SECRET: the secret is 31 bytes long; want at least 32"},
		{"missing secret file", []string{"-secret-file", filepath.Join(dir, "nope")}, noEnv, "read secret file"},
		{"bad flag", []string{"-bogus"}, withSecret, "flag provided but not defined"},
		{"extra argument", []string{"extra"}, withSecret, "unexpected argument"},
		{"bad log level", []string{"-log-level", "loud"}, withSecret, "-log-level"},
		{"bad listen address", []string{"-listen", "nowhere"}, withSecret, "listen on nowhere"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), c.args, c.getenv, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error()+stderr.String(), c.want) {
				t.Fatalf("run(%v) = %v (stderr %q), want an error mentioning %q", c.args, err, stderr.String(), c.want)
			}
			if strings.Contains(err.Error()+stderr.String()+stdout.String(), "a-secret-long-enough") {
				t.Fatal("the secret was printed")
			}
		})
	}
}

// TestRunStopsWithContext starts the receiver and stops it, as SIGINT
// does.
func TestRunStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var stderr bytes.Buffer
	errc := make(chan error, 1)
	out := &lineWriter{first: make(chan string, 1)}
	go func() {
		errc <- run(ctx, []string{"-listen", "127.0.0.1:0"}, func(k string) string {
			if k == "TICKETBRIDGE_WEBHOOK_SECRET" {
				return "a-secret-long-enough-for-the-receiver"
			}
			return ""
		}, out, &stderr)
	}()
	select {
	case line := <-out.first:
		if !strings.HasPrefix(line, "listening on http://127.0.0.1:") {
			t.Errorf("first line %q", line)
		}
	case err := <-errc:
		t.Fatalf("run ended early: %v; stderr %s", err, stderr.String())
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("run after cancel: %v", err)
	}
}

// lineWriter hands over the first write.
type lineWriter struct {
	first chan string
	sent  bool
}

func (w *lineWriter) Write(p []byte) (int, error) {
	if !w.sent {
		w.sent = true
		w.first <- string(p)
	}
	return len(p), nil
}

// TestHelp: --help describes the command and its flags on stdout and
// succeeds.
func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, func(string) string { return "" }, &stdout, &stderr); err != nil {
		t.Fatalf("--help: %v", err)
	}
	if !strings.Contains(stdout.String(), "reference receiver of ticketbridge's webhook adapter") || !strings.Contains(stdout.String(), "-reply-url") {
		t.Fatalf("--help printed:\n%s%s", stdout.String(), stderr.String())
	}
}
