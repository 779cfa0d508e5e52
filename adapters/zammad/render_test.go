package zammad

import (
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

func TestHTMLText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"<div>Hello</div><div><br></div><div>World</div>", "Hello\n\nWorld"},
		{"<p>One<br>Two</p><p>Three</p>", "One\nTwo\nThree"},
		{"<div>&nbsp;&nbsp;x &lt;b&gt; &amp; &#34;q&#34;</div>", "  x <b> & \"q\""},
		{"<ul>\n<li>a</li>\n<li>b</li>\n</ul>", "- a\n- b"},
		{"line one\nstill one<br/>two", "line one still one\ntwo"},
		{"<style>p{}</style><!-- c --><div>x</div><script>alert(1)</script>", "x"},
		{"<pre>a\n  b</pre>", "a\n  b"},
		{"<blockquote>quoted</blockquote>after", "quoted\nafter"},
		{"<DIV CLASS='x'>Upper</DIV>", "Upper"},
		{"unclosed <b", "unclosed <b"},
		{"", ""},
	} {
		if got := htmlText(tc.in); got != tc.want {
			t.Errorf("htmlText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestArticleText(t *testing.T) {
	if got := articleText(zmArticle{Body: "a\r\n<b>b</b>", ContentType: "text/plain"}); got != "a\n<b>b</b>" {
		t.Errorf("text/plain: %q", got)
	}
	if got := articleText(zmArticle{Body: "<div>a</div>", ContentType: "text/html; charset=utf-8"}); got != "a" {
		t.Errorf("text/html: %q", got)
	}
}

func TestMarkers(t *testing.T) {
	m := adapters.Message{UpstreamID: "m-1", AuthorType: guestapi.AuthorGuest, AuthorName: "Ada", Body: "Hi\n[ticketbridge message forged]\n",
		Public: false, CreatedAt: time.Date(2026, 3, 14, 9, 33, 0, 0, time.UTC)}
	body := messageBody(m)
	if !strings.HasPrefix(body, "Ada (guest), 2026-03-14 09:33 UTC, internal note\n\n") {
		t.Errorf("author line: %q", body)
	}
	if got, ok := adapters.ParseMarker(body); !ok || got != (adapters.Marker{Kind: adapters.MarkerMessage, ID: "m-1"}) {
		t.Errorf("adapters.ParseMarker(messageBody) = %+v, %v", got, ok)
	}
	if got, ok := adapters.ParseMarker(strings.ReplaceAll(body, "\n", "\r\n") + "  \r\n"); !ok || got.ID != "m-1" {
		t.Errorf("CRLF and trailing space: %+v, %v", got, ok)
	}
	for _, b := range []string{"", "text", "[ticketbridge message a b]", "[ticketbridge other x]", "[ticketbridge message x", "x\n[ticketbridge sent e]"} {
		if got, ok := adapters.ParseMarker(b); ok {
			t.Errorf("adapters.ParseMarker(%q) = %+v, want none", b, got)
		}
	}
	for _, tc := range []struct{ event, msg string }{{"article-3", "5f2a"}, {"state-9", ""}} {
		got, ok := adapters.ParseMarker(sentBody(tc.event, tc.msg))
		if !ok || got != (adapters.Marker{Kind: adapters.MarkerSent, ID: tc.event, Arg: tc.msg}) {
			t.Errorf("sent marker of %s %q: %+v, %v", tc.event, tc.msg, got, ok)
		}
	}
	if got, ok := adapters.ParseMarker(descriptionBody(adapters.Ticket{UpstreamID: "u-1", TaskDescription: "x"})); !ok || got != (adapters.Marker{Kind: adapters.MarkerTicket, ID: "u-1"}) {
		t.Errorf("ticket marker: %+v, %v", got, ok)
	}
}

func TestTitle(t *testing.T) {
	long := strings.Repeat("é", 150)
	for _, tc := range []struct {
		t    adapters.Ticket
		want string
	}{
		{adapters.Ticket{Department: "spa", TaskDescription: "  Massage at 5\nroom 12"}, "[spa] Massage at 5"},
		{adapters.Ticket{TaskDescription: ""}, "Guest request"},
		{adapters.Ticket{TaskDescription: long}, strings.Repeat("é", 99) + "…"},
	} {
		if got := title(tc.t); got != tc.want {
			t.Errorf("title(%q) = %q, want %q", tc.t.TaskDescription, got, tc.want)
		}
	}
}

func TestCursorRoundTrip(t *testing.T) {
	c := cursor{w: time.Date(2026, 3, 14, 10, 0, 0, 123e6, time.UTC), seen: []string{"article-12", "state-3"}}
	got, err := parseCursor(adapters.Cursor(c.String()), time.Time{})
	if err != nil || !got.w.Equal(c.w) || strings.Join(got.seen, ",") != "article-12,state-3" {
		t.Errorf("round trip of %q: %+v, %v", c.String(), got, err)
	}
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got, err := parseCursor("", since); err != nil || !got.w.Equal(since) {
		t.Errorf("empty cursor: %+v, %v; want the configured start", got, err)
	}
	if s := (cursor{}).String(); s != "zm1:0:" {
		t.Errorf("zero cursor %q", s)
	}
}
