package freshdesk_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/freshdesk"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

func TestLoadConfigDefaults(t *testing.T) {
	cfg, err := freshdesk.LoadConfig(context.Background(), envconfig.MapLookuper(map[string]string{
		"TICKETBRIDGE_FRESHDESK_URL":     "https://hotel.freshdesk.com/api/v2/",
		"TICKETBRIDGE_FRESHDESK_API_KEY": testKey,
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := freshdesk.Config{
		Common: saas.Common{URL: adapters.ParseURL("https://hotel.freshdesk.com/api/v2/"), Timeout: 30 * time.Second, PageSize: 100},
		Groups: freshdesk.Groups{}, APIKey: testKey, IDField: "cf_guest_request_id", StatusField: "cf_guest_request_status", Requester: "guest-requests@ticketbridge.invalid", Tag: "ticketbridge",
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("config %v, want %v", cfg, want)
	}
	a, err := freshdesk.New(cfg, adapters.Deps{}, freshdesk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.String(); got != "freshdesk adapter for https://hotel.freshdesk.com" {
		t.Errorf("String %q: the URL should lose /api/v2", got)
	}
}

func TestLoadConfigKeyFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "key")
	if err := os.WriteFile(file, []byte("  "+testKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TICKETBRIDGE_FRESHDESK_URL": "https://hotel.freshdesk.com", "TICKETBRIDGE_FRESHDESK_API_KEY_FILE": file}
	cfg, err := freshdesk.LoadConfig(context.Background(), envconfig.MapLookuper(env))
	if err != nil || cfg.APIKey != testKey {
		t.Fatalf("key file: %v, key read %q", err, cfg.APIKey)
	}
	env["TICKETBRIDGE_FRESHDESK_API_KEY"] = testKey
	if _, err := freshdesk.LoadConfig(context.Background(), envconfig.MapLookuper(env)); err == nil || !strings.Contains(err.Error(), "both set") {
		t.Errorf("key and key file: %v", err)
	}
	delete(env, "TICKETBRIDGE_FRESHDESK_API_KEY")
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env["TICKETBRIDGE_FRESHDESK_API_KEY_FILE"] = empty
	if _, err := freshdesk.LoadConfig(context.Background(), envconfig.MapLookuper(env)); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("empty key file: %v", err)
	}
	env["TICKETBRIDGE_FRESHDESK_API_KEY_FILE"] = filepath.Join(dir, "missing")
	if _, err := freshdesk.LoadConfig(context.Background(), envconfig.MapLookuper(env)); err == nil || !strings.Contains(err.Error(), "API_KEY_FILE") {
		t.Errorf("missing key file: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	good := freshdesk.Config{Common: saas.Common{URL: adapters.ParseURL("https://hotel.freshdesk.com")}, APIKey: testKey}
	if err := good.Validate(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*freshdesk.Config)
		want string
	}{
		{"no URL", func(c *freshdesk.Config) { c.URL = adapters.ParseURL("") }, "URL is not set"},
		{"plain http", func(c *freshdesk.Config) { c.URL = adapters.ParseURL("http://hotel.freshdesk.com") }, "use https"},
		{"userinfo", func(c *freshdesk.Config) { c.URL = adapters.ParseURL("https://k:X@hotel.freshdesk.com") }, "carries credentials"},
		{"query", func(c *freshdesk.Config) { c.URL = adapters.ParseURL("https://hotel.freshdesk.com?x=1") }, "query"},
		{"no key", func(c *freshdesk.Config) { c.APIKey = "" }, "API_KEY is not set"},
		{"key with space", func(c *freshdesk.Config) { c.APIKey = "ab cd" }, "white space"},
		{"id field", func(c *freshdesk.Config) { c.IDField = "guest_request_id" }, "ID_FIELD"},
		{"status field", func(c *freshdesk.Config) { c.StatusField = "cf_Status" }, "STATUS_FIELD"},
		{"same fields", func(c *freshdesk.Config) { c.StatusField = "cf_guest_request_id" }, "two fields"},
		{"requester", func(c *freshdesk.Config) { c.Requester = "nobody" }, "REQUESTER"},
		{"group", func(c *freshdesk.Config) { c.Group = -1 }, "GROUP"},
		{"tag", func(c *freshdesk.Config) { c.Tag = "a,b" }, "TAG"},
		{"timeout", func(c *freshdesk.Config) { c.Timeout = -time.Second }, "TIMEOUT"},
		{"page size", func(c *freshdesk.Config) { c.PageSize = 101 }, "PAGE_SIZE"},
	} {
		c := good
		tc.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), testKey) {
			t.Errorf("%s: the error shows the API key", tc.name)
		}
	}
	// The settings parsed when read say what is wrong as they are read.
	for v, want := range map[string]string{
		"TICKETBRIDGE_FRESHDESK_GROUPS=housekeeping=abc": `TICKETBRIDGE_FRESHDESK_GROUPS item "housekeeping=abc": "abc" is not a Freshdesk group id`,
		"TICKETBRIDGE_FRESHDESK_GROUPS=a=1,a=2":          `TICKETBRIDGE_FRESHDESK_GROUPS names department "a" twice`,
		"TICKETBRIDGE_FRESHDESK_SINCE=last week":         `TICKETBRIDGE_FRESHDESK_SINCE="last week": want a date`,
	} {
		k, val, _ := strings.Cut(v, "=")
		env := map[string]string{"TICKETBRIDGE_FRESHDESK_URL": "https://hotel.freshdesk.com", "TICKETBRIDGE_FRESHDESK_API_KEY": testKey, k: val}
		_, err := freshdesk.LoadConfig(t.Context(), envconfig.MapLookuper(env))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error holding %q", v, err, want)
		}
	}
	local := good
	local.URL = adapters.ParseURL("http://127.0.0.1:8080")
	if err := local.Validate(); err != nil {
		t.Errorf("plain http on loopback: %v", err)
	}
}

func TestParseGroups(t *testing.T) {
	got, err := freshdesk.ParseGroups(" housekeeping = 43000012345 , maintenance=7,")
	if err != nil || len(got) != 2 || got["housekeeping"] != 43000012345 || got["maintenance"] != 7 {
		t.Errorf("ParseGroups = %v, %v", got, err)
	}
}

func TestSecretsNeverShown(t *testing.T) {
	cfg := freshdesk.Config{Common: saas.Common{URL: adapters.ParseURL("https://hotel.freshdesk.com")}, APIKey: testKey}
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("config", "cfg", cfg)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "cfg", cfg)
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%v %+v %#v", cfg, cfg, cfg), logs.String()} {
		if strings.Contains(s, testKey) {
			t.Errorf("the API key shows in %q", s)
		}
	}
	if !strings.Contains(fmt.Sprint(cfg), "[redacted]") || strings.Count(logs.String(), "[redacted]") != 2 {
		t.Errorf("the printed forms should say a key is set: %q, %q", fmt.Sprint(cfg), logs.String())
	}
}

func TestStatusMapOverrides(t *testing.T) {
	cfg := freshdesk.Config{Common: saas.Common{URL: adapters.ParseURL("https://hotel.freshdesk.com")}, APIKey: testKey}
	a, err := freshdesk.New(cfg, adapters.Deps{
		StatusToHelpdesk:   map[guestapi.Status]string{guestapi.StatusInProgress: "pending", guestapi.StatusCancelled: "7"},
		StatusFromHelpdesk: map[string]guestapi.Status{"Closed": guestapi.StatusCompleted},
	}, freshdesk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := a.Status()
	if m.Down(guestapi.StatusInProgress) != "3" || m.Down(guestapi.StatusCancelled) != "7" || m.Down(guestapi.StatusDone) != "4" {
		t.Errorf("down: %v", m.ToHelpdesk)
	}
	if up, _ := m.Up("5"); up != guestapi.StatusCompleted {
		t.Errorf("up of closed: %s", up)
	}
	_, err = freshdesk.New(cfg, adapters.Deps{StatusToHelpdesk: map[guestapi.Status]string{guestapi.StatusDone: "solved"}}, freshdesk.Options{})
	if err == nil || !strings.Contains(err.Error(), "solved") {
		t.Errorf("an unknown Freshdesk status name: %v", err)
	}
}

func TestFactory(t *testing.T) {
	reg := adapters.Registry{freshdesk.Name: freshdesk.Factory}
	_, err := reg.Open(context.Background(), freshdesk.Name, adapters.Deps{Env: envconfig.MapLookuper(map[string]string{
		"TICKETBRIDGE_FRESHDESK_URL": "https://hotel.freshdesk.com",
	})})
	if err == nil || !strings.Contains(err.Error(), "API_KEY") {
		t.Errorf("factory without a key: %v", err)
	}
	hd, err := reg.Open(context.Background(), freshdesk.Name, adapters.Deps{Env: envconfig.MapLookuper(map[string]string{
		"TICKETBRIDGE_FRESHDESK_URL": "https://hotel.freshdesk.com", "TICKETBRIDGE_FRESHDESK_API_KEY": testKey,
	})})
	if err != nil {
		t.Fatal(err)
	}
	if err := hd.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := hd.Lookup(context.Background(), "x"); err == nil || errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("a closed adapter answered Lookup: %v", err)
	}
}
