//go:build unix

package safefile_test

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ticketbridge/ticketbridge/internal/safefile"
)

func mkdir(t *testing.T, path string, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestOpenDirFollowsOnlyLinksNobodyElseCouldPlant: a link is followed in a
// folder only this user (or root) can write, as /var/lib/ticketbridge is a
// link to private/ticketbridge under DynamicUser=yes; it is refused in a
// folder the group may write, as the helpdesk folder the staff share.
func TestOpenDirFollowsOnlyLinksNobodyElseCouldPlant(t *testing.T) {
	root := t.TempDir()
	mkdir(t, filepath.Join(root, "private", "ticketbridge"), 0o700)
	mkdir(t, filepath.Join(root, "shared"), fs.ModeSetgid|0o770)
	mkdir(t, filepath.Join(root, "sticky"), fs.ModeSticky|0o777)
	mkdir(t, filepath.Join(root, "etc"), 0o755)
	symlink(t, filepath.Join("private", "ticketbridge"), filepath.Join(root, "ticketbridge"))
	symlink(t, filepath.Join(root, "etc"), filepath.Join(root, "shared", "seaside"))
	symlink(t, filepath.Join(root, "etc"), filepath.Join(root, "sticky", "mine"))
	symlink(t, "../shared/seaside", filepath.Join(root, "private", "via-shared"))

	for _, tc := range []struct {
		path string
		want string // the folder opened, or "" for ErrLink
	}{
		{filepath.Join(root, "ticketbridge"), filepath.Join(root, "private", "ticketbridge")},
		{root + "/ticketbridge/../../etc", filepath.Join(root, "etc")},
		{filepath.Join(root, "sticky", "mine"), filepath.Join(root, "etc")},
		{filepath.Join(root, "shared", "seaside"), ""},
		{filepath.Join(root, "private", "via-shared"), ""},
	} {
		d, err := safefile.OpenDir(tc.path)
		if tc.want == "" {
			if !errors.Is(err, safefile.ErrLink) {
				t.Errorf("OpenDir(%s) = %v, want ErrLink", tc.path, err)
			}
			if d != nil {
				d.Close()
			}
			continue
		}
		if err != nil {
			t.Errorf("OpenDir(%s): %v", tc.path, err)
			continue
		}
		got, _ := d.Stat()
		want, _ := os.Stat(tc.want)
		if !os.SameFile(got, want) {
			t.Errorf("OpenDir(%s) opened another folder than %s", tc.path, tc.want)
		}
		d.Close()
	}
}

// TestOpenDirRefusesALinkOfAnotherInAStickyFolder: in a sticky folder
// anyone may write (/tmp), a link made by another user is not followed.
func TestOpenDirRefusesALinkOfAnotherInAStickyFolder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it makes a link owned by another user")
	}
	root := t.TempDir()
	mkdir(t, filepath.Join(root, "sticky"), fs.ModeSticky|0o777)
	link := filepath.Join(root, "sticky", "theirs")
	symlink(t, root, link)
	if err := os.Lchown(link, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if d, err := safefile.OpenDir(link); !errors.Is(err, safefile.ErrLink) {
		t.Errorf("OpenDir through another's link in a sticky folder = %v, want ErrLink", err)
		if d != nil {
			d.Close()
		}
	}
}

// TestDirFollowsNoLinkBelowIt: below an open folder, no link is followed,
// whoever made it: not by Sub, not by Open, not by a write or a move.
func TestDirFollowsNoLinkBelowIt(t *testing.T) {
	root := t.TempDir()
	elsewhere := t.TempDir()
	mkdir(t, filepath.Join(root, "outbox", "processed"), 0o700)
	symlink(t, elsewhere, filepath.Join(root, "outbox", "failed"))
	if err := os.WriteFile(filepath.Join(elsewhere, "secret"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(elsewhere, "secret"), filepath.Join(root, "outbox", "note.txt"))

	d, err := safefile.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Sub("outbox/failed"); !errors.Is(err, safefile.ErrLink) {
		t.Errorf("Sub through a link = %v, want ErrLink", err)
	}
	outbox, err := d.Sub("outbox")
	if err != nil {
		t.Fatal(err)
	}
	defer outbox.Close()
	if _, _, err := outbox.ReadFile("note.txt", 100); !errors.Is(err, safefile.ErrNotRegular) {
		t.Errorf("ReadFile of a link = %v, want ErrNotRegular", err)
	}
	// A write replaces the link itself, never the file it points to.
	if err := outbox.WriteFile("note.txt", []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(elsewhere, "secret")); string(b) != "s" {
		t.Errorf("a write through a link changed its target: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(root, "outbox", "note.txt")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("note.txt after the write: %v %v, want a regular file", fi, err)
	}

	// A move never replaces what is at the new name.
	processed, err := outbox.Sub("processed")
	if err != nil {
		t.Fatal(err)
	}
	defer processed.Close()
	if err := processed.WriteFile("note.txt", []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := outbox.Move("note.txt", processed, "note.txt"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Move onto a taken name = %v, want ErrExist", err)
	}
	if err := outbox.Move("note.txt", processed, "note-2.txt"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "outbox", "processed", "note-2.txt")); string(b) != "new" {
		t.Errorf("moved file holds %q", b)
	}
	if ok, err := outbox.Exists("note.txt"); ok || err != nil {
		t.Errorf("Exists after the move: %v %v", ok, err)
	}
}

// TestWalkFollowsNoLink: Walk passes over links and enters every folder by
// descriptor.
func TestWalkFollowsNoLink(t *testing.T) {
	root := t.TempDir()
	elsewhere := t.TempDir()
	mkdir(t, filepath.Join(root, "a", "b"), 0o700)
	if err := os.WriteFile(filepath.Join(root, "a", "b", "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(elsewhere, "victim"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	symlink(t, elsewhere, filepath.Join(root, "a", "link"))
	d, err := safefile.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var seen []string
	if err := d.Walk(func(e safefile.Entry) error {
		rel, _ := filepath.Rel(root, e.Path)
		seen = append(seen, rel)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(seen)
	if want := []string{"a", "a/b", "a/b/f"}; !slices.Equal(seen, want) {
		t.Errorf("walked %v, want %v", seen, want)
	}
}

// TestOpenDirFollowsNoLinkSwappedInMidWalk: a folder others may write
// (the staff's 2770) holds a folder of ours; while OpenDir walks through
// it, that folder is swapped for a link to a copy whose next element is a
// link to /etc/profile.d. The walk must not end there.
func TestOpenDirFollowsNoLinkSwappedInMidWalk(t *testing.T) {
	root := t.TempDir()
	shared := filepath.Join(root, "shared")
	mkdir(t, shared, fs.ModeSetgid|0o770)
	hotels := filepath.Join(shared, "hotels")
	mkdir(t, filepath.Join(hotels, "seaside"), 0o755)
	mkdir(t, hotels, 0o755) // ours, nobody else's: a link in it is trusted
	target := filepath.Join(root, "etc", "profile.d")
	mkdir(t, target, 0o755)
	evil := filepath.Join(root, "evil")
	mkdir(t, evil, 0o755)
	symlink(t, target, filepath.Join(evil, "seaside"))

	safefile.SetWalkStep(func(at string) {
		if at != hotels {
			return
		}
		safefile.SetWalkStep(nil)
		if err := os.Rename(hotels, filepath.Join(shared, "hotels-moved")); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(evil, hotels); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() { safefile.SetWalkStep(nil) })
	d, err := safefile.OpenDir(filepath.Join(hotels, "seaside"))
	if err != nil {
		return // refused: fine
	}
	defer d.Close()
	got, _ := d.Stat()
	if want, _ := os.Stat(target); os.SameFile(got, want) {
		t.Errorf("OpenDir followed a link swapped in mid-walk to %s", target)
	}
}

// TestWalkPassesOverSockets: a socket anyone of the group may bind in
// the folder does not stop the walk (open(2) of one fails with ENXIO).
func TestWalkPassesOverSockets(t *testing.T) {
	root := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(root, "s"))
	if err != nil {
		t.Skip("no unix sockets here:", err)
	}
	defer l.Close()
	if err := os.WriteFile(filepath.Join(root, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := safefile.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var seen []string
	if err := d.Walk(func(e safefile.Entry) error { seen = append(seen, filepath.Base(e.Path)); return nil }); err != nil {
		t.Fatalf("Walk with a socket in the folder: %v", err)
	}
	if !slices.Equal(seen, []string{"f"}) {
		t.Errorf("walked %v, want [f]", seen)
	}
}

// TestRemoveAllFollowsNoLink: RemoveAll removes a folder's content by
// descriptor and a link as a link, never what it points to.
func TestRemoveAllFollowsNoLink(t *testing.T) {
	root := t.TempDir()
	elsewhere := t.TempDir()
	if err := os.WriteFile(filepath.Join(elsewhere, "keep"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	mkdir(t, filepath.Join(root, ".new-x", "sub"), 0o700)
	symlink(t, elsewhere, filepath.Join(root, ".new-x", "sub", "link"))
	symlink(t, elsewhere, filepath.Join(root, ".new-y"))
	d, err := safefile.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, name := range []string{".new-x", ".new-y", ".new-missing"} {
		if err := d.RemoveAll(name); err != nil {
			t.Errorf("RemoveAll(%s): %v", name, err)
		}
	}
	if des, _ := os.ReadDir(root); len(des) != 0 {
		t.Errorf("left %v", des)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "keep")); err != nil {
		t.Errorf("RemoveAll removed through a link: %v", err)
	}
}
