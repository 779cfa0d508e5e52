package files

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
)

// renderThread renders thread.md, the page a person reads: the request, its
// facts, then every message, reply, note and status change in the order of
// their times (entries of the same time keep the order they arrived in),
// each under a heading "### <id> · <who> · <time> · <visibility>". An agent
// reply written before the guest message it answers was mirrored thus
// shows below that message.
//
// Guest, console and staff text cannot forge the page's structure: every
// body (the request, the console comment, each message, reply and note) is
// a fenced code block, shown as written and never rendered, and every
// value put into a heading or a fact is one line with Markdown's link,
// image, HTML and code characters escaped (see [inline]). So no text can
// start a heading, an entry, a status line, load an image or carry HTML
// when a person previews the file.
func renderThread(t *ticketFile, from map[string]guestapi.Status) []byte {
	var b strings.Builder
	title := firstLine(t.TaskDescription, 80)
	if title == "" {
		title = "Guest request " + t.UpstreamID
	}
	fmt.Fprintf(&b, "# %s\n\n", inline(title))
	fmt.Fprintf(&b, "- **Status:** %s\n", inline(t.Status))
	fmt.Fprintf(&b, "- **Department:** %s\n", orDash(inline(t.Department)))
	fmt.Fprintf(&b, "- **Origin:** %s\n", orDash(inline(t.Origin)))
	fmt.Fprintf(&b, "- **Created:** %s\n", when(t.CreatedAt))
	fmt.Fprintf(&b, "- **Updated:** %s\n", when(t.UpdatedAt))
	if t.DueAt != nil {
		fmt.Fprintf(&b, "- **Due:** %s\n", when(*t.DueAt))
	}
	if t.GuestRating != nil {
		fmt.Fprintf(&b, "- **Guest rating:** %s\n", strconv.FormatFloat(*t.GuestRating, 'f', -1, 64))
	}
	if t.Priority != "" {
		fmt.Fprintf(&b, "- **Priority:** %s\n", inline(t.Priority))
	}
	fmt.Fprintf(&b, "- **Upstream id:** %s\n", inline(t.UpstreamID))
	fmt.Fprintf(&b, "- **Folder:** %s\n", inline(t.Folder))
	if d := strings.TrimSpace(t.TaskDescription); d != "" {
		fmt.Fprintf(&b, "\n## Request\n\n%s\n", fence(d))
	} else {
		b.WriteString("\n## Request\n\n—\n")
	}
	if c := strings.TrimSpace(t.Comments); c != "" {
		fmt.Fprintf(&b, "\n## Console comment\n\n%s\n", fence(c))
	}
	b.WriteString("\n## Thread\n")
	if len(t.Thread) == 0 {
		b.WriteString("\nNo messages yet.\n")
	}
	thread := slices.Clone(t.Thread)
	slices.SortStableFunc(thread, func(x, y entry) int { return x.At.Compare(y.At) })
	for _, e := range thread {
		fmt.Fprintf(&b, "\n### %s · %s\n", e.ID, heading(t, e))
		if e.Kind != kindStatus {
			fmt.Fprintf(&b, "\n%s\n", fence(e.Body))
		}
	}
	statuses := make([]string, 0, len(from))
	for s := range from {
		statuses = append(statuses, s)
	}
	slices.Sort(statuses)
	fmt.Fprintf(&b, "\n---\n\nTo answer, drop a file into the outbox folder (see outbox/README.txt):\n\n"+
		"    ticket: %s\n    kind: reply            (or note, or status)\n    author: Your Name\n    status: done           (kind status only: %s)\n\n"+
		"    Your text, for reply and note.\n", t.Folder, strings.Join(statuses, ", "))
	return []byte(b.String())
}

// heading is the part of an entry's heading after its id.
func heading(t *ticketFile, e entry) string {
	switch e.Kind {
	case kindStatus:
		by := "in the hotel's operations platform"
		if e.Source == sourceOutbox {
			by = "by " + orDash(inline(e.AuthorName))
		}
		s := fmt.Sprintf("Status set to %s %s · %s", inline(e.Status), by, when(e.At))
		if r, ok := t.sentFor(e.EventID); ok && e.EventID != "" {
			s += " · sent upstream " + when(r.At)
		}
		return s
	case kindMessage:
		return fmt.Sprintf("%s (%s) · %s · %s", orDash(inline(e.AuthorName)), orDash(inline(e.AuthorType)), when(e.At), visibility(e.Public))
	}
	who := "agent reply"
	if e.Kind == kindNote {
		who = "agent note"
	}
	if e.Source == sourceBridge {
		return fmt.Sprintf("ticketbridge (operations platform) · %s · %s", when(e.At), visibility(e.Public))
	}
	s := fmt.Sprintf("%s (%s) · %s · %s", orDash(inline(e.AuthorName)), who, when(e.At), visibility(e.Public))
	if r, ok := t.sentFor(e.EventID); ok && e.EventID != "" {
		s += " · sent upstream " + when(r.At)
	}
	return s
}

func visibility(public bool) string {
	if public {
		return "public"
	}
	return "internal note"
}

// when renders a time for people: minutes, UTC.
func when(t time.Time) string {
	if t.IsZero() {
		return "time unknown"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return s
}

// oneLine replaces line breaks and other control characters with spaces so
// that a value cannot break the page's structure.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
}

// inline makes s fit to stand inside a line of Markdown: one line (see
// [oneLine]), with a backslash before each character that could open a
// link or an image ([ ]), raw HTML or an autolink (< >), a code span (`),
// emphasis (*) or an entity (&), and before the backslash itself. Others,
// such as _ in in_progress, are left as they are, for the file's readers.
func inline(s string) string {
	var b strings.Builder
	for _, r := range oneLine(s) {
		if strings.ContainsRune("\\[]<>`*&", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// fence returns body as a fenced code block, which Markdown shows as
// written: no line of it is a heading, a list, a link, an image or HTML.
// The fence is a run of backticks longer than any in the body, so no line
// of the body can close it; the body keeps its lines and indentation.
func fence(body string) string {
	body = strings.TrimRight(body, "\n")
	longest, run := 0, 0
	for _, r := range body {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", max(3, longest+1))
	return f + "text\n" + body + "\n" + f
}

// firstLine returns the first non-empty line of s, at most n runes.
func firstLine(s string, n int) string {
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimSpace(oneLine(line))
		if line == "" {
			continue
		}
		if r := []rune(line); len(r) > n {
			return string(r[:n]) + "…"
		}
		return line
	}
	return ""
}
