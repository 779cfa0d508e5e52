package zendesk

import (
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters"
)

func TestParseMarker(t *testing.T) {
	for _, tc := range []struct {
		body string
		want adapters.Marker
		ok   bool
	}{
		{"text\n\n[ticketbridge message m-1]", adapters.Marker{Kind: adapters.MarkerMessage, ID: "m-1"}, true},
		{"text\r\n\r\n[ticketbridge message m-1]  \r\n\n", adapters.Marker{Kind: adapters.MarkerMessage, ID: "m-1"}, true},
		{"[ticketbridge ticket t-1]", adapters.Marker{Kind: adapters.MarkerTicket, ID: "t-1"}, true},
		{"x\n[ticketbridge sent comment-5 u-1]", adapters.Marker{Kind: adapters.MarkerSent, ID: "comment-5", Arg: "u-1"}, true},
		{"x\n[ticketbridge sent status-6 -]", adapters.Marker{Kind: adapters.MarkerSent, ID: "status-6"}, true},
		{"[ticketbridge message m-1]\nand then more text", adapters.Marker{}, false},
		{"x [ticketbridge message m-1]", adapters.Marker{}, false},
		{"[ticketbridge message m-1 extra]", adapters.Marker{}, false},
		{"[ticketbridge sent comment-5]", adapters.Marker{}, false},
		{"[ticketbridge other m-1]", adapters.Marker{}, false},
		{"", adapters.Marker{}, false},
	} {
		got, ok := adapters.ParseMarker(tc.body)
		if ok != tc.ok || got != tc.want {
			t.Errorf("adapters.ParseMarker(%q) = %+v, %v; want %+v, %v", tc.body, got, ok, tc.want, tc.ok)
		}
	}
	for _, m := range []adapters.Marker{{Kind: adapters.MarkerMessage, ID: "a"}, {Kind: adapters.MarkerSent, ID: "comment-1", Arg: "b"}, {Kind: adapters.MarkerSent, ID: "status-2"}} {
		if got, ok := adapters.ParseMarker("body\n\n" + m.Line()); !ok || got != m {
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
