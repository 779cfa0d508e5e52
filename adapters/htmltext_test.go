package adapters

import "testing"

// TestHTMLText covers markup as Freshdesk's editor and the freshdesk
// adapter write it (its fallback when Freshdesk sends no body_text).
func TestHTMLText(t *testing.T) {
	for _, tc := range []struct{ html, want string }{
		{"<div>a<br>b</div>", "a\nb"},
		{"<div>x<br><br>y</div>", "x\n\ny"},
		{"<div>a</div><div><br></div><div>b</div>", "a\n\nb"},
		{"<p>one</p>\n  <p>two   words</p>", "one\ntwo words"},
		{"<div>&nbsp;&nbsp;indented &amp; &lt;b&gt;</div>", "  indented & <b>"},
		{"<div>a &lt; b <b>bold</b></div><script>x()</script>", "a < b bold"},
		{"<div>2 < 3 and 4 > 1</div>", "2 < 3 and 4 > 1"},
		{"plain", "plain"},
	} {
		if got := HTMLText(tc.html); got != tc.want {
			t.Errorf("HTMLText(%q) = %q, want %q", tc.html, got, tc.want)
		}
	}
}
