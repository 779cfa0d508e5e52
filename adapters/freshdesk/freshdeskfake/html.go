package freshdeskfake

import (
	"html"
	"strings"
)

// token is a piece of HTML: a tag (name lower case, closing or not) or
// text (as written, entities undecoded).
type token struct {
	tag     string // "" for text
	closing bool
	raw     string
}

// tokenize splits s into tags and text. A "<" that does not open a tag
// (no letter or "/" after it, or no ">" later) is text.
func tokenize(s string) []token {
	var out []token
	for len(s) > 0 {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			out = append(out, token{raw: s})
			break
		}
		if i > 0 {
			out = append(out, token{raw: s[:i]})
			s = s[i:]
		}
		end := strings.IndexByte(s, '>')
		if end < 0 || len(s) < 2 || !(isLetter(s[1]) || s[1] == '/') {
			out = append(out, token{raw: s[:1]})
			s = s[1:]
			continue
		}
		inner := s[1:end]
		closing := strings.HasPrefix(inner, "/")
		inner = strings.TrimPrefix(inner, "/")
		name := inner
		if j := strings.IndexAny(inner, " \t\r\n/"); j >= 0 {
			name = inner[:j]
		}
		out = append(out, token{tag: strings.ToLower(name), closing: closing, raw: s[:end+1]})
		s = s[end+1:]
	}
	return out
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// sanitize re-renders HTML as the fake stores it: script and style
// elements go with their content, every tag loses its attributes.
func sanitize(s string) string {
	var b strings.Builder
	skip := ""
	for _, t := range tokenize(s) {
		if skip != "" {
			if t.tag == skip && t.closing {
				skip = ""
			}
			continue
		}
		switch {
		case t.tag == "script" || t.tag == "style":
			if !t.closing {
				skip = t.tag
			}
		case t.tag == "":
			b.WriteString(t.raw)
		case t.closing:
			b.WriteString("</" + t.tag + ">")
		default:
			b.WriteString("<" + t.tag + ">")
		}
	}
	return b.String()
}

var blockTags = map[string]bool{
	"div": true, "p": true, "li": true, "ul": true, "ol": true, "pre": true, "blockquote": true,
	"h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true, "tr": true, "table": true,
}

// htmlText is the text a reader sees of s, the body_text of a
// conversation: <br> and block boundaries are line breaks, runs of white
// space in the markup are one space (none at a line's start or end),
// entities are decoded and a non-breaking space is a plain space.
func htmlText(s string) string {
	var b strings.Builder
	lineStart := func() bool { return b.Len() == 0 || strings.HasSuffix(b.String(), "\n") }
	breakLine := func() {
		cur := strings.TrimRight(b.String(), " ")
		b.Reset()
		b.WriteString(cur)
		b.WriteByte('\n')
	}
	for _, t := range tokenize(s) {
		switch {
		case t.tag == "":
			text := collapse(t.raw)
			if lineStart() {
				text = strings.TrimLeft(text, " ")
			}
			b.WriteString(html.UnescapeString(text))
		case t.tag == "br":
			breakLine()
		case blockTags[t.tag]:
			if !lineStart() {
				breakLine()
			}
		}
	}
	out := strings.TrimLeft(strings.TrimRight(b.String(), " \n"), "\n")
	return strings.ReplaceAll(out, "\u00a0", " ")
}

// collapse folds each run of HTML white space into one space.
func collapse(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' {
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

// textHTML renders plain text as Freshdesk's editor does: the lines in one
// <div> separated by <br>, special characters escaped, and every space that
// HTML would fold (at a line's start or end, after another space) and
// every tab written as an entity.
func textHTML(text string) string {
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
	lines := strings.Split(text, "\n")
	var b strings.Builder
	b.WriteString("<div>")
	for i, line := range lines {
		if i > 0 {
			b.WriteString("<br>")
		}
		rs := []rune(line)
		for j, r := range rs {
			switch {
			case r == ' ' && (j == 0 || j == len(rs)-1 || rs[j-1] == ' '):
				b.WriteString("&nbsp;")
			case r == '\t':
				b.WriteString("&#9;")
			default:
				b.WriteString(html.EscapeString(string(r)))
			}
		}
	}
	b.WriteString("</div>")
	return b.String()
}
