package zendesk

import (
	"fmt"
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// The marker is the last line of every comment the bridge writes:
//
//	[ticketbridge message 0b6c…]   an upstream message mirrored by Append
//	[ticketbridge ticket 7e1d…]    the description of a ticket EnsureTicket made
//	[ticketbridge sent 3600… 5f2a…] MarkSent: a helpdesk event delivered upstream
//
// Zendesk returns a comment's plain "body" as it was written (line endings
// and trailing white space aside), while "html_body" is re-rendered and
// sanitised; so the bridge writes and reads "body", and only the last
// non-empty line counts, so that a marker quoted inside a message (a guest
// pasting one) never passes for the bridge's own.
const markerPrefix = "[ticketbridge "

// Marker kinds.
const (
	markMessage = "message"
	markTicket  = "ticket"
	markSent    = "sent"
)

// noUpstreamMessage stands for an empty upstream message id (a status
// change) in a sent marker.
const noUpstreamMessage = "-"

type marker struct {
	Kind string
	ID   string // upstream message id, upstream ticket id, or helpdesk event id
	Arg  string // sent: the upstream message id, "" for a status change
}

func (m marker) line() string {
	if m.Kind == markSent {
		arg := m.Arg
		if arg == "" {
			arg = noUpstreamMessage
		}
		return markerPrefix + m.Kind + " " + m.ID + " " + arg + "]"
	}
	return markerPrefix + m.Kind + " " + m.ID + "]"
}

// parseMarker reads the marker on the last non-empty line of body.
func parseMarker(body string) (marker, bool) {
	body = strings.TrimRight(strings.ReplaceAll(body, "\r\n", "\n"), " \t\n")
	last := body
	if i := strings.LastIndexByte(body, '\n'); i >= 0 {
		last = body[i+1:]
	}
	last = strings.TrimSpace(last)
	inner, ok := strings.CutPrefix(last, markerPrefix)
	if !ok {
		return marker{}, false
	}
	inner, ok = strings.CutSuffix(inner, "]")
	if !ok {
		return marker{}, false
	}
	f := strings.Fields(inner)
	switch {
	case len(f) == 2 && (f[0] == markMessage || f[0] == markTicket):
		return marker{Kind: f[0], ID: f[1]}, true
	case len(f) == 3 && f[0] == markSent:
		arg := f[2]
		if arg == noUpstreamMessage {
			arg = ""
		}
		return marker{Kind: markSent, ID: f[1], Arg: arg}, true
	}
	return marker{}, false
}

// validToken reports whether s can stand in a marker: no white space, no
// bracket, not empty.
func validToken(s string) bool {
	return s != "" && !strings.ContainsAny(s, " \t\r\n[]")
}

// messageBody is the comment of an upstream message: who wrote it, as
// what and when on the first line, the text, and the marker.
func messageBody(m adapters.Message) string {
	var b strings.Builder
	b.WriteString(adapters.AuthorLine(m))
	b.WriteString("\n\n")
	b.WriteString(m.Body)
	b.WriteString("\n\n")
	b.WriteString(marker{Kind: markMessage, ID: m.UpstreamID}.line())
	return b.String()
}

// descriptionBody is the first comment of a ticket: the request, what the
// console card adds, and the marker.
func descriptionBody(t adapters.Ticket) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(t.TaskDescription, " \t\r\n"))
	b.WriteString("\n\n")
	b.WriteString(adapters.TicketFacts(t))
	b.WriteString("\n")
	b.WriteString(marker{Kind: markTicket, ID: t.UpstreamID}.line())
	return b.String()
}

// followUpBody is the first comment of a follow-up ticket made for
// message m because ticket closed was closed.
func followUpBody(closed int64, m adapters.Message) string {
	return fmt.Sprintf("Follow-up of closed ticket #%d: the guest request has a new message.\n\n", closed) + messageBody(m)
}

// reopenBody is the first comment of a follow-up ticket made because the
// guest request was reopened while ticket closed was closed.
func reopenBody(closed int64, upstreamID string, s guestapi.Status) string {
	return fmt.Sprintf("Follow-up of closed ticket #%d: the guest request was reopened with status %q.\n\n", closed, s) +
		marker{Kind: markTicket, ID: upstreamID}.line()
}

// sentBody is the private note MarkSent writes.
func sentBody(eventID, upstreamMessageID string) string {
	return adapters.SentNote(eventID, upstreamMessageID) + "\n\n" + marker{Kind: markSent, ID: eventID, Arg: upstreamMessageID}.line()
}

// subject is the ticket's subject (see [adapters.Subject]).
func subject(t adapters.Ticket) string {
	return adapters.Subject(t)
}
