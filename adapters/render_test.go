package adapters_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// The expected strings below are what helpdesks already store: change
// them only together with every adapter that reads them back.

func TestAuthorLine(t *testing.T) {
	at := time.Date(2026, 3, 14, 10, 33, 59, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		m    adapters.Message
		want string
	}{
		{adapters.Message{AuthorName: " Anna Gruber ", AuthorType: "agent", CreatedAt: at}, "Anna Gruber (agent), 2026-03-14 09:33 UTC, internal note"},
		{adapters.Message{AuthorName: "Guest", AuthorType: "guest", CreatedAt: at, Public: true}, "Guest (guest), 2026-03-14 09:33 UTC"},
		{adapters.Message{Public: true}, "Unknown author (unknown)"},
	} {
		if got := adapters.AuthorLine(tc.m); got != tc.want {
			t.Errorf("AuthorLine(%+v) = %q, want %q", tc.m, got, tc.want)
		}
	}
}

func TestTicketFacts(t *testing.T) {
	rating := 4.5
	full := adapters.Ticket{
		Department: "housekeeping", Origin: guestapi.OriginGuest, Status: guestapi.StatusNew,
		CreatedAt:   time.Date(2026, 3, 14, 9, 33, 0, 0, time.UTC),
		GuestRating: &rating, Comments: "  room 12, after 10  ",
	}
	want := "Department: housekeeping\n" +
		"Origin: guest\n" +
		"Status in the guest request system: new\n" +
		"Created: 2026-03-14 09:33 UTC\n" +
		"Guest rating: 4.5\n" +
		"Console comment: room 12, after 10\n"
	if got := adapters.TicketFacts(full); got != want {
		t.Errorf("TicketFacts(full) =\n%s\nwant\n%s", got, want)
	}
	want = "Department: none\nOrigin: none\nStatus in the guest request system: none\n"
	if got := adapters.TicketFacts(adapters.Ticket{Department: " ", Comments: " "}); got != want {
		t.Errorf("TicketFacts(empty) = %q, want %q", got, want)
	}
}

func TestOrNone(t *testing.T) {
	for s, want := range map[string]string{"": "none", " \t": "none", "x": "x", " x ": " x "} {
		if got := adapters.OrNone(s); got != want {
			t.Errorf("OrNone(%q) = %q, want %q", s, got, want)
		}
	}
}

func TestSubject(t *testing.T) {
	long := strings.Repeat("é", 120)
	for _, tc := range []struct {
		t    adapters.Ticket
		want string
	}{
		{adapters.Ticket{Department: "housekeeping", TaskDescription: "  Two towels \nroom 12"}, "[housekeeping] Two towels"},
		{adapters.Ticket{TaskDescription: "Two towels\r\nroom 12"}, "Two towels"},
		{adapters.Ticket{Department: " ", TaskDescription: " \n "}, "Guest request"},
		{adapters.Ticket{TaskDescription: long}, strings.Repeat("é", 99) + "…"},
		{adapters.Ticket{TaskDescription: strings.Repeat("a", 100)}, strings.Repeat("a", 100)},
	} {
		if got := adapters.Subject(tc.t); got != tc.want {
			t.Errorf("Subject(%q) = %q, want %q", tc.t.TaskDescription, got, tc.want)
		}
	}
}

func TestSentNote(t *testing.T) {
	if got, want := adapters.SentNote("ev-1", "msg-2"), "Delivered to the guest request: ev-1, as message msg-2."; got != want {
		t.Errorf("SentNote = %q, want %q", got, want)
	}
	if got, want := adapters.SentNote("ev-1", ""), "Delivered to the guest request: ev-1 (the status change)."; got != want {
		t.Errorf("SentNote = %q, want %q", got, want)
	}
}

func TestUnsentNote(t *testing.T) {
	for _, tc := range []struct {
		kind  adapters.EventKind
		files []string
		want  string
	}{
		{adapters.EventReply, []string{"map.png", "invoice.pdf"}, "Not sent to the guest: map.png, invoice.pdf (the Guest Requests API carries text only)."},
		{adapters.EventNote, []string{"plan.pdf"}, "Not sent with the internal note to the guest request: plan.pdf (the Guest Requests API carries text only)."},
		{adapters.EventReply, []string{"two\nlines.png", " ", "tab\there.jpg"}, "Not sent to the guest: two lines.png, tab here.jpg (the Guest Requests API carries text only)."},
	} {
		if got := adapters.UnsentNote(tc.kind, tc.files); got != tc.want {
			t.Errorf("UnsentNote(%s, %q) = %q, want %q", tc.kind, tc.files, got, tc.want)
		}
	}
	line := adapters.Marker{Kind: adapters.MarkerUnsent, ID: "comment-7"}.Line()
	if m, ok := adapters.ParseMarker("note\n\n" + line); !ok || m != (adapters.Marker{Kind: adapters.MarkerUnsent, ID: "comment-7"}) {
		t.Errorf("ParseMarker(%q) = %+v, %v; want the unsent marker of comment-7", line, m, ok)
	}
}
