package zammad_test

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
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/adapters/zammad"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

func baseEnv() map[string]string {
	return map[string]string{
		"TICKETBRIDGE_ZAMMAD_URL":      "https://helpdesk.hotel.example/",
		"TICKETBRIDGE_ZAMMAD_TOKEN":    testToken,
		"TICKETBRIDGE_ZAMMAD_CUSTOMER": testCustomer,
	}
}

func TestLoadConfigDefaults(t *testing.T) {
	cfg, err := zammad.LoadConfig(t.Context(), envconfig.MapLookuper(baseEnv()))
	if err != nil {
		t.Fatal(err)
	}
	want := zammad.Config{
		Common: saas.Common{URL: adapters.ParseURL("https://helpdesk.hotel.example/"), Timeout: 30 * time.Second, PageSize: 100},
		Groups: zammad.Groups{}, Token: testToken, Customer: testCustomer, Group: "Users", IDField: "guest_request_id", PendingFor: 24 * time.Hour,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("LoadConfig = %v\nwant        %v", cfg, want)
	}
}

func TestLoadConfigTokenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	if err := os.WriteFile(path, []byte("  "+testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := baseEnv()
	delete(env, "TICKETBRIDGE_ZAMMAD_TOKEN")
	env["TICKETBRIDGE_ZAMMAD_TOKEN_FILE"] = path
	cfg, err := zammad.LoadConfig(t.Context(), envconfig.MapLookuper(env))
	if err != nil || cfg.Token != testToken {
		t.Fatalf("LoadConfig with a token file = %v, %v", cfg, err)
	}
	env["TICKETBRIDGE_ZAMMAD_TOKEN"] = testToken
	if _, err := zammad.LoadConfig(t.Context(), envconfig.MapLookuper(env)); err == nil || !strings.Contains(err.Error(), "both set") {
		t.Errorf("token and token file: %v, want an error saying both are set", err)
	}
	delete(env, "TICKETBRIDGE_ZAMMAD_TOKEN")
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env["TICKETBRIDGE_ZAMMAD_TOKEN_FILE"] = empty
	if _, err := zammad.LoadConfig(t.Context(), envconfig.MapLookuper(env)); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty token file: %v", err)
	}
	env["TICKETBRIDGE_ZAMMAD_TOKEN_FILE"] = filepath.Join(dir, "missing")
	if _, err := zammad.LoadConfig(t.Context(), envconfig.MapLookuper(env)); err == nil || !strings.Contains(err.Error(), "TOKEN_FILE") {
		t.Errorf("missing token file: %v", err)
	}
}

func TestLoadConfigRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		key, value, want string
	}{
		{"TICKETBRIDGE_ZAMMAD_URL", "", "URL is not set"},
		{"TICKETBRIDGE_ZAMMAD_URL", "http://helpdesk.hotel.example", "use https"},
		{"TICKETBRIDGE_ZAMMAD_URL", "https://user:pw@helpdesk.hotel.example", "carries credentials"},
		{"TICKETBRIDGE_ZAMMAD_URL", "ftp://helpdesk.hotel.example", "scheme must be https"},
		{"TICKETBRIDGE_ZAMMAD_URL", "https://helpdesk.hotel.example/?x=1", "remove the query"},
		{"TICKETBRIDGE_ZAMMAD_TOKEN", "", "TOKEN is not set"},
		{"TICKETBRIDGE_ZAMMAD_TOKEN", "two words", "white space"},
		{"TICKETBRIDGE_ZAMMAD_CUSTOMER", "", "CUSTOMER is not set"},
		{"TICKETBRIDGE_ZAMMAD_CUSTOMER", "Guests <g@hotel.example>", "one email address or login"},
		{"TICKETBRIDGE_ZAMMAD_ID_FIELD", "Guest-Request", "ID_FIELD"},
		{"TICKETBRIDGE_ZAMMAD_GROUP", "A,B", "GROUP"},
		{"TICKETBRIDGE_ZAMMAD_GROUPS", "housekeeping", "want department=Group name"},
		{"TICKETBRIDGE_ZAMMAD_GROUPS", "spa=Spa,spa=Wellness", "twice"},
		{"TICKETBRIDGE_ZAMMAD_EVENTS_SINCE", "yesterday", "EVENTS_SINCE"},
		{"TICKETBRIDGE_ZAMMAD_PENDING_FOR", "10s", "PENDING_FOR"},
		{"TICKETBRIDGE_ZAMMAD_PAGE_SIZE", "201", "PAGE_SIZE"},
		{"TICKETBRIDGE_ZAMMAD_TIMEOUT", "soon", "TIMEOUT"},
	} {
		env := baseEnv()
		env[tc.key] = tc.value
		_, err := zammad.LoadConfig(t.Context(), envconfig.MapLookuper(env))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%q: %v, want an error containing %q", tc.key, tc.value, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), testToken) {
			t.Errorf("%s=%q: the error shows the token: %v", tc.key, tc.value, err)
		}
	}
}

func TestLoopbackHTTPAccepted(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:3000", "http://localhost:3000/api/v1/", "http://[::1]:3000"} {
		env := baseEnv()
		env["TICKETBRIDGE_ZAMMAD_URL"] = u
		if _, err := zammad.LoadConfig(t.Context(), envconfig.MapLookuper(env)); err != nil {
			t.Errorf("URL %s: %v", u, err)
		}
	}
}

func TestParseGroups(t *testing.T) {
	got, err := zammad.ParseGroups(" housekeeping = Housekeeping , maintenance=Technical Service::Night,")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["housekeeping"] != "Housekeeping" || got["maintenance"] != "Technical Service::Night" {
		t.Errorf("ParseGroups = %v", got)
	}
}

// TestConfigNeverShowsToken prints the configuration and the adapter every
// way a log line or an error might.
func TestConfigNeverShowsToken(t *testing.T) {
	cfg, err := zammad.LoadConfig(t.Context(), envconfig.MapLookuper(baseEnv()))
	if err != nil {
		t.Fatal(err)
	}
	a, err := zammad.New(cfg, adapters.Deps{}, zammad.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("config", "cfg", cfg, "adapter", a)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("config", "cfg", cfg)
	printed := []string{
		fmt.Sprint(cfg), fmt.Sprintf("%v %+v %#v", cfg, cfg, cfg),
		fmt.Sprint(a), fmt.Sprintf("%v %+v %#v %s", a, a, a, a), buf.String(),
	}
	for _, p := range printed {
		if strings.Contains(p, testToken) {
			t.Errorf("the token is shown: %s", p)
		}
	}
	if !strings.Contains(printed[1], "[redacted]") || strings.Count(buf.String(), "[redacted]") != 2 {
		t.Errorf("the printed forms do not say a token is set: %s / %s", printed[1], buf.String())
	}
}

func TestFactory(t *testing.T) {
	hd, err := zammad.Factory(context.Background(), adapters.Deps{
		Env:              envconfig.MapLookuper(baseEnv()),
		StatusToHelpdesk: map[guestapi.Status]string{guestapi.StatusInProgress: "pending reminder"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer hd.Close()
	if hd.Name() != "zammad" {
		t.Errorf("Name = %q", hd.Name())
	}
	a := hd.(*zammad.Adapter)
	if got := a.Status().Down(guestapi.StatusInProgress); got != "pending reminder" {
		t.Errorf("override not applied: in_progress maps to %q", got)
	}
	if got := a.Status().Down(guestapi.StatusDone); got != "closed" {
		t.Errorf("default lost: done maps to %q", got)
	}
	if _, err := zammad.Factory(context.Background(), adapters.Deps{Env: envconfig.MapLookuper(map[string]string{})}); err == nil {
		t.Error("Factory without configuration succeeded")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.EnsureTicket(context.Background(), adapters.Ticket{UpstreamID: "x"}); err == nil || errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("EnsureTicket on a closed adapter: %v, want a plain error", err)
	}
}
