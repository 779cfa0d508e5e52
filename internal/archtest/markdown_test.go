package archtest

import (
	"bytes"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestMarkdownLinks fails when a relative link in one of the repository's
// Markdown files leads nowhere: its file or directory is not in the
// repository, or its #anchor names no heading (nor <a id> or <a name>) of
// the Markdown file it points into, as GitHub makes a heading's anchor.
// Links with a scheme (https:, mailto:, ...) are not followed, and those in
// code, fenced or inline, are not links. The files are the ones git knows
// of, tracked or new but not ignored, so a link to a file that .gitignore
// keeps out of the repository fails too.
func TestMarkdownLinks(t *testing.T) {
	root := moduleRoot(t)
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "-c", "-o", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("list the repository's files with git ls-files in %s: %v", root, err)
	}
	var files []string
	for f := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		// A file deleted but not yet committed is listed and gone.
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(f))); err == nil {
			files = append(files, f)
		}
	}
	problems, checked := checkMarkdown(os.DirFS(root), files)
	if checked == 0 {
		t.Fatalf("no Markdown file found in %s: is the test looking in the right place?", root)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// moduleRoot returns the directory of the module's go.mod, the
// repository's top.
func moduleRoot(t *testing.T) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// isMarkdown says whether the file is one checkMarkdown reads, and one
// whose headings a #anchor may name.
func isMarkdown(name string) bool {
	ext := strings.ToLower(path.Ext(name))
	return ext == ".md" || ext == ".markdown"
}

// checkMarkdown checks the relative links of every Markdown file among
// files (slash-separated paths in fsys, the repository's files; those under
// a testdata directory are fixtures, not documents, and are skipped). A
// link resolves when it names one of files, or a directory holding one,
// and its anchor, if any, names a heading of the Markdown file it leads to
// (or, in another kind of file, a line: #L12 or #L12-L20). It returns one
// problem per broken link, as file:line: what is wrong, and how many
// Markdown files it read.
func checkMarkdown(fsys fs.FS, files []string) (problems []string, checked int) {
	c := &linkChecker{fsys: fsys, listed: make(map[string]bool), dirs: make(map[string]bool), docs: make(map[string]*mdDoc)}
	for _, f := range files {
		c.listed[f] = true
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			c.dirs[d] = true
		}
	}
	for _, file := range slices.Sorted(slices.Values(files)) {
		if !isMarkdown(file) || slices.Contains(strings.Split(file, "/"), "testdata") {
			continue
		}
		doc, err := c.read(file)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", file, err))
			continue
		}
		checked++
		for _, l := range doc.links {
			if why := c.resolve(file, l.target); why != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s", file, l.line, l.target, why))
			}
		}
	}
	return problems, checked
}

// linkChecker is what checkMarkdown knows of the repository: its files,
// their directories, and the Markdown files it has read.
type linkChecker struct {
	fsys   fs.FS
	listed map[string]bool
	dirs   map[string]bool
	docs   map[string]*mdDoc
}

// read returns the links and anchors of a Markdown file, reading it once.
func (c *linkChecker) read(name string) (*mdDoc, error) {
	if d, ok := c.docs[name]; ok {
		return d, nil
	}
	src, err := fs.ReadFile(c.fsys, name)
	if err != nil {
		return nil, err
	}
	d := parseMarkdown(string(src))
	c.docs[name] = d
	return d, nil
}

// lineCount returns how many lines a file has.
func (c *linkChecker) lineCount(name string) (int, error) {
	src, err := fs.ReadFile(c.fsys, name)
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n, err
}

// schemeRE matches a link that names its scheme, or a host (//host/...):
// one that leads out of the repository and is not followed.
var schemeRE = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9+.-]*:|//)`)

// lineAnchorRE matches GitHub's anchor of a line, or of lines, of a file
// that is not Markdown.
var lineAnchorRE = regexp.MustCompile(`^L([0-9]+)(?:-L([0-9]+))?$`)

// resolve says why the link target in the Markdown file from leads
// nowhere, or "" when it resolves.
func (c *linkChecker) resolve(from, target string) string {
	if schemeRE.MatchString(target) {
		return ""
	}
	if target == "" {
		return "the link has no target"
	}
	p, frag, hasFrag := strings.Cut(target, "#")
	p, _, _ = strings.Cut(p, "?")
	p, err := url.PathUnescape(p)
	if err != nil {
		return fmt.Sprintf("the path is not valid URL escaping: %v", err)
	}
	if frag, err = url.PathUnescape(frag); err != nil {
		return fmt.Sprintf("the anchor is not valid URL escaping: %v", err)
	}
	if hasFrag && frag == "" {
		return "the anchor is empty"
	}

	to := from
	if p != "" {
		if strings.HasPrefix(p, "/") { // GitHub: from the repository's top
			to = path.Clean(strings.TrimPrefix(p, "/"))
		} else {
			to = path.Join(path.Dir(from), p)
		}
	}
	switch {
	case to == ".." || strings.HasPrefix(to, "../"):
		return "it leads out of the repository"
	case to == ".":
		if hasFrag {
			return "an anchor into the repository's top directory, which has no headings"
		}
		return ""
	case c.dirs[to]:
		if hasFrag {
			return fmt.Sprintf("an anchor into the directory %s, which has no headings", to)
		}
		return ""
	case !c.listed[to]:
		return fmt.Sprintf("%s is not in the repository", to)
	}
	if !hasFrag {
		return ""
	}

	if !isMarkdown(to) {
		m := lineAnchorRE.FindStringSubmatch(frag)
		if m == nil {
			return fmt.Sprintf("%s is not Markdown: its anchors are lines, #L12 or #L12-L20, not #%s", to, frag)
		}
		n, err := c.lineCount(to)
		if err != nil {
			return err.Error()
		}
		for _, s := range m[1:] {
			if l, _ := strconv.Atoi(s); s != "" && (l < 1 || l > n) {
				return fmt.Sprintf("%s has no line %s (it has %d)", to, s, n)
			}
		}
		return ""
	}
	doc, err := c.read(to)
	if err != nil {
		return err.Error()
	}
	if doc.anchors[frag] {
		return ""
	}
	msg := fmt.Sprintf("no heading of %s has the anchor #%s", to, frag)
	if near := doc.nearest(frag); near != "" {
		msg += fmt.Sprintf(" (did you mean #%s?)", near)
	}
	return msg
}

// TestCheckMarkdown runs the link checker on the files of
// testdata/markdown, so that a broken link is seen to fail. ignored.txt is
// there but left out of the list, as a file .gitignore keeps out.
func TestCheckMarkdown(t *testing.T) {
	fsys := os.DirFS(filepath.Join("testdata", "markdown"))
	var files []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && p != "ignored.txt" {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	problems, checked := checkMarkdown(fsys, files)
	want := []string{
		`README.md:15: link "missing.md": missing.md is not in the repository`,
		`README.md:16: link "guide.md#no-such-heading": no heading of guide.md has the anchor #no-such-heading`,
		`README.md:17: link "guide.md#second-heading-with-codespan": no heading of guide.md has the anchor #second-heading-with-codespan (did you mean #second-heading-with-code_span?)`,
		`README.md:18: link "#nowhere": no heading of README.md has the anchor #nowhere`,
		`README.md:19: link "../../outside.md": it leads out of the repository`,
		`README.md:20: link "data.txt#L9": data.txt has no line 9 (it has 3)`,
		`README.md:21: link "data.txt#top": data.txt is not Markdown: its anchors are lines, #L12 or #L12-L20, not #top`,
		`README.md:22: link "sub/#notes": an anchor into the directory sub, which has no headings`,
		`README.md:23: link "ignored.txt": ignored.txt is not in the repository`,
		`README.md:26: link "gone.txt": gone.txt is not in the repository`,
	}
	if !slices.Equal(problems, want) {
		t.Errorf("problems:\n got %s\nwant %s", strings.Join(problems, "\n     "), strings.Join(want, "\n     "))
	}
	if checked != 3 {
		t.Errorf("checked %d Markdown files, want 3 (README.md, guide.md, sub/notes.md; not testdata/broken.md)", checked)
	}
}
