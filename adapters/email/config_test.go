package email

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sethvargo/go-envconfig"
)

func validEnv() map[string]string {
	return map[string]string{
		"TICKETBRIDGE_EMAIL_ADDRESS": "bridge@hotel.example", "TICKETBRIDGE_EMAIL_TO": "frontdesk@hotel.example",
		"TICKETBRIDGE_EMAIL_SMTP_URL": "smtp://mail.hotel.example", "TICKETBRIDGE_EMAIL_IMAP_URL": "imaps://mail.hotel.example",
		"TICKETBRIDGE_EMAIL_PASSWORD": "pw-not-to-show", "TICKETBRIDGE_EMAIL_TOKEN_KEY": "key-not-to-show-0123456789",
		"TICKETBRIDGE_EMAIL_ALLOW": "hotel.example",
	}
}

func TestLoadConfigNamesWhatIsWrongAndNoSecret(t *testing.T) {
	if _, err := LoadConfig(t.Context(), envconfig.MapLookuper(validEnv())); err != nil {
		t.Fatalf("a valid configuration: %v", err)
	}
	for _, c := range []struct{ key, value, want string }{
		{"TICKETBRIDGE_EMAIL_ADDRESS", "", "ADDRESS is not set"},
		{"TICKETBRIDGE_EMAIL_ADDRESS", "bridge+x@hotel.example", "without a +sub-address"},
		{"TICKETBRIDGE_EMAIL_TO", "", "TO is not set"},
		{"TICKETBRIDGE_EMAIL_DEPARTMENTS", "housekeeping", "department=address"},
		{"TICKETBRIDGE_EMAIL_SMTP_URL", "http://mail.hotel.example", "smtp (STARTTLS) or smtps"},
		{"TICKETBRIDGE_EMAIL_IMAP_URL", "imap://u:pw-not-to-show@mail.hotel.example", "carries credentials"},
		{"TICKETBRIDGE_EMAIL_IMAP_URL", "smtps://mail.hotel.example", "imap (STARTTLS) or imaps"},
		{"TICKETBRIDGE_EMAIL_IMAP_URL", "", "IMAP_URL is not set"},
		{"TICKETBRIDGE_EMAIL_SMTP_URL", "", "SMTP_URL is not set"},
		{"TICKETBRIDGE_EMAIL_TO", "Front Desk <frontdesk@hotel.example>", "want a bare address"},
		{"TICKETBRIDGE_EMAIL_PASSWORD", "", "PASSWORD is not set"},
		{"TICKETBRIDGE_EMAIL_TOKEN_KEY", "short", "at least 16 bytes"},
		{"TICKETBRIDGE_EMAIL_ALLOW", "", "ALLOW is empty"},
		{"TICKETBRIDGE_EMAIL_ALLOW", "frontdesk", "want an address"},
		{"TICKETBRIDGE_EMAIL_SENT_FOLDER", "INBOX", "three different folders"},
	} {
		env := validEnv()
		env[c.key] = c.value
		_, err := LoadConfig(t.Context(), envconfig.MapLookuper(env))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s=%q: %v, want an error with %q", c.key, c.value, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "not-to-show") {
			t.Errorf("%s=%q: the error shows a secret: %v", c.key, c.value, err)
		}
	}
	cfg, _ := LoadConfig(t.Context(), envconfig.MapLookuper(validEnv()))
	var logs strings.Builder
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "email", cfg)
	for _, s := range []string{fmt.Sprintf("%v %+v %#v", cfg, cfg, cfg), logs.String()} {
		if strings.Contains(s, "not-to-show") || !strings.Contains(s, "[redacted]") {
			t.Errorf("the configuration shows a secret, or not that it is set: %s", s)
		}
	}
}

func TestSecretsFromFiles(t *testing.T) {
	dir := t.TempDir()
	pw, key := filepath.Join(dir, "pw"), filepath.Join(dir, "key")
	if err := os.WriteFile(pw, []byte("from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte("a key from a file, long enough\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := validEnv()
	delete(env, "TICKETBRIDGE_EMAIL_PASSWORD")
	delete(env, "TICKETBRIDGE_EMAIL_TOKEN_KEY")
	env["TICKETBRIDGE_EMAIL_PASSWORD_FILE"], env["TICKETBRIDGE_EMAIL_TOKEN_KEY_FILE"] = pw, key
	cfg, err := LoadConfig(t.Context(), envconfig.MapLookuper(env))
	if err != nil || cfg.Password != "from-a-file" || cfg.TokenKey != "a key from a file, long enough" {
		t.Fatalf("LoadConfig with secret files = %v, %v", cfg, err)
	}
	env["TICKETBRIDGE_EMAIL_PASSWORD"] = "both"
	if _, err := LoadConfig(t.Context(), envconfig.MapLookuper(env)); err == nil || !strings.Contains(err.Error(), "both set") {
		t.Errorf("password and password file both set: %v", err)
	}
}

// TestIMAPURLNeverEchoesAPassword: a mailbox address that does not parse,
// or names no host, is refused without quoting what was given: a password
// written into it stays out of the error.
func TestIMAPURLNeverEchoesAPassword(t *testing.T) {
	for _, raw := range []string{"imaps://bridge:s3cret-pw@", "imap://bridge:s3cret-pw@%zz:143"} {
		var s IMAPServer
		err := s.EnvDecode(raw)
		if err == nil {
			t.Fatalf("%q accepted", raw)
		}
		if strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}
