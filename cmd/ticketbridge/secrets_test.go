package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ticketbridge/ticketbridge/adapters/zendesk/zendeskfake"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
	"github.com/ticketbridge/ticketbridge/state/statetest"
	"github.com/ticketbridge/ticketbridge/sync"
)

// TestSecretsNeverShow runs the daemon with its state in PostgreSQL,
// reached through a proxy the test cuts, and every secret of its
// configuration a marker of its own: the database password and a value in
// the database URL's query, the API key, the helpdesk's token (Zendesk,
// against a local fake) or the webhook secret, and the console token. The
// daemon lives through a database outage; then the commands meet a failed
// migration and a refused login (a wrong password, a marker too). No log
// line, no command's output or error, no /readyz, /metrics or status page
// (signed in or not) shows any marker.
func TestSecretsNeverShow(t *testing.T) {
	base := os.Getenv(statetest.Env) // before newBridge clears the environment
	if base == "" {
		t.Skip(statetest.SkipMessage)
	}
	for _, adapter := range []string{"zendesk", "webhook"} {
		t.Run(adapter, func(t *testing.T) { testSecretsNeverShow(t, base, adapter) })
	}
}

func testSecretsNeverShow(t *testing.T, base, adapter string) {
	marker := func(what string) string {
		var b [12]byte
		_, _ = rand.Read(b[:])
		return what + "-marker-" + hex.EncodeToString(b[:])
	}
	u, err := url.Parse(statetest.SchemaURL(t, base))
	if err != nil {
		t.Fatal(err)
	}
	dbPassword, _ := u.User.Password()
	secrets := map[string]string{
		"the database password":          dbPassword,
		"the database URL's query value": marker("query"),
		"the wrong database password":    marker("wrongpw"),
		"the console token":              consoleToken,
	}
	q := u.Query()
	q.Set("application_name", secrets["the database URL's query value"])
	u.RawQuery = q.Encode()
	proxy := newPGProxy(t, u.String())

	b := newBridge(t)
	secrets["the API key"] = b.ts.Keys.TicketsWrite
	a := b.ticket("towels")
	b.vars["TICKETBRIDGE_STATE"] = proxy.url
	b.vars["TICKETBRIDGE_LOG_LEVEL"] = "debug"
	switch adapter {
	case "zendesk":
		token := marker("zendesk")
		secrets["the Zendesk token"] = token
		zd := httptest.NewServer(zendeskfake.New(zendeskfake.Options{Token: token}))
		t.Cleanup(zd.Close)
		b.vars["TICKETBRIDGE_ADAPTER"] = "zendesk"
		b.vars["TICKETBRIDGE_ZENDESK_URL"] = zd.URL
		b.vars["TICKETBRIDGE_ZENDESK_EMAIL"] = "agent@example.com"
		b.vars["TICKETBRIDGE_ZENDESK_TOKEN"] = token
	case "webhook":
		secret := marker("webhook")
		secrets["the webhook secret"] = secret
		hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
		t.Cleanup(hooks.Close)
		b.vars["TICKETBRIDGE_ADAPTER"] = "webhook"
		b.vars["TICKETBRIDGE_WEBHOOK_URL"] = hooks.URL + "/hooks"
		b.vars["TICKETBRIDGE_WEBHOOK_SECRET"] = secret
		b.vars["TICKETBRIDGE_WEBHOOK_DIR"] = filepath.Join(b.dir, "webhook")
		b.vars["TICKETBRIDGE_WEBHOOK_LISTEN"] = testutil.ClosedPort(t)
	}
	for name, v := range secrets {
		if len(v) < 8 {
			t.Fatalf("%s %q is too short to look for", name, v)
		}
	}

	// seen keeps every text the test read, by where it came from.
	var seen []string
	see := func(where, text string) { seen = append(seen, where+":\n"+text) }
	cmd := func(what string, args ...string) (string, int) {
		t.Helper()
		out, errOut, code := b.cmd(args[0], args[1:]...)
		see(what, out+errOut)
		return out + errOut, code
	}

	d := startConsoleDaemon(t, b, nil)
	d.until(t, 30, "that syncs", func(r sync.Report) bool { return r.Synced })
	jar, _ := cookiejar.New(nil)
	signedIn := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(c *http.Client, path string) string {
		t.Helper()
		resp, err := c.Get("http://" + d.addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	form := get(signedIn, "/login")
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(form)
	if m == nil {
		t.Fatalf("no CSRF token in the sign-in form:\n%s", form)
	}
	resp, err := signedIn.PostForm("http://"+d.addr+"/login", url.Values{"name": {"Ines"}, "token": {consoleToken}, "csrf": {m[1]}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %s", resp.Status)
	}
	pages := func(when string) {
		t.Helper()
		for _, p := range []string{"/readyz", "/healthz", "/metrics", "/", "/tickets", "/tickets/" + a, "/journal"} {
			see(when+" GET "+p, get(http.DefaultClient, p))
			see(when+" GET "+p+" signed in", get(signedIn, p))
		}
	}
	pages("running")
	cmd("status while running", "status")

	// A database outage: cycles fail, the status snapshot cannot be read.
	proxy.Cut()
	d.until(t, 30, "that fails", func(r sync.Report) bool { return !r.Synced })
	d.until(t, 30, "that fails", func(r sync.Report) bool { return !r.Synced })
	pages("in the outage")
	if body := get(http.DefaultClient, "/readyz"); !strings.Contains(body, "not ready") {
		t.Errorf("/readyz in the outage:\n%s", body)
	}
	cmd("status in the outage", "status")
	cmd("check in the outage", "check")
	proxy.Restore()
	d.until(t, 60, "that syncs again", func(r sync.Report) bool { return r.Synced })
	pages("after the outage")

	// A migration that fails: the schema holds a table of the name the
	// first migration creates.
	mu, err := url.Parse(statetest.SchemaURL(t, base))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, mu.String())
	if err != nil {
		t.Fatal("connect to the test database")
	}
	_, err = conn.Exec(ctx, `CREATE TABLE ticketbridge_hotels (x int)`)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pu, _ := url.Parse(proxy.url)
	mu.Host = pu.Host
	mq := mu.Query()
	mq.Set("application_name", secrets["the database URL's query value"])
	mu.RawQuery = mq.Encode()
	b.vars["TICKETBRIDGE_STATE"] = mu.String()
	delete(b.vars, "TICKETBRIDGE_LISTEN") // the commands on their own, not through the daemon
	if out, code := cmd("once on a failing migration", "once"); code == 0 || !strings.Contains(out, "migrate schema 0 to 1") {
		t.Errorf("once on a failing migration: exit %d\n%s", code, out)
	}
	cmd("check on a failing migration", "check")

	// A login the database refuses.
	wrong, _ := url.Parse(proxy.url)
	wrong.User = url.UserPassword(wrong.User.Username(), secrets["the wrong database password"])
	b.vars["TICKETBRIDGE_STATE"] = wrong.String()
	if out, code := cmd("once with a wrong password", "once"); code == 0 || !strings.Contains(out, "password authentication failed") {
		t.Errorf("once with a wrong password: exit %d\n%s", code, out)
	}
	cmd("status with a wrong password", "status")
	cmd("check with a wrong password", "check")

	d.stop()
	d.stop = nil
	logs := d.logs.String()
	see("the daemon's log", logs)
	if !strings.Contains(logs, "write status snapshot") {
		t.Errorf("the daemon did not log the snapshot it could not write in the outage:\n%s", logs)
	}
	for _, text := range seen {
		where, text, _ := strings.Cut(text, ":\n")
		for _, line := range strings.Split(text, "\n") {
			for name, v := range secrets {
				if strings.Contains(line, v) {
					t.Errorf("%s shows in %s: %s", name, where, line)
				}
			}
		}
	}
}
