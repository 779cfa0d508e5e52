package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/check"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/fleet/fleettest"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// hotel is a working configuration against a reference server.
type hotel struct {
	t    *testing.T
	ts   *refservertest.TestServer
	dir  string
	vars map[string]string
}

func newHotel(t *testing.T) *hotel {
	t.Helper()
	fleettest.ClearServiceEnv(t)
	ts := refservertest.New(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "api-key")
	writeFile(t, keyFile, ts.Keys.TicketsWrite+"\n", 0o600)
	return &hotel{t: t, ts: ts, dir: dir, vars: map[string]string{
		"TICKETBRIDGE_API_URL":      ts.URL,
		"TICKETBRIDGE_API_KEY_FILE": keyFile,
		"TICKETBRIDGE_ADAPTER":      "files",
		"TICKETBRIDGE_FILES_DIR":    filepath.Join(dir, "helpdesk"),
		"TICKETBRIDGE_STATE":        filepath.Join(dir, "state", "state.db"),
		"TICKETBRIDGE_LISTEN":       "127.0.0.1:9464",
	}}
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// envFile writes the hotel's variables to a file.
func (h *hotel) envFile() string {
	h.t.Helper()
	var b strings.Builder
	b.WriteString("# test configuration\n")
	for k, v := range h.vars {
		b.WriteString(k + "=" + v + "\n")
	}
	path := filepath.Join(h.t.TempDir(), "ticketbridge.env")
	writeFile(h.t, path, b.String(), 0o600)
	return path
}

// check runs the checks and returns the output, the exit code and the
// status of each check by name.
func (h *hotel) check() (string, int, map[string]string) {
	h.t.Helper()
	return runChecks(h.t, h.envFile(), check.Options{Registry: bridge.Adapters(), Timeout: 5 * time.Second})
}

func runChecks(t *testing.T, envFile string, opts check.Options) (string, int, map[string]string) {
	t.Helper()
	var out, errb bytes.Buffer
	err := checkAll(context.Background(), envFile, &out, opts)
	code := exitCode(err, &errb)
	verdicts := map[string]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		if len(line) < 20 {
			continue
		}
		st := line[:4]
		if st == check.Pass || st == check.Fail || st == check.Skip {
			verdicts[strings.TrimSpace(line[6:20])] = st
		}
	}
	return out.String(), code, verdicts
}

func TestCheckGoodConfiguration(t *testing.T) {
	h := newHotel(t)
	ticket, err := h.ts.Server.CreateTicket(h.ts.Org, refserver.NewTicket{Department: "housekeeping", TaskDescription: "Towels to 214"})
	if err != nil {
		t.Fatal(err)
	}
	out, code, v := h.check()
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	for _, name := range []string{"configuration", "API key", "API", "API write", "helpdesk", "state file", "rules"} {
		if v[name] != check.Pass {
			t.Errorf("%s: %q, want PASS:\n%s", name, v[name], out)
		}
	}
	if !strings.Contains(out, "All 7 checks passed.") || !strings.Contains(out, "organisation "+h.ts.Org) {
		t.Errorf("output lacks the summary or the organisation:\n%s", out)
	}
	if strings.Contains(out, h.ts.Keys.TicketsWrite) {
		t.Fatalf("output contains the key:\n%s", out)
	}
	// The write probe wrote nothing: the ticket is untouched and the probe
	// was answered 404.
	view, err := h.ts.Server.Ticket(ticket.ID)
	if err != nil {
		t.Fatal(err)
	}
	if view.Ticket.Status != guestapi.StatusNew || len(view.Operations) != 0 || len(view.Messages) != 0 {
		t.Fatalf("ticket changed by the check: %+v", view)
	}
	if n := len(h.ts.Server.Tickets(h.ts.Org)); n != 1 {
		t.Fatalf("%d tickets after the check, want 1", n)
	}
	if got := h.ts.Server.Stats().Requests["POST "+refserver.BasePath+"/tickets/{id}/status"][404]; got != 1 {
		t.Fatalf("status probe answered 404 %d times, want 1: %v", got, h.ts.Server.Stats().Requests)
	}
	// The state file does not exist yet, and the check did not make it.
	if _, err := os.Stat(h.vars["TICKETBRIDGE_STATE"]); !os.IsNotExist(err) {
		t.Fatalf("state file after check: %v", err)
	}
}

func TestCheckBrokenConfigurations(t *testing.T) {
	cases := []struct {
		name   string
		change func(h *hotel)
		check  string // the check that must fail
		want   string // in its line
	}{
		{"no key", func(h *hotel) { delete(h.vars, "TICKETBRIDGE_API_KEY_FILE") }, "API key", "none configured"},
		{"key file open to all", func(h *hotel) {
			writeFile(t, h.vars["TICKETBRIDGE_API_KEY_FILE"], h.ts.Keys.TicketsWrite, 0o644)
		}, "API key", "chmod 600"},
		{"not a key", func(h *hotel) {
			h.vars["TICKETBRIDGE_API_KEY"] = "hunter2"
			delete(h.vars, "TICKETBRIDGE_API_KEY_FILE")
		}, "API key", "does not look like"},
		{"wrong key", func(h *hotel) {
			h.vars["TICKETBRIDGE_API_KEY"] = guestapi.KeyPrefix + "wrongwrongwrongwrong"
			delete(h.vars, "TICKETBRIDGE_API_KEY_FILE")
		}, "API", "revoked, expired or mistyped"},
		{"revoked key", func(h *hotel) {
			h.vars["TICKETBRIDGE_API_KEY"] = h.ts.Keys.Revoked
			delete(h.vars, "TICKETBRIDGE_API_KEY_FILE")
		}, "API", "(401)"},
		{"expired key", func(h *hotel) {
			h.vars["TICKETBRIDGE_API_KEY"] = h.ts.Keys.Expired
			delete(h.vars, "TICKETBRIDGE_API_KEY_FILE")
		}, "API", "(401)"},
		{"read-only key", func(h *hotel) {
			h.vars["TICKETBRIDGE_API_KEY"] = h.ts.Keys.TicketsRead
			delete(h.vars, "TICKETBRIDGE_API_KEY_FILE")
		}, "API write", "needs tickets:write"},
		{"key without ticket rights", func(h *hotel) {
			h.vars["TICKETBRIDGE_API_KEY"] = h.ts.Keys.PlatformAdmin
			delete(h.vars, "TICKETBRIDGE_API_KEY_FILE")
		}, "API", "may not read tickets"},
		{"bad URL", func(h *hotel) { h.vars["TICKETBRIDGE_API_URL"] = "ftp://api.example.com" }, "configuration", `TICKETBRIDGE_API_URL="ftp://api.example.com": want the API root the platform gave`},
		{"URL with a trailing comment", func(h *hotel) { h.vars["TICKETBRIDGE_API_URL"] = "https://api.example.com # production" }, "configuration", `TICKETBRIDGE_API_URL="https://api.example.com …" holds a space`},
		{"URL without a scheme", func(h *hotel) { h.vars["TICKETBRIDGE_API_URL"] = "api.example.com" }, "configuration", `TICKETBRIDGE_API_URL="api.example.com": want the API root the platform gave, e.g. https://api.example.com (with https:// before the host)`},
		{"URL with the API path", func(h *hotel) { h.vars["TICKETBRIDGE_API_URL"] = h.ts.URL + "/wrong" }, "API", "404"},
		{"no URL", func(h *hotel) { delete(h.vars, "TICKETBRIDGE_API_URL") }, "configuration", "TICKETBRIDGE_API_URL is not set"},
		{"unreachable API", func(h *hotel) { h.vars["TICKETBRIDGE_API_URL"] = "http://" + testutil.ClosedPort(t) }, "API", "cannot reach"},
		{"unknown adapter", func(h *hotel) { h.vars["TICKETBRIDGE_ADAPTER"] = "jira" }, "configuration", `TICKETBRIDGE_ADAPTER="jira": not an adapter of this ticketbridge; set it to one of email, files,`},
		{"helpdesk folder not a directory", func(h *hotel) {
			writeFile(t, filepath.Join(h.dir, "plain"), "x", 0o600)
			h.vars["TICKETBRIDGE_FILES_DIR"] = filepath.Join(h.dir, "plain", "helpdesk")
		}, "helpdesk", "not a directory"},
		{"bad schedule", func(h *hotel) { h.vars["TICKETBRIDGE_SCHEDULE"] = "every now and then" }, "configuration", "TICKETBRIDGE_SCHEDULE"},
		{"bad listen address", func(h *hotel) { h.vars["TICKETBRIDGE_LISTEN"] = "9464" }, "configuration", "TICKETBRIDGE_LISTEN"},
		{"bad status mapping", func(h *hotel) { h.vars["TICKETBRIDGE_STATUS_TO_HELPDESK"] = "sleeping=open" }, "configuration", "TICKETBRIDGE_STATUS_TO_HELPDESK"},
		{"state directory not creatable", func(h *hotel) {
			writeFile(t, filepath.Join(h.dir, "afile"), "x", 0o600)
			h.vars["TICKETBRIDGE_STATE"] = filepath.Join(h.dir, "afile", "state.db")
		}, "state file", "not a directory"},
		{"state file of another adapter", func(h *hotel) {
			st, err := state.Open(t.Context(), h.vars["TICKETBRIDGE_STATE"], state.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Update(t.Context(), func(tx *state.Tx) error { return tx.SetMeta(sync.MetaAdapter, "zendesk") }); err != nil {
				t.Fatal(err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
		}, "state file", `made with adapter "zendesk"`},
		{"not a state file", func(h *hotel) {
			writeFile(t, h.vars["TICKETBRIDGE_STATE"], strings.Repeat("not bbolt ", 1000), 0o600)
		}, "state file", "not a ticketbridge state file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHotel(t)
			tc.change(h)
			out, code, v := h.check()
			if code != 1 {
				t.Fatalf("exit %d, want 1:\n%s", code, out)
			}
			if v[tc.check] != check.Fail {
				t.Fatalf("%s: %q, want FAIL:\n%s", tc.check, v[tc.check], out)
			}
			var line string
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, check.Fail+"  "+tc.check+" ") {
					line = l
				}
			}
			if !strings.Contains(line, tc.want) {
				t.Fatalf("FAIL line %q does not contain %q:\n%s", line, tc.want, out)
			}
			if !strings.Contains(out, "fix: ") {
				t.Fatalf("no fix given:\n%s", out)
			}
			for _, k := range []string{h.ts.Keys.TicketsWrite, h.ts.Keys.TicketsRead, h.ts.Keys.Revoked, h.ts.Keys.Expired, h.ts.Keys.PlatformAdmin} {
				if strings.Contains(out, k) {
					t.Fatalf("output contains a key:\n%s", out)
				}
			}
			// Only the broken part fails.
			for name, st := range v {
				if st == check.Fail && name != tc.check {
					t.Errorf("%s also failed:\n%s", name, out)
				}
			}
		})
	}
}

func TestCheckStateFile(t *testing.T) {
	t.Run("in use by the daemon", func(t *testing.T) {
		h := newHotel(t)
		st, err := state.Open(t.Context(), h.vars["TICKETBRIDGE_STATE"], state.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		out, code, v := h.check()
		if code != 0 || v["state file"] != check.Pass || !strings.Contains(out, "in use by the running daemon") {
			t.Fatalf("exit %d, state %q:\n%s", code, v["state file"], out)
		}
	})
	t.Run("existing", func(t *testing.T) {
		h := newHotel(t)
		st, err := state.Open(t.Context(), h.vars["TICKETBRIDGE_STATE"], state.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Update(t.Context(), func(tx *state.Tx) error { return tx.SetMeta(sync.MetaAdapter, "files") }); err != nil {
			t.Fatal(err)
		}
		st.Close()
		out, code, v := h.check()
		if code != 0 || v["state file"] != check.Pass || !strings.Contains(out, "0 tickets tracked") {
			t.Fatalf("exit %d, state %q:\n%s", code, v["state file"], out)
		}
	})
	t.Run("full reads shortened", func(t *testing.T) {
		h := newHotel(t)
		st, err := state.Open(t.Context(), h.vars["TICKETBRIDGE_STATE"], state.Options{})
		if err != nil {
			t.Fatal(err)
		}
		body := `{"configured":600000000000,"effective":300000000000,"unsignalled":3,"shortened_at":"2026-03-02T09:00:00Z","ticket":"t-1"}`
		if err := st.Update(t.Context(), func(tx *state.Tx) error {
			if err := tx.SetMeta(sync.MetaAdapter, "files"); err != nil {
				return err
			}
			return tx.SetMeta(sync.MetaFullRead, body)
		}); err != nil {
			t.Fatal(err)
		}
		st.Close()
		out, code, v := h.check()
		if code != 0 || v["full reads"] != check.Pass || !strings.Contains(out, "at least every 5m0s, shortened from 10m0s") {
			t.Fatalf("exit %d, full reads %q:\n%s", code, v["full reads"], out)
		}
	})
	t.Run("changes held by the helpdesk", func(t *testing.T) {
		h := newHotel(t)
		snap := sync.Status{At: time.Now(), Tickets: []sync.TicketStatus{},
			Held: []adapters.HeldError{{Ref: "42", Op: "set status done", Need: "the field Room number is required on solve"}}}
		body, err := json.Marshal(snap)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, h.vars["TICKETBRIDGE_STATE"]+bridge.StatusSuffix, string(body), 0o600)
		out, code, v := h.check()
		if code != 1 || v["held changes"] != check.Fail || !strings.Contains(out, "Room number is required on solve") {
			t.Fatalf("exit %d, held %q:\n%s", code, v["held changes"], out)
		}
	})
	t.Run("unwritable directory", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root writes to any directory")
		}
		h := newHotel(t)
		ro := filepath.Join(h.dir, "ro")
		if err := os.Mkdir(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		h.vars["TICKETBRIDGE_STATE"] = filepath.Join(ro, "state.db")
		out, code, v := h.check()
		if code != 1 || v["state file"] != check.Fail || !strings.Contains(out, "not writable") {
			t.Fatalf("exit %d, state %q:\n%s", code, v["state file"], out)
		}
	})
}

// TestCheckAsTheService checks the packaged env file from a shell: the key
// comes from the credentials' source directory, a path below the
// service's runtime credentials is read from there too, and a state
// directory systemd has not made yet is neither made nor written.
func TestCheckAsTheService(t *testing.T) {
	h := newHotel(t)
	etc := t.TempDir()
	writeFile(t, filepath.Join(etc, "api-key"), h.ts.Keys.TicketsWrite, 0o600)
	delete(h.vars, "TICKETBRIDGE_API_KEY_FILE")
	delete(h.vars, "TICKETBRIDGE_STATE")
	delete(h.vars, "TICKETBRIDGE_FILES_DIR")
	envFile := h.envFile()
	stateDir := filepath.Join(t.TempDir(), "var-lib-ticketbridge")
	opts := check.Options{Registry: bridge.Adapters(), Timeout: 5 * time.Second,
		Service: config.Layout{EnvFile: envFile, CredDir: etc, StateDir: stateDir}}

	out, code, v := runChecks(t, envFile, opts)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if v["API key"] != check.Pass || !strings.Contains(out, filepath.Join(etc, "api-key")) || !strings.Contains(out, "scratch directory") {
		t.Fatalf("key not taken from the credentials' source, or no scratch note:\n%s", out)
	}
	if !strings.Contains(out, filepath.Join(stateDir, "state.db")+" does not exist yet; systemd makes") {
		t.Fatalf("state line does not name the service's state file:\n%s", out)
	}
	if _, err := os.Stat(stateDir); !os.IsNotExist(err) {
		t.Fatalf("the check made the service's state directory: %v", err)
	}

	// A key file named by its runtime credential path, and a state
	// directory the service made.
	h.vars["TICKETBRIDGE_API_KEY_FILE"] = config.ServiceCredRuntime + "/api-key"
	writeFile(t, envFile, "TICKETBRIDGE_API_URL="+h.ts.URL+"\nTICKETBRIDGE_API_KEY_FILE="+config.ServiceCredRuntime+"/api-key\n", 0o600)
	if err := os.Mkdir(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	out, code, v = runChecks(t, envFile, opts)
	if code != 0 || v["API"] != check.Pass {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, filepath.Join(stateDir, "state.db")) {
		t.Fatalf("state not looked for in the service's directory:\n%s", out)
	}
	// The helpdesk folder in the service's state directory is judged, not
	// made: check creates nothing (made by root, the service could not
	// write it).
	if _, err := os.Stat(filepath.Join(stateDir, "helpdesk")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("check made the helpdesk folder: %v", err)
	}
	if v["helpdesk"] != check.Pass {
		t.Fatalf("the helpdesk folder the service would make is not judged makeable:\n%s", out)
	}
	// One the service could not make fails, naming it.
	if err := os.Chmod(stateDir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(stateDir, 0o700)
	if os.Geteuid() != 0 { // root may write anywhere: access(2) says yes
		out, _, v = runChecks(t, envFile, opts)
		if v["helpdesk"] != check.Fail || !strings.Contains(out, filepath.Join(stateDir, "helpdesk")) {
			t.Fatalf("a helpdesk folder that cannot be made passes:\n%s", out)
		}
	}
}

func TestCheckFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if code := exitCode(run(context.Background(), []string{"check", "--help"}, &out, &errb), &errb); code != 0 || !strings.Contains(out.String(), "tickets:write") {
		t.Fatalf("check --help: exit %d:\n%s", code, out.String())
	}
	for _, args := range [][]string{{"check", "extra"}, {"check", "--timeout", "0s"}, {"check", "--nope"}} {
		if code := exitCode(run(context.Background(), args, &out, &errb), &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	fleettest.ClearServiceEnv(t)
	out.Reset()
	err := run(context.Background(), []string{"check", "--env-file", filepath.Join(t.TempDir(), "missing.env")}, &out, &errb)
	if code := exitCode(err, &errb); code != 1 || !strings.Contains(out.String(), "FAIL  configuration") {
		t.Fatalf("missing env file: exit %d:\n%s", code, out.String())
	}
}

// TestCheckFixLines: each failure's fix says what helps: chmod for a key
// file every user may read (not "create a key"), the list of adapters for
// an unknown one (not its non-existent variables).
func TestCheckFixLines(t *testing.T) {
	h := newHotel(t)
	if err := os.Chmod(h.vars["TICKETBRIDGE_API_KEY_FILE"], 0o644); err != nil {
		t.Fatal(err)
	}
	out, code, _ := h.check()
	if code != 1 || !strings.Contains(out, "fix: run chmod 600 "+h.vars["TICKETBRIDGE_API_KEY_FILE"]) || strings.Contains(out, "create a key") {
		t.Fatalf("a world-readable key file: exit %d:\n%s", code, out)
	}

	// A console token the daemon would refuse at start fails the check,
	// without showing the token.
	h = newHotel(t)
	short := strings.Repeat("k", 20)
	h.vars["TICKETBRIDGE_LISTEN"] = "127.0.0.1:0"
	h.vars["TICKETBRIDGE_CONSOLE_TOKEN_FILE"] = filepath.Join(t.TempDir(), "console-token")
	writeFile(t, h.vars["TICKETBRIDGE_CONSOLE_TOKEN_FILE"], short, 0o600)
	out, code, _ = h.check()
	if code != 1 || !strings.Contains(out, "TICKETBRIDGE_CONSOLE_TOKEN_FILE: "+h.vars["TICKETBRIDGE_CONSOLE_TOKEN_FILE"]+": the console token is 20 bytes long; want 32 or more") || strings.Contains(out, short) {
		t.Fatalf("a console token of 20 bytes: exit %d:\n%s", code, out)
	}

	h = newHotel(t)
	h.vars["TICKETBRIDGE_ADAPTER"] = "jira"
	out, _, _ = h.check()
	if strings.Contains(out, "TICKETBRIDGE_JIRA_") || !strings.Contains(out, "set it to one of email, files, freshdesk, rt, webhook, zammad, zendesk") {
		t.Fatalf("an unknown adapter:\n%s", out)
	}

	// The adapter's name and the log format are read as the reference
	// server reads them.
	h = newHotel(t)
	h.vars["TICKETBRIDGE_ADAPTER"] = "Files"
	h.vars["TICKETBRIDGE_LOG_FORMAT"] = "journal"
	if out, code, _ := h.check(); code != 0 {
		t.Fatalf("TICKETBRIDGE_ADAPTER=Files, TICKETBRIDGE_LOG_FORMAT=journal: exit %d:\n%s", code, out)
	}
}
