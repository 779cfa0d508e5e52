package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/check"
	"github.com/ticketbridge/ticketbridge/internal/config"
)

// serviceLayout is an installed system below a temporary directory: the
// packaged env file, the credentials' sources, the state directory systemd
// made, the unit the package installs (deploy/ticketbridge.service) with a
// drop-in that points its credentials and ReadWritePaths= at the
// temporary directory, and the staff's helpdesk root (mode 2770, as the
// package makes /srv/ticketbridge/helpdesk).
type serviceLayout struct {
	l        config.Layout
	h        *hotel
	etc      string
	helpRoot string
	drop     string
}

func newServiceLayout(t *testing.T) *serviceLayout {
	t.Helper()
	h := newHotel(t)
	root := t.TempDir()
	// The service's user is not the test's: every folder on the way must
	// let it pass, as /etc and /srv do.
	for p := root; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := &serviceLayout{h: h, etc: filepath.Join(root, "etc"), helpRoot: filepath.Join(root, "srv-helpdesk")}
	s.l = config.Layout{CredDir: s.etc, StateDir: filepath.Join(root, "var-lib-ticketbridge"),
		Unit: filepath.Join(root, "lib", "ticketbridge.service"), UnitDir: filepath.Join(root, "etc-systemd")}
	unit, err := os.ReadFile(filepath.Join("..", "..", "deploy", "ticketbridge.service"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, s.l.Unit, string(unit), 0o644)
	s.drop = filepath.Join(s.l.UnitDir, "ticketbridge.service.d", "test.conf")
	s.dropIn("")
	writeFile(t, filepath.Join(s.etc, "api-key"), h.ts.Keys.TicketsWrite+"\n", 0o600)
	for _, d := range []string{s.etc, s.l.StateDir, s.helpRoot} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(s.helpRoot, 0o2770); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(s.etc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(s.l.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	delete(h.vars, "TICKETBRIDGE_API_KEY_FILE")
	delete(h.vars, "TICKETBRIDGE_STATE")
	h.vars["TICKETBRIDGE_FILES_DIR"] = filepath.Join(s.helpRoot, "seaside")
	return s
}

// dropIn writes the test's drop-in, with more settings of [Service].
func (s *serviceLayout) dropIn(more string) {
	writeFile(s.h.t, s.drop, "[Service]\nPrivateTmp=no\nLoadCredential=\n"+
		"LoadCredential=api-key:"+filepath.Join(s.etc, "api-key")+"\n"+
		"LoadCredential=console-token:"+filepath.Join(s.etc, "console-token")+"\n"+
		"ReadWritePaths=-"+s.helpRoot+"\n"+more, 0o644)
}

// check runs check on the packaged env file, judging for a service user
// that is not the test's but shares its group: the group's permission
// bits decide.
func (s *serviceLayout) check() (string, int, map[string]string) {
	s.h.t.Helper()
	s.l.EnvFile = s.h.envFile()
	return runChecks(s.h.t, s.l.EnvFile, check.Options{Registry: bridge.Adapters(), Timeout: 5 * time.Second, Service: s.l,
		Account: func(name, group string, _ ...string) (config.Account, error) {
			if name != "ticketbridge" || group != "ticketbridge" {
				s.h.t.Errorf("the unit's user and group are read as %s:%s, want ticketbridge:ticketbridge", name, group)
			}
			return config.Account{Name: name, Group: group, UID: os.Getuid() + 4242, GIDs: []int{os.Getgid()}}, nil
		}})
}

// TestCheckJudgesAsTheService: on an installed system check judges, as the
// unit's user with the unit's credentials and sandbox, what the daemon
// reads and writes at start. Each path that would stop the service fails,
// with the fix, though check itself (root) could use it.
func TestCheckJudgesAsTheService(t *testing.T) {
	s := newServiceLayout(t)
	out, code, v := s.check()
	if code != 0 || v["as the service"] != check.Pass || !strings.Contains(out, filepath.Join(s.helpRoot, "seaside")) {
		t.Fatalf("a good installation: exit %d:\n%s", code, out)
	}

	t.Run("helpdesk folder the service cannot write", func(t *testing.T) {
		// As check used to make a hotel's folder: root's, group read-only.
		dir := filepath.Join(s.helpRoot, "seaside")
		if err := os.Mkdir(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(dir)
		out, code, v := s.check()
		want := "fix: run sudo chown -R ticketbridge:ticketbridge " + dir
		if code != 1 || v["as the service"] != check.Fail || !strings.Contains(out, want) {
			t.Fatalf("exit %d, want a FAIL with %q:\n%s", code, want, out)
		}
	})
	t.Run("console token file of root's", func(t *testing.T) {
		tok := filepath.Join(s.etc, "console-token")
		writeFile(t, tok, strings.Repeat("0123456789abcdef", 4)+"\n", 0o600)
		defer os.Remove(tok)
		s.h.vars["TICKETBRIDGE_CONSOLE_TOKEN_FILE"] = tok
		defer delete(s.h.vars, "TICKETBRIDGE_CONSOLE_TOKEN_FILE")
		out, code, _ := s.check()
		want := "fix: the unit passes " + tok + " as its credential console-token, which the daemon reads by itself: remove TICKETBRIDGE_CONSOLE_TOKEN_FILE"
		if code != 1 || !strings.Contains(out, "ticketbridge may not read "+tok) || !strings.Contains(out, want) || strings.Contains(out, strings.Repeat("0123456789abcdef", 4)) {
			t.Fatalf("exit %d, want %q:\n%s", code, want, out)
		}
		// Left unset, the daemon reads the credential: it passes.
		delete(s.h.vars, "TICKETBRIDGE_CONSOLE_TOKEN_FILE")
		if out, code, _ := s.check(); code != 0 || !strings.Contains(out, "the console token") {
			t.Fatalf("the console token as a credential: exit %d:\n%s", code, out)
		}
	})
	t.Run("key file the service cannot read", func(t *testing.T) {
		key := filepath.Join(s.etc, "keys", "seaside.key")
		writeFile(t, key, s.h.ts.Keys.TicketsWrite+"\n", 0o600)
		if err := os.Chmod(filepath.Dir(key), 0o755); err != nil {
			t.Fatal(err)
		}
		s.h.vars["TICKETBRIDGE_API_KEY_FILE"] = key
		defer delete(s.h.vars, "TICKETBRIDGE_API_KEY_FILE")
		out, code, _ := s.check()
		if code != 1 || !strings.Contains(out, "ticketbridge may not read "+key) || !strings.Contains(out, "fix: run sudo chown ticketbridge:ticketbridge "+key) {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
	t.Run("key credential the unit does not pass", func(t *testing.T) {
		s.dropIn("LoadCredential=\n")
		defer s.dropIn("")
		out, code, _ := s.check()
		if code != 1 || !strings.Contains(out, "the unit passes no credential api-key") || !strings.Contains(out, "fix: add LoadCredential=api-key:/etc/ticketbridge/api-key to the unit (sudo systemctl edit ticketbridge) and put the file there, or name another file in TICKETBRIDGE_API_KEY_FILE") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
	t.Run("state outside what the unit lets it write", func(t *testing.T) {
		dir := filepath.Join(filepath.Dir(s.etc), "state-elsewhere")
		if err := os.Mkdir(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		s.h.vars["TICKETBRIDGE_STATE"] = filepath.Join(dir, "state.db")
		defer delete(s.h.vars, "TICKETBRIDGE_STATE")
		out, code, _ := s.check()
		if code != 1 || !strings.Contains(out, "ProtectSystem=strict keeps "+dir+" read-only") || !strings.Contains(out, "fix: add ReadWritePaths="+dir) {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		// Allowed by the unit, it is judged by its mode: the group may
		// not write it.
		s.dropIn("ReadWritePaths=" + dir + "\n")
		defer s.dropIn("")
		out, code, _ = s.check()
		if code != 1 || !strings.Contains(out, "fix: run sudo chown -R ticketbridge:ticketbridge "+dir) {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
}

// TestStartErrorsCarryCheckFix: once and run on a state directory their
// user may not write fail with the fix check gives, not only "permission
// denied".
func TestStartErrorsCarryCheckFix(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes to any directory")
	}
	b := newBridge(t)
	ro := filepath.Join(b.dir, "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	b.vars["TICKETBRIDGE_STATE"] = filepath.Join(ro, "state.db")
	want := "; fix: " + config.NotWritable.Fix(config.Where{Path: ro, Account: config.CurrentAccount()})
	for _, name := range []string{"once", "run"} {
		_, errOut, code := b.cmd(name)
		if code != 1 || !strings.Contains(errOut, "permission denied"+want) {
			t.Errorf("%s: exit %d, want the fix %q:\n%s", name, code, want, errOut)
		}
	}
}
