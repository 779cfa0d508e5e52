// Package replytext turns the body of a reply mail into the text that goes
// upstream: what its writer wrote, without the quoted thread below or
// between it, the quote's header ("On … wrote:", Outlook's "From: … Sent:"
// block, "-----Original Message-----"), or the signature ("-- " and what
// follows, a mobile client's "Sent from my iPhone").
//
// It knows the forms Thunderbird, Outlook (desktop, web and mobile), Gmail
// and Apple Mail write, in plain text and HTML; testdata/README.md says
// where each is documented. The first line the writer wrote is kept as it
// is, so that a marker there (the email helpdesk's "#note", "#status done")
// survives.
package replytext

import (
	"regexp"
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// Extract returns what the writer of a reply wrote: body is the mail's
// text/plain part, or its text/html part when isHTML (a mail with both
// should be given the plain one). Quoted text, quote headers and
// signatures are removed; blank lines at the start and end are dropped,
// runs of blank lines fold into one, and trailing white space is trimmed
// from each line. HTML is read with [adapters.HTMLText] once its quotes
// and signatures are cut out of the markup. The result is "" when the
// mail holds nothing but quotes and signatures.
func Extract(body string, isHTML bool) string {
	if isHTML {
		body = adapters.HTMLText(stripHTML(body))
	}
	return plain(body)
}

var (
	// onWrote is an attribution line, "On <date>, <name> wrote:", in
	// English and the languages of most hotel guests' mail clients.
	// German, Dutch and Swedish name the writer after the verb.
	onWrote = regexp.MustCompile(`(?i)^((On|Le|El|Il|W dniu)\s.*\s(wrote|a écrit|escribió|ha scritto|napisał)|(Am|Op|Den)\s.*\s(schrieb|schreef|skrev)(\s.*)?)\s?:$`)
	// attributionStart is how the first half of a wrapped attribution
	// line begins.
	attributionStart = regexp.MustCompile(`(?i)^(On|Le|El|Il|W dniu|Am|Op|Den)\s`)
	// wroteOnly is Thunderbird's shorter "<name> wrote:" (reply header
	// type 1); it counts only right before quoted lines.
	wroteOnly = regexp.MustCompile(`(?i)\s(wrote|schrieb|a écrit|escribió|ha scritto|schreef|skrev|napisał)\s?:$`)
	// separator is a line that starts a quoted or forwarded message:
	// Outlook's "-----Original Message-----", Thunderbird's
	// "-------- Original Message --------", Gmail's
	// "---------- Forwarded message ---------".
	separator = regexp.MustCompile(`(?i)^-{2,}\s*(original message|forwarded message|ursprüngliche nachricht|message d'origine|weitergeleitete nachricht)\s*-{2,}$`)
	// headerField is a line of an Outlook quote header block, bold in
	// HTML ("From:") and sometimes starred in its plain text ("*From:*").
	headerField = regexp.MustCompile(`(?i)^\*?(from|sent|date|to|cc|subject|von|gesendet|datum|an|betreff|de|envoyé|à|objet)\s?:\*?(\s|$)`)
	headerFrom  = regexp.MustCompile(`(?i)^\*?(from|von|de)\s?:\*?(\s|$)`)
	headerSent  = regexp.MustCompile(`(?i)^\*?(sent|date|gesendet|datum|envoyé)\s?:\*?(\s|$)`)
	// rule is the line Outlook on the web and mobile draw above their
	// header block in plain text.
	rule = regexp.MustCompile(`^_{10,}$`)
	// mobileSignature is the line a phone's mail client adds below the
	// text.
	mobileSignature = regexp.MustCompile(`(?i)^(sent from my \S.*|sent from (outlook|mail|yahoo mail|gmail|samsung|proton mail|protonmail)\b.*|get outlook for (ios|android).*|sent with proton mail.*|von meinem \S+ gesendet|envoyé de mon \S+|enviado desde mi \S+|inviato da \S+.*)$`)
)

// plain removes quotes and signatures from plain text.
func plain(text string) string {
	text = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(text)
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\u00a0")
	}
	lines = cutQuoteHeader(lines)
	lines = dropQuoted(lines)
	lines = cutSignature(lines)
	return tidy(lines)
}

// cutQuoteHeader ends the text at the first quote header that the quoted
// message follows unmarked (Outlook's header block, an "Original Message"
// line, an attribution line with no ">" lines after it), and removes an
// attribution line that quoted ("> ") lines follow, leaving those to
// dropQuoted: a writer may answer between them.
func cutQuoteHeader(lines []string) []string {
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, ">") {
			continue
		}
		if separator.MatchString(l) {
			return lines[:i]
		}
		if headerBlock(lines, i) {
			if j := prevNonBlank(lines, i); j >= 0 && rule.MatchString(strings.TrimSpace(lines[j])) {
				return lines[:j]
			}
			return lines[:i]
		}
		// "On …, … <" / "a@b.example> wrote:": Gmail wraps a long
		// attribution over two lines.
		n := 0
		switch {
		case onWrote.MatchString(l):
			n = 1
		case i+1 < len(lines) && startsAttribution(l) && onWrote.MatchString(l+" "+strings.TrimSpace(lines[i+1])):
			n = 2
		case wroteOnly.MatchString(l) && quotedNext(lines, i+1):
			n = 1
		}
		if n == 0 {
			continue
		}
		if !quotedNext(lines, i+n) {
			return lines[:i]
		}
		lines = append(lines[:i:i], lines[i+n:]...)
		i--
	}
	return lines
}

// startsAttribution reports whether l may be the first half of a wrapped
// attribution line.
func startsAttribution(l string) bool {
	return attributionStart.MatchString(l)
}

// headerBlock reports whether lines[i] starts a quote header block: a
// "From:" line with a "Sent:" or "Date:" line and one more field among the
// next few lines.
func headerBlock(lines []string, i int) bool {
	if !headerFrom.MatchString(strings.TrimSpace(lines[i])) {
		return false
	}
	sent, fields := false, 0
	for j := i + 1; j < len(lines) && j <= i+6; j++ {
		l := strings.TrimSpace(lines[j])
		if l == "" {
			if fields > 0 {
				break
			}
			continue
		}
		if !headerField.MatchString(l) {
			// A long "To:" list wraps onto the next line.
			continue
		}
		fields++
		if headerSent.MatchString(l) {
			sent = true
		}
	}
	return sent && fields >= 2
}

// quotedNext reports whether the first non-blank line from i on is quoted.
func quotedNext(lines []string, i int) bool {
	for ; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l != "" {
			return strings.HasPrefix(l, ">")
		}
	}
	return false
}

func prevNonBlank(lines []string, i int) int {
	for j := i - 1; j >= 0; j-- {
		if strings.TrimSpace(lines[j]) != "" {
			return j
		}
	}
	return -1
}

// dropQuoted removes quoted ("> ") lines.
func dropQuoted(lines []string) []string {
	out := lines[:0]
	for _, l := range lines {
		if !strings.HasPrefix(strings.TrimLeft(l, " "), ">") {
			out = append(out, l)
		}
	}
	return out
}

// cutSignature ends the text at the signature delimiter ("-- ", or "--"
// as clients that trim trailing spaces send it), and drops a phone's
// signature line at the end.
func cutSignature(lines []string) []string {
	for i, l := range lines {
		if l == "--" && i > 0 {
			lines = lines[:i]
			break
		}
	}
	for {
		j := prevNonBlank(lines, len(lines))
		if j <= 0 || !mobileSignature.MatchString(strings.TrimSpace(lines[j])) {
			return lines
		}
		lines = lines[:j]
	}
}

// tidy drops blank lines at the start and end and folds runs of them.
func tidy(lines []string) string {
	var out []string
	blank := false
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			blank = len(out) > 0
			continue
		}
		if blank {
			out = append(out, "")
			blank = false
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
