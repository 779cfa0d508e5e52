package email

import (
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters/email/replytext"
)

// typedQuote stands before a line its writer began with ">" in a
// format=flowed mail while replytext reads the text, so that it is not
// taken for a quote; it is removed after.
const typedQuote = "\u2060"

// replyText is what the writer of a reply wrote: body without quotes,
// quote headers and signature (package replytext). A text/plain body in
// format=flowed (RFC 3676, which Thunderbird and Apple Mail write) tells
// quotes from text the writer typed: quoted lines start with ">", and a
// line the writer began with ">" or a space is stuffed with a space. Its
// quoted lines are dropped here, its paragraphs joined, and a ">" the
// writer typed kept.
func replyText(body string, isHTML, flowed, delSp bool) string {
	if isHTML || !flowed {
		return replytext.Extract(body, isHTML)
	}
	var out []string
	joining := false
	for _, line := range strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n") {
		if strings.HasPrefix(line, ">") {
			joining = false
			continue // quoted
		}
		typed := false
		if strings.HasPrefix(line, " ") {
			line = line[1:] // stuffed
			typed = strings.HasPrefix(line, ">")
		}
		soft := strings.HasSuffix(line, " ") && line != "-- "
		if soft && delSp {
			line = strings.TrimSuffix(line, " ")
		}
		if typed {
			line = typedQuote + line
		}
		if joining && len(out) > 0 {
			out[len(out)-1] += line
		} else {
			out = append(out, line)
		}
		joining = soft
	}
	text := replytext.Extract(strings.Join(out, "\n"), false)
	return strings.ReplaceAll(text, typedQuote, "")
}
