package files_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/files"
)

// tree lists every path below dir with its size, mode and modification
// time: two equal trees had nothing written.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == dir {
			b.WriteString("(none)")
			return nil
		}
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s %v %s %d\n", rel, fi.Mode(), fi.ModTime().Format(time.RFC3339Nano), fi.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestReadOnlyWritesNothing: an adapter opened for a dry run creates no
// folder, lock or README, reads a missing folder as empty, reads an
// existing one (tickets and waiting outbox files) without touching it,
// and refuses writes.
func TestReadOnlyWritesNothing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "helpdesk")
	a, err := files.New(t.Context(), files.Options{Dir: missing, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := a.Lookup(t.Context(), "3f2a9c1b-7d4e-4f60-9a8b-0c1d2e3f4a5b"); ok || err != nil {
		t.Fatalf("lookup in a missing folder: %t, %v", ok, err)
	}
	if evs, _, err := a.PeekChanges(t.Context(), ""); len(evs) != 0 || err != nil {
		t.Fatalf("peek in a missing folder: %v, %v", evs, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a read-only adapter made its folder: %v", err)
	}

	f := newFixture(t)
	f.dropAged(t, "reply.txt", "ticket: "+string(f.ref)+"\nkind: reply\nauthor: Maria\n\nOn their way.\n", time.Minute)
	before := tree(t, f.dir)
	ro, err := files.New(t.Context(), files.Options{Dir: f.dir, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if found, ok, err := ro.Lookup(t.Context(), f.tk.UpstreamID); !ok || err != nil || found.Ref != f.ref {
		t.Fatalf("lookup: %+v, %t, %v", found, ok, err)
	}
	if evs, _, err := ro.PeekChanges(t.Context(), ""); len(evs) != 1 || err != nil {
		t.Fatalf("peek: %v, %v", evs, err)
	}
	if _, err := ro.EnsureTicket(t.Context(), adapters.Ticket{UpstreamID: "4c1f5b63-9d2e-4a4f-8b8c-6d7e8f9a0b12"}); !errors.Is(err, files.ErrReadOnly) {
		t.Fatalf("ensure ticket read-only: %v, want ErrReadOnly", err)
	}
	if _, _, err := ro.Changes(t.Context(), ""); !errors.Is(err, files.ErrReadOnly) {
		t.Fatalf("changes read-only: %v, want ErrReadOnly", err)
	}
	if after := tree(t, f.dir); after != before {
		t.Fatalf("the read-only adapter changed the folder:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestThreadInTimeOrder: thread.md lists entries by their time, not by
// when they reached the folder; entries of one time keep their order.
func TestThreadInTimeOrder(t *testing.T) {
	f := newFixture(t)
	at := func(min int) time.Time { return time.Date(2026, 3, 14, 10, min, 0, 0, time.UTC) }
	msg := func(id, body string, min int) adapters.Message {
		return adapters.Message{UpstreamID: id, AuthorType: "guest", AuthorName: "Ines", Body: body, Public: true, CreatedAt: at(min)}
	}
	for _, batch := range [][]adapters.Message{
		{msg("m-late", "the answer, written at 10:10", 10)},
		{msg("m-early", "the question, written at 10:05", 5)},
		{msg("m-tie-1", "first of two at 10:07", 7), msg("m-tie-2", "second of two at 10:07", 7)},
	} {
		if _, err := f.a.Append(t.Context(), f.ref, batch); err != nil {
			t.Fatal(err)
		}
	}
	md, err := os.ReadFile(filepath.Join(f.dir, "tickets", string(f.ref), "thread.md"))
	if err != nil {
		t.Fatal(err)
	}
	var pos []int
	for _, s := range []string{"written at 10:05", "first of two at 10:07", "second of two at 10:07", "written at 10:10"} {
		i := strings.Index(string(md), s)
		if i < 0 {
			t.Fatalf("thread.md lacks %q:\n%s", s, md)
		}
		pos = append(pos, i)
	}
	for i := 1; i < len(pos); i++ {
		if pos[i] < pos[i-1] {
			t.Fatalf("thread.md is not in time order:\n%s", md)
		}
	}
}
