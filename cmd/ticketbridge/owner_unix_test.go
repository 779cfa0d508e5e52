//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ticketbridge/ticketbridge/internal/config"
)

// TestOnceMakesFoldersAsTheServiceWould: once on an installed system makes
// the helpdesk's folders with the unit's UMask= (0007), not the shell's:
// the staff's group may write them, as when the service made them.
func TestOnceMakesFoldersAsTheServiceWould(t *testing.T) {
	old := syscall.Umask(0o022) // a root shell's
	defer syscall.Umask(old)
	b := newBridge(t)
	b.ticket("towels")
	root := t.TempDir()
	l := config.Layout{
		EnvFile:  filepath.Join(root, "etc", "ticketbridge.env"),
		CredDir:  filepath.Join(root, "etc"),
		StateDir: filepath.Join(root, "var-lib-ticketbridge"),
		Unit:     filepath.Join(root, "lib", "ticketbridge.service"),
	}
	unit, err := os.ReadFile(filepath.Join("..", "..", "deploy", "ticketbridge.service"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, l.Unit, string(unit), 0o644)
	writeFile(t, filepath.Join(l.CredDir, "api-key"), b.ts.Keys.TicketsWrite+"\n", 0o600)
	helpdesk := filepath.Join(root, "helpdesk")
	writeFile(t, l.EnvFile, "TICKETBRIDGE_API_URL="+b.ts.URL+"\nTICKETBRIDGE_ADAPTER=files\nTICKETBRIDGE_FILES_DIR="+helpdesk+"\nTICKETBRIDGE_FILES_SETTLE=0s\n", 0o640)
	if err := os.Mkdir(l.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := exitCode(runWith(context.Background(), shell{layout: l, stdout: &out, stderr: &errb}, []string{"once"}), &errb); code != 0 {
		t.Fatalf("once: exit %d\n%s%s", code, out.String(), errb.String())
	}
	for _, d := range []string{helpdesk, filepath.Join(helpdesk, "outbox")} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o770 {
			t.Errorf("once made %s with mode %v, want the unit's UMask=0007 (0770)", d, perm)
		}
	}
	if now := syscall.Umask(0o022); now != 0o022 {
		t.Errorf("once left the umask %o", now)
	}
}
