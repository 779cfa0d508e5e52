package archtest

import (
	"html"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/ticketbridge/ticketbridge/internal/textdist"
)

// mdLink is a link's target as written, and the line it is on.
type mdLink struct {
	line   int
	target string
}

// mdDoc is what checkMarkdown needs of a Markdown file: the targets of
// its links, and the anchors of its headings.
type mdDoc struct {
	links   []mdLink
	anchors map[string]bool
	order   []string // the anchors as they come, for nearest
}

// nearest returns the anchor of doc closest to frag, or "" when none is
// close: a hint for the one who fixes the link.
func (d *mdDoc) nearest(frag string) string {
	best, bestDist := "", len(frag)/2+1
	for _, a := range d.order {
		if dist := textdist.Levenshtein(strings.ToLower(frag), a); dist < bestDist {
			best, bestDist = a, dist
		}
	}
	return best
}

var (
	// fenceRE matches a code fence's opening or closing line. CommonMark
	// allows up to three spaces before it, more inside a nested list item;
	// any indentation is taken, so indented code blocks (four spaces) are
	// not told apart: their links would be checked.
	fenceRE = regexp.MustCompile("^[ \t]*(`{3,}|~{3,})(.*)$")
	// atxRE matches an ATX heading: its text, without the closing #s.
	atxRE = regexp.MustCompile(`^ {0,3}#{1,6}(?:[ \t]+(.*?))??(?:[ \t]+#+)?[ \t]*$`)
	// setextRE matches the line under a setext heading.
	setextRE = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)
	// blockStartRE matches a line that starts a block other than a
	// paragraph, so that a setext underline after it is no heading.
	blockStartRE = regexp.MustCompile(`^ {0,3}([-*+>|]|[0-9]+[.)]|#|<)`)
	// refDefRE matches a link reference definition, [label]: target; the
	// target may be on the next line. [^label]: is a footnote.
	refDefRE = regexp.MustCompile(`(?m)^ {0,3}\[([^\]^][^\]]*)\]:[ \t]*(?:\n[ \t]*)?(<[^>\n]*>|\S+)`)
	// anchorTagRE matches an explicit anchor, <a id="x"> or <a name="x">.
	anchorTagRE = regexp.MustCompile(`(?i)<a\s[^>]*?\b(?:id|name)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))`)
	// tagRE matches an HTML tag, dropped from a heading's text.
	tagRE = regexp.MustCompile(`</?[a-zA-Z][^>]*>`)
)

// parseMarkdown reads the links and the anchors of a Markdown file.
// Fenced code blocks and code spans hold no links; headings are ATX (# ...)
// or setext (a line of = or - under a one-line paragraph).
func parseMarkdown(src string) *mdDoc {
	doc := &mdDoc{anchors: make(map[string]bool)}
	seen := make(map[string]int) // slug -> how many times it came before
	addHeading := func(text string) {
		s := slug(headingText(text))
		if s == "" {
			return
		}
		a := s
		for doc.anchors[a] {
			seen[s]++
			a = s + "-" + strconv.Itoa(seen[s])
		}
		doc.anchors[a] = true
		doc.order = append(doc.order, a)
	}

	// Fenced code is blanked out, its lines kept so that line numbers hold.
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	fence := ""
	prose := false // the line before is a paragraph's, which a setext underline makes a heading
	for i, line := range lines {
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			switch {
			case fence == "" && !(m[1][0] == '`' && strings.Contains(m[2], "`")):
				fence = m[1]
				lines[i] = ""
				prose = false
				continue
			case fence != "" && m[1][0] == fence[0] && len(m[1]) >= len(fence) && strings.TrimSpace(m[2]) == "":
				fence = ""
				lines[i] = ""
				continue
			}
		}
		if fence != "" {
			lines[i] = ""
			continue
		}
		if m := atxRE.FindStringSubmatch(line); m != nil {
			addHeading(m[1])
			prose = false
			continue
		}
		if prose && setextRE.MatchString(line) {
			addHeading(lines[i-1])
			prose = false
			continue
		}
		prose = strings.TrimSpace(line) != "" && !blockStartRE.MatchString(line)
	}

	text := blankCode(strings.Join(lines, "\n"))
	lineAt := func(off int) int { return strings.Count(text[:off], "\n") + 1 }

	for _, m := range anchorTagRE.FindAllStringSubmatch(text, -1) {
		id := m[1] + m[2] + m[3]
		if !doc.anchors[id] {
			doc.anchors[id] = true
			doc.order = append(doc.order, id)
		}
	}
	for _, m := range refDefRE.FindAllStringSubmatchIndex(text, -1) {
		target := text[m[4]:m[5]]
		target = strings.TrimSuffix(strings.TrimPrefix(target, "<"), ">")
		doc.links = append(doc.links, mdLink{line: lineAt(m[4]), target: target})
	}
	for off := 0; ; {
		i := strings.Index(text[off:], "](")
		if i < 0 {
			break
		}
		start := off + i + 2
		off = start
		if !linkOpened(text, start-2) {
			continue
		}
		if target, ok := linkDestination(text[start:]); ok {
			doc.links = append(doc.links, mdLink{line: lineAt(start), target: target})
		}
	}
	slices.SortStableFunc(doc.links, func(a, b mdLink) int { return a.line - b.line })
	return doc
}

// linkOpened says whether the "]" at text[end] closes a "[" of its
// paragraph: only then is what follows a link's destination.
func linkOpened(text string, end int) bool {
	depth := 0
	for i := end - 1; i >= 0; i-- {
		switch text[i] {
		case ']':
			depth++
		case '[':
			if depth == 0 {
				return true
			}
			depth--
		case '\n':
			if isBlankLineAt(text, i+1) {
				return false
			}
		}
	}
	return false
}

// linkDestination reads an inline link's destination and optional title
// from s, which follows "](", and says whether they end with the ")" that
// makes it a link.
func linkDestination(s string) (string, bool) {
	i := skipSpace(s, 0)
	var dest string
	if i < len(s) && s[i] == '<' {
		end := strings.IndexAny(s[i+1:], ">\n")
		if end < 0 || s[i+1+end] != '>' {
			return "", false
		}
		dest = s[i+1 : i+1+end]
		i += end + 2
	} else {
		depth, j := 0, i
	loop:
		for ; j < len(s); j++ {
			// Escapes are blanked already (blankCode).
			switch c := s[j]; {
			case c == '(':
				depth++
			case c == ')':
				if depth == 0 {
					break loop
				}
				depth--
			case c <= ' ':
				break loop
			}
		}
		dest, i = s[i:j], j
	}
	i = skipSpace(s, i)
	if i < len(s) && (s[i] == '"' || s[i] == '\'' || s[i] == '(') {
		closer := s[i]
		if closer == '(' {
			closer = ')'
		}
		end := strings.IndexByte(s[i+1:], closer)
		if end < 0 {
			return "", false
		}
		i = skipSpace(s, i+1+end+1)
	}
	if i >= len(s) || s[i] != ')' {
		return "", false
	}
	return dest, true
}

// skipSpace skips spaces and tabs from s[i], and at most one line end.
func skipSpace(s string, i int) int {
	newline := false
	for ; i < len(s); i++ {
		switch {
		case s[i] == ' ' || s[i] == '\t':
		case s[i] == '\n' && !newline:
			newline = true
		default:
			return i
		}
	}
	return i
}

// blankCode replaces the code spans of text, and its backslash escapes,
// with spaces, keeping line ends and offsets. A code span runs from a run
// of backticks to the next run as long, within its paragraph; a run that
// has none is text.
func blankCode(text string) string {
	b := []byte(text)
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '\\' && i+1 < len(b) && isASCIIPunct(b[i+1]):
			b[i], b[i+1] = ' ', ' '
			i++
		case b[i] == '`':
			n := 1
			for i+n < len(b) && b[i+n] == '`' {
				n++
			}
			end := closingTicks(b, i+n, n)
			if end < 0 {
				i += n - 1
				continue
			}
			for j := i; j < end+n; j++ {
				if b[j] != '\n' {
					b[j] = ' '
				}
			}
			i = end + n - 1
		}
	}
	return string(b)
}

// closingTicks returns where the run of exactly n backticks that closes a
// code span opened before from starts, or -1 when the paragraph (up to a
// blank line) has none.
func closingTicks(b []byte, from, n int) int {
	for j := from; j < len(b); j++ {
		switch {
		case b[j] == '\n' && isBlankLineAt(b, j+1):
			return -1
		case b[j] == '`':
			k := j
			for k < len(b) && b[k] == '`' {
				k++
			}
			if k-j == n {
				return j
			}
			j = k - 1
		}
	}
	return -1
}

// isASCIIPunct says whether a backslash before c escapes it.
func isASCIIPunct(c byte) bool {
	return strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) >= 0
}

// isBlankLineAt says whether the line that starts at b[i] is blank.
func isBlankLineAt[T string | []byte](b T, i int) bool {
	for ; i < len(b) && b[i] != '\n'; i++ {
		if b[i] != ' ' && b[i] != '\t' {
			return false
		}
	}
	return true
}

// headingText returns what a heading shows of its Markdown: code spans'
// text without the backticks, links' and emphasis' text without their
// markup, no HTML tags, entities and escapes as the characters they stand
// for. It is an approximation of GitHub's rendering, close enough for
// headings that are words.
func headingText(md string) string {
	md = strings.TrimSpace(md)
	var out strings.Builder
	for i := 0; i < len(md); {
		switch c := md[i]; {
		case c == '\\' && i+1 < len(md) && isASCIIPunct(md[i+1]):
			out.WriteString(strings.ReplaceAll(md[i+1:i+2], "_", "\x00"))
			i += 2
		case c == '`':
			n := 1
			for i+n < len(md) && md[i+n] == '`' {
				n++
			}
			end := strings.Index(md[i+n:], strings.Repeat("`", n))
			if end < 0 {
				out.WriteString(md[i : i+n])
				i += n
				continue
			}
			code := md[i+n : i+n+end]
			if len(code) >= 2 && code[0] == ' ' && code[len(code)-1] == ' ' && strings.Trim(code, " ") != "" {
				code = code[1 : len(code)-1]
			}
			// Kept apart from the emphasis below, as an escaped _ is:
			// both are text.
			out.WriteString(strings.ReplaceAll(code, "_", "\x00"))
			i += n + end + n
		case c == '!' && strings.HasPrefix(md[i:], "!["):
			// An image shows no text.
			if end := strings.Index(md[i:], ")"); end >= 0 && strings.Contains(md[i:i+end], "](") {
				i += end + 1
			} else {
				out.WriteByte(c)
				i++
			}
		case c == ']':
			// The end of a link's text: its target is dropped.
			rest := md[i+1:]
			if t, ok := strings.CutPrefix(rest, "("); ok {
				if end := strings.Index(t, ")"); end >= 0 {
					i += 2 + end + 1
					continue
				}
			}
			if t, ok := strings.CutPrefix(rest, "["); ok {
				if end := strings.Index(t, "]"); end >= 0 {
					i += 2 + end + 1
					continue
				}
			}
			i++
		case c == '[':
			i++
		default:
			out.WriteByte(c)
			i++
		}
	}
	s := tagRE.ReplaceAllString(out.String(), "")
	s = html.UnescapeString(s)
	s = stripUnderscoreEmphasis(s)
	return strings.ReplaceAll(s, "\x00", "_")
}

// stripUnderscoreEmphasis drops the underscores that open or close
// emphasis (_x_, __x__): those at a word's edge. Underscores inside a
// word (snake_case) are text, and stay. The other marks (*, ~) are
// dropped by slug anyway.
func stripUnderscoreEmphasis(s string) string {
	r := []rune(s)
	word := func(i int) bool { return i >= 0 && i < len(r) && (unicode.IsLetter(r[i]) || unicode.IsNumber(r[i])) }
	var out []rune
	for i := 0; i < len(r); i++ {
		if r[i] != '_' {
			out = append(out, r[i])
			continue
		}
		j := i
		for j < len(r) && r[j] == '_' {
			j++
		}
		if word(i-1) && word(j) {
			out = append(out, r[i:j]...)
		}
		i = j - 1
	}
	return string(out)
}

// slug makes a heading's anchor from its text as GitHub does: lower case,
// each space a hyphen, and everything but letters, marks, digits, hyphens
// and connector punctuation (such as _) dropped. GitHub's renderer adds
// -1, -2, ... to a repeated one (parseMarkdown does).
func slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsNumber(r) || unicode.Is(unicode.Pc, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestHeadingAnchors checks headings' anchors against GitHub's.
func TestHeadingAnchors(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Files (the default)", "files-the-default"},
		{"Bird's eye", "birds-eye"},
		{"[Unreleased]", "unreleased"},
		{"`TICKETBRIDGE_FILES_DIR` and _emphasis_, __strong__ and *stars*", "ticketbridge_files_dir-and-emphasis-strong-and-stars"},
		{"snake_case stays", "snake_case-stays"},
		{"C++ & Go", "c--go"},
		{"See [the guide](guide.md) and ![a logo](logo.png)", "see-the-guide-and-"},
		{"<code>html</code> &amp; entities", "html--entities"},
		{`Escaped \_underscore\_ and \#hash`, "escaped-_underscore_-and-hash"},
		{"Ünïcode café 2.0", "ünïcode-café-20"},
	} {
		if got := slug(headingText(c.heading)); got != c.want {
			t.Errorf("slug(headingText(%q)) = %q, want %q", c.heading, got, c.want)
		}
	}

	doc := parseMarkdown("# A\n\n## A\n\nA\n-\n\n```\n# A\n```\n\n# A-1\n<a name=\"x\"></a>\n")
	want := []string{"a", "a-1", "a-2", "a-1-1", "x"}
	if !slices.Equal(doc.order, want) {
		t.Errorf("anchors of repeated headings: got %v, want %v", doc.order, want)
	}
}
