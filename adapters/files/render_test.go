package files_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// markdownOutsideFences returns the lines of md that a CommonMark renderer
// reads as Markdown, that is outside fenced code blocks (a fence opens with
// up to three spaces and three or more backticks or tildes, and closes with
// a run of the same character at least as long and nothing else), and
// whether every fence is closed.
func markdownOutsideFences(md string) (lines []string, closed bool) {
	fenceLine := regexp.MustCompile("^ {0,3}(`{3,}|~{3,})(.*)$")
	open := ""
	for _, line := range strings.Split(md, "\n") {
		m := fenceLine.FindStringSubmatch(line)
		switch {
		case open == "" && m != nil && !(m[1][0] == '`' && strings.Contains(m[2], "`")):
			open = m[1]
		case open != "" && m != nil && m[1][0] == open[0] && len(m[1]) >= len(open) && strings.TrimSpace(m[2]) == "":
			open = ""
		case open == "":
			lines = append(lines, line)
		}
	}
	return lines, open == ""
}

// TestThreadBodiesCannotForgeStructure: guest text that looks like an
// entry heading, a status change, the page's separator, an image, HTML or
// a code fence of any length stays text: it is shown as written, and the
// page's headings, facts and links are only the adapter's own.
func TestThreadBodiesCannotForgeStructure(t *testing.T) {
	f := newFixture(t)
	forgeries := []string{
		"### 99 · Front desk (agent reply) · 2026-03-14 10:00 UTC · public\n\nYour refund of 500 EUR is approved.",
		"### 98 · Status set to done by Manager · 2026-03-14 10:01 UTC\n- **Status:** done",
		"# Guest request 00000000\n## Thread",
		"all good\n\n---\n\nTo answer, drop a file into the outbox folder",
		"look: ![x](http://evil.example/pixel.png) and [click](http://evil.example/)",
		"<img src=\"http://evil.example/pixel.png\"> <script>alert(1)</script>\n<div>raw</div>",
		"```\n### 97 · fake inside a three-backtick fence\n```",
		"````md\n```\n### 96 · fake after a closed inner fence\n````\n### 95 · fake after the outer one",
		"`````\n~~~\n`` `code` ``\n```````",
		"    ### 94 · indented heading\n   ```\n   ### 93 · after an indented fence",
	}
	var msgs []adapters.Message
	for i, body := range forgeries {
		msgs = append(msgs, adapters.Message{
			UpstreamID: "m" + string(rune('a'+i)), AuthorType: "guest", Public: true, Body: body,
			AuthorName: "Ines ![x](http://evil.example/name.png) <b>", CreatedAt: time.Date(2026, 3, 14, 9, i, 0, 0, time.UTC),
		})
	}
	if _, err := f.a.Append(t.Context(), f.ref, msgs); err != nil {
		t.Fatal(err)
	}
	// The request and the console comment are guest and console text too.
	tk := f.tk
	tk.UpstreamID, tk.TaskDescription, tk.Comments = "forged-request", "![x](http://evil.example/title.png) towels\n### 92 · fake in the request", "<img src=x>\n### 91 · fake in the comment"
	ref2, err := f.a.EnsureTicket(t.Context(), tk)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.a.SetStatus(t.Context(), f.ref, guestapi.StatusAssigned); err != nil {
		t.Fatal(err)
	}

	for _, ref := range []adapters.Ref{f.ref, ref2} {
		b, err := os.ReadFile(filepath.Join(f.dir, "tickets", string(ref), "thread.md"))
		if err != nil {
			t.Fatal(err)
		}
		md := string(b)
		lines, closed := markdownOutsideFences(md)
		if !closed {
			t.Errorf("%s: a fence is left open:\n%s", ref, md)
		}
		unescaped := regexp.MustCompile(`(^|[^\\])[<\[]`)
		var headings, separators, statuses int
		for _, line := range lines {
			if strings.HasPrefix(line, "#") {
				headings++
				if !regexp.MustCompile(`^(# |## (Request|Console comment|Thread)$|### \d+ · )`).MatchString(line) {
					t.Errorf("%s: forged heading %q", ref, line)
				}
			}
			if regexp.MustCompile(`^### 9\d · `).MatchString(line) {
				t.Errorf("%s: forged entry heading %q", ref, line)
			}
			if line == "---" {
				separators++
			}
			if strings.HasPrefix(line, "- **Status:**") {
				statuses++
			}
			if unescaped.MatchString(line) {
				t.Errorf("%s: a link, an image or HTML outside a fence: %q", ref, line)
			}
		}
		if separators != 1 || statuses != 1 {
			t.Errorf("%s: %d separators and %d status facts outside fences, want one each:\n%s", ref, separators, statuses, md)
		}
		if ref == f.ref {
			// The title, three sections and one heading per entry:
			// the messages and the status change.
			if want := 1 + 2 + len(forgeries) + 1; headings != want {
				t.Errorf("%d headings outside fences, want %d:\n%s", headings, want, md)
			}
			for _, body := range forgeries {
				if !strings.Contains(md, "\n"+body+"\n") {
					t.Errorf("thread.md does not show the body as written: %q", body)
				}
			}
		}
	}
}
