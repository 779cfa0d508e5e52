package adapters

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The helpers below write the plain text that the zendesk, freshdesk and
// zammad adapters store in their helpdesks. The helpdesks keep it, so its
// format must not change: existing tickets and comments would read
// differently from new ones.

// TimeLayout is how rendered text shows a time, always in UTC and followed
// by " UTC": 2026-03-14 09:33 UTC.
const TimeLayout = "2006-01-02 15:04"

// AuthorLine is the first line of a mirrored upstream message: who wrote
// it, as what, when, and whether it is an internal note, e.g.
// "Anna Gruber (agent), 2026-03-14 09:33 UTC, internal note". A missing
// name reads "Unknown author", a missing type "unknown"; a zero time is
// left out.
func AuthorLine(m Message) string {
	name := strings.TrimSpace(m.AuthorName)
	if name == "" {
		name = "Unknown author"
	}
	kind := string(m.AuthorType)
	if kind == "" {
		kind = "unknown"
	}
	line := fmt.Sprintf("%s (%s)", name, kind)
	if !m.CreatedAt.IsZero() {
		line += ", " + m.CreatedAt.UTC().Format(TimeLayout) + " UTC"
	}
	if !m.Public {
		line += ", internal note"
	}
	return line
}

// TicketFacts is what a ticket's description tells below the request: one
// line each, ending in a line break, for the department, origin and
// upstream status (each "none" when empty), then the creation time, the
// guest rating and the console comment when the ticket has them.
func TicketFacts(t Ticket) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Department: %s\n", OrNone(t.Department))
	fmt.Fprintf(&b, "Origin: %s\n", OrNone(string(t.Origin)))
	fmt.Fprintf(&b, "Status in the guest request system: %s\n", OrNone(string(t.Status)))
	if !t.CreatedAt.IsZero() {
		fmt.Fprintf(&b, "Created: %s UTC\n", t.CreatedAt.UTC().Format(TimeLayout))
	}
	if t.GuestRating != nil {
		fmt.Fprintf(&b, "Guest rating: %g\n", *t.GuestRating)
	}
	if c := strings.TrimSpace(t.Comments); c != "" {
		fmt.Fprintf(&b, "Console comment: %s\n", c)
	}
	return b.String()
}

// OrNone returns s, or "none" when s is empty or white space.
func OrNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "none"
	}
	return s
}

// Subject is a ticket's subject: "[department] " and the first line of the
// request, cut to 100 characters; "Guest request" when the request is
// empty. Line breaks other than "\n" are the caller's to normalise.
func Subject(t Ticket) string {
	line, _, _ := strings.Cut(strings.TrimSpace(t.TaskDescription), "\n")
	line = strings.TrimSpace(line)
	const maxRunes = 100
	if utf8.RuneCountInString(line) > maxRunes {
		line = string([]rune(line)[:maxRunes-1]) + "…"
	}
	if line == "" {
		line = "Guest request"
	}
	if d := strings.TrimSpace(t.Department); d != "" {
		return "[" + d + "] " + line
	}
	return line
}

// SentNote is the sentence of the note an adapter's MarkSent writes,
// before its marker: which helpdesk event was delivered upstream, and as
// which upstream message ("" for a status change).
func SentNote(eventID, upstreamMessageID string) string {
	if upstreamMessageID != "" {
		return fmt.Sprintf("Delivered to the guest request: %s, as message %s.", eventID, upstreamMessageID)
	}
	return fmt.Sprintf("Delivered to the guest request: %s (the status change).", eventID)
}

// UnsentNote is the sentence of the internal note an adapter leaves on a
// helpdesk ticket when an agent's reply or note carried files the API
// cannot carry, before its marker: "Not sent to the guest: map.png,
// invoice.pdf (the Guest Requests API carries text only)." An internal
// note's files reach nobody upstream either, and its sentence says so.
// Control characters in a name read as spaces.
func UnsentNote(kind EventKind, files []string) string {
	names := make([]string, 0, len(files))
	for _, f := range files {
		f = strings.Join(strings.FieldsFunc(f, unicode.IsControl), " ")
		if f = strings.TrimSpace(f); f != "" {
			names = append(names, f)
		}
	}
	what := "Not sent to the guest"
	if kind == EventNote {
		what = "Not sent with the internal note to the guest request"
	}
	return fmt.Sprintf("%s: %s (the Guest Requests API carries text only).", what, strings.Join(names, ", "))
}
