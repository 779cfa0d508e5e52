package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/sync"
)

// threadHas reports whether the files helpdesk's thread of request id
// holds text.
func threadHas(t *testing.T, b *hotelKit, id, text string) bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.vars["TICKETBRIDGE_FILES_DIR"], "tickets", b.folder(id), "thread.md"))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(data, []byte(text))
}

// TestPauseResumeResyncCommands: on the files helpdesk, `pause` stops a
// request crossing either way (the daemon stopped: the command writes
// the state itself), `resume` through the running daemon's console sends
// what waited and mirrors what the guest wrote, each once, and `resync`
// puts a refused reply back to pending; each is logged with who.
func TestPauseResumeResyncCommands(t *testing.T) {
	b := newBridge(t)
	a := b.ticket("towels")
	if _, errOut, code := b.cmd("once"); code != 0 {
		t.Fatalf("once: %s", errOut)
	}
	out, errOut, code := b.cmd("pause", a)
	if code != 0 || !strings.Contains(out, "pause: ticket "+a+". The request is paused") {
		t.Fatalf("pause: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := b.cmd("pause", a); code != 1 || !strings.Contains(errOut, "it was paused by ") {
		t.Errorf("pause of a paused request: exit %d %s", code, errOut)
	}
	const reply, guest = "Fresh towels are on the way.", "Two more, please."
	b.drop("a.txt", "ticket: "+a+"\nkind: reply\nauthor: Ana\n\n"+reply+"\n")
	if _, err := b.ts.Server.AddMessage(a, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, Body: guest}); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := b.cmd("once"); code != 0 {
		t.Fatalf("once while paused: %s", errOut)
	}
	if n := countUpstream(t, b, a, reply); n != 0 || threadHas(t, b, a, guest) {
		t.Fatalf("while paused: the reply went up %d times, the guest's message mirrored %v", n, threadHas(t, b, a, guest))
	}
	out, _, _ = b.cmd("status")
	mustContain(t, "status while paused", out, "Paused", "1 paused by an operator")

	d := startConsoleDaemon(t, b, nil)
	d.drain()
	out, errOut, code = b.cmd("resume", a)
	if code != 0 || !strings.Contains(out, "resume: ticket "+a) {
		t.Fatalf("resume while running: exit %d\n%s%s", code, out, errOut)
	}
	d.until(t, 5, "sending what waited", func(r sync.Report) bool { return r.Sent == 1 })
	d.next(t)
	if n := countUpstream(t, b, a, reply); n != 1 {
		t.Errorf("after resume the reply reached the guest %d times, want 1", n)
	}
	if !threadHas(t, b, a, guest) {
		t.Error("after resume the guest's message is not in the helpdesk")
	}

	// A reply refused for good, then resync: pending again, sent once.
	d.refuse.Store(true)
	const refused = "Sorry for the wait."
	b.drop("b.txt", "ticket: "+a+"\nkind: reply\nauthor: Ana\n\n"+refused+"\n")
	for range snapshotCycles {
		if len(d.snapshot(t).Failed) > 0 {
			break
		}
		d.next(t)
	}
	d.refuse.Store(false)
	d.drain()
	out, errOut, code = b.cmd("resync", a)
	if code != 0 || !strings.Contains(out, "resync: ticket "+a) {
		t.Fatalf("resync while running: exit %d\n%s%s", code, out, errOut)
	}
	d.until(t, 5, "sending the refused reply", func(r sync.Report) bool { return r.Sent == 1 })
	if n := countUpstream(t, b, a, refused); n != 1 {
		t.Errorf("after resync the refused reply reached the guest %d times, want 1", n)
	}
	logs := d.logs.String()
	for _, want := range []string{"action=resume who=cli:", "action=resync who=cli:"} {
		if !strings.Contains(logs, want) {
			t.Errorf("daemon log lacks %s", want)
		}
	}
	d.stop()
	d.stop = nil
	if _, errOut, code := b.cmd("resume", a); code != 1 || !strings.Contains(errOut, "not paused") {
		t.Errorf("resume of a request not paused, daemon stopped: exit %d %s", code, errOut)
	}
	if _, errOut, code := b.cmd("resync", "no-such-request"); code != 1 || !strings.Contains(errOut, "no tracked ticket") {
		t.Errorf("resync of an unknown request: exit %d %s", code, errOut)
	}
}

func TestPauseResumeResyncUsage(t *testing.T) {
	for _, name := range []string{"pause", "resume", "resync", "unlink"} {
		var out, errb bytes.Buffer
		err := run(context.Background(), []string{name, "--help"}, &out, &errb)
		if exitCode(err, &errb) != 0 || !strings.Contains(out.String(), "Usage: ticketbridge "+name+" ID") || !strings.Contains(out.String(), "/hotels/NAME/"+name) {
			t.Errorf("%s --help: %v\n%s%s", name, err, out.String(), errb.String())
		}
		errb.Reset()
		if code := exitCode(run(context.Background(), []string{name}, &out, &errb), &errb); code != 2 || !strings.Contains(errb.String(), "want the upstream id of a request") {
			t.Errorf("%s without ID: exit %d %s", name, code, errb.String())
		}
	}
}

// TestUnlinkCommand: on the files helpdesk, `unlink` leaves the request's
// thread with one note saying so, and then nothing of the request
// crosses: the guest's next message stays upstream, and a reply the team
// drops for it does not go up. status counts it.
func TestUnlinkCommand(t *testing.T) {
	b := newBridge(t)
	a := b.ticket("towels")
	if _, errOut, code := b.cmd("once"); code != 0 {
		t.Fatalf("once: %s", errOut)
	}
	out, errOut, code := b.cmd("unlink", a)
	if code != 0 || !strings.Contains(out, "unlink: ticket "+a+". The request is unlinked") {
		t.Fatalf("unlink: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := b.cmd("unlink", a); code != 1 || !strings.Contains(errOut, "it was unlinked by ") {
		t.Errorf("unlink of an unlinked request: exit %d %s", code, errOut)
	}
	const reply, guest = "Fresh towels are on the way.", "Two more, please."
	if _, err := b.ts.Server.AddMessage(a, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, Body: guest}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, errOut, code := b.cmd("once"); code != 0 {
			t.Fatalf("once after the unlink: %s", errOut)
		}
	}
	if !threadHas(t, b, a, "unlinked this ticket from guest request "+a) {
		t.Error("the thread has no note of the unlink")
	}
	b.drop("a.txt", "ticket: "+a+"\nkind: reply\nauthor: Ana\n\n"+reply+"\n")
	if _, errOut, code := b.cmd("once"); code != 0 {
		t.Fatalf("once: %s", errOut)
	}
	if n := countUpstream(t, b, a, reply); n != 0 || threadHas(t, b, a, guest) {
		t.Errorf("after the unlink: the reply went up %d times, the guest's message mirrored %v", n, threadHas(t, b, a, guest))
	}
	out, _, _ = b.cmd("status")
	mustContain(t, "status after the unlink", out, "Unlinked", "1 unlinked by an operator")
}

// TestConnectCommand: on the files helpdesk, a request the bridge has not
// mirrored yet is connected to a folder someone made by hand, through
// the running daemon's console: the next cycle stores the request's id
// in it and mirrors the guest's message there, and no other folder is
// made. A connect without the ticket is a usage error.
func TestConnectCommand(t *testing.T) {
	b := newBridge(t)
	folder := "by-hand-towels"
	dir := filepath.Join(b.vars["TICKETBRIDGE_FILES_DIR"], "tickets", folder)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ticket.json"), []byte(`{"format":1,"folder":"`+folder+`","status":"new","task_description":"Towels (phoned in)","thread":[],"sent":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// Older than the bridge and under way: not imported, the bridge
	// leaves it alone until it is connected.
	tv, err := b.ts.Server.CreateTicket(b.ts.Org, refserver.NewTicket{Department: "housekeeping", TaskDescription: "towels",
		Status: guestapi.StatusInProgress, CreatedAt: time.Now().Add(-24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	a := tv.ID
	if _, err := b.ts.Server.AddMessage(a, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, Body: "first message, by phone"}); err != nil {
		t.Fatal(err)
	}
	d := startConsoleDaemon(t, b, nil)
	d.next(t)
	if n := countFolders(b.vars["TICKETBRIDGE_FILES_DIR"], a); n != 0 {
		t.Fatalf("a request older than the bridge has %d folders before the connect", n)
	}
	d.drain()
	out, errOut, code := b.cmd("connect", a, folder)
	if code != 0 || !strings.Contains(out, "connect: ticket "+a) {
		t.Fatalf("connect while running: exit %d\n%s%s", code, out, errOut)
	}
	d.until(t, 5, "the connect", func(r sync.Report) bool { return r.Adopted == 1 })
	d.next(t)
	if des, _ := os.ReadDir(filepath.Join(b.vars["TICKETBRIDGE_FILES_DIR"], "tickets")); len(des) != 1 {
		t.Fatalf("%d folders after the connect, want the one made by hand", len(des))
	}
	tj := readTicketJSON(t, filepath.Join(dir, "ticket.json"))
	if tj.UpstreamID != a {
		t.Errorf("the folder made by hand mirrors %q, want %s", tj.UpstreamID, a)
	}
	if md, err := os.ReadFile(filepath.Join(dir, "thread.md")); err != nil || !strings.Contains(string(md), "first message, by phone") {
		t.Errorf("the guest's message is not in the folder made by hand: %v\n%s", err, md)
	}
	if !strings.Contains(d.logs.String(), "action=connect who=cli:") {
		t.Error("the daemon's log lacks the connect")
	}
	if _, errOut, code := b.cmd("connect", a); code != 2 || !strings.Contains(errOut, "connect ID REF") {
		t.Errorf("connect without a ticket: exit %d %s", code, errOut)
	}
}
