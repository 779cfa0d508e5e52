package files_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/files"
)

func TestParseOutbox(t *testing.T) {
	cases := []struct {
		name, data string
		want       files.OutboxItem
	}{
		{"reply.txt", "ticket: 2026-03-14-housekeeping-3f2a9c1b\nkind: reply\nauthor: Anna (front desk)\n\nYour towels are on their way.\n",
			files.OutboxItem{Ticket: "2026-03-14-housekeeping-3f2a9c1b", Kind: "reply", Author: "Anna (front desk)", Body: "Your towels are on their way."}},
		{"crlf-bom.txt", "\ufeffTicket: T1\r\nKIND: Note\r\n\r\n\r\n  indented first line\r\nsecond\r\n\r\n",
			files.OutboxItem{Ticket: "T1", Kind: "note", Body: "  indented first line\nsecond"}},
		{"status.txt", "ticket: T1\nkind: status\nstatus: done", files.OutboxItem{Ticket: "T1", Kind: "status", Status: "done"}},
		{"status-blank.txt", "\n\nticket: T1\nkind: status\nstatus: In progress\n\n\n", files.OutboxItem{Ticket: "T1", Kind: "status", Status: "In progress"}},
		{"colon.txt", "ticket: T1\nkind: reply\n\nTime: 7:15\nkind: not a header", files.OutboxItem{Ticket: "T1", Kind: "reply", Body: "Time: 7:15\nkind: not a header"}},
		{"a.JSON", `{"ticket": " T1 ", "kind": "REPLY", "author": "Zoë", "body": "Grüße\r\n**bold**\n"}`,
			files.OutboxItem{Ticket: "T1", Kind: "reply", Author: "Zoë", Body: "Grüße\n**bold**"}},
	}
	for _, c := range cases {
		got, err := files.ParseOutbox(c.name, []byte(c.data))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestParseOutboxRejects(t *testing.T) {
	cases := []struct{ name, data, says string }{
		{"a.txt", "", "ticket is missing"},
		{"a.txt", "kind: reply\n\nhi", "ticket is missing"},
		{"a.txt", "ticket: T1\n\nhi", "kind is missing"},
		{"a.txt", "ticket: T1\nkind: comment\n\nhi", "line 2: kind is not one of"},
		{"a.txt", "ticket: T1\nkind: reply\n", "needs a text"},
		{"a.txt", "ticket: T1\nkind: reply\nstatus: done\n\nhi", "only for kind status"},
		{"a.txt", "ticket: T1\nkind: status\n", "needs a status line"},
		{"a.txt", "ticket: T1\nkind: status\nstatus: done\n\nbecause", "takes no text"},
		{"a.txt", "ticket: T1\nsubject: towels\nkind: reply\n\nhi", "line 2: unknown header"},
		{"a.txt", "ticket: T1\nticket: T2\nkind: reply\n\nhi", "given twice"},
		{"a.txt", "ticket: T1\nkind reply\n\nhi", "line 2"},
		{"a.txt", "ticket: T1\nkind: reply\n\nGr\xfc\xdfe", "not UTF-8"},
		{"a.txt", "ticket: T1\nkind: reply\n\nnul\x00byte", "NUL"},
		{"a.txt", "ticket: T1\nkind: reply\nauthor: " + strings.Repeat("a", 201) + "\n\nhi", "author is longer"},
		{"a.json", `{"ticket": "T1", "kind": "reply", "body": "hi", "to": "guest"}`, "not one of the known"},
		{"a.json", `{"ticket": "T1", "kind": "reply", "body": "hi"} {}`, "more than one"},
		{"a.json", `["T1"]`, "not a JSON object"},
		{"a.json", `{"ticket": "T1\nT2", "kind": "reply", "body": "hi"}`, "control characters"},
		{"a.json", `{"ticket": "T1", "kind": "status", "status": "done\nkind: reply"}`, "not a status word"},
	}
	for _, c := range cases {
		_, err := files.ParseOutbox(c.name, []byte(c.data))
		if !errors.Is(err, adapters.ErrInvalid) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("ParseOutbox(%q) = %v; want ErrInvalid saying %q", c.data, err, c.says)
		}
	}
}

// render writes item in the text format.
func render(it files.OutboxItem) string {
	var b strings.Builder
	b.WriteString("ticket: " + it.Ticket + "\nkind: " + string(it.Kind) + "\n")
	if it.Author != "" {
		b.WriteString("author: " + it.Author + "\n")
	}
	if it.Status != "" {
		b.WriteString("status: " + it.Status + "\n")
	}
	if it.Body != "" {
		b.WriteString("\n" + it.Body + "\n")
	}
	return b.String()
}

// FuzzParseOutbox: any input either parses into an item that satisfies the
// format's rules and survives a round trip through the text format, or is
// refused with ErrInvalid. It never panics.
func FuzzParseOutbox(f *testing.F) {
	f.Add("reply.txt", []byte("ticket: T1\nkind: reply\nauthor: Anna\n\nHello"))
	f.Add("status.txt", []byte("ticket: T1\nkind: status\nstatus: done\n"))
	f.Add("note.json", []byte(`{"ticket":"T1","kind":"note","body":"x"}`))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		it, err := files.ParseOutbox(name, data)
		if err != nil {
			if !errors.Is(err, adapters.ErrInvalid) {
				t.Fatalf("error without ErrInvalid: %v", err)
			}
			return
		}
		if it.Ticket == "" || it.Ticket != strings.TrimSpace(it.Ticket) {
			t.Fatalf("ticket %q", it.Ticket)
		}
		for _, s := range []string{it.Ticket, it.Author, it.Status, it.Body, string(it.Kind)} {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 in %+v", it)
			}
		}
		switch it.Kind {
		case adapters.EventReply, adapters.EventNote:
			if strings.TrimSpace(it.Body) == "" || it.Status != "" {
				t.Fatalf("%s with body %q, status %q", it.Kind, it.Body, it.Status)
			}
		case adapters.EventStatus:
			if it.Status == "" || it.Body != "" {
				t.Fatalf("status with body %q, status %q", it.Body, it.Status)
			}
		default:
			t.Fatalf("kind %q", it.Kind)
		}
		if strings.Contains(it.Body, "\r") {
			t.Fatalf("body keeps a CR: %q", it.Body)
		}
		again, err := files.ParseOutbox("again.txt", []byte(render(it)))
		if err != nil || again != it {
			t.Fatalf("round trip through the text format: %+v, %v; want %+v", again, err, it)
		}
		b, _ := json.Marshal(map[string]string{"ticket": it.Ticket, "kind": string(it.Kind), "author": it.Author, "status": it.Status, "body": it.Body})
		if again, err := files.ParseOutbox("again.json", b); err != nil || again != it {
			t.Fatalf("round trip through JSON: %+v, %v; want %+v", again, err, it)
		}
	})
}

// TestParseOutboxQuotesNothing: an error names the line or the field and
// what is wrong, never the file's content, which lands in a failed/
// explanation the whole group reads.
func TestParseOutboxQuotesNothing(t *testing.T) {
	const secret = "sk_live_Zq7SECRETKEY"
	for _, c := range []struct{ name, data string }{
		{"a.txt", secret + "\n"},
		{"a.txt", secret + ": value\n\nhi"},
		{"a.txt", "ticket: T1\nkind: " + secret + "\n\nhi"},
		{"a.txt", "ticket: T1\nkind: status\nstatus: " + secret + strings.Repeat("x", 60) + "\n"},
		{"a.txt", "ticket: " + secret + "\x01\nkind: reply\n\nhi"},
		{"a.json", secret},
		{"a.json", `{"` + secret + `": 1}`},
		{"a.json", `{"ticket": 1` + secret + `}`},
		{"a.json", `{"ticket": ` + secret[:5] + `}`},
	} {
		_, err := files.ParseOutbox(c.name, []byte(c.data))
		if err == nil {
			t.Errorf("ParseOutbox(%q): no error", c.data)
			continue
		}
		for _, leak := range []string{secret[:5], "'s'", "'k'"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("ParseOutbox(%q) = %q: quotes the file", c.data, err)
			}
		}
	}
}

// TestQuietChangesListNothing: once a report reached the end of
// processed/, a Changes that finds the outbox empty and processed/
// unchanged (its modification time) answers from memory, without
// listing processed/, which keeps every file ever taken. A file taken
// after that moves the folder's time, and is reported.
func TestQuietChangesListNothing(t *testing.T) {
	f := newFixture(t)
	f.dropAged(t, "reply.txt", "ticket: "+string(f.ref)+"\nkind: reply\nauthor: Anna\n\nOn the way.", time.Minute)
	evs, cur := f.changes(t, "")
	if len(evs) != 1 {
		t.Fatalf("Changes = %+v, want the reply", evs)
	}
	processed := filepath.Join(f.dir, "outbox", "processed")
	old := time.Now().Add(-time.Hour) // not so recent that a later change could share it
	if err := os.Chtimes(processed, old, old); err != nil {
		t.Fatal(err)
	}
	if evs, _ := f.changes(t, cur); len(evs) != 0 { // lists processed/, and stamps it
		t.Fatalf("Changes after the reply = %+v, want none", evs)
	}
	// A file written into processed/ behind the adapter's back, the
	// folder's time set back: the quiet answer does not list processed/,
	// so it does not see it.
	stray := filepath.Join(processed, "000000000002-stray.txt")
	if err := os.WriteFile(stray, []byte("ticket: "+string(f.ref)+"\nkind: note\n\nStray."), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(processed, old, old); err != nil {
		t.Fatal(err)
	}
	if evs, next := f.changes(t, cur); len(evs) != 0 || next != cur {
		t.Fatalf("a quiet Changes = %+v, %q; want none and %q, answered without listing processed/", evs, next, cur)
	}
	// A file the adapter takes moves processed/'s time: both are reported.
	f.dropAged(t, "note.txt", "ticket: "+string(f.ref)+"\nkind: note\n\nChecked.", time.Minute)
	evs, _ = f.changes(t, cur)
	if len(evs) != 2 || evs[0].ID != "000000000002-stray.txt" || evs[1].ID != "000000000003-note.txt" {
		t.Fatalf("Changes after a new outbox file = %+v, want the stray file and the note", evs)
	}
}

// TestEmptyOutboxIsNotListedAgain: an outbox that was read empty is not
// read again while its modification time stands (one stat a quiet
// cycle, not an open, a read and a close); the same for failed/. A file
// put in moves the folder's time and is taken.
func TestEmptyOutboxIsNotListedAgain(t *testing.T) {
	f := newFixture(t)
	outbox, failed := filepath.Join(f.dir, "outbox"), filepath.Join(f.dir, "outbox", "failed")
	if err := os.MkdirAll(failed, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour) // not so recent that a later change could share it
	for _, d := range []string{outbox, failed} {
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}
	_, cur := f.changes(t, "") // reads the outbox empty, and stamps it
	if got := f.a.Held(t.Context()); len(got) != 0 {
		t.Fatalf("Held = %+v, want none", got)
	}
	// A file put in behind the adapter's back, the folder's time set
	// back: the quiet cycle does not read the folder, so it misses it.
	reply := "ticket: " + string(f.ref) + "\nkind: reply\nauthor: Anna\n\nOn the way."
	f.dropAged(t, "reply.txt", reply, time.Minute)
	if err := os.WriteFile(filepath.Join(failed, "x.txt"), []byte("kind: shout\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(failed, "x.txt.error.txt"), []byte("why"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{outbox, failed} {
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if evs, _ := f.changes(t, cur); len(evs) != 0 {
		t.Fatalf("Changes = %+v: the empty outbox was read again", evs)
	}
	if got := f.a.Held(t.Context()); len(got) != 0 {
		t.Fatalf("Held = %+v: the empty failed/ was read again", got)
	}
	// As a file put in leaves them: both are read, and what is there seen.
	now := time.Now()
	for _, d := range []string{outbox, failed} {
		if err := os.Chtimes(d, now, now); err != nil {
			t.Fatal(err)
		}
	}
	if evs, _ := f.changes(t, cur); len(evs) != 1 || evs[0].Body != "On the way." {
		t.Fatalf("Changes after the folder's time moved = %+v, want the reply", evs)
	}
	if got := f.a.Held(t.Context()); len(got) != 1 {
		t.Fatalf("Held after the folder's time moved = %+v, want x.txt", got)
	}
}
