package main

import (
	"bytes"
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/fleet"
	"github.com/ticketbridge/ticketbridge/internal/fleet/fleettest"
	"github.com/ticketbridge/ticketbridge/internal/telemetry"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// hotelKit is a hotel configured for the files adapter against a reference
// server, with the commands run in-process.
type hotelKit struct {
	t    *testing.T
	ts   *refservertest.TestServer
	dir  string
	vars map[string]string
}

func newBridge(t *testing.T) *hotelKit {
	t.Helper()
	fleettest.ClearServiceEnv(t)
	ts := refservertest.New(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "api-key")
	if err := os.WriteFile(keyFile, []byte(ts.Keys.TicketsWrite+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &hotelKit{t: t, ts: ts, dir: dir, vars: map[string]string{
		"TICKETBRIDGE_API_URL":      ts.URL,
		"TICKETBRIDGE_API_KEY_FILE": keyFile,
		"TICKETBRIDGE_ADAPTER":      "files",
		"TICKETBRIDGE_FILES_DIR":    filepath.Join(dir, "helpdesk"),
		"TICKETBRIDGE_FILES_SETTLE": "0s",
		"TICKETBRIDGE_STATE":        filepath.Join(dir, "state.db"),
		"TICKETBRIDGE_LOG_FORMAT":   "text",
		"TICKETBRIDGE_LOG_LEVEL":    "debug",
	}}
}

func (b *hotelKit) envFile() string {
	b.t.Helper()
	var s strings.Builder
	for k, v := range b.vars {
		s.WriteString(k + "=" + v + "\n")
	}
	path := filepath.Join(b.dir, "ticketbridge.env")
	if err := os.WriteFile(path, []byte(s.String()), 0o600); err != nil {
		b.t.Fatal(err)
	}
	return path
}

// cmd runs a command with --env-file and returns stdout, stderr and the
// exit code.
func (b *hotelKit) cmd(name string, args ...string) (string, string, int) {
	b.t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{name, "--env-file", b.envFile()}, args...)
	if name == "state" {
		full = append([]string{"state", args[0], "--env-file", b.envFile()}, args[1:]...)
	}
	err := run(context.Background(), full, &out, &errb)
	code := exitCode(err, &errb)
	return out.String(), errb.String(), code
}

func (b *hotelKit) ticket(desc string) string {
	b.t.Helper()
	tv, err := b.ts.Server.CreateTicket(b.ts.Org, refserver.NewTicket{Department: "housekeeping", TaskDescription: desc})
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := b.ts.Server.AddMessage(tv.ID, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, Body: "hello from " + desc}); err != nil {
		b.t.Fatal(err)
	}
	return tv.ID
}

// folder returns the helpdesk folder of an upstream ticket.
func (b *hotelKit) folder(id string) string {
	b.t.Helper()
	des, _ := os.ReadDir(filepath.Join(b.vars["TICKETBRIDGE_FILES_DIR"], "tickets"))
	for _, de := range des {
		if strings.HasSuffix(de.Name(), id[:8]) {
			return de.Name()
		}
	}
	b.t.Fatalf("no folder for ticket %s", id)
	return ""
}

func (b *hotelKit) drop(name, content string) string {
	b.t.Helper()
	p := filepath.Join(b.vars["TICKETBRIDGE_FILES_DIR"], "outbox", name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		b.t.Fatal(err)
	}
	return p
}

func (b *hotelKit) posts() int {
	n := 0
	for route, byStatus := range b.ts.Server.Stats().Requests {
		if strings.HasPrefix(route, "POST "+refserver.BasePath) {
			for _, c := range byStatus {
				n += c
			}
		}
	}
	return n
}

// mustContain checks that got holds each of wants, runs of spaces counting
// as one (tables align with spaces).
func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	squeeze := func(s string) string {
		return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' }), " ")
	}
	for _, w := range wants {
		if !strings.Contains(squeeze(got), squeeze(w)) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

// TestOnceStatusDryRunBackup drives the commands a hotel uses by hand.
func TestOnceStatusDryRunBackup(t *testing.T) {
	b := newBridge(t)
	a := b.ticket("towels")
	c := b.ticket("pillow")

	out, errOut, code := b.cmd("once")
	if code != 0 {
		t.Fatalf("once: exit %d\n%s\n%s", code, out, errOut)
	}
	mustContain(t, "once", out, "cycle", "ok", "helpdesk tickets created  2", "messages mirrored down    2")
	if strings.Contains(errOut, b.ts.Keys.TicketsWrite) {
		t.Fatal("the API key appears in the debug log")
	}

	out, _, code = b.cmd("status")
	if code != 0 {
		t.Fatalf("status: exit %d\n%s", code, out)
	}
	mustContain(t, "status", out, "2 tracked", a[:8], c[:8], "adapter files", "Last cycle")

	out, _, code = b.cmd("status", a[:8])
	if code != 0 {
		t.Fatalf("status TICKET: exit %d\n%s", code, out)
	}
	mustContain(t, "status TICKET", out, "Ticket         "+a, "Mirrored:", b.folder(a), "agreed status new", "Fields carried", "department ")

	// A dry run with a reply waiting: printed, not sent, the outbox file
	// stays, the state file is unchanged.
	reply := b.drop("reply.txt", "ticket: "+b.folder(a)+"\nkind: reply\nauthor: Maria\n\nOn their way.\n")
	before, _ := os.ReadFile(b.vars["TICKETBRIDGE_STATE"])
	posts := b.posts()
	out, errOut, code = b.cmd("once", "--dry-run")
	if code != 0 {
		t.Fatalf("once --dry-run: exit %d\n%s\n%s", code, out, errOut)
	}
	mustContain(t, "dry run", out, "would post a reply the guest sees to ticket "+a+` as "Maria": "On their way."`, "dry run: nothing was written")
	after, _ := os.ReadFile(b.vars["TICKETBRIDGE_STATE"])
	if !bytes.Equal(before, after) {
		t.Error("the dry run changed the state file")
	}
	if _, err := os.Stat(reply); err != nil {
		t.Error("the dry run moved the outbox file")
	}
	if b.posts() != posts {
		t.Error("the dry run posted upstream")
	}

	out, _, code = b.cmd("once")
	if code != 0 {
		t.Fatalf("once: exit %d\n%s", code, out)
	}
	mustContain(t, "once", out, "sent upstream                 1")
	out, _, _ = b.cmd("status", a)
	mustContain(t, "status TICKET", out, "Journal", "sent", "Posted by the bridge:")

	// A backup of the state file, while nothing holds it.
	dest := filepath.Join(t.TempDir(), "copy.db")
	out, errOut, code = b.cmd("state", "backup", dest)
	if code != 0 {
		t.Fatalf("state backup: exit %d\n%s\n%s", code, out, errOut)
	}
	st, err := state.Open(t.Context(), dest, state.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	stats, _ := st.Stats(t.Context())
	st.Close()
	if stats.Tickets != 2 {
		t.Fatalf("the backup holds %d tickets", stats.Tickets)
	}

	// A refused key fails the cycle with exit status 1.
	b.vars["TICKETBRIDGE_API_KEY_FILE"] = ""
	b.vars["TICKETBRIDGE_API_KEY"] = b.ts.Keys.Revoked
	out, errOut, code = b.cmd("once")
	if code != 1 || !strings.Contains(errOut, "refused (401)") || !strings.Contains(out, "failed") {
		t.Fatalf("once with a revoked key: exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, b.ts.Keys.Revoked) {
		t.Fatal("the revoked key appears in the output")
	}
}

// TestCommandsRefuseBadInput: bad flags, arguments and configuration get
// a clear error naming what is wrong.
func TestCommandsRefuseBadInput(t *testing.T) {
	b := newBridge(t)
	for _, tc := range []struct {
		args []string
		vars map[string]string
		code int
		says string
	}{
		{[]string{"once", "extra"}, nil, 2, `unexpected argument "extra"`},
		{[]string{"status", "a", "b"}, nil, 2, "at most one TICKET"},
		{[]string{"state", "restore"}, nil, 2, `unknown command "restore"`},
		{[]string{"status"}, nil, 1, "no state file at"},
		{[]string{"once"}, map[string]string{"TICKETBRIDGE_SCHEDULE": "every minute"}, 1, "TICKETBRIDGE_SCHEDULE"},
		{[]string{"once"}, map[string]string{"TICKETBRIDGE_CONCURRENCY": "lots"}, 1, `TICKETBRIDGE_CONCURRENCY="lots"`},
		{[]string{"once"}, map[string]string{"TICKETBRIDGE_BACKFILL": "open"}, 1, `TICKETBRIDGE_BACKFILL: unknown status "open"`},
		{[]string{"once"}, map[string]string{"TICKETBRIDGE_ADAPTER": "jira"}, 1, `TICKETBRIDGE_ADAPTER="jira"`},
		{[]string{"once"}, map[string]string{"TICKETBRIDGE_API_URL": ""}, 1, "TICKETBRIDGE_API_URL is not set"},
		{[]string{"run"}, map[string]string{"TICKETBRIDGE_STATUS_FROM_HELPDESK": "solved=confirmed"}, 1, "TICKETBRIDGE_STATUS_FROM_HELPDESK"},
	} {
		saved := map[string]*string{}
		for k, v := range tc.vars {
			if old, ok := b.vars[k]; ok {
				saved[k] = &old
			} else {
				saved[k] = nil
			}
			b.vars[k] = v
		}
		out, errOut, code := b.cmd(tc.args[0], tc.args[1:]...)
		if code != tc.code || !strings.Contains(out+errOut, tc.says) {
			t.Errorf("%v %v: exit %d, want %d and %q:\n%s%s", tc.args, tc.vars, code, tc.code, tc.says, out, errOut)
		}
		for k, v := range saved {
			if v == nil {
				delete(b.vars, k)
			} else {
				b.vars[k] = *v
			}
		}
	}
	for _, name := range []string{"run", "once", "status", "demo", "state"} {
		var out, errb bytes.Buffer
		err := run(context.Background(), []string{name, "--help"}, &out, &errb)
		if exitCode(err, &errb) != 0 || !strings.Contains(out.String(), "Usage: ticketbridge "+name) {
			t.Errorf("%s --help: %v\n%s%s", name, err, out.String(), errb.String())
		}
	}
}

// TestDaemonStatusWhileRunning runs the daemon in-process: status reads its
// snapshot while it holds the state, state backup says what to do, SIGUSR1
// makes a copy, and a cancel stops it cleanly.
func TestDaemonStatusWhileRunning(t *testing.T) {
	b := newBridge(t)
	a := b.ticket("towels")
	b.vars["TICKETBRIDGE_SCHEDULE"] = "@every 1h"
	ef := envFlag{path: b.envFile()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src, cfg, sc, log, err := loadEnv(ctx, &ef, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	cycles := make(chan sync.Report, 4)
	backups := make(chan error, 1)
	hc, err := config.LoadHotels(ctx, src.Env)
	if err != nil {
		t.Fatal(err)
	}
	fo := fleetOptions(src, cfg, sc, hc, log, telemetry.Options{WatchdogEvery: -1, Notify: func(string) error { return nil }})
	fo.AfterCycle = func(_ string, r sync.Report, _ error) { cycles <- r }
	fo.AfterBackup = func(_ string, err error) { backups <- err }
	done := make(chan error, 1)
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	go func() { done <- serveFleet(ctx, fleet.New(ctx, fo), fo, nil, usr1) }()
	if r := <-cycles; r.Created != 1 {
		t.Fatalf("first cycle: %s", r)
	}

	out, errOut, code := b.cmd("status")
	if code != 0 {
		t.Fatalf("status: exit %d\n%s%s", code, out, errOut)
	}
	mustContain(t, "status while running", out, "The daemon is running", a[:8], "1 tracked")
	out, _, code = b.cmd("status", a[:8])
	mustContain(t, "status TICKET while running", out, "The daemon is running", "Ticket         "+a)
	if code != 0 {
		t.Fatalf("status TICKET: exit %d", code)
	}
	out, errOut, code = b.cmd("state", "backup", filepath.Join(t.TempDir(), "x.db"))
	if code != 1 || !strings.Contains(errOut, "SIGUSR1") {
		t.Fatalf("state backup while running: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = b.cmd("once")
	if code != 1 || !strings.Contains(errOut, "is the daemon running?") {
		t.Fatalf("once while running: exit %d\n%s%s", code, out, errOut)
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if err := <-backups; err != nil {
		t.Fatalf("backup: %v", err)
	}
	if _, err := os.Stat(b.vars["TICKETBRIDGE_STATE"] + bridge.BackupSuffix); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(b.vars["TICKETBRIDGE_STATE"] + bridge.StatusSuffix)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("status snapshot: %v, mode %v", err, fi.Mode())
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("daemon: %v", err)
		}
	case <-time.After(time.Minute): // a hang's report, not a timing
		t.Fatal("the daemon did not stop")
	}
}
