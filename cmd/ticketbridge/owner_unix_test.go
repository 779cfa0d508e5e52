//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
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
