package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpx"
)

// TICKETBRIDGE_WEBHOOK_EVENTS adds ticket.updated to the three types
// every receiver has; it cannot leave one of them out or name another.
func TestConfigEvents(t *testing.T) {
	ctx := t.Context()
	env := func(events string) envconfig.Lookuper {
		return envconfig.MapLookuper(map[string]string{"TICKETBRIDGE_WEBHOOK_URL": "https://helpdesk.example/hooks",
			"TICKETBRIDGE_WEBHOOK_SECRET": testSecret, "TICKETBRIDGE_WEBHOOK_DIR": "/srv/hotel/webhook", "TICKETBRIDGE_WEBHOOK_EVENTS": events})
	}
	c, err := webhook.LoadConfig(ctx, env("ticket.created, message.added,status.changed,ticket.updated"), "")
	if err != nil || len(c.Events) != 4 || c.Events[3] != webhook.EventTicketUpdated {
		t.Errorf("with ticket.updated: %v, %v", c.Events, err)
	}
	for events, mention := range map[string]string{
		"ticket.created,message.added":                              "status.changed is missing",
		"ticket.created,message.added,status.changed,ticket.closed": `unknown event type "ticket.closed"`,
	} {
		if _, err := webhook.LoadConfig(ctx, env(events), ""); err == nil || !strings.Contains(err.Error(), mention) || !strings.Contains(err.Error(), "TICKETBRIDGE_WEBHOOK_EVENTS") {
			t.Errorf("%s: %v, want an error mentioning %q", events, err, mention)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte(testSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(dir, "loose")
	if err := os.WriteFile(loose, []byte(testSecret), 0o644); err != nil {
		t.Fatal(err)
	}
	shortFile := filepath.Join(dir, "short")
	if err := os.WriteFile(shortFile, []byte(testSecret[:31]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(dir, "creds")
	if err := os.Mkdir(creds, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(creds, "webhook-secret"), []byte(testSecret), 0o600); err != nil {
		t.Fatal(err)
	}

	base := map[string]string{"TICKETBRIDGE_WEBHOOK_URL": "https://helpdesk.example/hooks", "TICKETBRIDGE_WEBHOOK_SECRET": testSecret}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "<unset>" {
				delete(m, kv[i])
				continue
			}
			m[kv[i]] = kv[i+1]
		}
		return m
	}

	const stateDir = "/srv/hotel"
	c, err := webhook.LoadConfig(ctx, envconfig.MapLookuper(base), stateDir)
	if err != nil {
		t.Fatal(err)
	}
	want := webhook.Config{URL: "https://helpdesk.example/hooks", Secret: testSecret, Listen: webhook.DefaultListen, Dir: filepath.Join(stateDir, webhook.DefaultDir),
		Tolerance: 5 * time.Minute, Timeout: 30 * time.Second, Events: webhook.DefaultEvents}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("defaults: %+v\nwant %+v", c, want)
	}

	c, err = webhook.LoadConfig(ctx, envconfig.MapLookuper(with("STATE_DIRECTORY", "/var/lib/ticketbridge:/other", "TICKETBRIDGE_WEBHOOK_LISTEN", "off",
		"TICKETBRIDGE_WEBHOOK_TOLERANCE", "90s", "TICKETBRIDGE_WEBHOOK_TIMEOUT", "5s")), stateDir)
	if err != nil {
		t.Fatal(err)
	}
	if c.Dir != "/var/lib/ticketbridge/webhook" || c.Listen != "off" || c.Tolerance != 90*time.Second || c.Timeout != 5*time.Second {
		t.Errorf("systemd and overrides: %+v", c)
	}

	c, err = webhook.LoadConfig(ctx, envconfig.MapLookuper(with("TICKETBRIDGE_WEBHOOK_SECRET", "<unset>", "TICKETBRIDGE_WEBHOOK_SECRET_FILE", secretFile)), stateDir)
	if err != nil || c.Secret.Reveal() != testSecret {
		t.Errorf("secret file: %v (trimmed secret read: %v)", err, c.Secret.Reveal() == testSecret)
	}
	c, err = webhook.LoadConfig(ctx, envconfig.MapLookuper(with("TICKETBRIDGE_WEBHOOK_SECRET", "<unset>", "CREDENTIALS_DIRECTORY", creds)), stateDir)
	if err != nil || c.Secret.Reveal() != testSecret {
		t.Errorf("systemd credential: %v", err)
	}

	bad := []struct {
		env  map[string]string
		want string
	}{
		{with("TICKETBRIDGE_WEBHOOK_URL", "<unset>"), "TICKETBRIDGE_WEBHOOK_URL is not set"},
		{with("TICKETBRIDGE_WEBHOOK_URL", "ftp://x/y"), "TICKETBRIDGE_WEBHOOK_URL"},
		{with("TICKETBRIDGE_WEBHOOK_URL", "/relative"), "absolute"},
		{with("TICKETBRIDGE_WEBHOOK_SECRET", "<unset>"), "TICKETBRIDGE_WEBHOOK_SECRET_FILE"},
		{with("TICKETBRIDGE_WEBHOOK_SECRET", "short"), "TICKETBRIDGE_WEBHOOK_SECRET is 5 bytes long; want at least 32"},
		{with("TICKETBRIDGE_WEBHOOK_SECRET", testSecret[:31]), "TICKETBRIDGE_WEBHOOK_SECRET is 31 bytes long; want at least 32"},
		{with("TICKETBRIDGE_WEBHOOK_SECRET", "<unset>", "TICKETBRIDGE_WEBHOOK_SECRET_FILE", shortFile), "TICKETBRIDGE_WEBHOOK_SECRET_FILE: the secret in " + shortFile + " is 31 bytes long; want at least 32"},
		{with("TICKETBRIDGE_WEBHOOK_SECRET_FILE", secretFile), "both set"},
		{with("TICKETBRIDGE_WEBHOOK_SECRET", "<unset>", "TICKETBRIDGE_WEBHOOK_SECRET_FILE", loose), "chmod 600"},
		{with("TICKETBRIDGE_WEBHOOK_SECRET", "<unset>", "TICKETBRIDGE_WEBHOOK_SECRET_FILE", empty), "empty"},
		{with("TICKETBRIDGE_WEBHOOK_SECRET", "<unset>", "TICKETBRIDGE_WEBHOOK_SECRET_FILE", filepath.Join(dir, "missing")), "no such file"},
		{with("TICKETBRIDGE_WEBHOOK_LISTEN", "9465"), "TICKETBRIDGE_WEBHOOK_LISTEN"},
		{with("TICKETBRIDGE_WEBHOOK_TOLERANCE", "10ms"), "TICKETBRIDGE_WEBHOOK_TOLERANCE"},
		{with("TICKETBRIDGE_WEBHOOK_TOLERANCE", "soon"), "TICKETBRIDGE_WEBHOOK_TOLERANCE"},
		{with("TICKETBRIDGE_WEBHOOK_TIMEOUT", "-1s"), "TICKETBRIDGE_WEBHOOK_TIMEOUT"},
	}
	// No place beside a state file (the state is in PostgreSQL) and none
	// under systemd: the directory must be named, never the working one.
	if _, err := webhook.LoadConfig(ctx, envconfig.MapLookuper(base), ""); err == nil || !strings.Contains(err.Error(), "TICKETBRIDGE_WEBHOOK_DIR is not set") {
		t.Errorf("no state directory: error %v, want one asking for TICKETBRIDGE_WEBHOOK_DIR", err)
	}
	for _, b := range bad {
		_, err := webhook.LoadConfig(ctx, envconfig.MapLookuper(b.env), stateDir)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("env %v: error %v, want one mentioning %q", b.env, err, b.want)
		}
		if err != nil && strings.Contains(err.Error(), testSecret[:16]) {
			t.Errorf("error %q contains the secret", err)
		}
	}
}

func TestFactory(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{statuses: []int{204}}
	url := newLoopbackServer(t, rec)
	env := envconfig.MapLookuper(map[string]string{
		"TICKETBRIDGE_WEBHOOK_URL": url, "TICKETBRIDGE_WEBHOOK_SECRET": testSecret,
		"TICKETBRIDGE_WEBHOOK_DIR": dir, "TICKETBRIDGE_WEBHOOK_LISTEN": "127.0.0.1:0",
	})
	reg := adapters.Registry{webhook.Name: webhook.Factory}
	hd, err := reg.Open(t.Context(), "webhook", adapters.Deps{Env: env,
		StatusToHelpdesk: map[guestapi.Status]string{guestapi.StatusDone: "solved"}, StatusFromHelpdesk: map[string]guestapi.Status{"solved": guestapi.StatusDone}})
	if err != nil {
		t.Fatal(err)
	}
	defer hd.Close()
	a := hd.(*webhook.Adapter)
	if a.InboundURL() != "" {
		t.Errorf("the inbound endpoint is served before Start: %s", a.InboundURL())
	}
	if err := a.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.InboundURL(), "http://127.0.0.1:") || !strings.HasSuffix(a.InboundURL(), "/events") {
		t.Errorf("InboundURL %q", a.InboundURL())
	}
	if _, err := os.Stat(filepath.Join(dir, "meta.json")); err != nil {
		t.Errorf("the webhook directory was not set up: %v", err)
	}
	// The status overrides are in effect both ways.
	ref, err := a.EnsureTicket(t.Context(), upTicket("t-1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetStatus(t.Context(), ref, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	if got := rec.attempts(); len(got) != 2 || !strings.Contains(string(got[1].body), `"status":"solved"`) {
		t.Errorf("status delivery: %d attempts, last %s; want status solved", len(got), got[len(got)-1].body)
	}
	body := mustJSON(t, webhook.InboundEvent{ID: "rx-1", Type: "status", TicketID: "t-1", Status: "solved"})
	if status, ans := post(t, a.InboundURL(), testSecret, time.Now(), body); status != 200 {
		t.Fatalf("inbound solved: %d %+v", status, ans)
	}
	evs, _, err := a.Changes(t.Context(), "")
	if err != nil || len(evs) != 1 || evs[0].Status != guestapi.StatusDone {
		t.Fatalf("Changes = %+v, %v; want status done", evs, err)
	}

	if _, err := reg.Open(t.Context(), "webhook", adapters.Deps{Env: envconfig.MapLookuper(nil)}); err == nil || !strings.Contains(err.Error(), "TICKETBRIDGE_WEBHOOK_URL") {
		t.Errorf("Open without configuration: %v", err)
	}
}

// TestConstructionDoesNoIO: beside a running daemon's adapter (its port
// taken), a second adapter on the same address is made, used and closed
// without binding or touching its directory; only Start listens, and it
// names the variable when the port is taken.
func TestConstructionDoesNoIO(t *testing.T) {
	r := newRig(t, false)
	dir := filepath.Join(t.TempDir(), "webhook")
	cfg := webhook.Config{URL: "http://127.0.0.1:1/", Secret: testSecret, Dir: dir, Listen: strings.TrimSuffix(strings.TrimPrefix(r.a.InboundURL(), "http://"), "/events")}
	a, err := webhook.New(t.Context(), cfg, webhook.Options{})
	if err != nil {
		t.Fatalf("New beside a running adapter: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("New touched the webhook directory: %v", err)
	}
	if a.InboundURL() != "" {
		t.Fatalf("New serves %s", a.InboundURL())
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close without Start: %v", err)
	}
	b, err := webhook.New(t.Context(), cfg, webhook.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "TICKETBRIDGE_WEBHOOK_LISTEN") {
		t.Fatalf("Start on a busy address: %v", err)
	}
}

// The secret never shows: not in the configuration's or the adapter's
// printed forms, not in errors (also when the receiver echoes it), not in
// the log, not in the webhook directory.
func TestSecretNeverLeaks(t *testing.T) {
	r := newRig(t, false)
	ctx := t.Context()
	var texts []string
	for _, v := range []any{r.cfg, &r.cfg, r.a, r.cfg.Secret} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			texts = append(texts, fmt.Sprintf(verb, v))
		}
	}
	if b, err := r.cfg.Secret.MarshalText(); err == nil {
		texts = append(texts, string(b))
	}

	ref, err := r.a.EnsureTicket(ctx, upTicket("t-1"))
	if err != nil {
		t.Fatal(err)
	}
	// A receiver that echoes everything it got, secret included.
	r.answer(func(w http.ResponseWriter, req *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "bad request: secret was %s, headers %v", testSecret, req.Header)
	})
	_, err = r.a.Append(ctx, ref, []adapters.Message{guestMsg("m-1", "hi")})
	if err == nil {
		t.Fatal("Append against a refusing receiver succeeded")
	}
	texts = append(texts, err.Error(), fmt.Sprintf("%+v", err))
	if err := r.a.Check(ctx); err != nil {
		texts = append(texts, err.Error())
	}
	// Inbound refusals.
	status, ans := post(t, r.a.InboundURL(), "the-wrong-secret-0123456789", time.Now(), []byte(`{}`))
	texts = append(texts, fmt.Sprint(status, ans))
	_, err = webhook.LoadConfig(ctx, envconfig.MapLookuper(map[string]string{"TICKETBRIDGE_WEBHOOK_URL": "https://user:" + testSecret + "@x/", "TICKETBRIDGE_WEBHOOK_SECRET": testSecret[:10]}), "/srv/hotel")
	texts = append(texts, fmt.Sprint(err))
	_, err = webhook.LoadConfig(ctx, envconfig.MapLookuper(map[string]string{"TICKETBRIDGE_WEBHOOK_URL": "ht!tp://" + testSecret, "TICKETBRIDGE_WEBHOOK_SECRET": testSecret}), "/srv/hotel")
	texts = append(texts, fmt.Sprint(err))
	texts = append(texts, r.logs.String())
	if !strings.Contains(r.logs.String(), "retry") && !strings.Contains(r.logs.String(), "refused") {
		t.Log("note: the log holds no failure line")
	}
	filepath.WalkDir(r.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			texts = append(texts, string(b))
		}
		return nil
	})
	for _, s := range texts {
		if strings.Contains(s, testSecret) || strings.Contains(s, testSecret[:20]) {
			t.Errorf("the secret leaked into %q", s)
		}
	}
	if !strings.Contains(r.logs.String(), "inbound event refused") {
		t.Error("the inbound refusal was not logged; the leak check of the log covers less than it should")
	}
}

func TestCloseStopsServing(t *testing.T) {
	r := newRig(t, false)
	url := r.a.InboundURL()
	if err := r.a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// Refused at once by the kernel; the deadline only tells a hang from
	// a refusal, and a busy machine is far within it.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("{}"))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("the inbound endpoint still answers after Close")
	} else if errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("the request hung instead of being refused")
	}
}

// TestReadOnlyMakesNothing: an adapter opened for a dry run reads a
// webhook directory that does not exist yet as empty and makes nothing.
func TestReadOnlyMakesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "webhook")
	a, err := webhook.New(t.Context(), webhook.Config{URL: "http://127.0.0.1:1/", Secret: testSecret, Dir: dir, Listen: "127.0.0.1:0"}, webhook.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, ok, err := a.Lookup(t.Context(), "t-1"); ok || err != nil {
		t.Fatalf("Lookup: %t, %v", ok, err)
	}
	if evs, cur, err := a.Changes(t.Context(), ""); len(evs) != 0 || cur != "" || err != nil {
		t.Fatalf("Changes: %v, %q, %v", evs, cur, err)
	}
	if err := a.Start(t.Context()); err == nil {
		t.Fatal("Start of a read-only adapter succeeded")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a read-only adapter made its directory: %v", err)
	}
}

// TestFactoryTakesTheDaemonsChain: the factory sends its deliveries
// through the transport of adapters.Deps and asks its guard before each
// record: once the guard refuses, no delivery reaches the helpdesk and
// none is recorded.
func TestFactoryTakesTheDaemonsChain(t *testing.T) {
	rec := &recorder{statuses: []int{204}}
	url := newLoopbackServer(t, rec)
	env := envconfig.MapLookuper(map[string]string{
		"TICKETBRIDGE_WEBHOOK_URL": url, "TICKETBRIDGE_WEBHOOK_SECRET": testSecret,
		"TICKETBRIDGE_WEBHOOK_DIR": t.TempDir(), "TICKETBRIDGE_WEBHOOK_LISTEN": webhook.ListenOff,
	})
	errEnded := errors.New("the lease ended")
	var refuse atomic.Bool
	guard := func() error {
		if refuse.Load() {
			return errEnded
		}
		return nil
	}
	slots := httpx.NewSlots(1)
	hd, err := webhook.Factory(t.Context(), adapters.Deps{Env: env, Guard: guard,
		Transport: httpx.Chain{Slots: slots, Guard: guard}.Transport(nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hd.Close() })
	ref, err := hd.EnsureTicket(t.Context(), upTicket("t-1"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rec.attempts()); n != 1 || len(slots) != 0 {
		t.Fatalf("%d deliveries, %d slots held after; want 1 and 0", n, len(slots))
	}
	refuse.Store(true)
	if err := hd.SetStatus(t.Context(), ref, guestapi.StatusDone); err == nil || !strings.Contains(err.Error(), errEnded.Error()) {
		t.Errorf("SetStatus under a refusing guard = %v, want refused", err)
	}
	if n := len(rec.attempts()); n != 1 {
		t.Errorf("%d deliveries reached the helpdesk under a refusing guard, want none", n-1)
	}
	refuse.Store(false)
	if err := hd.SetStatus(t.Context(), ref, guestapi.StatusDone); err != nil {
		t.Errorf("SetStatus once the guard lets it = %v", err)
	}
	if n := len(rec.attempts()); n != 2 {
		t.Errorf("%d deliveries, want the status delivered once the guard lets it", n)
	}
}

// TestFactoryKeepsItsRecordsBesideTheState: without TICKETBRIDGE_WEBHOOK_DIR
// the records go into the state file's directory, never into the working
// directory.
func TestFactoryKeepsItsRecordsBesideTheState(t *testing.T) {
	work, stateDir := t.TempDir(), t.TempDir()
	t.Chdir(work)
	env := envconfig.MapLookuper(map[string]string{
		"TICKETBRIDGE_WEBHOOK_URL": "https://helpdesk.example/hooks", "TICKETBRIDGE_WEBHOOK_SECRET": testSecret,
		"TICKETBRIDGE_WEBHOOK_LISTEN": webhook.ListenOff,
	})
	hd, err := webhook.Factory(t.Context(), adapters.Deps{Env: env, StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := hd.Lookup(t.Context(), "t1"); err != nil { // opens the directory
		t.Fatal(err)
	}
	if err := hd.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(stateDir, webhook.DefaultDir)); err != nil || !fi.IsDir() {
		t.Errorf("no %s beside the state: %v", webhook.DefaultDir, err)
	}
	if left, err := os.ReadDir(work); err != nil || len(left) != 0 {
		t.Errorf("the working directory holds %v (%v), want nothing", left, err)
	}
}
