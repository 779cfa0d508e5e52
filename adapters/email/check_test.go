package email

import (
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// The rows of `ticketbridge check` for the email helpdesk: what Check
// says when something is wrong, each naming the setting or step that
// fixes it and never the password. check opens the adapter read-only.

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func checkErr(t *testing.T, b *backend, readOnly bool, mod func(*Config)) error {
	t.Helper()
	cfg := b.config()
	if mod != nil {
		mod(&cfg)
	}
	a, err := New(cfg, adapters.Deps{Logger: slog.New(slog.DiscardHandler), ReadOnly: readOnly})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	err = a.Check(t.Context())
	if err != nil && strings.Contains(err.Error(), b.password("bridge")) {
		t.Errorf("the check shows the password: %v", err)
	}
	return err
}

func wantFix(t *testing.T, row string, err error, want []string, not []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: the check passed", row)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", row, err, w)
		}
	}
	for _, n := range not {
		if strings.Contains(err.Error(), n) {
			t.Errorf("%s: %q points at %q, which is not at fault", row, err, n)
		}
	}
}

func TestCheckMissingInbox(t *testing.T) {
	b, _ := memBackend(t)
	err := checkErr(t, b, true, func(c *Config) { c.Inbox = "Replies" })
	wantFix(t, "a missing inbox", err, []string{`no folder "Replies"`, EnvPrefix + "INBOX"}, []string{"PASSWORD"})
}

func TestCheckFoldersNotMadeYet(t *testing.T) {
	b, _ := memBackend(t)
	err := checkErr(t, b, true, nil)
	wantFix(t, "the bridge's folders before the first cycle", err, []string{DefaultSentFolder, DefaultSetAsideFolder, "first cycle", "create"}, []string{"PASSWORD"})
	if err := checkErr(t, b, false, nil); err != nil {
		t.Fatalf("a check that may write: %v", err)
	}
	if err := checkErr(t, b, true, nil); err != nil {
		t.Fatalf("the check after the folders were made: %v", err)
	}
}

func TestCheckRefusedLogin(t *testing.T) {
	b, _ := memBackend(t)
	err := checkErr(t, b, true, func(c *Config) { c.Password = "not the password" })
	wantFix(t, "a refused login", err, []string{EnvPrefix + "USER", EnvPrefix + "PASSWORD"}, []string{"_URL"})
	if !errors.Is(err, adapters.ErrAuth) {
		t.Errorf("a refused login is not adapters.ErrAuth: %v", err)
	}
	if strings.Contains(err.Error(), "not the password") {
		t.Errorf("the check shows the password given: %v", err)
	}
}

func TestCheckUnreachableServers(t *testing.T) {
	b, _ := memBackend(t)
	addr := closedPort(t)
	err := checkErr(t, b, true, func(c *Config) {
		if err := c.SMTPURL.EnvDecode("smtp://" + addr); err != nil {
			t.Fatal(err)
		}
	})
	wantFix(t, "an unreachable submission server", err, []string{EnvPrefix + "SMTP_URL", addr}, []string{"PASSWORD", "IMAP_URL"})
	err = checkErr(t, b, true, func(c *Config) {
		if err := c.IMAPURL.EnvDecode("imap://" + addr); err != nil {
			t.Fatal(err)
		}
	})
	wantFix(t, "an unreachable mailbox", err, []string{EnvPrefix + "IMAP_URL", addr}, []string{"PASSWORD", "SMTP_URL"})
}
