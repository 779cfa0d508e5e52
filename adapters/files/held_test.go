package files_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// TestSetAsideFilesAreCountedAndListed: an outbox file set aside is
// counted at once and listed, with its reason and none of its content,
// until it is moved back fixed or removed.
func TestSetAsideFilesAreCountedAndListed(t *testing.T) {
	f := newFixture(t)
	if got := f.a.Held(t.Context()); len(got) != 0 || f.a.SetAside() != 0 {
		t.Fatalf("a fresh helpdesk holds %+v, counted %d", got, f.a.SetAside())
	}
	const secret = "Room 214 has the safe code 4711"
	f.dropAged(t, "reply.txt", "ticket: 2026-03-14-housekeeping-3f2a9c1c\nkind: reply\n\n"+secret, time.Minute)
	f.dropAged(t, "note.txt", "ticket: "+string(f.ref)+"\nkind: shout\n\n"+secret, time.Minute)
	f.changes(t, "")
	if n := f.a.SetAside(); n != 2 {
		t.Fatalf("counted %d files set aside, want 2", n)
	}
	held := f.a.Held(t.Context())
	if len(held) != 2 {
		t.Fatalf("Held = %+v, want the two files", held)
	}
	byFile := map[string]adapters.HeldError{}
	for _, h := range held {
		byFile[h.File] = h
		if !h.SetAside() || h.Since.IsZero() || h.Ref != "" {
			t.Errorf("%+v: want a file set aside, with its time", h)
		}
		if strings.Contains(h.Error(), "safe code") || strings.Contains(h.Error(), "shout") {
			t.Errorf("the list shows the file's content: %s", h.Error())
		}
	}
	reply, note := byFile["outbox/failed/reply.txt"], byFile["outbox/failed/note.txt"]
	if reply.Op != "outbox file reply.txt" || !strings.Contains(reply.Need, "no ticket folder") || !strings.Contains(reply.Need, string(f.ref)) {
		t.Errorf("reply.txt listed as %+v; want its reason naming the closest folder", reply)
	}
	if !strings.Contains(note.Need, "line 2: kind is not one of") {
		t.Errorf("note.txt listed as %+v", note)
	}

	// Fixed and moved back: it leaves the list and goes through.
	failed := filepath.Join(f.dir, "outbox", "failed")
	if err := os.Remove(filepath.Join(failed, "reply.txt")); err != nil {
		t.Fatal(err)
	}
	f.dropAged(t, "reply.txt", "ticket: "+string(f.ref)+"\nkind: reply\n\nOn the way.", time.Minute)
	if err := os.Rename(filepath.Join(failed, "note.txt"), filepath.Join(failed, "..", "note.txt")); err != nil {
		t.Fatal(err)
	}
	if got := f.a.Held(t.Context()); len(got) != 0 {
		t.Fatalf("after both were taken back, Held = %+v", got)
	}
	f.changes(t, "")
	if n := f.a.SetAside(); n != 3 {
		t.Errorf("counted %d, want 3: the note moved back unfixed is set aside again", n)
	}
	held = f.a.Held(t.Context())
	// Beside the first explanation, left behind, which is not listed.
	if len(held) != 1 || held[0].File != "outbox/failed/note.txt.2" || held[0].Op != "outbox file note.txt" {
		t.Fatalf("Held = %+v, want the note set aside again", held)
	}
	// Removed: gone from the list.
	if err := os.Remove(filepath.Join(failed, "note.txt.2")); err != nil {
		t.Fatal(err)
	}
	if got := f.a.Held(t.Context()); len(got) != 0 {
		t.Fatalf("after the file was removed, Held = %+v", got)
	}
}

// TestHeldReadsAHandEditedExplanation: an explanation not in the bridge's
// form is listed as it reads, on one line.
func TestHeldReadsAHandEditedExplanation(t *testing.T) {
	f := newFixture(t)
	failed := filepath.Join(f.dir, "outbox", "failed")
	for name, content := range map[string]string{
		"a.txt": "x", "a.txt.error.txt": "asked Anna\tabout it\nsecond line",
		"b.txt": "x", "b.txt.error.txt": "",
	} {
		if err := os.WriteFile(filepath.Join(failed, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	held := f.a.Held(t.Context())
	if len(held) != 2 {
		t.Fatalf("Held = %+v", held)
	}
	for _, h := range held {
		switch h.File {
		case "outbox/failed/a.txt":
			if h.Need != "asked Annaabout it" || h.Op != "outbox file a.txt" {
				t.Errorf("a.txt: %+v", h)
			}
		case "outbox/failed/b.txt":
			if !strings.Contains(h.Need, "explanation is empty") {
				t.Errorf("b.txt: %+v", h)
			}
		}
	}
}

// TestOutboxTakesAShortID: the short id status and the page show, or any
// start of 8 characters or more of an upstream id or a folder name, names
// the one ticket it starts.
func TestOutboxTakesAShortID(t *testing.T) {
	f := newFixture(t)
	for i, ticket := range []string{"3f2a9c1b", "3F2A9C1B-7d4e", "2026-03-14-housekeeping-3f2a"} {
		name := []string{"a.txt", "b.txt", "c.txt"}[i]
		f.dropAged(t, name, "ticket: "+ticket+"\nkind: note\n\nNote "+name, time.Minute)
	}
	evs, _ := f.changes(t, "")
	if len(evs) != 3 {
		t.Fatalf("events %+v; failed/ holds %v", evs, ls(t, filepath.Join(f.dir, "outbox", "failed")))
	}
	for _, ev := range evs {
		if ev.Ref != f.ref || ev.UpstreamTicketID != f.tk.UpstreamID {
			t.Errorf("event %+v: want ticket %s", ev, f.ref)
		}
	}
}

// TestOutboxRefusesAnAmbiguousOrUnknownID: a start two tickets share is
// refused naming both; an unknown id is refused naming the closest
// folders, never repeating what the file wrote.
func TestOutboxRefusesAnAmbiguousOrUnknownID(t *testing.T) {
	f := newFixture(t)
	other := f.tk
	other.UpstreamID = "3f2a9c1b-0000-4000-8000-000000000000"
	ref2, err := f.a.EnsureTicket(t.Context(), other)
	if err != nil {
		t.Fatal(err)
	}
	far := f.tk
	far.UpstreamID, far.Department = "9e8d7c6b-0000-4000-8000-000000000000", "Kitchen"
	if _, err := f.a.EnsureTicket(t.Context(), far); err != nil {
		t.Fatal(err)
	}
	f.dropAged(t, "ambiguous.txt", "ticket: 3f2a9c1b\nkind: reply\n\nHello", time.Minute)
	f.dropAged(t, "unknown.txt", "ticket: 3f2a9c1c-7d4e\nkind: reply\n\nHello", time.Minute)
	f.dropAged(t, "short.txt", "ticket: 3f2a9c1\nkind: reply\n\nHello", time.Minute)
	if evs, _ := f.changes(t, ""); len(evs) != 0 {
		t.Fatalf("events %+v, want none", evs)
	}
	why := func(name string) string {
		b, err := os.ReadFile(filepath.Join(f.dir, "outbox", "failed", name+".error.txt"))
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(b), "\n")
		return first
	}
	if w := why("ambiguous.txt"); !strings.Contains(w, "more than one ticket") || !strings.Contains(w, string(f.ref)) || !strings.Contains(w, string(ref2)) {
		t.Errorf("ambiguous: %s", w)
	}
	w := why("unknown.txt")
	if !strings.Contains(w, "no ticket folder") || !strings.Contains(w, string(f.ref)) || !strings.Contains(w, string(ref2)) ||
		strings.Contains(w, "kitchen") || strings.Contains(w, "3f2a9c1c-7d4e") {
		t.Errorf("unknown: %s; want the two close folders named, not the far one, not the id written", w)
	}
	if w := why("short.txt"); !strings.Contains(w, "8 characters at least") || !strings.Contains(w, string(f.ref)) {
		t.Errorf("too short: %s", w)
	}
}
