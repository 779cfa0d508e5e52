package rt

import (
	"fmt"
	"html"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// Every message the bridge writes into RT ends with the marker line of
// package adapters, "[ticketbridge message <upstream message id>]" (see
// [adapters.Marker]). RT keeps a text/plain body verbatim (it may store it
// quoted-printable or base64, and decodes it again when read), so the line
// survives; it is matched only as the whole last line, so an agent quoting
// a mirrored message ("> [...]") or mentioning it in a sentence never
// matches.

// idRE is what an upstream id stored in RT may look like.
var idRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`)

// maxIDLen bounds an upstream id: the API's ids are UUIDs, and the id must
// fit the custom field's 255 characters with room to spare.
const maxIDLen = 128

// checkID checks an upstream ticket or message id: what the adapter stores
// in RT and searches by must be a plain token (the API's ids are UUIDs).
func checkID(what, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%s is empty: %w", what, adapters.ErrInvalid)
	case len(id) > maxIDLen:
		return fmt.Errorf("%s is %d bytes long, more than %d: %w", what, len(id), maxIDLen, adapters.ErrInvalid)
	case !idRE.MatchString(id):
		return fmt.Errorf("%s %q may hold only letters, digits and . _ : - : %w", what, id, adapters.ErrInvalid)
	}
	return nil
}

// marker returns the marker line of an upstream message id.
func marker(upstreamID string) string {
	return adapters.Marker{Kind: adapters.MarkerMessage, ID: upstreamID}.Line()
}

// parseMarker returns the upstream message id of a body whose last
// non-blank line is a message marker with an id RT could have stored.
func parseMarker(body string) (string, bool) {
	m, ok := adapters.ParseMarker(body)
	if !ok || m.Kind != adapters.MarkerMessage || checkID("marker", m.ID) != nil {
		return "", false
	}
	return m.ID, true
}

// ownText reports whether body is one the bridge writes: a mirrored
// message, the comment naming the files of an event not sent, or the
// note of a rating or a console comment (see [Adapter.Update]).
func ownText(body string) bool {
	if _, ok := parseMarker(body); ok {
		return true
	}
	m, ok := adapters.ParseMarker(body)
	return ok && (m.Kind == adapters.MarkerUnsent || m.Kind == adapters.MarkerRating || m.Kind == adapters.MarkerComment)
}

// TimeFormat is how the adapter writes times into RT: the date first, so
// an agent reads it at a glance whatever RT's own locale.
const TimeFormat = "2006-01-02 15:04 UTC"

// renderMessage is the text/plain body of an upstream message in RT: a
// header line with the author, the author's type, the time and, for an
// internal message, the words "internal note"; a blank line; the body as
// it came; a blank line; the marker.
//
//	Grace Hopper (guest) · 2026-03-14 09:33 UTC
//
//	Could I have two more towels, please?
//
//	[ticketbridge message 6f1c2a3e-…]
func renderMessage(m adapters.Message) string {
	var b strings.Builder
	name := oneLine(m.AuthorName)
	if name == "" {
		name = "(no name)"
	}
	kind := oneLine(string(m.AuthorType))
	if kind == "" {
		kind = "unknown"
	}
	fmt.Fprintf(&b, "%s (%s) · %s", name, kind, m.CreatedAt.UTC().Format(TimeFormat))
	if !m.Public {
		b.WriteString(" · internal note")
	}
	b.WriteString("\n\n")
	b.WriteString(strings.TrimRight(normalizeNewlines(m.Body), "\n"))
	b.WriteString("\n\n")
	b.WriteString(marker(m.UpstreamID))
	b.WriteString("\n")
	return b.String()
}

// maxSubject keeps a ticket subject well inside RT's 200 characters.
const maxSubject = 120

// subject is the RT ticket subject of an upstream ticket: the first line
// of its description.
func subject(t adapters.Ticket) string {
	s := ""
	for _, line := range strings.Split(normalizeNewlines(t.TaskDescription), "\n") {
		if s = strings.TrimSpace(line); s != "" {
			break
		}
	}
	if s == "" {
		s = "Guest request " + t.UpstreamID
	}
	if utf8.RuneCountInString(s) > maxSubject {
		s = string([]rune(s)[:maxSubject-1]) + "…"
	}
	return s
}

// renderTicket is the body of the ticket's Create transaction: what the
// request is about, where it comes from, and the console card's comment.
func renderTicket(t adapters.Ticket) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Guest request %s", t.UpstreamID)
	if t.Department != "" {
		fmt.Fprintf(&b, " · department %s", oneLine(t.Department))
	}
	if t.Origin != "" {
		fmt.Fprintf(&b, " · origin %s", oneLine(string(t.Origin)))
	}
	b.WriteString("\n")
	if !t.CreatedAt.IsZero() {
		fmt.Fprintf(&b, "Created %s\n", t.CreatedAt.UTC().Format(TimeFormat))
	}
	b.WriteString("\n")
	desc := strings.TrimSpace(normalizeNewlines(t.TaskDescription))
	if desc == "" {
		desc = "(no description)"
	}
	b.WriteString(desc)
	b.WriteString("\n")
	if t.GuestRating != nil {
		fmt.Fprintf(&b, "\nGuest rating: %s\n", adapters.FormatRating(*t.GuestRating))
	}
	if c := strings.TrimSpace(normalizeNewlines(t.Comments)); c != "" {
		b.WriteString("\nComment on the console card:\n")
		b.WriteString(c)
		b.WriteString("\n")
	}
	return b.String()
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func normalizeNewlines(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// plainBody is the text of an agent's text/plain part as the guest should
// get it: line breaks normalised, trailing blank space dropped.
func plainBody(s string) string {
	return strings.TrimRight(normalizeNewlines(s), " \t\n")
}

var (
	dropBlocksRE = regexp.MustCompile(`(?is)<(script|style|head)\b.*?</(script|style|head)\s*>`)
	commentRE    = regexp.MustCompile(`(?s)<!--.*?-->`)
	breakRE      = regexp.MustCompile(`(?i)<br\s*/?>`)
	blockEndRE   = regexp.MustCompile(`(?i)</(p|div|li|tr|h[1-6]|blockquote|pre|table|ul|ol)\s*>`)
	listItemRE   = regexp.MustCompile(`(?i)<li\b[^>]*>`)
	tagRE        = regexp.MustCompile(`(?s)<[^>]*>`)
	blankRunRE   = regexp.MustCompile(`\n{3,}`)
)

// htmlToText turns the HTML of a reply written in RT's rich-text editor
// into plain text for the guest: paragraphs and line breaks become line
// breaks, list items start with "- ", other tags are dropped, entities are
// decoded. It is no HTML renderer, and need not be: RT's editor writes
// simple markup.
func htmlToText(s string) string {
	s = normalizeNewlines(s)
	s = dropBlocksRE.ReplaceAllString(s, "")
	s = commentRE.ReplaceAllString(s, "")
	// Source line breaks are not text in HTML.
	s = strings.ReplaceAll(s, "\n", " ")
	s = breakRE.ReplaceAllString(s, "\n")
	s = listItemRE.ReplaceAllString(s, "- ")
	s = blockEndRE.ReplaceAllString(s, "\n\n")
	s = tagRE.ReplaceAllString(s, "")
	s = html.UnescapeString(s)
	s = strings.ReplaceAll(s, "\u00a0", " ")
	s = blankRunRE.ReplaceAllString(trimLines(s), "\n\n")
	// Each list item closed with a blank line; keep a list tight.
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for i, l := range lines {
		if l == "" && i > 0 && i+1 < len(lines) && strings.HasPrefix(lines[i-1], "- ") && strings.HasPrefix(lines[i+1], "- ") {
			continue
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, "\n")
}
