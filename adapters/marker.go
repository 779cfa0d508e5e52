package adapters

import (
	"strings"
	"unicode/utf8"
)

// Marker is the line the Zendesk, Freshdesk, Zammad and Request Tracker
// adapters end every comment, note or article they write with, so that the
// helpdesk itself remembers what each one mirrors (Request Tracker writes
// only message markers):
//
//	[ticketbridge message 0b6c…]          an upstream message mirrored by Append
//	[ticketbridge ticket 7e1d…]           the first comment of a ticket EnsureTicket made
//	[ticketbridge sent <event> <message>] MarkSent: a helpdesk event delivered upstream
//	[ticketbridge unsent <event>]         the note naming the files of an event that
//	                                      the API cannot carry (see [NoteUnsent])
//	[ticketbridge rating 3f2a…]           the note of a guest's rating (see [RatingNote])
//	[ticketbridge comment 9c0d…]          the note of a console comment (see [CommentNote])
//
// Only the last non-empty line counts, so a marker quoted inside a
// message (a guest pasting one) never passes for the bridge's own; each
// adapter also checks that the bridge's own user wrote the text. The
// format is stored in helpdesks: it never changes.
type Marker struct {
	Kind string // MarkerMessage, MarkerTicket, MarkerSent, MarkerUnsent, MarkerRating or MarkerComment
	ID   string // upstream message id, upstream ticket id, helpdesk event id (sent, unsent), or value id (rating, comment)
	Arg  string // MarkerSent: the upstream message id, "" for a status change
}

// Marker kinds.
const (
	MarkerMessage = "message"
	MarkerTicket  = "ticket"
	MarkerSent    = "sent"
	MarkerUnsent  = "unsent"
)

const markerPrefix = "[ticketbridge "

// MarkerNoMessage stands for an empty upstream message id (a status
// change) in a sent marker; it is therefore no upstream message id.
const MarkerNoMessage = "-"

// Line renders m as its line, without a line break.
func (m Marker) Line() string {
	if m.Kind == MarkerSent {
		arg := m.Arg
		if arg == "" {
			arg = MarkerNoMessage
		}
		return markerPrefix + m.Kind + " " + m.ID + " " + arg + "]"
	}
	return markerPrefix + m.Kind + " " + m.ID + "]"
}

// ParseMarker reads the marker on the last non-empty line of body; ok is
// false when that line is none.
func ParseMarker(body string) (m Marker, ok bool) {
	body = strings.TrimRight(strings.ReplaceAll(body, "\r\n", "\n"), " \t\n")
	last := body
	if i := strings.LastIndexByte(body, '\n'); i >= 0 {
		last = body[i+1:]
	}
	inner, ok := strings.CutPrefix(strings.TrimSpace(last), markerPrefix)
	if !ok {
		return Marker{}, false
	}
	inner, ok = strings.CutSuffix(inner, "]")
	if !ok {
		return Marker{}, false
	}
	f := strings.Fields(inner)
	switch {
	case len(f) == 2 && (f[0] == MarkerMessage || f[0] == MarkerTicket || f[0] == MarkerUnsent || f[0] == MarkerRating || f[0] == MarkerComment):
		return Marker{Kind: f[0], ID: f[1]}, true
	case len(f) == 3 && f[0] == MarkerSent:
		arg := f[2]
		if arg == MarkerNoMessage {
			arg = ""
		}
		return Marker{Kind: MarkerSent, ID: f[1], Arg: arg}, true
	}
	return Marker{}, false
}

// MarkerToken reports whether s can stand in a marker: not empty, valid
// UTF-8, no white space, no bracket.
func MarkerToken(s string) bool {
	return s != "" && utf8.ValidString(s) && !strings.ContainsAny(s, " \t\r\n[]")
}
