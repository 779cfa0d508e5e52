package main

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/freshdesk"
	"github.com/ticketbridge/ticketbridge/adapters/rt"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/adapters/zammad"
	"github.com/ticketbridge/ticketbridge/adapters/zendesk"
	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/check"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/redact"
	"github.com/ticketbridge/ticketbridge/state"
)

// urlMarker stands for a secret put in a URL: in its user part and in a
// query value. No error, page or log line may show it.
const urlMarker = "url-secret-7c1e9a"

// secretURLs are wrong values of a URL variable, each holding urlMarker,
// each meant to reach another of a check's messages: credentials, a query,
// a wrong scheme, no host, a value that does not parse, a space.
func secretURLs(scheme, host string) []string {
	return []string{
		scheme + "://bob:" + urlMarker + "@" + host + "/x",
		scheme + "://" + host + "/x?api_key=" + urlMarker,
		scheme + "://" + host + "/x?api_key=" + urlMarker + "#" + urlMarker,
		"ftp://" + host + "/x?api_key=" + urlMarker,
		"ftp://bob:" + urlMarker + "@" + host + "/x?api_key=" + urlMarker,
		scheme + ":///x?api_key=" + urlMarker,
		scheme + "://bob:" + urlMarker + "@[::1:bad/x?api_key=" + urlMarker,
		scheme + "://" + host + "/x?api_key=" + urlMarker + " # a comment",
	}
}

// TestURLErrorsHideSecrets: every URL variable's check says what is wrong
// without the password or a query value of the URL.
func TestURLErrorsHideSecrets(t *testing.T) {
	// A webhook receiver may take a token in its URL: such a URL passes,
	// and the adapter's description hides it.
	webhookURL := func(v string) error {
		c := webhook.Config{URL: v, Secret: redact.Secret(strings.Repeat("s", 64)), Dir: t.TempDir(), Listen: webhook.ListenOff}
		if err := c.Validate(); err != nil {
			return err
		}
		a, err := webhook.New(t.Context(), c, webhook.Options{})
		if err != nil {
			return err
		}
		defer a.Close()
		return errors.New(a.String())
	}
	checks := map[string]func(v string) error{
		"TICKETBRIDGE_API_URL": func(v string) error { return config.CheckAPIURL(v, false) },
		"TICKETBRIDGE_RT_URL": func(v string) error {
			return rt.Config{URL: adapters.ParseURL(v), Token: "rt-token-0123456789"}.Validate()
		},
		"TICKETBRIDGE_ZENDESK_URL": func(v string) error {
			return zendesk.Config{Common: saas.Common{URL: adapters.ParseURL(v)}, Email: "a@b.example", Token: "zendesk-token-0123456789"}.Validate()
		},
		"TICKETBRIDGE_FRESHDESK_URL": func(v string) error {
			return freshdesk.Config{Common: saas.Common{URL: adapters.ParseURL(v)}, APIKey: "freshdesk-token-0123456789"}.Validate()
		},
		"TICKETBRIDGE_ZAMMAD_URL": func(v string) error {
			return zammad.Config{Common: saas.Common{URL: adapters.ParseURL(v)}, Token: "zammad-token-0123456789"}.Validate()
		},
		"TICKETBRIDGE_WEBHOOK_URL": webhookURL,
	}
	for name, check := range checks {
		for _, v := range secretURLs("https", "helpdesk.example") {
			err := check(v)
			if err == nil {
				t.Errorf("%s=%s passed its check", name, v)
				continue
			}
			if strings.Contains(err.Error(), urlMarker) {
				t.Errorf("%s=%s: the error shows the secret: %v", name, v, err)
			}
		}
	}
	// A configuration printed or logged shows its URL as redact does.
	for _, v := range secretURLs("https", "helpdesk.example") {
		for _, c := range []any{rt.Config{URL: adapters.ParseURL(v)}, zendesk.Config{Common: saas.Common{URL: adapters.ParseURL(v)}}, freshdesk.Config{Common: saas.Common{URL: adapters.ParseURL(v)}}, zammad.Config{Common: saas.Common{URL: adapters.ParseURL(v)}}} {
			var logged bytes.Buffer
			slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "config", c)
			if text := fmt.Sprintf("%v %+v %#v %s", c, c, c, logged.String()); strings.Contains(text, urlMarker) {
				t.Errorf("a %T of URL %s prints the secret: %s", c, v, text)
			}
		}
	}
	// The state URL: nothing listens on port 1, and a value that is no
	// PostgreSQL URL fails to parse.
	for _, v := range append(secretURLs("postgres", "127.0.0.1:1"),
		"postgres://bob:"+urlMarker+"@127.0.0.1:1/db?sslmode=nonsense&password="+urlMarker,
		"postgres://bob:"+urlMarker+"@127.0.0.1:1/db?connect_timeout=x&options="+urlMarker) {
		if !state.IsURL(v) {
			continue
		}
		s, err := state.Open(t.Context(), v, state.Options{Hotel: "default"})
		if err == nil {
			s.Close()
			t.Errorf("TICKETBRIDGE_STATE=%s opened", v)
			continue
		}
		if strings.Contains(err.Error(), urlMarker) {
			t.Errorf("TICKETBRIDGE_STATE=%s: the error shows the secret: %v", v, err)
		}
		if got := state.Redacted(v); strings.Contains(got, urlMarker) {
			t.Errorf("state.Redacted(%s) = %s", v, got)
		}
	}
}

// TestHotelNotReadyHidesURLSecrets: a hotel whose URL is wrong is named
// not ready, with the reason, on /readyz and on the list of hotels, which
// anyone who reaches the listener may read: the reason hides the URL's
// secrets.
func TestHotelNotReadyHidesURLSecrets(t *testing.T) {
	fx := newFleetFixture(t)
	fx.WriteHotel("good", nil)
	fx.WriteHotel("badapi", map[string]string{"TICKETBRIDGE_API_URL": "https://api.example/x?api_key=" + urlMarker})
	fx.WriteHotel("badrt", map[string]string{"TICKETBRIDGE_ADAPTER": "rt",
		"TICKETBRIDGE_RT_URL": "https://rt.example/?api_key=" + urlMarker, "TICKETBRIDGE_RT_TOKEN": "rt-token-0123456789"})
	fx.WriteHotel("badzendesk", map[string]string{"TICKETBRIDGE_ADAPTER": "zendesk",
		"TICKETBRIDGE_ZENDESK_URL":   "ftp://bob:" + urlMarker + "@zd.example/?api_key=" + urlMarker,
		"TICKETBRIDGE_ZENDESK_EMAIL": "a@b.example", "TICKETBRIDGE_ZENDESK_TOKEN": "zendesk-token-0123456789"})
	fx.start()
	fx.WaitCycles("good")
	code, ready := fx.get("/readyz")
	for _, h := range []string{"badapi", "badrt", "badzendesk"} {
		if code != 503 || !strings.Contains(ready, "hotel "+h+": not ready") {
			t.Errorf("/readyz does not name %s not ready: %d\n%s", h, code, ready)
		}
	}
	_, list := fx.get("/")
	for _, want := range []string{"TICKETBRIDGE_API_URL", "TICKETBRIDGE_RT_URL", "TICKETBRIDGE_ZENDESK_URL"} {
		if !strings.Contains(ready, want) || !strings.Contains(list, want) {
			t.Errorf("the reasons do not name %s:\n%s\n%s", want, ready, list)
		}
	}
	for what, text := range map[string]string{"/readyz": ready, "the list of hotels": list} {
		if strings.Contains(text, urlMarker) {
			t.Errorf("%s shows a URL's secret:\n%s", what, text)
		}
	}
}

// TestStateConnectionStringHidesPassword: TICKETBRIDGE_STATE in the other
// forms pgx reads, a keyword/value connection string or a URL with its
// scheme in capitals, names the database (not a file of that name), and
// neither check nor the error of a command that opens the state shows its
// password. Nothing listens on port 1.
func TestStateConnectionStringHidesPassword(t *testing.T) {
	t.Chdir(t.TempDir()) // a value taken for a relative path would make a file here
	for _, v := range []string{
		"host=127.0.0.1 port=1 user=tb password=" + urlMarker + " dbname=tb sslmode=disable",
		"POSTGRES://tb:" + urlMarker + "@127.0.0.1:1/tb?sslmode=disable",
	} {
		b := newBridge(t)
		b.vars["TICKETBRIDGE_STATE"] = v
		out, code, verdicts := runChecks(t, b.envFile(), check.Options{Registry: bridge.Adapters(), Timeout: 5 * time.Second})
		if code == 0 || verdicts["state database"] != check.Fail {
			t.Errorf("check of TICKETBRIDGE_STATE=%s: exit %d, want a failed state database:\n%s", state.Redacted(v), code, out)
		}
		if strings.Contains(out, urlMarker) || !strings.Contains(out, "127.0.0.1") {
			t.Errorf("check shows the password, or not the host:\n%s", out)
		}
		for _, cmd := range []string{"status", "once"} {
			stdout, stderr, code := b.cmd(cmd)
			if code == 0 || strings.Contains(stdout+stderr, urlMarker) || !strings.Contains(stderr, "127.0.0.1") || !strings.Contains(stderr, "failed to connect") {
				t.Errorf("%s with TICKETBRIDGE_STATE=%s: exit %d, want an error connecting to the database, without the password:\n%s%s", cmd, state.Redacted(v), code, stdout, stderr)
			}
		}
	}
}
