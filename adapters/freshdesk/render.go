package freshdesk

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// Every note the bridge writes ends with an [adapters.Marker] line:
//
//	[ticketbridge message 0b6c…]     an upstream message mirrored by Append
//	[ticketbridge sent conv-43… 5f2a…] MarkSent: a helpdesk event delivered upstream
//
// Freshdesk keeps a note's HTML "body" re-rendered and derives "body_text"
// from it. The marker is made only of characters that HTML leaves alone
// (letters, digits, hyphens, brackets, spaces), on a line of its own, so it
// reads the same in both; the bridge reads markers from the text of body,
// falling back to body_text (see fdConversation.marker). Only the last non-empty line of the API agent's own notes
// counts, so that a marker quoted inside a message (a guest pasting one)
// never passes for the bridge's.

// validToken reports whether s can stand in a marker or a custom field:
// no white space, no bracket, not empty, not longer than a Freshdesk
// single-line text field.
func validToken(s string) bool {
	return adapters.MarkerToken(s) && len(s) <= 255
}

// descriptionText is the ticket's description as plain text: the request
// and what the console card adds.
func descriptionText(t adapters.Ticket) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(normalizeNewlines(t.TaskDescription), " \t\n"))
	b.WriteString("\n\n")
	b.WriteString(adapters.TicketFacts(t))
	fmt.Fprintf(&b, "Guest request: %s", t.UpstreamID)
	return b.String()
}

// subject is the ticket's subject (see [adapters.Subject]), with any
// line break ending the first line.
func subject(t adapters.Ticket) string {
	t.TaskDescription = normalizeNewlines(t.TaskDescription)
	return adapters.Subject(t)
}

func normalizeNewlines(s string) string { return saas.NormalizeNewlines(s) }

// textHTML writes plain text as HTML that shows it unchanged: one <div>
// with the lines separated by <br>, special characters escaped, and every
// space HTML would fold (at a line's start or end, after another space) and
// every tab as an entity. Freshdesk's body_text of it is the text again.
func textHTML(text string) string {
	lines := strings.Split(normalizeNewlines(text), "\n")
	var b strings.Builder
	b.WriteString("<div>")
	for i, line := range lines {
		if i > 0 {
			b.WriteString("<br>")
		}
		rs := []rune(line)
		for j, r := range rs {
			switch {
			case r == ' ' && (j == 0 || j == len(rs)-1 || rs[j-1] == ' '):
				b.WriteString("&nbsp;")
			case r == '\t':
				b.WriteString("&#9;")
			case r == '<':
				b.WriteString("&lt;")
			case r == '>':
				b.WriteString("&gt;")
			case r == '&':
				b.WriteString("&amp;")
			case r == '"':
				b.WriteString("&quot;")
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteString("</div>")
	return b.String()
}

// baseline is what the status field records: the Freshdesk status the
// bridge last accounted for (set itself, or carried upstream) and a
// generation that grows with every record, written "4/12".
type baseline struct {
	status int
	gen    int64
	ok     bool
}

func parseBaseline(s string) baseline {
	st, gen, found := strings.Cut(strings.TrimSpace(s), "/")
	if !found {
		return baseline{}
	}
	n, err1 := strconv.Atoi(st)
	g, err2 := strconv.ParseInt(gen, 10, 64)
	if err1 != nil || err2 != nil || n < statusOpen || g < 1 {
		return baseline{}
	}
	return baseline{status: n, gen: g, ok: true}
}

// next is the record of status after b.
func (b baseline) next(status int) string {
	return strconv.Itoa(status) + "/" + strconv.FormatInt(b.gen+1, 10)
}

// statusEventID is the id of the event reporting that a ticket's status
// moved away from the baseline of generation gen to status.
func statusEventID(ticket, gen int64, status int) string {
	return "status-" + idString(ticket) + "-" + strconv.FormatInt(gen, 10) + "-" + strconv.Itoa(status)
}

// parseStatusEventID reads an id made by statusEventID.
func parseStatusEventID(id string) (ticket, gen int64, status int, ok bool) {
	rest, found := strings.CutPrefix(id, "status-")
	if !found {
		return 0, 0, 0, false
	}
	parts := strings.Split(rest, "-")
	if len(parts) != 3 {
		return 0, 0, 0, false
	}
	t, err1 := strconv.ParseInt(parts[0], 10, 64)
	g, err2 := strconv.ParseInt(parts[1], 10, 64)
	s, err3 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || t <= 0 || g < 1 || s < statusOpen {
		return 0, 0, 0, false
	}
	return t, g, s, true
}

// conversationEventID is the id of the event of a conversation.
func conversationEventID(id int64) string { return "conv-" + idString(id) }

// guestPublic reports whether m is a guest's message the guest sees.
func guestPublic(m adapters.Message) bool {
	return m.Public && m.AuthorType == guestapi.AuthorGuest
}
