package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/fleet"
	"github.com/ticketbridge/ticketbridge/internal/statuspage"
	"github.com/ticketbridge/ticketbridge/internal/telemetry"
	"github.com/ticketbridge/ticketbridge/sync"
)

const consoleToken = "test-console-token-0123456789abcdef"

// consoleDaemon is the daemon run in-process with its listener, the status
// page and a console token, against the bridge's reference server and
// files helpdesk, one cycle a second.
type consoleDaemon struct {
	b      *hotelKit
	addr   string
	cycles chan sync.Report
	logs   *lockedWriter // read while the daemon writes
	stop   func()

	refuse atomic.Bool // the API refuses posts for good (400)
	broken atomic.Value
}

func startConsoleDaemon(t *testing.T, b *hotelKit, setup func(*consoleDaemon)) *consoleDaemon {
	t.Helper()
	tokFile := filepath.Join(b.dir, "console-token")
	if err := os.WriteFile(tokFile, []byte(consoleToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b.vars["TICKETBRIDGE_LISTEN"] = "127.0.0.1:0"
	b.vars["TICKETBRIDGE_CONSOLE_TOKEN_FILE"] = tokFile
	b.vars["TICKETBRIDGE_SCHEDULE"] = "@every 1s"
	d := &consoleDaemon{b: b, cycles: make(chan sync.Report, 100), logs: &lockedWriter{w: &bytes.Buffer{}}}
	d.broken.Store("")
	if setup != nil {
		setup(d)
	}
	b.ts.Server.SetHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		switch {
		case d.refuse.Load() && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"invalid_request","message":"injected refusal"}`))
		case d.broken.Load() != "" && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/tickets/"+d.broken.Load().(string)):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"error":"internal_error","message":"injected failure"}`))
		default:
			next.ServeHTTP(w, r)
		}
	})
	ef := envFlag{path: b.envFile()}
	ctx, cancel := context.WithCancel(context.Background())
	src, cfg, sc, log, err := loadEnv(ctx, &ef, d.logs)
	if err != nil {
		t.Fatal(err)
	}
	env := src.Env
	tc, err := config.LoadTelemetry(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := config.LoadHotels(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	fo := fleetOptions(src, cfg, sc, hc, log, telemetry.Options{Listen: tc.Listen, CycleMax: tc.CycleMax, WatchdogEvery: -1})
	fo.AfterCycle = func(_ string, r sync.Report, _ error) {
		select {
		case d.cycles <- r:
		default:
		}
	}
	tel := fo.Telemetry
	done := make(chan error, 1)
	go func() { done <- serveFleet(ctx, fleet.New(ctx, fo), fo, nil, nil) }()
	d.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
		delete(b.vars, "TICKETBRIDGE_LISTEN")
	}
	t.Cleanup(func() {
		if d.stop != nil {
			d.stop()
		}
	})
	d.next(t) // the listener is up once a cycle ended
	d.addr = tel.Addr().String()
	b.vars["TICKETBRIDGE_LISTEN"] = d.addr // for the commands run meanwhile
	return d
}

// next waits for the next cycle's report.
func (d *consoleDaemon) next(t *testing.T) sync.Report {
	t.Helper()
	select {
	case r := <-d.cycles:
		return r
	case <-time.After(time.Minute): // a hang's report, not a timing
		t.Fatal("no cycle in a minute")
	}
	return sync.Report{}
}

// drain drops the reports of the cycles that ended so far: call it right
// before an action, so that until counts only cycles that may see it
// (on a loaded machine reports pile up while a test does other things).
func (d *consoleDaemon) drain() {
	for {
		select {
		case <-d.cycles:
		default:
			return
		}
	}
}

// until waits at most n cycles for one that cond accepts.
func (d *consoleDaemon) until(t *testing.T, n int, what string, cond func(sync.Report) bool) sync.Report {
	t.Helper()
	for range n {
		if r := d.next(t); cond(r) {
			return r
		}
	}
	t.Fatalf("no cycle %s in %d cycles", what, n)
	return sync.Report{}
}

// snapshot reads the daemon's status snapshot file.
// snapshotCycles is how many cycles of a second a test waits for the
// status snapshot to show a change: the daemon takes it at most every
// snapshotEvery (10 s) when taking it is slow, as on a loaded machine.
const snapshotCycles = 15

func (d *consoleDaemon) snapshot(t *testing.T) sync.Status {
	t.Helper()
	s, err := bridge.ReadSnapshot(d.b.vars["TICKETBRIDGE_STATE"] + bridge.StatusSuffix)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type lockedWriter struct {
	mu gosync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// countUpstream counts the upstream messages of ticket id with body.
func countUpstream(t *testing.T, b *hotelKit, id, body string) int {
	t.Helper()
	v, err := b.ts.Server.Ticket(id)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range v.Messages {
		if strings.TrimSpace(m.Body) == body {
			n++
		}
	}
	return n
}

// TestRetryAndSkipCommandsWhileRunning: with the daemon running (and
// holding the state), `retry` and `skip` go through its listener with the
// console token; a retried reply reaches the guest once, a skipped one
// never. Stopped, the commands change the state file themselves.
func TestRetryAndSkipCommandsWhileRunning(t *testing.T) {
	b := newBridge(t)
	a := b.ticket("towels")
	c := b.ticket("pillows")
	if _, errOut, code := b.cmd("once"); code != 0 {
		t.Fatalf("once: %s", errOut)
	}
	const replyA, replyC = "Fresh towels are on the way.", "Extra pillows are on the way."
	b.drop("a.txt", "ticket: "+a+"\nkind: reply\nauthor: Ana\n\n"+replyA+"\n")
	b.drop("c.txt", "ticket: "+c+"\nkind: reply\nauthor: Ana\n\n"+replyC+"\n")

	d := newConsoleDaemonRefusing(t, b)
	snap := d.snapshot(t)
	if len(snap.Failed) != 2 {
		t.Fatalf("refused entries in the snapshot: %+v", snap.Failed)
	}
	event := map[string]string{}
	for _, e := range snap.Failed {
		event[e.Ticket] = e.EventID
	}
	if out, _, _ := b.cmd("status"); !strings.Contains(out, "ticketbridge retry EVENT") {
		t.Errorf("status with refused entries does not say how to retry them:\n%s", out)
	}
	d.refuse.Store(false)

	// Without the token the daemon refuses.
	tok := b.vars["TICKETBRIDGE_CONSOLE_TOKEN_FILE"]
	delete(b.vars, "TICKETBRIDGE_CONSOLE_TOKEN_FILE")
	if _, errOut, code := b.cmd("retry", event[a]); code != 1 || !strings.Contains(errOut, "TICKETBRIDGE_CONSOLE_TOKEN_FILE") {
		t.Fatalf("retry without a token: exit %d %s", code, errOut)
	}
	b.vars["TICKETBRIDGE_CONSOLE_TOKEN_FILE"] = tok

	d.drain()
	out, errOut, code := b.cmd("retry", event[a])
	if code != 0 || !strings.Contains(out, "retry: entry "+event[a]) {
		t.Fatalf("retry while running: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := b.cmd("skip", event[c]); code != 2 || !strings.Contains(errOut, "--reason is required") {
		t.Fatalf("skip without a reason: exit %d %s", code, errOut)
	}
	out, errOut, code = b.cmd("skip", event[c], "--reason", "told the guest in person")
	if code != 0 || !strings.Contains(out, "abandoned") {
		t.Fatalf("skip while running: exit %d\n%s%s", code, out, errOut)
	}
	d.until(t, 5, "sending the retried reply", func(r sync.Report) bool { return r.Sent == 1 })
	d.next(t)
	d.next(t)
	// log asks the running daemon too: the trail names the refusals, who
	// retried and skipped, and the retried reply sent.
	out, errOut, code = b.cmd("log", a)
	if code != 0 {
		t.Fatalf("log while running: exit %d\n%s%s", code, out, errOut)
	}
	mustContain(t, "log while running", out, "to platform reply refused helpdesk change", "to platform retry ok operator command (cli:",
		"to platform reply ok helpdesk change")
	if out, _, _ = b.cmd("log", c, "--json"); !strings.Contains(out, `"kind":"skip","ref"`) || !strings.Contains(out, `"detail":"told the guest in person"`) {
		t.Errorf("log --json while running lacks the skip:\n%s", out)
	}
	if n := countUpstream(t, b, a, replyA); n != 1 {
		t.Errorf("the retried reply reached the guest %d times, want 1", n)
	}
	if n := countUpstream(t, b, c, replyC); n != 0 {
		t.Errorf("the skipped reply reached the guest %d times, want 0", n)
	}
	logs := d.logs.String()
	for _, want := range []string{"action=retry who=cli:", "action=skip who=cli:", `reason="told the guest in person"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("daemon log lacks %s", want)
		}
	}
	d.stop()
	d.stop = nil

	// Stopped: the command opens the state itself; a sent entry is refused.
	out, errOut, code = b.cmd("skip", event[a], "--reason", "too late")
	if code != 1 || !strings.Contains(errOut, "not possible in this state") {
		t.Fatalf("skip of a sent entry: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = b.cmd("retry", event[c])
	if code != 0 || !strings.Contains(out, "pending again") {
		t.Fatalf("retry of a skipped entry with the daemon stopped: exit %d\n%s%s", code, out, errOut)
	}
	var st sync.Status
	out, _, _ = b.cmd("status", "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Pending) != 1 || st.Pending[0].EventID != event[c] {
		t.Fatalf("status after the retry: %v\n%s", err, out)
	}
	if _, errOut, code := b.cmd("retry", "no-such-entry"); code != 1 || !strings.Contains(errOut, "no journal entry") {
		t.Errorf("retry of an unknown id: exit %d %s", code, errOut)
	}
}

// newConsoleDaemonRefusing starts the daemon with the API refusing posts
// and waits for the cycle that journals and refuses them.
func newConsoleDaemonRefusing(t *testing.T, b *hotelKit) *consoleDaemon {
	t.Helper()
	d := startConsoleDaemon(t, b, func(d *consoleDaemon) { d.refuse.Store(true) })
	for range snapshotCycles {
		if len(d.snapshot(t).Failed) > 0 {
			return d
		}
		d.next(t)
	}
	t.Fatalf("no entry refused in %d cycles", snapshotCycles)
	return d
}

func TestRetrySkipUsage(t *testing.T) {
	for _, name := range []string{"retry", "skip"} {
		var out, errb bytes.Buffer
		err := run(context.Background(), []string{name, "--help"}, &out, &errb)
		if exitCode(err, &errb) != 0 || !strings.Contains(out.String(), "Usage: ticketbridge "+name+" ID") {
			t.Errorf("%s --help: %v\n%s%s", name, err, out.String(), errb.String())
		}
		errb.Reset()
		if code := exitCode(run(context.Background(), []string{name}, &out, &errb), &errb); code != 2 || !strings.Contains(errb.String(), "want the ID") {
			t.Errorf("%s without ID: exit %d %s", name, code, errb.String())
		}
	}
}

// stubPage is a status page that accepts POST on /act only.
type stubPage struct{}

func (stubPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusNoContent)
}
func (stubPage) AcceptsPost(r *http.Request) bool { return r.URL.Path == "/act" }

// TestListenerAllowsPostToThePageOnly: the listener takes POST for the
// page's forms only, and its body limit stays.
func TestListenerAllowsPostToThePageOnly(t *testing.T) {
	tel := telemetry.New(nil, telemetry.Options{CycleMax: 20 * time.Minute})
	h := tel.Handler(stubPage{})
	for _, c := range []struct {
		method, path string
		body         string
		want         int
	}{
		{"GET", "/", "", http.StatusNoContent},
		{"POST", "/act", "a=b", http.StatusNoContent},
		{"POST", "/metrics", "", http.StatusMethodNotAllowed},
		{"POST", "/", "", http.StatusMethodNotAllowed},
		{"PUT", "/act", "", http.StatusMethodNotAllowed},
	} {
		req, _ := http.NewRequest(c.method, c.path, strings.NewReader(c.body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, rec.Code, c.want)
		}
	}
}

func TestConsoleTokenConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	short := strings.Repeat("s", statuspage.MinTokenLen-1) // 31 bytes
	shortFile := write("short", short+"\n", 0o600)
	good := write("good", consoleToken+"\n", 0o600)
	for _, c := range []struct {
		file, want string
	}{
		{"", ""},
		{good, ""},
		{shortFile, "TICKETBRIDGE_CONSOLE_TOKEN_FILE: " + shortFile + ": the console token is 31 bytes long; want 32 or more"},
		{filepath.Join(dir, "missing"), "TICKETBRIDGE_CONSOLE_TOKEN_FILE: read console token file"},
		// A group with other members is refused too: package secretfile's
		// tests show it, on account files of their own.
		{write("world", consoleToken, 0o604), "readable by other users: every user may (mode -rw----r--); run chmod 600"},
		// Who may change the token may sign in with one of theirs.
		{write("group-writable", consoleToken, 0o620), "writable by other users: its group may change it (mode -rw--w----); run chmod 600"},
	} {
		cs, err := config.LoadConsole(context.Background(), envconfig.MapLookuper(map[string]string{"TICKETBRIDGE_CONSOLE_TOKEN_FILE": c.file}))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("token file %q: %v", c.file, err)
		case c.want == "" && c.file == "" && cs.Token != "":
			t.Errorf("no token file: token %q", cs.Token)
		case c.want == "" && c.file == good && string(cs.Token) != consoleToken:
			t.Errorf("token file %s: token %q", c.file, cs.Token)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), short) || strings.Contains(err.Error(), consoleToken)):
			t.Errorf("token file %s: %v, want an error with %q and without the token", c.file, err, c.want)
		}
	}
}

// The service passes the token as the credential console-token, found in
// $CREDENTIALS_DIRECTORY as the API key is; the unit's default for a
// missing /etc/ticketbridge/console-token is a blank credential (one
// newline), which keeps the page read-only.
func TestConsoleTokenFromCredentials(t *testing.T) {
	creds := t.TempDir()
	env := envconfig.MapLookuper(map[string]string{"CREDENTIALS_DIRECTORY": creds})
	if cs, err := config.LoadConsole(context.Background(), env); err != nil || cs.Token != "" {
		t.Fatalf("no credential: %q, %v", cs.Token, err)
	}
	p := filepath.Join(creds, config.ConsoleCredential)
	if err := os.WriteFile(p, []byte("\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	if cs, err := config.LoadConsole(context.Background(), env); err != nil || cs.Token != "" {
		t.Fatalf("blank credential: %q, %v", cs.Token, err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(consoleToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cs, err := config.LoadConsole(context.Background(), env); err != nil || string(cs.Token) != consoleToken {
		t.Fatalf("credential: %q, %v", cs.Token, err)
	}
	if err := os.WriteFile(p, []byte("0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.LoadConsole(context.Background(), env); err == nil || !strings.Contains(err.Error(), "the credential console-token: "+p+": the console token is 16 bytes long; want 32 or more") || strings.Contains(err.Error(), "0123456789abcdef") {
		t.Fatalf("short credential: %v", err)
	}
	if err := os.Chmod(p, 0o604); err != nil {
		t.Fatal(err)
	}
	if _, err := config.LoadConsole(context.Background(), env); !errors.Is(err, config.ErrKeyFileOpen) {
		t.Fatalf("a credential every user may read: %v", err)
	}
}

func TestConsoleCookieAndProxyConfig(t *testing.T) {
	for _, c := range []struct {
		vars   map[string]string
		secure bool
		want   string
	}{
		{map[string]string{}, false, ""},
		{map[string]string{"TICKETBRIDGE_CONSOLE_EXTERNAL_URL": "https://bridge.example.com/"}, true, ""},
		{map[string]string{"TICKETBRIDGE_CONSOLE_EXTERNAL_URL": "http://10.0.0.5:9464/"}, false, ""},
		{map[string]string{"TICKETBRIDGE_CONSOLE_EXTERNAL_URL": "https://bridge.example.com/", "TICKETBRIDGE_CONSOLE_SECURE_COOKIE": "false"}, false, ""},
		{map[string]string{"TICKETBRIDGE_CONSOLE_SECURE_COOKIE": "true"}, true, ""},
		{map[string]string{"TICKETBRIDGE_CONSOLE_SECURE_COOKIE": "sometimes"}, false, `TICKETBRIDGE_CONSOLE_SECURE_COOKIE="sometimes": want true or false`},
		{map[string]string{"TICKETBRIDGE_CONSOLE_EXTERNAL_URL": "bridge.example.com"}, false, `TICKETBRIDGE_CONSOLE_EXTERNAL_URL="bridge.example.com": want the address`},
		{map[string]string{"TICKETBRIDGE_CONSOLE_TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/8"}, false, ""},
		{map[string]string{"TICKETBRIDGE_CONSOLE_TRUSTED_PROXIES": "127.0.0.1, nginx"}, false, `TICKETBRIDGE_CONSOLE_TRUSTED_PROXIES: entry "nginx" is neither an address nor a network`},
		{map[string]string{"TICKETBRIDGE_CONSOLE_ALLOWED_HOSTS": "bridge.internal, 10.0.0.5:9464"}, false, ""},
		{map[string]string{"TICKETBRIDGE_CONSOLE_ALLOWED_HOSTS": "bridge.internal, https://ops.example.org/"}, false, `TICKETBRIDGE_CONSOLE_ALLOWED_HOSTS: entry "https://ops.example.org/" is a URL`},
	} {
		cs, err := config.LoadConsole(context.Background(), envconfig.MapLookuper(c.vars))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.vars, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: %v, want an error with %q", c.vars, err, c.want)
		case c.want == "" && cs.SecureCookie != c.secure:
			t.Errorf("%v: secure cookie %v, want %v", c.vars, cs.SecureCookie, c.secure)
		}
	}
	cs, _ := config.LoadConsole(context.Background(), envconfig.MapLookuper(map[string]string{"TICKETBRIDGE_CONSOLE_TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/8"}))
	if len(cs.TrustedProxies) != 2 || cs.TrustedProxies[1].String() != "10.0.0.0/8" {
		t.Errorf("trusted proxies %v", cs.TrustedProxies)
	}
}

// TestStatusPageAnswersItsHostsOnly: the daemon's page answers for the
// host it listens on, the loopback names, the external URL's host and
// TICKETBRIDGE_CONSOLE_ALLOWED_HOSTS, and refuses any other (a site whose
// name it turned to 127.0.0.1, DNS rebinding) with 421, the CLI's retry
// included; /metrics, /healthz and /readyz answer whatever the host, as
// scrapes and probes use any.
func TestStatusPageAnswersItsHostsOnly(t *testing.T) {
	b := newBridge(t)
	b.ticket("towels")
	d := startConsoleDaemon(t, b, func(d *consoleDaemon) {
		d.b.vars["TICKETBRIDGE_CONSOLE_EXTERNAL_URL"] = "https://bridge.example.com/"
		d.b.vars["TICKETBRIDGE_CONSOLE_ALLOWED_HOSTS"] = "bridge.internal, 10.9.8.7"
	})
	_, port, _ := strings.Cut(d.addr, ":")
	ask := func(method, path, host string, hdr map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+d.addr+path, nil)
		req.Host = host
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body bytes.Buffer
		body.ReadFrom(resp.Body)
		return resp.StatusCode, body.String()[:min(body.Len(), 300)]
	}
	for _, host := range []string{d.addr, "localhost:" + port, "bridge.example.com", "bridge.internal:" + port, "10.9.8.7:" + port} {
		if code, body := ask("GET", "/", host, nil); code != http.StatusOK {
			t.Errorf("GET / for host %s: %d\n%s", host, code, body)
		}
	}
	bearer := map[string]string{"Authorization": "Bearer " + consoleToken}
	for _, host := range []string{"evil.example:" + port, "10.1.2.3:" + port} {
		for _, c := range []struct {
			method, path string
			hdr          map[string]string
		}{{"GET", "/", nil}, {"GET", "/tickets", nil}, {"POST", "/retry?id=x", bearer}} {
			if code, body := ask(c.method, c.path, host, c.hdr); code != http.StatusMisdirectedRequest || !strings.Contains(body, "TICKETBRIDGE_CONSOLE_ALLOWED_HOSTS") {
				t.Errorf("%s %s for host %s: %d, want 421 naming TICKETBRIDGE_CONSOLE_ALLOWED_HOSTS:\n%s", c.method, c.path, host, code, body)
			}
		}
		for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
			if code, body := ask("GET", path, host, nil); code == http.StatusMisdirectedRequest {
				t.Errorf("GET %s for host %s: refused\n%s", path, host, body)
			}
		}
	}
}
