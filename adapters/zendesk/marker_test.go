package zendesk

import (
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters"
)

func TestParseMarker(t *testing.T) {
	for _, tc := range []struct {
		body string
		want marker
		ok   bool
	}{
		{"text\n\n[ticketbridge message m-1]", marker{Kind: markMessage, ID: "m-1"}, true},
		{"text\r\n\r\n[ticketbridge message m-1]  \r\n\n", marker{Kind: markMessage, ID: "m-1"}, true},
		{"[ticketbridge ticket t-1]", marker{Kind: markTicket, ID: "t-1"}, true},
		{"x\n[ticketbridge sent comment-5 u-1]", marker{Kind: markSent, ID: "comment-5", Arg: "u-1"}, true},
		{"x\n[ticketbridge sent status-6 -]", marker{Kind: markSent, ID: "status-6"}, true},
		{"[ticketbridge message m-1]\nand then more text", marker{}, false},
		{"x [ticketbridge message m-1]", marker{}, false},
		{"[ticketbridge message m-1 extra]", marker{}, false},
		{"[ticketbridge sent comment-5]", marker{}, false},
		{"[ticketbridge other m-1]", marker{}, false},
		{"", marker{}, false},
	} {
		got, ok := parseMarker(tc.body)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseMarker(%q) = %+v, %v; want %+v, %v", tc.body, got, ok, tc.want, tc.ok)
		}
	}
	for _, m := range []marker{{Kind: markMessage, ID: "a"}, {Kind: markSent, ID: "comment-1", Arg: "b"}, {Kind: markSent, ID: "status-2"}} {
		if got, ok := parseMarker("body\n\n" + m.line()); !ok || got != m {
			t.Errorf("round trip of %+v gave %+v, %v", m, got, ok)
		}
	}
}

func TestCursorRoundTripAndBoundary(t *testing.T) {
	c, err := parseCursor("", 1700000000)
	if err != nil || c.start != 1700000000 || len(c.skip) != 0 {
		t.Fatalf("empty cursor: %+v, %v", c, err)
	}
	end := int64(1700000100)
	p := zdEventPage{EndTime: &end, TicketEvents: []zdTicketEvent{{ID: 9, Timestamp: 1700000050}, {ID: 12, Timestamp: end}, {ID: 11, Timestamp: end}}}
	n := c.next(p)
	if n.String() != "zd1:1700000100:11,12" {
		t.Fatalf("next cursor %s", n)
	}
	back, err := parseCursor(adapters.Cursor(n.String()), 0)
	if err != nil || back.String() != n.String() {
		t.Fatalf("parse %s: %+v, %v", n, back, err)
	}
	// The next page repeats the second and adds to it: the skip list grows.
	p2 := zdEventPage{EndTime: &end, TicketEvents: []zdTicketEvent{{ID: 11, Timestamp: end}, {ID: 12, Timestamp: end}, {ID: 13, Timestamp: end}}}
	if got := back.next(p2).String(); got != "zd1:1700000100:11,12,13" {
		t.Errorf("cursor after a page within one second: %s", got)
	}
	// An empty page keeps the cursor.
	if got := back.next(zdEventPage{EndTime: &end}).String(); got != n.String() {
		t.Errorf("cursor after an empty page: %s, want %s", got, n)
	}
	for _, bad := range []adapters.Cursor{"zd1:", "zd1:x:", "zd1:5:a", "zd2:5:", "5"} {
		if _, err := parseCursor(bad, 0); err == nil {
			t.Errorf("parseCursor(%q) accepted", bad)
		}
	}
}
