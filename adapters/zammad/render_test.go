package zammad

import (
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
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
