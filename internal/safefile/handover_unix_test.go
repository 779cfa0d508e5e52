//go:build unix

package safefile_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ticketbridge/ticketbridge/internal/safefile"
)

// TestHandOverFollowsTheDynamicUserLink: under DynamicUser=yes the
// state directory is a link to private/ticketbridge; what root made in it
// (once, run by root in a shell) goes to the owner of what the link points
// to, so that the service can open it.
func TestHandOverFollowsTheDynamicUserLink(t *testing.T) {
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
	if err := safefile.HandOver(link); err != nil {
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

// TestHandOverOfARootFolder: a hotel's helpdesk folder that once, run
// by root, made in the staff's folder (the service's) is the service's
// afterwards, with what it holds.
func TestHandOverOfARootFolder(t *testing.T) {
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
	if err := safefile.HandOver(hotel); err != nil {
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

// TestHandOverFollowsNoLinkSwappedInMidWalk: a member of the staff's
// group who swaps a sub-folder for a link while root walks the folder does
// not get root to hand a file elsewhere to the service.
func TestHandOverFollowsNoLinkSwappedInMidWalk(t *testing.T) {
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
	safefile.SetHandOverStep(func(p string) {
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
	})
	t.Cleanup(func() { safefile.SetHandOverStep(nil) })
	_ = safefile.HandOver(helpdesk) // an error is fine; a file handed over is not
	fi, err := os.Stat(victim)
	if err != nil {
		t.Fatal(err)
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != 0 {
		t.Errorf("root's file behind the swapped-in link was handed to uid %d", uid)
	}
}
