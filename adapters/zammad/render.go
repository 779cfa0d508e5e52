package zammad

import (
	"html"
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// Every article the bridge writes ends with an [adapters.Marker] line:
//
//	[ticketbridge message 0b6c…]    an upstream message mirrored by Append
//	[ticketbridge ticket 7e1d…]     the first article of a ticket EnsureTicket made
//	[ticketbridge sent article-36 5f2a…] MarkSent: a helpdesk event delivered upstream
//
// The bridge writes its articles as text/plain, whose body Zammad keeps
// as written (text/html bodies are sanitised and would not keep a marker
// verbatim). Only the last non-empty line of the API user's own articles
// counts, so a marker quoted by a guest or an agent never passes for the
// bridge's own.

// title is the ticket's title (see [adapters.Subject]; Zammad allows 200
// characters).
func title(t adapters.Ticket) string {
	return adapters.Subject(t)
}

// articleText is what an article says as plain text: a text/plain body as
// it is, a text/html one (what Zammad's editor writes) through htmlText.
func articleText(a zmArticle) string {
	if strings.HasPrefix(strings.ToLower(a.ContentType), "text/html") {
		return htmlText(a.Body)
	}
	return strings.ReplaceAll(a.Body, "\r\n", "\n")
}

// blockTags end the line before and after them.
var blockTags = map[string]bool{
	"div": true, "p": true, "li": true, "ul": true, "ol": true, "blockquote": true, "pre": true,
	"table": true, "tr": true, "h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true, "hr": true,
}

// htmlText turns the HTML of an article into the text a reader sees: block
// elements and <br> become line breaks, list items start with "- ", tags
// are dropped, entities decoded, non-breaking spaces made plain, and
// source line breaks (white space in HTML) ignored outside <pre>. It is
// meant for the HTML Zammad's editor and mail parser store, not as a
// general HTML renderer.
func htmlText(s string) string {
	var b strings.Builder
	lineEmpty := true
	newline := func() {
		b.WriteByte('\n')
		lineEmpty = true
	}
	endLine := func() {
		if !lineEmpty {
			newline()
		}
	}
	pre := 0
	for i := 0; i < len(s); {
		if s[i] != '<' {
			j := strings.IndexByte(s[i:], '<')
			if j < 0 {
				j = len(s) - i
			}
			text := s[i : i+j]
			i += j
			if pre == 0 {
				if strings.TrimSpace(text) == "" && strings.ContainsAny(text, "\r\n") {
					continue
				}
				text = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(text)
			}
			text = strings.ReplaceAll(html.UnescapeString(text), "\u00a0", " ")
			if text == "" {
				continue
			}
			b.WriteString(text)
			lineEmpty = strings.HasSuffix(text, "\n")
			continue
		}
		if strings.HasPrefix(s[i:], "<!--") {
			end := strings.Index(s[i+4:], "-->")
			if end < 0 {
				break
			}
			i += 4 + end + 3
			continue
		}
		end := strings.IndexByte(s[i:], '>')
		if end < 0 {
			b.WriteString(html.UnescapeString(s[i:]))
			break
		}
		tag := strings.TrimSpace(s[i+1 : i+end])
		i += end + 1
		closing := strings.HasPrefix(tag, "/")
		tag = strings.TrimPrefix(tag, "/")
		name := strings.ToLower(strings.TrimRight(strings.Fields(tag + " ")[0], "/"))
		switch {
		case name == "br":
			newline()
		case name == "script" || name == "style":
			if !closing {
				if k := strings.Index(strings.ToLower(s[i:]), "</"+name); k >= 0 {
					i += k
				} else {
					i = len(s)
				}
			}
		case blockTags[name]:
			endLine()
			if name == "pre" {
				if closing {
					pre = max(pre-1, 0)
				} else {
					pre++
				}
			}
			if name == "li" && !closing {
				b.WriteString("- ")
				lineEmpty = false
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
