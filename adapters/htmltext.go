package adapters

import (
	"strings"

	"golang.org/x/net/html"
)

// HTMLText turns HTML into the text a reader sees: <br> and the edges of
// blocks are line breaks, white space in the markup folds to one space,
// entities are decoded, a non-breaking space is a plain one, and script and
// style say nothing. It reads the markup with a real HTML tokenizer, so
// comments, attributes holding ">" and unclosed tags cannot hide or invent
// a line. The freshdesk adapter reads a note's HTML body with it, and the
// email helpdesk an HTML-only mail.
func HTMLText(s string) string {
	var lines []string
	var cur strings.Builder
	flush := func(force bool) {
		if force || cur.Len() > 0 {
			lines = append(lines, strings.TrimRight(cur.String(), " "))
		}
		cur.Reset()
	}
	z := html.NewTokenizer(strings.NewReader(s))
	skip := ""
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break // io.EOF: a string reader fails no other way
		}
		switch tt {
		case html.TextToken:
			if skip != "" {
				continue
			}
			// Fold the markup's white space before decoding, so that
			// an entity (&nbsp;, &#9;) stays what it stands for.
			text := foldSpace(string(z.Raw()))
			if cur.Len() == 0 {
				text = strings.TrimLeft(text, " ")
			}
			cur.WriteString(html.UnescapeString(text))
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			tag := string(name)
			if skip != "" {
				if tt == html.EndTagToken && tag == skip {
					skip = ""
				}
				continue
			}
			switch tag {
			case "script", "style":
				if tt == html.StartTagToken {
					skip = tag
				}
			case "br":
				flush(true)
			case "div", "p", "li", "ul", "ol", "pre", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "table":
				flush(false)
			}
		}
	}
	flush(false)
	out := strings.Trim(strings.Join(lines, "\n"), "\n")
	return strings.ReplaceAll(out, "\u00a0", " ")
}

// foldSpace folds each run of HTML white space into one space.
func foldSpace(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch r {
		case ' ', '\t', '\n', '\r', '\f':
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	if space {
		b.WriteByte(' ')
	}
	return b.String()
}
