//go:build unix

package files_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/files"
)

// plantDirLink does what a member of the service's group can do in a
// folder of the helpdesk (2770, no sticky bit): move the folder rel aside
// and put a link to a folder of their choosing in its place. It returns
// that folder, which holds the entries of the original.
func plantDirLink(t *testing.T, dir, rel string) string {
	t.Helper()
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(filepath.Join(dir, rel), elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(dir, rel)); err != nil {
		t.Fatal(err)
	}
	return elsewhere
}

// TestFailedFolderLinkIsNotFollowed: outbox/failed replaced by a link
// (to /etc/profile.d, say) is not where an invalid outbox file goes, nor
// its explanation: a cycle run by root would move the staff's file there.
func TestFailedFolderLinkIsNotFollowed(t *testing.T) {
	f := newFixture(t)
	elsewhere := plantDirLink(t, f.dir, filepath.Join("outbox", "failed"))
	before := entries(t, elsewhere)
	f.dropAged(t, "zz-x.sh", "echo planted\n", time.Minute)
	_, _, err := f.a.Changes(t.Context(), "")
	if after := entries(t, elsewhere); len(after) != len(before) {
		t.Errorf("the invalid outbox file went through the link: %v holds %v, held %v", elsewhere, after, before)
	}
	if fi, lerr := os.Lstat(filepath.Join(f.dir, "outbox", "failed")); lerr != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link outbox/failed was moved or replaced: %v %v", fi, lerr)
	}
	if err == nil {
		t.Errorf("Changes with outbox/failed a link: no error, want one naming the link")
	}
	if _, err := os.Stat(filepath.Join(f.dir, "outbox", "zz-x.sh")); err != nil {
		t.Errorf("the staff's file left the outbox: %v", err)
	}
}

// TestProcessedFolderLinkIsNotFollowed: outbox/processed replaced by a
// link is not where a valid outbox file goes.
func TestProcessedFolderLinkIsNotFollowed(t *testing.T) {
	f := newFixture(t)
	elsewhere := plantDirLink(t, f.dir, filepath.Join("outbox", "processed"))
	before := entries(t, elsewhere)
	f.dropAged(t, "zz-x.sh", "ticket: "+string(f.ref)+"\nkind: reply\n\nOn the way.\n", time.Minute)
	evs, _, err := f.a.Changes(t.Context(), "")
	if after := entries(t, elsewhere); len(after) != len(before) {
		t.Errorf("the outbox file went through the link: %v holds %v, held %v", elsewhere, after, before)
	}
	if len(evs) != 0 {
		t.Errorf("events %+v read through a linked processed/", evs)
	}
	if err == nil {
		t.Errorf("Changes with outbox/processed a link: no error, want one naming the link")
	}
	// Nothing the staff wrote is lost: the reply waits in the outbox.
	if _, err := os.Stat(filepath.Join(f.dir, "outbox", "zz-x.sh")); err != nil {
		t.Errorf("the staff's reply left the outbox: %v", err)
	}
}

// TestTicketFolderLinkIsNotWrittenThrough: a ticket's folder replaced by a
// link (to a copy of it elsewhere) is not written through: a message
// appended to the ticket changes nothing where the link points.
func TestTicketFolderLinkIsNotWrittenThrough(t *testing.T) {
	f := newFixture(t)
	elsewhere := plantDirLink(t, f.dir, filepath.Join("tickets", string(f.ref)))
	before := map[string]string{}
	for _, n := range entries(t, elsewhere) {
		b, err := os.ReadFile(filepath.Join(elsewhere, n))
		if err != nil {
			t.Fatal(err)
		}
		before[n] = string(b)
	}
	_, err := f.a.Append(t.Context(), f.ref, []adapters.Message{{UpstreamID: "m9", Body: "WRITTEN-THROUGH", AuthorType: "guest", CreatedAt: f.now}})
	after := entries(t, elsewhere)
	if len(after) != len(before) {
		t.Errorf("files made through the link: %v, were %d", after, len(before))
	}
	for n, was := range before {
		if b, _ := os.ReadFile(filepath.Join(elsewhere, n)); string(b) != was {
			t.Errorf("%s changed through the link", n)
		}
	}
	if err == nil {
		t.Errorf("Append to a ticket whose folder is a link succeeded")
	}
}

// TestNewMakesNothingThroughALink: the outbox made a link before the
// adapter opens the folder (a root-run once after a staff member's swap)
// does not get processed/ and failed/ made where it points.
func TestNewMakesNothingThroughALink(t *testing.T) {
	dir := t.TempDir()
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(dir, "outbox")); err != nil {
		t.Fatal(err)
	}
	a, err := files.New(t.Context(), files.Options{Dir: dir})
	if err == nil {
		a.Close()
		t.Errorf("New with outbox/ a link succeeded")
	}
	if got := entries(t, elsewhere); len(got) != 0 {
		t.Errorf("New made %v through the link", got)
	}
}
