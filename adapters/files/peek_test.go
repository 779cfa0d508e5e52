package files_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/files"
)

// TestPeekChangesWritesNothing checks that PeekChanges reports what
// Changes then reports, for processed and waiting outbox files, without
// moving a file or changing a ticket.
func TestPeekChangesWritesNothing(t *testing.T) {
	f := newFixture(t)
	f.dropAged(t, "first.txt", "ticket: "+string(f.ref)+"\nkind: reply\nauthor: Anna\n\nOn their way.\n", time.Hour)
	_, cur := f.changes(t, "")
	f.dropAged(t, "second.txt", "ticket: "+string(f.ref)+"\nkind: status\nstatus: done\n", time.Hour)
	f.dropAged(t, "broken.txt", "kind: reply\n\nno ticket", time.Hour)

	snapshot := func() map[string][]byte {
		out := map[string][]byte{}
		filepath.Walk(f.dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				b, _ := os.ReadFile(p)
				out[p] = b
			}
			return nil
		})
		return out
	}
	before := snapshot()
	evs, next, err := f.a.PeekChanges(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, snapshot()) {
		t.Fatal("PeekChanges changed the directory")
	}
	if next != "" {
		t.Fatalf("cursor %q, want it unchanged", next)
	}
	if len(evs) != 2 || evs[0].Kind != adapters.EventReply || evs[0].Body != "On their way." ||
		evs[1].Kind != adapters.EventStatus || evs[1].ID != files.PeekPrefix+"second.txt" {
		t.Fatalf("peeked events: %+v", evs)
	}
	peekAfter, _, err := f.a.PeekChanges(t.Context(), cur)
	if err != nil || len(peekAfter) != 1 {
		t.Fatalf("peek after the cursor: %+v, %v", peekAfter, err)
	}
	got, _ := f.changes(t, cur)
	if len(got) != 1 || got[0].Kind != peekAfter[0].Kind || got[0].Status != peekAfter[0].Status || got[0].Ref != peekAfter[0].Ref {
		t.Fatalf("Changes reported %+v after peeking %+v", got, peekAfter)
	}
}
