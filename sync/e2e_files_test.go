package sync_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
)

// filesTicket is the part of a files helpdesk ticket.json the test reads.
type filesTicket struct {
	Folder string `json:"folder"`
	Status string `json:"status"`
	Thread []struct {
		Kind       string `json:"kind"`
		Source     string `json:"source"`
		UpstreamID string `json:"upstream_id"`
		Body       string `json:"body"`
		Public     bool   `json:"public"`
	} `json:"thread"`
}

func readFolder(t *testing.T, dir, id string) filesTicket {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(dir, "tickets"))
	if err != nil {
		t.Fatal(err)
	}
	var found []filesTicket
	for _, de := range des {
		b, err := os.ReadFile(filepath.Join(dir, "tickets", de.Name(), "ticket.json"))
		if err != nil {
			continue
		}
		var ft filesTicket
		var head struct {
			UpstreamID string `json:"upstream_id"`
		}
		if json.Unmarshal(b, &head) == nil && head.UpstreamID == id && json.Unmarshal(b, &ft) == nil {
			found = append(found, ft)
		}
	}
	if len(found) != 1 {
		t.Fatalf("ticket %s has %d folders, want 1", id, len(found))
	}
	return found[0]
}

// snapshotDir returns every file under dir with its content.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && filepath.Base(p) != ".lock" {
			b, _ := os.ReadFile(p)
			out[p] = string(b) + fi.ModTime().String()
		}
		return nil
	})
	return out
}

// TestEndToEndFiles plays the whole loop against the reference server over
// loopback HTTP with the files helpdesk, its outbox written as a person
// would.
func TestEndToEndFiles(t *testing.T) {
	e := newEnv(t)
	e.filesDir = filepath.Join(t.TempDir(), "helpdesk")
	id := e.newTicket("Two towels to room 214")
	e.guest(id, "second message")
	e.open()

	// A new ticket reaches the helpdesk with its whole thread.
	if r := e.cycle(); r.Created != 1 || r.Mirrored != 2 {
		t.Fatalf("first cycle: %s", r)
	}
	ft := readFolder(t, e.filesDir, id)
	if len(ft.Thread) != 2 || ft.Thread[1].Body != "second message" {
		t.Fatalf("thread: %+v", ft.Thread)
	}
	md, err := os.ReadFile(filepath.Join(e.filesDir, "tickets", ft.Folder, "thread.md"))
	if err != nil || !strings.Contains(string(md), "second message") {
		t.Fatalf("thread.md: %v\n%s", err, md)
	}

	// A later guest message arrives.
	e.clock.Advance(time.Minute)
	e.guest(id, "third message")
	e.tick()
	if ft = readFolder(t, e.filesDir, id); len(ft.Thread) != 3 {
		t.Fatalf("after the guest wrote: %+v", ft.Thread)
	}

	drop := func(name, text string) {
		t.Helper()
		p := filepath.Join(e.filesDir, "outbox", name)
		if err := os.WriteFile(p+".tmp", []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			t.Fatal(err)
		}
	}
	// An agent reply reaches the guest; a note stays internal.
	e.clock.Advance(time.Minute)
	drop("reply.txt", "ticket: "+ft.Folder+"\nkind: reply\nauthor: Maria\n\nTowels are on the way.\n")
	drop("note.txt", "ticket: "+ft.Folder+"\nkind: note\nauthor: Maria\n\nHousekeeping told.\n")
	if r := e.tick(); r.Sent != 2 {
		t.Fatalf("outbox cycle: %s", r)
	}
	view := e.upstream(id)
	vis := map[string]bool{}
	for _, m := range view.Messages {
		vis[m.Body] = m.VisibleToGuest
	}
	if v, ok := vis["Towels are on the way."]; !ok || !v {
		t.Fatalf("reply upstream: %v", vis)
	}
	if v, ok := vis["Housekeeping told."]; !ok || v {
		t.Fatalf("note upstream: %v", vis)
	}
	for _, m := range view.GuestView.Messages {
		if m.Body == "Housekeeping told." {
			t.Fatal("the guest sees the note")
		}
	}

	// Status both ways.
	e.clock.Advance(time.Minute)
	drop("status.txt", "ticket: "+ft.Folder+"\nkind: status\nstatus: in progress\n")
	e.tick()
	if got := e.upstream(id).Ticket.Status; got != guestapi.StatusInProgress {
		t.Fatalf("upstream status %s", got)
	}
	e.clock.Advance(time.Minute)
	e.ts.Server.SetStatus(id, guestapi.StatusDone)
	e.clock.Advance(10 * time.Minute)
	e.tick()
	if ft = readFolder(t, e.filesDir, id); ft.Status != "done" {
		t.Fatalf("helpdesk status %q", ft.Status)
	}

	// Nothing echoes, and quiet cycles write nothing on either side.
	e.quiesce()
	ft = readFolder(t, e.filesDir, id)
	for _, en := range ft.Thread {
		if en.Source == "upstream" && (en.Body == "Towels are on the way." || en.Body == "Housekeeping told.") {
			t.Fatalf("own post echoed: %+v", en)
		}
	}
	if len(ft.Thread) != 3+2+2 { // three messages, reply and note, two status changes
		t.Fatalf("thread: %+v", ft.Thread)
	}
	before, posts := snapshotDir(t, e.filesDir), e.posts()
	e.clock.Advance(2 * time.Hour)
	for range 3 {
		if r := e.tick(); r.Created+r.Mirrored+r.StatusDown+r.Events+r.Sent+r.Errors != 0 {
			t.Fatalf("quiet cycle: %s", r)
		}
	}
	if e.posts() != posts {
		t.Fatal("quiet cycles posted upstream")
	}
	if after := snapshotDir(t, e.filesDir); !maps.Equal(before, after) {
		t.Fatal("quiet cycles changed the helpdesk folder")
	}
}
