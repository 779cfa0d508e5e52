package files_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/adaptertest"
	"github.com/ticketbridge/ticketbridge/adapters/files"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/atomicfile"
)

// agent acts on a files helpdesk the way a person does: it drops files
// into the outbox, and reads ticket.json and thread.md.
type agent struct {
	dir string
	n   atomic.Int64
}

// drop writes an outbox file as a careful writer does: name.tmp, then a
// rename. The counter prefix keeps files dropped within one clock tick in
// order.
func (a *agent) drop(name, content string) error {
	name = fmt.Sprintf("%04d-%s", a.n.Add(1), name)
	tmp := filepath.Join(a.dir, "outbox", name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(a.dir, "outbox", name))
}

func (a *agent) Reply(_ context.Context, ref adapters.Ref, author, body string) error {
	return a.drop("reply.txt", fmt.Sprintf("ticket: %s\nkind: reply\nauthor: %s\n\n%s\n", ref, author, body))
}

func (a *agent) Note(_ context.Context, ref adapters.Ref, author, body string) error {
	b, _ := json.Marshal(map[string]string{"ticket": string(ref), "kind": "note", "author": author, "body": body})
	return a.drop("note.json", string(b))
}

// MakeTicket makes a folder by hand, as a person would: a ticket.json of
// no request, with the subject and body as its description.
func (a *agent) MakeTicket(_ context.Context, subject, body string) (adapters.Ref, error) {
	name := fmt.Sprintf("by-hand-%04d", a.n.Add(1))
	b, err := json.Marshal(map[string]any{"format": 1, "folder": name, "status": "new", "task_description": subject + "\n\n" + body,
		"created_at": time.Now().UTC(), "updated_at": time.Now().UTC(), "thread": []any{}, "sent": []any{}})
	if err != nil {
		return "", err
	}
	dir := filepath.Join(a.dir, "tickets", name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "thread.md"), []byte("# "+subject+"\n\n**Status:** new\n\n"+body+"\n"), 0o600); err != nil {
		return "", err
	}
	return adapters.Ref(name), os.WriteFile(filepath.Join(dir, "ticket.json"), b, 0o600)
}

func (a *agent) SetStatus(_ context.Context, ref adapters.Ref, author, status string) error {
	return a.drop("status.txt", fmt.Sprintf("ticket: %s\nkind: status\nauthor: %s\nstatus: %s\n", ref, author, status))
}

// heading matches the heading of a thread entry in thread.md.
var heading = regexp.MustCompile(`(?m)^### (\d+) · `)

func (a *agent) Read(_ context.Context, ref adapters.Ref) (adaptertest.Snapshot, error) {
	dir := filepath.Join(a.dir, "tickets", string(ref))
	var t struct {
		Status string `json:"status"`
		Thread []struct {
			ID     string `json:"id"`
			Kind   string `json:"kind"`
			Public bool   `json:"public"`
		} `json:"thread"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "ticket.json"))
	if err != nil {
		return adaptertest.Snapshot{}, err
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return adaptertest.Snapshot{}, err
	}
	md, err := os.ReadFile(filepath.Join(dir, "thread.md"))
	if err != nil {
		return adaptertest.Snapshot{}, err
	}
	sections := threadSections(string(md))
	snap := adaptertest.Snapshot{Status: t.Status}
	for _, e := range t.Thread {
		if e.Kind == "status" {
			continue
		}
		text, ok := sections[e.ID]
		if !ok {
			return snap, fmt.Errorf("thread.md has no section for entry %s", e.ID)
		}
		snap.Messages = append(snap.Messages, adaptertest.SnapshotMessage{Text: text, Public: e.Public})
	}
	if !strings.Contains(string(md), "**Status:** "+t.Status+"\n") {
		return snap, fmt.Errorf("thread.md does not show the status %q of ticket.json", t.Status)
	}
	return snap, nil
}

// threadSections splits thread.md's thread into entry id -> heading and
// text.
func threadSections(md string) map[string]string {
	_, thread, _ := strings.Cut(md, "\n## Thread\n")
	thread, _, _ = strings.Cut(thread, "\n---\n\nTo answer")
	out := map[string]string{}
	locs := heading.FindAllStringSubmatchIndex(thread, -1)
	for i, loc := range locs {
		end := len(thread)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		out[thread[loc[2]:loc[3]]] = strings.TrimSpace(thread[loc[0]:end])
	}
	return out
}

func open(t testing.TB, dir string) *files.Adapter {
	t.Helper()
	a, err := files.New(t.Context(), files.Options{Dir: dir})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

func TestConformance(t *testing.T) {
	dir := t.TempDir()
	adaptertest.Run(t, adaptertest.Harness{
		New:    func(t testing.TB) adapters.Helpdesk { return open(t, dir) },
		Agent:  &agent{dir: dir},
		Status: adapters.APIStatusMap(),
		Caps:   adaptertest.Caps{MarkSent: true, AuthorName: true, Events: true},
	})
}

func TestConformancePageOfOne(t *testing.T) {
	dir := t.TempDir()
	adaptertest.Run(t, adaptertest.Harness{
		New: func(t testing.TB) adapters.Helpdesk {
			a, err := files.New(t.Context(), files.Options{Dir: dir, PageSize: 1})
			if err != nil {
				t.Fatal(err)
			}
			return a
		},
		Agent:  &agent{dir: dir},
		Status: adapters.APIStatusMap(),
		Caps:   adaptertest.Caps{MarkSent: true, AuthorName: true, Events: true},
	})
}

// fixture is a files helpdesk with one ticket.
type fixture struct {
	dir   string
	a     *files.Adapter
	ref   adapters.Ref
	tk    adapters.Ticket
	agent *agent
	now   time.Time
}

// fixtureTime is the fixture's now: what its files' ages count from.
var fixtureTime = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

// atFixtureTime runs test in a testing/synctest bubble whose clock, which
// the adapter reads, starts at fixtureTime and moves only as test sleeps.
// Outside a bubble the adapter reads the machine's clock, later than
// fixtureTime: a test that needs the adapter's time to be the fixture's
// runs in here.
func atFixtureTime(t *testing.T, test func(t *testing.T)) {
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Until(fixtureTime))
		test(t)
	})
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), now: fixtureTime}
	a, err := files.New(t.Context(), files.Options{Dir: f.dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	f.a, f.agent = a, &agent{dir: f.dir}
	f.tk = adapters.Ticket{
		UpstreamID: "3f2a9c1b-7d4e-4f60-9a8b-0c1d2e3f4a5b", Department: "Housekeeping", Status: guestapi.StatusNew,
		TaskDescription: "Extra towels for room 214\nTwo bath towels, please.", Origin: guestapi.OriginGuest,
		CreatedAt: time.Date(2026, 3, 14, 8, 26, 0, 0, time.UTC),
	}
	f.ref, err = a.EnsureTicket(t.Context(), f.tk)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// dropAged writes an outbox file directly (no .tmp) with a modification
// time age before the fixture's clock.
func (f *fixture) dropAged(t *testing.T, name, content string, age time.Duration) {
	t.Helper()
	p := filepath.Join(f.dir, "outbox", name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, f.now.Add(-age), f.now.Add(-age)); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) changes(t *testing.T, cursor adapters.Cursor) ([]adapters.Event, adapters.Cursor) {
	t.Helper()
	evs, next, err := f.a.Changes(t.Context(), cursor)
	if err != nil {
		t.Fatalf("Changes(%q): %v", cursor, err)
	}
	return evs, next
}

func ls(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		if !de.IsDir() && !strings.HasPrefix(de.Name(), ".") {
			out = append(out, de.Name())
		}
	}
	return out
}

func TestFolderLayout(t *testing.T) {
	f := newFixture(t)
	if f.ref != "2026-03-14-housekeeping-3f2a9c1b" {
		t.Fatalf("folder %q, want <date>-<department>-<short id>", f.ref)
	}
	md, err := os.ReadFile(filepath.Join(f.dir, "tickets", string(f.ref), "thread.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Extra towels for room 214\n", "**Status:** new", "**Department:** Housekeeping",
		"**Upstream id:** " + f.tk.UpstreamID, "Two bath towels, please.", "ticket: " + string(f.ref)} {
		if !strings.Contains(string(md), want) {
			t.Errorf("thread.md lacks %q:\n%s", want, md)
		}
	}
	if got := ls(t, filepath.Join(f.dir, "outbox")); len(got) != 1 || got[0] != "README.txt" {
		t.Errorf("outbox holds %v, want just README.txt", got)
	}
	// Same date, department and short id, another upstream ticket: the
	// long name.
	other := f.tk
	other.UpstreamID = "3f2a9c1b-0000-4000-8000-000000000000"
	ref, err := f.a.EnsureTicket(t.Context(), other)
	if err != nil {
		t.Fatal(err)
	}
	if ref != "2026-03-14-housekeeping-3f2a9c1b-0000-4000-8000-000000000000" {
		t.Errorf("colliding folder named %q", ref)
	}
}

func TestLookupFindsRenamedFolder(t *testing.T) {
	f := newFixture(t)
	root := filepath.Join(f.dir, "tickets")
	if err := os.Rename(filepath.Join(root, string(f.ref)), filepath.Join(root, "towels-room-214")); err != nil {
		t.Fatal(err)
	}
	fresh := open(t, f.dir)
	defer fresh.Close()
	found, ok, err := fresh.Lookup(t.Context(), f.tk.UpstreamID)
	if err != nil || !ok || found.Ref != "towels-room-214" {
		t.Fatalf("Lookup = %+v, %v, %v; want the renamed folder", found, ok, err)
	}
	// The old instance's index is stale; it must look again, not fail.
	found, ok, err = f.a.Lookup(t.Context(), f.tk.UpstreamID)
	if err != nil || !ok || found.Ref != "towels-room-214" {
		t.Fatalf("stale instance: Lookup = %+v, %v, %v", found, ok, err)
	}
	ref, err := f.a.EnsureTicket(t.Context(), f.tk)
	if err != nil || ref != "towels-room-214" {
		t.Fatalf("EnsureTicket after the rename = %q, %v; want the renamed folder, no duplicate", ref, err)
	}
}

func TestOutboxMalformedFilesGoToFailed(t *testing.T) {
	f := newFixture(t)
	cases := map[string]string{
		"unknown-ticket.txt": "ticket: no-such-ticket\nkind: reply\n\nHello",
		"bad-kind.txt":       "ticket: " + string(f.ref) + "\nkind: reopen\n\nHello",
		"bad-status.txt":     "ticket: " + string(f.ref) + "\nkind: status\nstatus: confirmed\n",
		"empty-body.txt":     "ticket: " + string(f.ref) + "\nkind: note\n\n   \n",
		"latin1.txt":         "ticket: " + string(f.ref) + "\nkind: reply\n\nGr\xfc\xdfe",
		"too-big.txt":        "ticket: " + string(f.ref) + "\nkind: reply\n\n" + strings.Repeat("x", files.DefaultMaxOutboxBytes),
		"bad.json":           `{"ticket": "` + string(f.ref) + `", "kind": "reply", "body": "hi", "priority": 1}`,
	}
	reasons := map[string]string{
		"unknown-ticket.txt": "no ticket folder",
		"bad-kind.txt":       "line 2: kind is not one of",
		"bad-status.txt":     "status: not one the bridge carries",
		"empty-body.txt":     "needs a text",
		"latin1.txt":         "not UTF-8",
		"too-big.txt":        "larger than",
		"bad.json":           "not one of the known",
	}
	for name, content := range cases {
		f.dropAged(t, name, content, time.Minute)
	}
	f.dropAged(t, "good.txt", "ticket: "+f.tk.UpstreamID+"\nkind: reply\nauthor: Anna\n\nOn the way.", time.Minute)

	evs, _ := f.changes(t, "")
	if len(evs) != 1 || evs[0].Body != "On the way." {
		t.Fatalf("events %+v, want only the good reply", evs)
	}
	failed := filepath.Join(f.dir, "outbox", "failed")
	for name, reason := range reasons {
		orig, err := os.ReadFile(filepath.Join(failed, name))
		if err != nil {
			t.Errorf("%s not in failed/: %v", name, err)
			continue
		}
		if string(orig) != cases[name] {
			t.Errorf("%s changed on its way to failed/", name)
		}
		why, err := os.ReadFile(filepath.Join(failed, name+".error.txt"))
		if err != nil || !strings.Contains(string(why), reason) {
			t.Errorf("%s.error.txt = %q, %v; want it to say %q", name, why, err, reason)
		}
	}
	if got := ls(t, filepath.Join(f.dir, "outbox")); len(got) != 1 {
		t.Errorf("outbox still holds %v", got)
	}
	// Nothing of the bad files reached the ticket.
	snap, err := f.agent.Read(t.Context(), f.ref)
	if err != nil || len(snap.Messages) != 1 || snap.Status != "new" {
		t.Fatalf("ticket after the outbox: %+v, %v", snap, err)
	}

	// The same name failing again does not overwrite the first.
	f.dropAged(t, "bad-kind.txt", "ticket: "+string(f.ref)+"\nkind: shout\n\nHello", time.Minute)
	f.changes(t, "")
	if _, err := os.Stat(filepath.Join(failed, "bad-kind.txt.2.error.txt")); err != nil {
		t.Errorf("second failure of the same name: %v", err)
	}
}

// TestOutboxLeavesIncompleteFilesAlone runs at the fixture's time: a
// file is settled when the bubble's clock has moved past its settle time.
func TestOutboxLeavesIncompleteFilesAlone(t *testing.T) {
	atFixtureTime(t, testOutboxLeavesIncompleteFilesAlone)
}

func testOutboxLeavesIncompleteFilesAlone(t *testing.T) {
	f := newFixture(t)
	reply := "ticket: " + string(f.ref) + "\nkind: reply\n\nHello"
	f.dropAged(t, "draft.txt.tmp", reply, time.Hour)
	f.dropAged(t, ".hidden.txt", reply, time.Hour)
	f.dropAged(t, "backup.txt~", reply, time.Hour)
	f.dropAged(t, "fresh.txt", reply, 0) // still within the settle time below
	if err := os.Mkdir(filepath.Join(f.dir, "outbox", "drafts"), 0o700); err != nil {
		t.Fatal(err)
	}

	a, err := files.New(t.Context(), files.Options{Dir: f.dir, Settle: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	evs, cur, err := a.Changes(t.Context(), "")
	if err != nil || len(evs) != 0 {
		t.Fatalf("Changes = %+v, %v; want nothing yet", evs, err)
	}
	time.Sleep(3 * time.Second)
	evs, _, err = a.Changes(t.Context(), cur)
	if err != nil || len(evs) != 1 || !strings.HasSuffix(evs[0].ID, "-fresh.txt") {
		t.Fatalf("after the settle time: %+v, %v; want fresh.txt", evs, err)
	}
	want := []string{".hidden.txt", "README.txt", "backup.txt~", "draft.txt.tmp"}
	des, _ := os.ReadDir(filepath.Join(f.dir, "outbox"))
	var got []string
	for _, de := range des {
		if !de.IsDir() {
			got = append(got, de.Name())
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("outbox holds %v, want %v", got, want)
	}
}

func TestOutboxStatusUpdatesTheTicket(t *testing.T) {
	f := newFixture(t)
	f.dropAged(t, "close.txt", "ticket: "+string(f.ref)+"\nkind: status\nauthor: Anna\nstatus: In Progress\n", time.Minute)
	evs, _ := f.changes(t, "")
	if len(evs) != 1 || evs[0].Kind != adapters.EventStatus || evs[0].Status != guestapi.StatusInProgress {
		t.Fatalf("events %+v, want a status change to in_progress", evs)
	}
	if !evs[0].At.Equal(f.now.Add(-time.Minute)) {
		t.Errorf("event at %s, want the file's modification time %s", evs[0].At, f.now.Add(-time.Minute))
	}
	snap, err := f.agent.Read(t.Context(), f.ref)
	if err != nil || snap.Status != "in_progress" {
		t.Fatalf("ticket status %q, %v; want in_progress in ticket.json and thread.md", snap.Status, err)
	}
	md, _ := os.ReadFile(filepath.Join(f.dir, "tickets", string(f.ref), "thread.md"))
	if !strings.Contains(string(md), "Status set to in_progress by Anna") {
		t.Errorf("thread.md does not show the change:\n%s", md)
	}
}

// TestCrashBetweenMoveAndApply replays the state a crash leaves when a file
// was moved into processed/ but not yet recorded in its ticket: the next
// Changes reports it and records it, once.
func TestCrashBetweenMoveAndApply(t *testing.T) {
	f := newFixture(t)
	p := filepath.Join(f.dir, "outbox", "processed", "000000000007-reply.txt")
	if err := os.WriteFile(p, []byte("ticket: "+string(f.ref)+"\nkind: reply\nauthor: Anna\n\nOn the way."), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		evs, cur := f.changes(t, "")
		if len(evs) != 1 || evs[0].ID != "000000000007-reply.txt" || cur != "7" {
			t.Fatalf("Changes = %+v, %q; want the processed reply and cursor 7", evs, cur)
		}
	}
	snap, err := f.agent.Read(t.Context(), f.ref)
	if err != nil || len(snap.Messages) != 1 {
		t.Fatalf("ticket holds %+v, %v; want the reply once", snap, err)
	}
	// A new file gets a number above the processed one.
	f.dropAged(t, "next.txt", "ticket: "+string(f.ref)+"\nkind: note\n\nChecked.", time.Minute)
	evs, _ := f.changes(t, "7")
	if len(evs) != 1 || evs[0].ID != "000000000008-next.txt" {
		t.Fatalf("Changes = %+v, want 000000000008-next.txt", evs)
	}
}

// TestSequenceSurvivesPruning: processed/ may be emptied by hand; new
// events still come after the engine's cursor.
func TestSequenceSurvivesPruning(t *testing.T) {
	f := newFixture(t)
	reply := "ticket: " + string(f.ref) + "\nkind: reply\n\nHello"
	f.dropAged(t, "a.txt", reply, time.Minute)
	_, cur := f.changes(t, "")
	processed := filepath.Join(f.dir, "outbox", "processed")
	for _, name := range ls(t, processed) {
		os.Remove(filepath.Join(processed, name))
	}
	f.dropAged(t, "b.txt", reply, time.Minute)
	evs, _ := f.changes(t, cur)
	if len(evs) != 1 || !strings.HasPrefix(evs[0].ID, "000000000002-") {
		t.Fatalf("after pruning: %+v, want sequence 2", evs)
	}
	// And with .last-sequence gone too, the cursor itself is the floor.
	for _, name := range []string{".last-sequence"} {
		os.Remove(filepath.Join(processed, name))
	}
	for _, name := range ls(t, processed) {
		os.Remove(filepath.Join(processed, name))
	}
	f.dropAged(t, "c.txt", reply, time.Minute)
	evs, _ = f.changes(t, "41")
	if len(evs) != 1 || !strings.HasPrefix(evs[0].ID, "000000000042-") {
		t.Fatalf("after wiping: %+v, want sequence 42", evs)
	}
}

func TestTwoAdaptersOnOneFolderTakeTurns(t *testing.T) {
	f := newFixture(t)
	b := open(t, f.dir)
	defer b.Close()
	for i := range 20 {
		f.dropAged(t, fmt.Sprintf("r%02d.txt", i), "ticket: "+string(f.ref)+"\nkind: note\n\nnote "+fmt.Sprint(i), time.Minute)
	}
	done := make(chan []adapters.Event)
	for _, h := range []*files.Adapter{f.a, b} {
		go func() {
			evs, _, err := h.Changes(context.Background(), "")
			if err != nil {
				t.Error(err)
			}
			done <- evs
		}()
	}
	x, y := <-done, <-done
	if len(x) != 20 || len(y) != 20 || x[19].ID != y[19].ID {
		t.Fatalf("two adapters saw %d and %d events; want the same 20", len(x), len(y))
	}
	snap, err := f.agent.Read(t.Context(), f.ref)
	if err != nil || len(snap.Messages) != 20 {
		t.Fatalf("ticket holds %d messages, %v; want 20", len(snap.Messages), err)
	}
}

// TestMarkSentShowsInThread runs at the fixture's time: the delivery is
// stamped with the adapter's time.
func TestMarkSentShowsInThread(t *testing.T) { atFixtureTime(t, testMarkSentShowsInThread) }

func testMarkSentShowsInThread(t *testing.T) {
	f := newFixture(t)
	f.dropAged(t, "r.txt", "ticket: "+string(f.ref)+"\nkind: reply\nauthor: Anna\n\nOn the way.", time.Minute)
	evs, _ := f.changes(t, "")
	if err := f.a.MarkSent(t.Context(), f.ref, evs[0].ID, "9d2c"); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(f.dir, "tickets", string(f.ref), "thread.md"))
	if !strings.Contains(string(md), "Anna (agent reply) · 2026-03-14 11:59 UTC · public · sent upstream 2026-03-14 12:00 UTC") {
		t.Errorf("thread.md does not show the delivery:\n%s", md)
	}
	if err := f.a.MarkSent(t.Context(), "no-such-folder", evs[0].ID, "x"); !errors.Is(err, adapters.ErrNotFound) {
		t.Errorf("MarkSent on an unknown folder: %v", err)
	}
	if err := f.a.MarkSent(t.Context(), "../etc", evs[0].ID, "x"); !errors.Is(err, adapters.ErrNotFound) {
		t.Errorf("MarkSent on a path: %v", err)
	}
}

func TestStaleThreadIsMended(t *testing.T) {
	f := newFixture(t)
	m := adapters.Message{UpstreamID: "m1", AuthorType: guestapi.AuthorGuest, AuthorName: "Ada", Body: "Hello", Public: true}
	if _, err := f.a.Append(t.Context(), f.ref, []adapters.Message{m}); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(f.dir, "tickets", string(f.ref), "thread.md")
	if err := os.WriteFile(md, []byte("# stale\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.Append(t.Context(), f.ref, []adapters.Message{m}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(md); !strings.Contains(string(b), "Hello") {
		t.Fatalf("thread.md not mended: %s", b)
	}
}

func TestFactoryAndConfig(t *testing.T) {
	dir := t.TempDir()
	reg := adapters.Registry{files.Name: files.Factory}
	h, err := reg.Open(t.Context(), "files", adapters.Deps{Env: envconfig.MapLookuper(map[string]string{
		"TICKETBRIDGE_FILES_DIR": dir,
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.(adapters.Checker).Check(t.Context()); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "outbox", "README.txt")); err != nil {
		t.Fatal(err)
	}

	c, err := files.LoadConfig(t.Context(), envconfig.MapLookuper(map[string]string{"STATE_DIRECTORY": "/var/lib/ticketbridge:/other"}))
	if err != nil || c.Dir != "/var/lib/ticketbridge/helpdesk" || c.Settle != 2*time.Second || c.MaxOutboxBytes != 262144 {
		t.Fatalf("LoadConfig under systemd = %+v, %v", c, err)
	}
	if c, err := files.LoadConfig(t.Context(), nil); err != nil || c.Dir != "helpdesk" {
		t.Fatalf("LoadConfig without variables = %+v, %v", c, err)
	}
	for env, want := range map[string]string{
		"TICKETBRIDGE_FILES_MAX_OUTBOX_BYTES": "TICKETBRIDGE_FILES_MAX_OUTBOX_BYTES",
		"TICKETBRIDGE_FILES_SETTLE":           "TICKETBRIDGE_FILES_SETTLE",
	} {
		_, err := files.LoadConfig(t.Context(), envconfig.MapLookuper(map[string]string{env: "-1"}))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=-1: %v", env, err)
		}
	}
}

func TestCheckReportsUnwritableFolder(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes anywhere")
	}
	f := newFixture(t)
	out := filepath.Join(f.dir, "outbox")
	if err := os.Chmod(out, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(out, 0o700)
	if err := f.a.Check(t.Context()); err == nil || !strings.Contains(err.Error(), "not writable") {
		t.Fatalf("Check = %v, want the outbox named as not writable", err)
	}
}

func TestNewRefusesNoDir(t *testing.T) {
	if _, err := files.New(t.Context(), files.Options{}); err == nil || !strings.Contains(err.Error(), "TICKETBRIDGE_FILES_DIR") {
		t.Fatalf("New without a directory: %v", err)
	}
	a, err := files.New(t.Context(), files.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	if _, err := a.EnsureTicket(t.Context(), adapters.Ticket{UpstreamID: "x"}); err == nil {
		t.Fatal("EnsureTicket after Close succeeded")
	}
}

// TestBrokenTicketFolderStopsOnlyItsOwnFiles: a hand-broken ticket.json
// keeps its own outbox file waiting, but another ticket's reply is picked
// up and reported, and Changes does not fail.
func TestBrokenTicketFolderStopsOnlyItsOwnFiles(t *testing.T) {
	f := newFixture(t)
	other := f.tk
	other.UpstreamID, other.Department = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d", "Maintenance"
	ref2, err := f.a.EnsureTicket(t.Context(), other)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "tickets", string(f.ref), "ticket.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.dropAged(t, "a-broken.txt", "ticket: "+string(f.ref)+"\nkind: reply\n\nFor the broken one.", 2*time.Minute)
	f.dropAged(t, "b-healthy.txt", "ticket: "+string(ref2)+"\nkind: reply\n\nFor the healthy one.", time.Minute)
	evs, _ := f.changes(t, "")
	if len(evs) != 1 || evs[0].Ref != ref2 || !strings.Contains(evs[0].Body, "healthy") {
		t.Fatalf("Changes = %+v, want the healthy ticket's reply alone", evs)
	}
	if got := ls(t, filepath.Join(f.dir, "outbox")); !slices.Contains(got, "a-broken.txt") {
		t.Fatalf("outbox holds %v; the broken ticket's file must wait there", got)
	}
}

// TestLookupFindsAFolderCopiedInSlowly: a ticket folder restored by hand
// whose ticket.json arrives after a lookup has already looked at the
// folder is still found by the next lookup, so no second folder is made.
func TestLookupFindsAFolderCopiedInSlowly(t *testing.T) {
	dir := t.TempDir()
	a := open(t, dir)
	ctx := t.Context()
	ref, err := a.EnsureTicket(ctx, adapters.Ticket{UpstreamID: "11111111-0000-4000-8000-000000000000", Department: "hk", Status: guestapi.StatusNew, TaskDescription: "towels"})
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(filepath.Join(dir, "tickets", string(ref), "ticket.json"))
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	// A restore: the folder comes back under another name, its file later.
	restored := filepath.Join(dir, "tickets", "restored-"+string(ref))
	if err := os.RemoveAll(filepath.Join(dir, "tickets", string(ref))); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(restored, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute) // as if the copy began a while ago
	if err := os.Chtimes(filepath.Join(dir, "tickets"), old, old); err != nil {
		t.Fatal(err)
	}
	b := open(t, dir)
	if _, ok, err := b.Lookup(ctx, "22222222-0000-4000-8000-000000000000"); err != nil || ok {
		t.Fatalf("lookup of another request: %v %v", ok, err)
	}
	if err := os.WriteFile(filepath.Join(restored, "ticket.json"), body, 0o600); err != nil {
		t.Fatal(err)
	}
	f, ok, err := b.Lookup(ctx, "11111111-0000-4000-8000-000000000000")
	if err != nil || !ok || f.Ref != adapters.Ref(filepath.Base(restored)) {
		t.Fatalf("lookup after the file arrived: %+v %v %v; want the restored folder", f, ok, err)
	}
}

// TestImportScansOnce: importing into a folder made a moment ago (every
// creation moves its time) reads the tickets folder a few times, not at
// every lookup that misses.
func TestImportScansOnce(t *testing.T) {
	a := open(t, t.TempDir())
	ctx := t.Context()
	const n = 50
	for i := range n {
		id := fmt.Sprintf("%08d-0000-4000-8000-000000000000", i)
		if _, ok, err := a.Lookup(ctx, id); err != nil || ok {
			t.Fatalf("lookup %d: %v %v", i, ok, err)
		}
		if _, err := a.EnsureTicket(ctx, adapters.Ticket{UpstreamID: id, Department: "hk", Status: guestapi.StatusNew}); err != nil {
			t.Fatal(err)
		}
	}
	if got := files.Scans(a); got > 3 {
		t.Fatalf("%d creations read the tickets folder %d times, want 3 at most", n, got)
	}
}

// TestFlushSyncsEachFolderOnce: creations, appends and status changes
// leave their folders' syncs to Flush, which syncs each folder they
// changed once; Close flushes what is left.
func TestFlushSyncsEachFolderOnce(t *testing.T) {
	a := open(t, t.TempDir())
	ctx := t.Context()
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		id := fmt.Sprintf("%08d-0000-4000-8000-000000000000", i)
		ref, err := a.EnsureTicket(ctx, adapters.Ticket{UpstreamID: id, Department: "hk", Status: guestapi.StatusNew})
		if err != nil {
			t.Fatal(err)
		}
		for j := range 2 {
			m := adapters.Message{UpstreamID: fmt.Sprintf("m%d-%d", i, j), AuthorType: guestapi.AuthorGuest, Body: "Hello", Public: true}
			if _, err := a.Append(ctx, ref, []adapters.Message{m}); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.SetStatus(ctx, ref, guestapi.StatusAssigned); err != nil {
			t.Fatal(err)
		}
	}
	flushed := func(f func() error) int64 {
		t.Helper()
		s := atomicfile.Syncs()
		if err := f(); err != nil {
			t.Fatal(err)
		}
		return atomicfile.Syncs() - s
	}
	if got := flushed(func() error { return a.Flush(ctx) }); got != 4 {
		t.Fatalf("Flush made %d syncs, want 4: the three ticket folders and the tickets folder", got)
	}
	if got := flushed(func() error { return a.Flush(ctx) }); got != 0 {
		t.Fatalf("a second Flush made %d syncs, want none", got)
	}
	f, ok, err := a.Lookup(ctx, "00000001-0000-4000-8000-000000000000")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := a.Append(ctx, f.Ref, []adapters.Message{{UpstreamID: "late", AuthorType: guestapi.AuthorGuest, Body: "Hi", Public: true}}); err != nil {
		t.Fatal(err)
	}
	if got := flushed(a.Close); got != 1 {
		t.Fatalf("Close made %d syncs, want 1: the folder of the last append", got)
	}
}

// TestFlushAfterAFolderWasRemoved: a folder removed by hand before the
// Flush has nothing left to sync; the Flush succeeds.
func TestFlushAfterAFolderWasRemoved(t *testing.T) {
	f := newFixture(t)
	m := adapters.Message{UpstreamID: "m1", AuthorType: guestapi.AuthorGuest, Body: "Hello", Public: true}
	if _, err := f.a.Append(t.Context(), f.ref, []adapters.Message{m}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(f.dir, "tickets", string(f.ref))); err != nil {
		t.Fatal(err)
	}
	if err := f.a.Flush(t.Context()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// TestConcurrentEnsureMakesOneFolderEach: tickets ensured at once, each
// of them from several goroutines, get one folder each, and no hidden
// folder is left behind.
func TestConcurrentEnsureMakesOneFolderEach(t *testing.T) {
	dir := t.TempDir()
	a := open(t, dir)
	defer a.Close()
	const tickets, callers = 8, 3
	refs := make([][callers]adapters.Ref, tickets)
	var wg gosync.WaitGroup
	for i := range tickets {
		for j := range callers {
			wg.Go(func() {
				id := fmt.Sprintf("%08d-0000-4000-8000-000000000000", i)
				ref, err := a.EnsureTicket(t.Context(), adapters.Ticket{UpstreamID: id, Department: "hk", Status: guestapi.StatusNew})
				if err != nil {
					t.Error(err)
				}
				refs[i][j] = ref
			})
		}
	}
	wg.Wait()
	seen := map[adapters.Ref]bool{}
	for i, r := range refs {
		if r[0] == "" || r[0] != r[1] || r[0] != r[2] || seen[r[0]] {
			t.Fatalf("ticket %d: refs %v (seen before: %v)", i, r, seen[r[0]])
		}
		seen[r[0]] = true
	}
	if got := entries(t, filepath.Join(dir, "tickets")); len(got) != tickets {
		t.Fatalf("tickets folder holds %v, want %d folders", got, tickets)
	}
}

// TestEnsureTakesTheNextNameWhenItsNameIsTakenMeanwhile: a folder of the
// name a new ticket's folder chose appears while the folder is built (the
// adapter's turn is not held then); the ticket takes its next name.
func TestEnsureTakesTheNextNameWhenItsNameIsTakenMeanwhile(t *testing.T) {
	dir := t.TempDir()
	tk := adapters.Ticket{UpstreamID: "3f2a9c1b-7d4e-4f60-9a8b-0c1d2e3f4a5b", Department: "Housekeeping", Status: guestapi.StatusNew,
		CreatedAt: time.Date(2026, 3, 14, 8, 26, 0, 0, time.UTC)}
	short := "2026-03-14-housekeeping-3f2a9c1b"
	calls := 0
	a, err := files.New(t.Context(), files.Options{Dir: dir, Guard: func() error {
		if calls++; calls == 3 { // New's turn, EnsureTicket's first, then the build
			return os.Mkdir(filepath.Join(dir, "tickets", short), 0o700)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ref, err := a.EnsureTicket(t.Context(), tk)
	if err != nil {
		t.Fatal(err)
	}
	if want := adapters.Ref("2026-03-14-housekeeping-" + tk.UpstreamID); ref != want {
		t.Fatalf("ref %s, want %s", ref, want)
	}
	if got := entries(t, filepath.Join(dir, "tickets")); !slices.Equal(got, []string{short, string(ref)}) {
		t.Fatalf("tickets folder holds %v", got)
	}
}

// entries lists every name in dir, hidden ones too.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}
