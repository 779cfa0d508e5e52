package sync_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/adapters/zendesk"
	"github.com/ticketbridge/ticketbridge/adapters/zendesk/zendeskfake"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/redact"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// TestSecretsNeverLogged captures every log line of a whole run, the
// engine's, the API client's and the helpdesk adapter's, all at debug, and
// searches them, the errors and the state file for the credentials: the
// API key (a good one and a revoked one) and the helpdesk's token, as they
// are and as the Basic authorization they travel in. The run goes through
// failures on both sides, servers that echo the credentials back in their
// error pages, a refused key and a refused helpdesk token.
func TestSecretsNeverLogged(t *testing.T) {
	const (
		email    = "bridge@hotel.example"
		token    = "zd-secret-token-5e1f9a7c3b2d"
		badToken = "zd-wrong-token-0a9b8c7d6e5f"
	)
	e := newEnv(t)
	debug := func() *slog.Logger {
		return slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	e.wrapAPI = func(tbsync.API) tbsync.API {
		c, err := guestapi.New(guestapi.Config{BaseURL: e.ts.URL, APIKey: e.key, HTTPClient: e.ts.Client(), Now: e.clock.Now,
			Sleep: e.clock.Sleep, Logger: debug()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	fake := zendeskfake.New(zendeskfake.Options{Email: email, Token: token})
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	zdToken := token
	e.wrapHD = func(adapters.Helpdesk) adapters.Helpdesk {
		hd, err := zendesk.New(zendesk.Config{Common: saas.Common{URL: adapters.ParseURL(srv.URL)}, Email: email, Token: redact.Secret(zdToken)},
			adapters.Deps{Logger: debug().With("adapter", zendesk.Name)},
			zendesk.Options{HTTP: srv.Client(), Sleep: e.clock.Sleep})
		if err != nil {
			t.Fatal(err)
		}
		return hd
	}
	secrets := map[string]string{
		"API key":                e.ts.Keys.TicketsWrite,
		"revoked API key":        e.ts.Keys.Revoked,
		"helpdesk token":         token,
		"wrong helpdesk token":   badToken,
		"helpdesk authorization": base64.StdEncoding.EncodeToString([]byte(email + "/token:" + token)),
		"wrong authorization":    base64.StdEncoding.EncodeToString([]byte(email + "/token:" + badToken)),
	}

	a := e.newTicket("a")
	b := e.newTicket("b")
	var errs []string
	run := func() tbsync.Report {
		t.Helper()
		e.clock.Advance(2 * time.Minute)
		if e.engine == nil {
			e.open()
		}
		rep, err := e.engine.RunCycle(context.Background())
		if err != nil {
			errs = append(errs, err.Error())
		}
		for _, f := range rep.Failures {
			errs = append(errs, f.Error)
		}
		return rep
	}
	run()
	zendeskID := func(id string) int64 {
		for _, tk := range fake.Tickets() {
			if tk.ExternalID == "ticketbridge:"+id {
				return tk.ID
			}
		}
		t.Fatalf("no Zendesk ticket for %s", id)
		return 0
	}
	agent := fake.AddAgent("Maria")

	// Servers that echo the credentials they were sent in their errors.
	echo := func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"error":"internal_error","message":"proxy saw ` + r.Header.Get("Authorization") + `"}`))
	}
	echoHTML := func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`<html><head><title>Bad request from ` + r.Header.Get("Authorization") + `</title></head></html>`))
	}
	e.ts.Server.SetHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, a):
			echo(w, r, next)
		case r.Method == http.MethodPost:
			echoHTML(w, r, next)
		default:
			next.ServeHTTP(w, r)
		}
	})
	for _, f := range []zendeskfake.Fault{
		{Method: http.MethodGet, Path: "/api/v2/incremental", Status: 500, Body: `{"error":"echo","token":"` + token + `","authorization":"Basic ` + secrets["helpdesk authorization"] + `"}`},
		{Method: http.MethodPut, Path: "/api/v2/tickets", Status: 429, RetryAfter: "7", Body: "slow down, " + token, Times: 2},
		{Method: http.MethodPut, Path: "/api/v2/tickets", Status: 502, Body: "<html>" + token + "</html>", AfterApply: true},
	} {
		fake.Inject(f)
	}
	e.guest(a, "towels please")
	e.guest(b, "and a pillow")
	if _, err := fake.Reply(zendeskID(b), agent, "On its way."); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		run()
	}
	e.ts.Server.SetHook(nil)
	fake.ClearFaults()
	e.clock.Advance(2 * time.Hour)
	for range 4 {
		run()
	}

	// A refused API key, then a refused helpdesk token.
	e.key = e.ts.Keys.Revoked
	e.open()
	run()
	e.key = e.ts.Keys.TicketsWrite
	zdToken = badToken
	e.open()
	if _, err := fake.Reply(zendeskID(a), agent, "Coming."); err != nil {
		t.Fatal(err)
	}
	e.guest(a, "thanks")
	e.clock.Advance(2 * time.Hour)
	run()

	e.store.Close()
	raw, err := os.ReadFile(e.path)
	if err != nil {
		t.Fatal(err)
	}
	e.store = nil
	logs := e.logs.String()
	for _, want := range []string{"level=DEBUG", "api request", "cycle details", "adapter=zendesk", "proxy saw", "HTTP 401"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q: the run did not go where the test means it to", want)
		}
	}
	all := strings.Join(errs, "\n")
	for name, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("the %s appears in the log", name)
		}
		if strings.Contains(all, s) {
			t.Errorf("the %s appears in an error", name)
		}
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("the %s appears in the state file", name)
		}
	}
	t.Logf("%d bytes of log, %d errors, %d bytes of state searched", len(logs), len(errs), len(raw))
}
