package freshdesk

import (
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters"
)

func TestParseMarker(t *testing.T) {
	for _, tc := range []struct {
		text string
		want adapters.Marker
		ok   bool
	}{
		{"Ada (guest)\n\nhi\n\n[ticketbridge message abc-1]", adapters.Marker{Kind: adapters.MarkerMessage, ID: "abc-1"}, true},
		{"x\r\n[ticketbridge message abc-1]  \n\n", adapters.Marker{Kind: adapters.MarkerMessage, ID: "abc-1"}, true},
		{"Delivered\n\n[ticketbridge sent conv-5 m-9]", adapters.Marker{Kind: adapters.MarkerSent, ID: "conv-5", Arg: "m-9"}, true},
		{"Delivered\n\n[ticketbridge sent status-1-2-4 -]", adapters.Marker{Kind: adapters.MarkerSent, ID: "status-1-2-4"}, true},
		// A marker quoted before the last line is not the bridge's.
		{"[ticketbridge message abc-1]\nthanks", adapters.Marker{}, false},
		{"[ticketbridge message]", adapters.Marker{}, false},
		{"[ticketbridge message a b]", adapters.Marker{}, false},
		{"[ticketbridge other a]", adapters.Marker{}, false},
		{"", adapters.Marker{}, false},
	} {
		got, ok := adapters.ParseMarker(tc.text)
		if ok != tc.ok || got != tc.want {
			t.Errorf("adapters.ParseMarker(%q) = %+v, %v; want %+v, %v", tc.text, got, ok, tc.want, tc.ok)
		}
	}
}

func TestTextHTMLRoundTrip(t *testing.T) {
	for _, text := range []string{
		"Grüße — 🙏🏽\n\n    indented code\n<b>not html</b> & \"quotes\" 'single'\n\ttab\nlast ",
		"one  two   three",
		" lead",
		"a\r\nb\rc",
	} {
		h := textHTML(text)
		if strings.Contains(h, "\n") {
			t.Errorf("textHTML(%q) = %q holds a raw line break, which HTML folds", text, h)
		}
		want := strings.TrimRight(normalizeNewlines(text), " ")
		if got := strings.TrimRight(adapters.HTMLText(h), " "); got != want {
			t.Errorf("adapters.HTMLText(textHTML(%q)) = %q, want %q", text, got, want)
		}
	}
	c := fdConversation{Body: textHTML("a\n[ticketbridge message m-1]")}
	if mk, ok := adapters.ParseMarker(c.text()); !ok || mk.ID != "m-1" {
		t.Errorf("a conversation without body_text: marker %+v, %v", mk, ok)
	}
}

func TestBaselineAndStatusEventID(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want baseline
	}{
		{"4/12", baseline{status: 4, gen: 12, ok: true}},
		{" 2/1 ", baseline{status: 2, gen: 1, ok: true}},
		{"4", baseline{}},
		{"1/3", baseline{}},
		{"4/0", baseline{}},
		{"resolved/2", baseline{}},
		{"", baseline{}},
	} {
		if got := parseBaseline(tc.in); got != tc.want {
			t.Errorf("parseBaseline(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
	if got := (baseline{status: 2, gen: 7, ok: true}).next(4); got != "4/8" {
		t.Errorf("next = %q", got)
	}
	if got := (baseline{}).next(2); got != "2/1" {
		t.Errorf("next of no record = %q", got)
	}
	id := statusEventID(43, 7, 5)
	tk, gen, st, ok := parseStatusEventID(id)
	if id != "status-43-7-5" || !ok || tk != 43 || gen != 7 || st != 5 {
		t.Errorf("status event id %q parsed as %d %d %d %v", id, tk, gen, st, ok)
	}
	for _, bad := range []string{"conv-5", "status-1-2", "status-a-1-4", "status-1-0-4", "status-1-1-1"} {
		if _, _, _, ok := parseStatusEventID(bad); ok {
			t.Errorf("parseStatusEventID(%q) accepted", bad)
		}
	}
}

func TestHasNext(t *testing.T) {
	for _, tc := range []struct {
		link string
		want bool
	}{
		{`<https://h.freshdesk.com/api/v2/tickets?page=2>; rel="next"`, true},
		{`<https://h/x?page=1>; rel="prev", <https://h/x?page=3>; rel=next`, true},
		{`<https://h/x?page=1>; rel="prev"`, false},
		{"", false},
	} {
		h := map[string][]string{}
		if tc.link != "" {
			h["Link"] = []string{tc.link}
		}
		if got := hasNext(h); got != tc.want {
			t.Errorf("hasNext(%q) = %v", tc.link, got)
		}
	}
}
