package config

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/internal/notify"
)

// TestNotifySettings: the notifications' variables are known (so a typo is
// warned about), a target that does not parse fails LoadNotify with an
// error naming the variable and not the URL's token, the status link is
// the console's external address, and a hotel file readable by its group
// that sets a target list, a ping URL or the mail password as a value is
// warned about, pointing at the _FILE form.
func TestNotifySettings(t *testing.T) {
	ctx := context.Background()
	known := KnownVariables(ctx)
	for _, v := range []string{"TICKETBRIDGE_NOTIFY_URLS", "TICKETBRIDGE_NOTIFY_URLS_FILE", "TICKETBRIDGE_NOTIFY_PING_URL_FILE",
		"TICKETBRIDGE_NOTIFY_SMTP_PASSWORD_FILE", "TICKETBRIDGE_NOTIFY_PING_PER"} {
		if !slices.Contains(known, v) {
			t.Errorf("%s is not a known variable", v)
		}
	}
	if got := Closest("TICKETBRIDGE_NOTIFY_URL", known); got != "TICKETBRIDGE_NOTIFY_URLS" {
		t.Errorf("closest to TICKETBRIDGE_NOTIFY_URL: %q", got)
	}

	const token = "T000/B000/tokenMARKER"
	_, err := LoadNotify(ctx, envconfig.MapLookuper(map[string]string{"TICKETBRIDGE_NOTIFY_URLS": "https://hooks.slack.com/services/" + token}))
	if err == nil || !strings.Contains(err.Error(), "TICKETBRIDGE_NOTIFY_URLS") || strings.Contains(err.Error(), "tokenMARKER") {
		t.Fatalf("a bare Slack URL: %v; want an error naming TICKETBRIDGE_NOTIFY_URLS without the token", err)
	}
	if _, err := LoadNotify(ctx, envconfig.MapLookuper(map[string]string{"TICKETBRIDGE_NOTIFY_REPEAT": "0s"})); err == nil || !strings.Contains(err.Error(), "TICKETBRIDGE_NOTIFY_REPEAT") {
		t.Fatalf("a zero repeat: %v", err)
	}
	n, err := LoadNotify(ctx, envconfig.MapLookuper(map[string]string{
		"TICKETBRIDGE_NOTIFY_URLS":          "slack+https://hooks.slack.com/services/" + token + " ntfy+https://ntfy.example.com/ops",
		"TICKETBRIDGE_CONSOLE_EXTERNAL_URL": " https://bridge.example.com/ ",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if n.StatusURL != "https://bridge.example.com/" || n.URLs == "" {
		t.Fatalf("loaded %q, status %q", n.URLs, n.StatusURL)
	}

	dir := t.TempDir()
	p := filepath.Join(dir, "seaside"+HotelSuffix)
	body := "TICKETBRIDGE_NOTIFY_PING_URL=https://hc-ping.example.com/" + token + "\nTICKETBRIDGE_NOTIFY_SMTP_PASSWORD=" + token + "\n"
	if err := os.WriteFile(p, []byte(body), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	files, err := ReadHotelsDir(dir, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range HotelSecrets(files[0]) {
		if strings.Contains(s.Warning(), "tokenMARKER") {
			t.Errorf("the warning shows the secret: %s", s.Warning())
		}
		got = append(got, s.Var+"->"+s.FileVar)
	}
	want := []string{"TICKETBRIDGE_NOTIFY_PING_URL->TICKETBRIDGE_NOTIFY_PING_URL_FILE", "TICKETBRIDGE_NOTIFY_SMTP_PASSWORD->TICKETBRIDGE_NOTIFY_SMTP_PASSWORD_FILE"}
	if !slices.Equal(got, want) {
		t.Errorf("hotel secrets %v, want %v", got, want)
	}
}

// TestHotelPingIsItsOwn: a hotel file names its own ping URL, or has
// none: with one ping per hotel (TICKETBRIDGE_NOTIFY_PING_PER=hotel), a
// hotel that inherited the main configuration's would ping it with its
// own outcome, and the hotels together would make it flap.
func TestHotelPingIsItsOwn(t *testing.T) {
	base := envconfig.MapLookuper(map[string]string{
		"TICKETBRIDGE_NOTIFY_PING_URL":      "https://hc-ping.example.com/main",
		"TICKETBRIDGE_NOTIFY_PING_FAIL_URL": "https://hc-ping.example.com/main/fail",
		"TICKETBRIDGE_NOTIFY_PING_PER":      "hotel",
	})
	none := hotelEnv(base, map[string]string{}, "seaside.db")
	for _, v := range []string{"TICKETBRIDGE_NOTIFY_PING_URL", "TICKETBRIDGE_NOTIFY_PING_URL_FILE",
		"TICKETBRIDGE_NOTIFY_PING_FAIL_URL", "TICKETBRIDGE_NOTIFY_PING_FAIL_URL_FILE"} {
		if got, _ := none.Lookup(v); got != "" {
			t.Errorf("a hotel file that sets no %s inherits the main configuration's %q", v, got)
		}
	}
	own := hotelEnv(base, map[string]string{"TICKETBRIDGE_NOTIFY_PING_URL": "https://hc-ping.example.com/seaside"}, "seaside.db")
	if got, _ := own.Lookup("TICKETBRIDGE_NOTIFY_PING_URL"); got != "https://hc-ping.example.com/seaside" {
		t.Errorf("the hotel's own ping URL reads %q", got)
	}
}

// TestHotelPingParsedOnce: a hotel's ping URL is parsed where its file is
// read, into the hotel's configuration; one that does not parse is the
// hotel's error, naming the variable and not the URL's token.
func TestHotelPingParsedOnce(t *testing.T) {
	ctx := context.Background()
	base := envconfig.MapLookuper(map[string]string{"TICKETBRIDGE_NOTIFY_PING_URL": "https://hc-ping.example.com/main"})
	if p, err := notify.LoadPing(ctx, hotelEnv(base, map[string]string{}, "seaside.db")); p != nil || err != nil {
		t.Errorf("a hotel that names no ping: %v, %v; want none", p, err)
	}
	if p, err := notify.LoadPing(ctx, hotelEnv(base, map[string]string{"TICKETBRIDGE_NOTIFY_PING_URL": "https://hc-ping.example.com/seaside"}, "seaside.db")); p == nil || err != nil {
		t.Errorf("a hotel's own ping: %v, %v", p, err)
	}
	_, err := notify.LoadPing(ctx, hotelEnv(base, map[string]string{"TICKETBRIDGE_NOTIFY_PING_URL": "ftp://tokenMARKER@hc-ping.example.com/x"}, "seaside.db"))
	if err == nil || !strings.Contains(err.Error(), "TICKETBRIDGE_NOTIFY_PING_URL") || strings.Contains(err.Error(), "tokenMARKER") {
		t.Errorf("a ping URL that does not parse: %v; want an error naming the variable, not the token", err)
	}
}
