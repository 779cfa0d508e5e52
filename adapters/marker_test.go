package adapters

import "testing"

func TestMarkerRoundTrip(t *testing.T) {
	for _, m := range []Marker{
		{Kind: MarkerMessage, ID: "0b6c2a3e-1111-4222-8333-944455556666"},
		{Kind: MarkerTicket, ID: "7e1d"},
		{Kind: MarkerSent, ID: "article-36", Arg: "5f2a"},
		{Kind: MarkerSent, ID: "article-37"}, // a status change
	} {
		body := "Anna (guest), 2026-03-14 09:33 UTC\r\n\r\nHello\r\n\r\n" + m.Line() + " \n\n"
		got, ok := ParseMarker(body)
		if !ok || got != m {
			t.Errorf("ParseMarker(%q) = %+v, %v; want %+v", body, got, ok, m)
		}
	}
}

func TestMarkerOnlyLastLineCounts(t *testing.T) {
	for _, body := range []string{
		"[ticketbridge message x]\nquoted, then more text",
		"no marker",
		"[ticketbridge message]",
		"[ticketbridge message a b]",
		"[ticketbridge sent a]",
		"[ticketbridge other x]",
		"[ticketbridge message x",
		"",
	} {
		if m, ok := ParseMarker(body); ok {
			t.Errorf("ParseMarker(%q) = %+v, want none", body, m)
		}
	}
}

func TestMarkerToken(t *testing.T) {
	for s, want := range map[string]bool{"abc-1": true, "": false, "a b": false, "a]": false, "\xff": false, "a\nb": false} {
		if MarkerToken(s) != want {
			t.Errorf("MarkerToken(%q) = %v, want %v", s, !want, want)
		}
	}
}
