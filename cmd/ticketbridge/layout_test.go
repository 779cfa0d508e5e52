package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/internal/config"
)

// TestInstalledCommandsShareTheConfiguration: on an installed system (the
// packaged layout, here below a temporary directory) with no
// TICKETBRIDGE_* variable set and no --env-file, check, once --dry-run,
// once, status and state backup all read the packaged env file, the key
// where the unit's LoadCredential= reads it and the state in the unit's
// StateDirectory, and none writes in the working directory.
func TestInstalledCommandsShareTheConfiguration(t *testing.T) {
	b := newBridge(t) // clears TICKETBRIDGE_* from the environment
	id := b.ticket("towels")
	root := t.TempDir()
	l := config.Layout{
		EnvFile:  filepath.Join(root, "etc", "ticketbridge.env"),
		CredDir:  filepath.Join(root, "etc"),
		StateDir: filepath.Join(root, "var-lib-ticketbridge"),
	}
	writeFile(t, filepath.Join(l.CredDir, "api-key"), b.ts.Keys.TicketsWrite+"\n", 0o600)
	// As the packaged file is edited: the API and the adapter, the key
	// named by its runtime credential path, nothing else.
	writeFile(t, l.EnvFile, "TICKETBRIDGE_API_URL="+b.ts.URL+"\nTICKETBRIDGE_ADAPTER=files\n"+
		"TICKETBRIDGE_API_KEY_FILE="+config.ServiceCredRuntime+"/api-key\nTICKETBRIDGE_FILES_SETTLE=0s\n", 0o640)
	cwd := t.TempDir()
	t.Chdir(cwd)
	cmd := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := exitCode(runWith(context.Background(), shell{layout: l, stdout: &out, stderr: &errb}, args), &errb)
		return out.String(), errb.String(), code
	}

	out, errOut, code := cmd("check")
	if code != 0 || !strings.Contains(out, "Checking "+l.EnvFile) {
		t.Fatalf("check: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = cmd("once", "--dry-run")
	if code != 0 || !strings.Contains(out, "would create a helpdesk ticket for "+id) {
		t.Fatalf("once --dry-run: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(l.StateDir); !os.IsNotExist(err) {
		t.Fatalf("the dry run made the state directory: %v", err)
	}
	out, errOut, code = cmd("once")
	if code != 1 || !strings.Contains(errOut, l.StateDir+" does not exist yet") {
		t.Fatalf("once before the service's first start: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = cmd("run")
	if code != 1 || !strings.Contains(errOut, "systemctl start ticketbridge") {
		t.Fatalf("run from a shell on an installed system: exit %d\n%s%s", code, out, errOut)
	}

	// systemd made the state directory at the service's first start.
	if err := os.Mkdir(l.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = cmd("once")
	if code != 0 {
		t.Fatalf("once: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(l.StateDir, "state.db")); err != nil {
		t.Fatalf("once did not keep its state in the service's directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(l.StateDir, "helpdesk", "tickets")); err != nil {
		t.Fatalf("once did not use the service's helpdesk folder: %v", err)
	}
	out, errOut, code = cmd("status")
	if code != 0 || !strings.Contains(out, "1 tracked") || !strings.Contains(out, filepath.Join(l.StateDir, "state.db")) {
		t.Fatalf("status: exit %d\n%s%s", code, out, errOut)
	}
	copyPath := filepath.Join(t.TempDir(), "copy.db")
	out, errOut, code = cmd("state", "backup", copyPath)
	if code != 0 {
		t.Fatalf("state backup: exit %d\n%s%s", code, out, errOut)
	}
	if des, _ := os.ReadDir(cwd); len(des) != 0 {
		t.Fatalf("the commands wrote in the working directory: %v", des)
	}

	// A TICKETBRIDGE_* variable in the environment, or --env-file, says
	// otherwise: the packaged file is not read.
	t.Setenv("TICKETBRIDGE_LOG_LEVEL", "warn")
	_, errOut, code = cmd("status")
	if code != 1 || !strings.Contains(errOut, "no state file at ticketbridge.db") {
		t.Fatalf("status with a variable set: exit %d\n%s", code, errOut)
	}
	// Every command says so first, naming the file and how to read it too.
	note := l.EnvFile + " is not read, because TICKETBRIDGE_LOG_LEVEL is set in the environment; add --env-file " + l.EnvFile
	if first, _, _ := strings.Cut(errOut, "\n"); !strings.Contains(first, note) {
		t.Errorf("status with a variable set does not say first that the installed file is skipped:\n%s", errOut)
	}
	for _, args := range [][]string{{"check"}, {"once", "--dry-run"}, {"retry", "no-such-entry"}} {
		out, errOut, _ := cmd(args...)
		first, _, _ := strings.Cut(strings.TrimLeft(out+errOut, "\n"), "\n")
		if args[0] != "check" {
			first, _, _ = strings.Cut(errOut, "\n")
		}
		if !strings.Contains(first, note) {
			t.Errorf("%s with a variable set does not say first that the installed file is skipped:\n%s%s", args[0], out, errOut)
		}
	}
	// --env-file reads it as well, the environment winning.
	out, errOut, code = cmd("status", "--env-file", l.EnvFile)
	if code != 0 || !strings.Contains(out, "1 tracked") || strings.Contains(errOut, "is not read") {
		t.Fatalf("status --env-file with a variable set: exit %d\n%s%s", code, out, errOut)
	}
}
