package replytext

import (
	"regexp"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// stripHTML returns the markup of body's <body> without the quotes and
// signatures mail clients mark as such:
//
//   - removed where they stand: <blockquote type="cite"> (Apple Mail,
//     Thunderbird), Gmail's gmail_quote and its signature (gmail_signature,
//     gmail_signature_prefix), Thunderbird's moz-cite-prefix (the "On …
//     wrote:" line) and moz-signature, Yahoo's yahoo_quoted, Outlook on the
//     web's id="Signature";
//   - removed with everything after them (Outlook quotes the thread
//     unmarked below its header): id="divRplyFwdMsg" (with the <hr> drawn
//     above it), id="appendonsend", Outlook for Mac's x_divRplyFwdMsg,
//     Outlook mobile's reference-message containers, OutlookMessageHeader,
//     and Outlook desktop's top-bordered <div> that starts with "From:".
//
// What is left is read by the plain-text rules too, so a client whose
// markup names nothing still loses its "On … wrote:" and "From: … Sent:"
// blocks there.
func stripHTML(body string) string {
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		return body // html.Parse fails only when its reader does
	}
	root := find(doc, atom.Body)
	if root == nil {
		root = doc
	}
	var remove []*html.Node
	var cut *html.Node
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil && cut == nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			if cutsHere(c) {
				cut = c
				if p := prevElement(c); p != nil && p.DataAtom == atom.Hr {
					cut = p
				}
				return
			}
			if quoteOrSignature(c) {
				remove = append(remove, c)
				continue
			}
			walk(c)
		}
	}
	walk(root)
	for _, n := range remove {
		n.Parent.RemoveChild(n)
	}
	if cut != nil {
		// The cut node and everything after it in document order: its
		// following siblings, and those of each of its ancestors.
		for n := cut; n != nil && n != root; n = n.Parent {
			for s := n.NextSibling; s != nil; {
				next := s.NextSibling
				n.Parent.RemoveChild(s)
				s = next
			}
		}
		cut.Parent.RemoveChild(cut)
	}
	var b strings.Builder
	for c := root.FirstChild; c != nil; c = c.NextSibling {
		if err := html.Render(&b, c); err != nil {
			return body // a strings.Builder does not fail
		}
	}
	return b.String()
}

func find(n *html.Node, a atom.Atom) *html.Node {
	if n.Type == html.ElementNode && n.DataAtom == a {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := find(c, a); f != nil {
			return f
		}
	}
	return nil
}

func prevElement(n *html.Node) *html.Node {
	for p := n.PrevSibling; p != nil; p = p.PrevSibling {
		if p.Type == html.ElementNode {
			return p
		}
		if p.Type == html.TextNode && strings.TrimSpace(p.Data) != "" {
			return nil
		}
	}
	return nil
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	for _, c := range strings.Fields(attr(n, "class")) {
		if c == class {
			return true
		}
	}
	return false
}

func quoteOrSignature(n *html.Node) bool {
	if n.DataAtom == atom.Blockquote && strings.EqualFold(attr(n, "type"), "cite") {
		return true
	}
	for _, c := range []string{"gmail_quote", "gmail_signature", "gmail_signature_prefix", "moz-cite-prefix", "moz-signature", "yahoo_quoted"} {
		if hasClass(n, c) {
			return true
		}
	}
	return attr(n, "id") == "Signature"
}

var (
	borderTop = regexp.MustCompile(`(?i)border-top:\s*solid`)
	startFrom = regexp.MustCompile(`(?i)^\s*(from|von|de)\s?:`)
)

func cutsHere(n *html.Node) bool {
	switch attr(n, "id") {
	case "divRplyFwdMsg", "x_divRplyFwdMsg", "appendonsend", "mail-editor-reference-message-container":
		return true
	}
	if hasClass(n, "ms-outlook-mobile-reference-message") || hasClass(n, "OutlookMessageHeader") {
		return true
	}
	return n.DataAtom == atom.Div && borderTop.MatchString(attr(n, "style")) && startFrom.MatchString(text(n))
}

// text is the text of n's subtree, for telling a header block apart.
func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if b.Len() > 200 {
			return
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.ReplaceAll(b.String(), "\u00a0", " ")
}
