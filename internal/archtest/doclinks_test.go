package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// TestDocLinksResolve fails on a doc link of a doc comment that names
// nothing: a renamed or deleted identifier left behind in the prose. The
// doc comments are those of the module's packages (not of their tests):
// the package clause, the top-level declarations and their specs, and the
// fields of struct and interface types. Each is parsed with go/doc/comment,
// as go doc does, and each link it finds is checked:
//
//   - [Name], [Recv.Name], [*Name]: a declaration of the package, a method
//     or a field of one of its types, as go/doc knows them (promoted
//     methods included);
//   - [pkg.Name], [pkg.Recv.Name], [pkg]: pkg is resolved from the
//     package's imports (by name or alias), then the package's own name,
//     then the standard library's one-element paths, as go/doc does;
//     [import/path.Name] names the package by path. The package must
//     exist and declare the name: a package of the module is read from its
//     parsed files, any other one (standard library or dependency) from its
//     source, found with `go list`, files excluded by build constraints
//     included, so that a name declared for another platform still counts;
//   - [pkg.Name] whose pkg the package does not import fails: go doc shows
//     it as plain text. Write the import path, or name it without brackets;
//   - [lowerCamel], a bracketed unexported identifier (lower case first,
//     with an upper-case letter in it), is the module's way to point at an
//     unexported declaration: it must name one of the package, or a
//     package as [pkg] does. So must [pkg.name] and [recv.name] (which
//     go/doc/comment reads as one package name) when pkg is a package the
//     package imports or its own, or recv one of its declarations.
//
// Not checked: a bracketed plain lower-case word ([read], [value]), taken
// as prose; a pair whose first name is no package or declaration ([x.y]);
// and what go/doc/comment does not read as a doc link: a [text] with a
// link definition ("[text]: https://..."), one that is not in an
// identifier form ([read write], [ticketbridge unsent <id>]), one glued to
// a word (page[size]). Nor are names in plain text, links in the comments
// of test files, or links to an external package's unexported names (an
// unexported name of the standard library counts as declared).
func TestDocLinksResolve(t *testing.T) {
	module, g := load(t)
	fset := token.NewFileSet()

	type docComment struct {
		pkg  string // import path
		cg   *ast.CommentGroup
		text string
	}
	var comments []docComment
	docs := make(map[string]*doc.Package) // the module's, by import path
	for _, p := range slices.Sorted(maps.Keys(g)) {
		path := module + "/" + p
		var files []*ast.File
		for _, name := range g[p].GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(g[p].Dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
			// Before go/doc, which takes the doc comments off the AST.
			for _, cg := range docComments(f) {
				comments = append(comments, docComment{pkg: path, cg: cg, text: cg.Text()})
			}
		}
		dp, err := doc.NewFromFiles(fset, files, path, doc.AllDecls|doc.PreserveAST)
		if err != nil {
			t.Fatalf("go/doc %s: %v", path, err)
		}
		docs[path] = dp
	}

	// First pass: every link, resolved as far as the package's own
	// declarations and imports go; the packages outside the module that
	// links name are read afterwards, all with one `go list`.
	type found struct {
		docComment
		link *comment.DocLink
	}
	var links []found
	external := make(map[string]bool)
	for _, c := range comments {
		for _, l := range parseDocLinks(docs[c.pkg], c.text) {
			links = append(links, found{c, l})
			if p := linkedPackage(l); p != "" && docs[p] == nil {
				external[p] = true
			}
		}
	}
	ext := loadExternal(t, slices.Sorted(maps.Keys(external)))
	declares := func(path, recv, name string) (exists, declared bool) {
		if dp := docs[path]; dp != nil {
			return true, name == "" || dp.Parser().LookupSym(recv, name)
		}
		if p := ext[path]; p != nil {
			return true, name == "" || p.declares(t, fset, recv, name)
		}
		return false, false
	}

	for _, l := range links {
		if why := unresolved(declares, l.pkg, l.link); why != "" {
			t.Errorf("%s: doc link [%s] %s", linkPosition(fset, l.cg, l.link), linkText(l.link), why)
		}
	}
	if len(links) == 0 {
		t.Fatal("found no doc link in the module: is the test reading the doc comments?")
	}
}

// unimported prefixes the import path the lookup gives a package name that
// resolves to no package, so that the link is kept and reported;
// unexported prefixes the one it gives [pkg.name] and [recv.name]:
// then follow the path of pkg ("" for the package itself), recv ("" for
// [pkg.name]) and the name, each after a NUL.
const (
	unimported = "\x00unimported:"
	unexported = "\x00unexported:"
)

// parseDocLinks returns the doc links of a doc comment of package dp.
// Symbols are accepted as the parser meets them and checked afterwards;
// package names resolve as go/doc resolves them, or to unimported+name.
// A pair of unexported identifiers, [pkg.name] or [recv.name], which
// go/doc/comment reads as one package name, resolves to unexported+path
// when its first one names a package or a declaration of dp, and is not a
// link otherwise.
func parseDocLinks(dp *doc.Package, text string) []*comment.DocLink {
	own := dp.Parser()
	lookup := func(name string) (string, bool) {
		if path, ok := own.LookupPackage(name); ok {
			return path, true
		}
		return comment.DefaultLookupPackage(name)
	}
	p := &comment.Parser{
		LookupPackage: func(name string) (string, bool) {
			if path, ok := lookup(name); ok {
				return path, true
			}
			if token.IsIdentifier(name) {
				return unimported + name, true
			}
			first, second, ok := strings.Cut(name, ".")
			if !ok || !token.IsIdentifier(first) || !token.IsIdentifier(second) {
				return "", false
			}
			if path, ok := lookup(first); ok {
				return unexported + "\x00" + path + "\x00\x00" + second, true
			}
			if own.LookupSym("", first) {
				return unexported + "\x00\x00" + first + "\x00" + second, true
			}
			return "", false
		},
		LookupSym: func(recv, name string) bool { return true },
	}
	var links []*comment.DocLink
	var walkText func([]comment.Text)
	walkText = func(ts []comment.Text) {
		for _, t := range ts {
			switch t := t.(type) {
			case *comment.DocLink:
				links = append(links, t)
			case *comment.Link:
				walkText(t.Text)
			}
		}
	}
	var walk func([]comment.Block)
	walk = func(bs []comment.Block) {
		for _, b := range bs {
			switch b := b.(type) {
			case *comment.Paragraph:
				walkText(b.Text)
			case *comment.Heading:
				walkText(b.Text)
			case *comment.List:
				for _, item := range b.Items {
					walk(item.Content)
				}
			}
		}
	}
	walk(p.Parse(text).Content)
	return links
}

// unresolved says why link, in a doc comment of the package from, names
// nothing, or returns "" when it names something. declares says whether
// the package of an import path exists, and whether it declares
// recv.name (name alone when recv is "", nothing when name is "").
func unresolved(declares func(path, recv, name string) (exists, declared bool), from string, link *comment.DocLink) string {
	sym := link.Name
	if link.Recv != "" {
		sym = link.Recv + "." + link.Name
	}
	if loose, ok := strings.CutPrefix(link.ImportPath, unexported); ok {
		// [pkg.name] or [recv.name]: an unexported declaration of
		// another package, or a method or field of the package's types.
		parts := strings.Split(loose, "\x00") // "", path, recv, name
		target, recv, name := parts[1], parts[2], parts[3]
		if target == "" {
			target = from
		}
		if _, declared := declares(target, recv, name); !declared {
			return fmt.Sprintf("names %s, which package %s does not declare", strings.TrimPrefix(recv+"."+name, "."), target)
		}
		return ""
	}
	if name, ok := strings.CutPrefix(link.ImportPath, unimported); ok {
		if link.Name == "" {
			// [name]: a package link to no package, or an unexported
			// declaration of the package, or a word in brackets.
			if _, declared := declares(from, "", name); declared || !isLowerCamel(name) {
				return ""
			}
			return fmt.Sprintf("names no declaration of %s and no package it imports", from)
		}
		// [name.Name]: a method or field of an unexported type, or a
		// package the package does not import.
		if _, declared := declares(from, name, link.Name); declared {
			return ""
		}
		return fmt.Sprintf("names package %s, which %s does not import: write its import path ([path/to/%s.%s]), or drop the brackets",
			name, from, name, sym)
	}
	target := link.ImportPath
	if target == "" {
		target = from
	}
	exists, declared := declares(target, link.Recv, link.Name)
	switch {
	case !exists:
		return fmt.Sprintf("names package %s, which does not exist", target)
	case !declared:
		return fmt.Sprintf("names %s, which package %s does not declare", sym, target)
	}
	return ""
}

// linkedPackage returns the import path of the package link names, or
// "" for the package of its comment or a name that resolves to none.
func linkedPackage(link *comment.DocLink) string {
	if loose, ok := strings.CutPrefix(link.ImportPath, unexported); ok {
		return strings.Split(loose, "\x00")[1]
	}
	if strings.HasPrefix(link.ImportPath, unimported) {
		return ""
	}
	return link.ImportPath
}

// isLowerCamel says whether s is an unexported identifier with an
// upper-case letter in it, as the names of unexported declarations are
// and words of prose are not.
func isLowerCamel(s string) bool {
	return token.IsIdentifier(s) && !token.IsExported(s) && strings.IndexFunc(s, unicode.IsUpper) >= 0
}

// docComments returns the doc comments of f: the package clause's, the
// top-level declarations' and their specs', and their struct and
// interface fields'. Function bodies are not entered.
func docComments(f *ast.File) []*ast.CommentGroup {
	var cgs []*ast.CommentGroup
	add := func(cg *ast.CommentGroup) {
		if cg != nil {
			cgs = append(cgs, cg)
		}
	}
	add(f.Doc)
	for _, d := range f.Decls {
		ast.Inspect(d, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				add(n.Doc)
				return false // its body declares nothing of the package
			case *ast.GenDecl:
				add(n.Doc)
			case *ast.TypeSpec:
				add(n.Doc)
			case *ast.ValueSpec:
				add(n.Doc)
			case *ast.Field:
				add(n.Doc)
			case *ast.FuncLit:
				return false
			}
			return true
		})
	}
	return cgs
}

// extPkg is a package outside the module that a link names: its
// declarations are read from the files built on this platform, and from
// the others (build constraints) only when a name is not found there.
type extPkg struct {
	path, name, dir string
	built, others   []string
	doc, all        *doc.Package
}

// loadExternal finds the packages outside the module, by import path,
// with one `go list`. A path that is no package is left out, so that a
// link to it fails.
func loadExternal(t *testing.T, paths []string) map[string]*extPkg {
	t.Helper()
	pkgs := make(map[string]*extPkg)
	if len(paths) == 0 {
		return pkgs
	}
	args := append([]string{"list", "-e", "-json=ImportPath,Name,Dir,GoFiles,CgoFiles,IgnoredGoFiles,Error"}, paths...)
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(paths, " "), err, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var lp struct {
			ImportPath, Name, Dir             string
			GoFiles, CgoFiles, IgnoredGoFiles []string
			Error                             *struct{ Err string }
		}
		if err := dec.Decode(&lp); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("read go list: %v", err)
		}
		if lp.Error != nil || lp.Dir == "" {
			continue
		}
		var others []string
		for _, name := range lp.IgnoredGoFiles {
			if !strings.HasSuffix(name, "_test.go") {
				others = append(others, name)
			}
		}
		pkgs[lp.ImportPath] = &extPkg{path: lp.ImportPath, name: lp.Name, dir: lp.Dir,
			built: slices.Concat(lp.GoFiles, lp.CgoFiles), others: others}
	}
	return pkgs
}

// declares says whether the package declares recv.name (name when recv
// is ""), reading its files the first time it is asked.
func (p *extPkg) declares(t *testing.T, fset *token.FileSet, recv, name string) bool {
	t.Helper()
	if p.doc == nil {
		p.doc = p.read(t, fset, p.built)
	}
	if p.doc.Parser().LookupSym(recv, name) {
		return true
	}
	if p.all == nil {
		p.all = p.read(t, fset, slices.Concat(p.built, p.others))
	}
	return p.all.Parser().LookupSym(recv, name)
}

// read parses the named files of the package, for their declarations
// only. A file of another package (a generator's main), or one that
// does not parse, is skipped.
func (p *extPkg) read(t *testing.T, fset *token.FileSet, names []string) *doc.Package {
	t.Helper()
	var files []*ast.File
	for _, name := range names {
		f, err := parser.ParseFile(fset, filepath.Join(p.dir, name), nil, parser.SkipObjectResolution)
		if err == nil && f.Name.Name == p.name {
			files = append(files, f)
		}
	}
	dp, err := doc.NewFromFiles(fset, files, p.path, doc.AllDecls|doc.PreserveAST)
	if err != nil {
		t.Fatalf("go/doc %s: %v", p.path, err)
	}
	return dp
}

// linkText is the text of link as written between its brackets.
func linkText(link *comment.DocLink) string {
	var b strings.Builder
	for _, t := range link.Text {
		switch t := t.(type) {
		case comment.Plain:
			b.WriteString(string(t))
		case comment.Italic:
			b.WriteString(string(t))
		}
	}
	return b.String()
}

// linkPosition returns where in the comment group cg the link is written:
// the first line that holds it, or the group when none does (a link
// broken across lines).
func linkPosition(fset *token.FileSet, cg *ast.CommentGroup, link *comment.DocLink) token.Position {
	want := "[" + linkText(link) + "]"
	for _, c := range cg.List {
		if strings.Contains(c.Text, want) {
			return fset.Position(c.Pos())
		}
	}
	return fset.Position(cg.Pos())
}

// TestDocLinkCheck runs the check on a made-up package, so that each
// kind of link is seen to fail when it names nothing, and the brackets
// that are no link are seen to pass.
func TestDocLinkCheck(t *testing.T) {
	const src = `package kit

import (
	"io"
	jsonx "encoding/json"
)

type Box struct{ Size int }

func (b *Box) Open() {}

type store struct{ path string }

func (s store) Read() {}

func newBox() {}

var _ io.Reader
var _ jsonx.Decoder
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "kit.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	dp, err := doc.NewFromFiles(fset, []*ast.File{f}, "example.com/kit", doc.AllDecls|doc.PreserveAST)
	if err != nil {
		t.Fatal(err)
	}
	declares := func(path, recv, name string) (exists, declared bool) {
		switch path {
		case "example.com/kit":
			return true, name == "" || dp.Parser().LookupSym(recv, name)
		case "io", "encoding/json", "example.com/other":
			return true, name == "" || recv == "" && name == "Reader" || recv == "Decoder" && name == "Decode"
		}
		return false, false
	}
	for _, c := range []struct {
		text string
		want string // "" when it passes, else a part of the message
	}{
		{"[Box], [*Box], [Box.Open], [Box.Size], [io.Reader], [jsonx.Decoder.Decode], [io], [kit.Box]", ""},
		{"[newBox], [store], [store.Read], [kit.newBox], [example.com/other.Reader]", ""},
		{"prose: [read], [read write], page[size], [ticketbridge unsent <id>], [e.g. Box], [x.y], [Gone].\n\n[Gone]: https://example.com\n", ""},
		{"[Gone]", "names Gone, which package example.com/kit does not declare"},
		{"[*Gone]", "names Gone, which package"},
		{"[Box.Close]", "names Box.Close, which package"},
		{"[io.Writer]", "names Writer, which package io does not declare"},
		{"[example.com/gone.Reader]", "names package example.com/gone, which does not exist"},
		{"[example.com/gone]", "names package example.com/gone, which does not exist"},
		{"[other.Reader]", "names package other, which example.com/kit does not import"},
		{"[oldBox]", "names no declaration of example.com/kit"},
		{"[kit.oldBox]", "names oldBox, which package example.com/kit does not declare"},
		{"[store.write]", "names store.write, which package example.com/kit does not declare"},
	} {
		var got []string
		for _, l := range parseDocLinks(dp, c.text) {
			if why := unresolved(declares, "example.com/kit", l); why != "" {
				got = append(got, "["+linkText(l)+"] "+why)
			}
		}
		switch {
		case c.want == "" && got != nil:
			t.Errorf("%s: %q, want no failure", c.text, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
			t.Errorf("%s: %q, want one failure with %q", c.text, got, c.want)
		}
	}

	var paths []string
	for _, l := range parseDocLinks(dp, "[io.Reader] [io.newReader] [jsonx.Decoder] [kit.Box] [kit.box] [store.path] [oldBox] [other.Reader]") {
		paths = append(paths, linkedPackage(l))
	}
	if want := []string{"io", "io", "encoding/json", "", "", "", "", ""}; !slices.Equal(paths, want) {
		t.Errorf("linked packages: got %q, want %q", paths, want)
	}
}
