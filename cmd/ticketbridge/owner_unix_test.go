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

// TestGiveToOwnerFollowsTheDynamicUserLink: under DynamicUser=yes the
// state directory is a link to private/ticketbridge; what root made in it
// (once, run by root in a shell) goes to the owner of what the link points
// to, so that the service can open it.
func TestGiveToOwnerFollowsTheDynamicUserLink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it hands files to another user")
	}
	root := t.TempDir()
	private := filepath.Join(root, "private", "ticketbridge")
	if err := os.MkdirAll(private, 0o700); err != nil {
		t.Fatal(err)
	}
	const service = 65534 // the user the service runs as
	if err := os.Chown(private, service, -1); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "ticketbridge")
	if err := os.Symlink(filepath.Join("private", "ticketbridge"), link); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"state.db", "state.db.status.json"} {
		if err := os.WriteFile(filepath.Join(link, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := giveToOwner(link); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"state.db", "state.db.status.json"} {
		fi, err := os.Stat(filepath.Join(private, name))
		if err != nil {
			t.Fatal(err)
		}
		if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != service {
			t.Errorf("%s is owned by uid %d, want the service's %d", name, uid, service)
		}
	}
}

// TestGiveToOwnerOfARootFolder: a hotel's helpdesk folder that once, run
// by root, made in the staff's folder (the service's) is the service's
// afterwards, with what it holds.
func TestGiveToOwnerOfARootFolder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it hands files to another user")
	}
	helpdesk := filepath.Join(t.TempDir(), "helpdesk")
	if err := os.Mkdir(helpdesk, 0o770); err != nil {
		t.Fatal(err)
	}
	const service = 65534
	if err := os.Chown(helpdesk, service, -1); err != nil {
		t.Fatal(err)
	}
	hotel := filepath.Join(helpdesk, "airport")
	if err := os.MkdirAll(filepath.Join(hotel, "tickets"), 0o770); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hotel, ".lock"), nil, 0o660); err != nil {
		t.Fatal(err)
	}
	if err := giveToOwner(hotel); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{hotel, filepath.Join(hotel, "tickets"), filepath.Join(hotel, ".lock")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != service {
			t.Errorf("%s is owned by uid %d, want the service's %d", p, uid, service)
		}
	}
}

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

// TestGiveToOwnerFollowsNoLinkSwappedInMidWalk: a member of the staff's
// group who swaps a sub-folder for a link while root walks the folder does
// not get root to hand a file elsewhere to the service.
func TestGiveToOwnerFollowsNoLinkSwappedInMidWalk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it hands files to another user")
	}
	helpdesk := filepath.Join(t.TempDir(), "helpdesk")
	if err := os.MkdirAll(filepath.Join(helpdesk, "tickets", "t1"), 0o770); err != nil {
		t.Fatal(err)
	}
	const service = 65534
	if err := os.Chown(helpdesk, service, -1); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(helpdesk, "tickets", "t1", "thread.md"), nil, 0o660); err != nil {
		t.Fatal(err)
	}
	etc := t.TempDir() // root's, as /etc
	victim := filepath.Join(etc, "shadow")
	if err := os.WriteFile(victim, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tickets := filepath.Join(helpdesk, "tickets")
	beforeOwnerChange = func(p string) {
		if p != tickets {
			return
		}
		// The walk is at tickets/: it is moved aside, and a link to
		// root's folder put in its place.
		if err := os.Rename(tickets, filepath.Join(helpdesk, "moved")); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(etc, tickets); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { beforeOwnerChange = nil })
	_ = giveToOwner(helpdesk) // an error is fine; a file handed over is not
	fi, err := os.Stat(victim)
	if err != nil {
		t.Fatal(err)
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != 0 {
		t.Errorf("root's file behind the swapped-in link was handed to uid %d", uid)
	}
}
