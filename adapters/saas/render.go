package saas

import (
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// The texts of the comments the bridge writes, each ending with its
// [adapters.Marker] line. Line endings are \n; a helpdesk that stores
// HTML renders these texts itself.

// MessageText is the comment of an upstream message: who wrote it, as
// what and when on the first line, the text, and the marker.
func MessageText(m adapters.Message) string {
	var b strings.Builder
	b.WriteString(adapters.AuthorLine(m))
	b.WriteString("\n\n")
	b.WriteString(strings.TrimRight(NormalizeNewlines(m.Body), " \t\n"))
	b.WriteString("\n\n")
	b.WriteString(adapters.Marker{Kind: adapters.MarkerMessage, ID: m.UpstreamID}.Line())
	return b.String()
}

// DescriptionText is the first comment of a ticket: the request, what the
// console card adds, and the ticket marker.
func DescriptionText(t adapters.Ticket) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(NormalizeNewlines(t.TaskDescription), " \t\n"))
	b.WriteString("\n\n")
	b.WriteString(adapters.TicketFacts(t))
	b.WriteString("\n")
	b.WriteString(adapters.Marker{Kind: adapters.MarkerTicket, ID: t.UpstreamID}.Line())
	return b.String()
}

// SentText is the internal note MarkSent writes.
func SentText(eventID, upstreamMessageID string) string {
	return adapters.SentNote(eventID, upstreamMessageID) + "\n\n" + adapters.Marker{Kind: adapters.MarkerSent, ID: eventID, Arg: upstreamMessageID}.Line()
}

// UnsentText is the internal note naming the files of event ev that the
// API cannot carry (see [adapters.NoteUnsent]).
func UnsentText(ev adapters.Event, files []string) string {
	return adapters.UnsentNote(ev.Kind, files) + "\n\n" + adapters.Marker{Kind: adapters.MarkerUnsent, ID: ev.ID}.Line()
}

// NormalizeNewlines turns \r\n and \r into \n.
func NormalizeNewlines(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}
