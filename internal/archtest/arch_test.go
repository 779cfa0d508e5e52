package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// rule says that the packages matching from must not depend on a package
// matching deny, nor, when only is set, on any package of the module that
// does not match only. Dependencies are followed through the non-test
// imports of the module's packages; with tests, a package's test files are
// checked as well (what they import, and what that imports).
type rule struct {
	name  string
	from  []string
	deny  []string
	only  []string
	tests bool
	why   string
}

// allowance lets the package from depend on the package to, although a
// rule forbids it; why says which step ends it.
type allowance struct {
	from, to string
	why      string
}

// pkg is what `go list` says of one package of the module; the paths in it
// are relative to the module, and imports from outside it are dropped.
type pkg struct {
	Path    string
	Dir     string
	GoFiles []string
	Imports []string // non-test files
	Tests   []string // test files, in the package and external
}

// graph is the module's packages by path.
type graph map[string]*pkg

// violation is one package that depends on a package it must not.
type violation struct {
	from, to string
	rule     string
	chain    []string // from, ..., to
	test     bool     // through test files
}

func (v violation) String() string {
	via := strings.Join(v.chain, " -> ")
	if v.test {
		via = v.chain[0] + " (tests) -> " + strings.Join(v.chain[1:], " -> ")
	}
	return fmt.Sprintf("%s must not depend on %s (rule %q): %s", v.from, v.to, v.rule, via)
}

// match says whether the package p matches pattern.
func match(pattern, p string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	ok, err := path.Match(pattern, p)
	return err == nil && ok
}

func matchAny(patterns []string, p string) bool {
	return slices.ContainsFunc(patterns, func(pat string) bool { return match(pat, p) })
}

func (r rule) forbids(dep string) bool {
	return matchAny(r.deny, dep) || (r.only != nil && !matchAny(r.only, dep))
}

// reach returns every package reachable from the roots through non-test
// imports, each with the shortest chain that leads to it from from.
func (g graph) reach(from string, roots []string) map[string][]string {
	chains := make(map[string][]string)
	var queue []string
	for _, r := range roots {
		if _, seen := chains[r]; !seen && r != from {
			chains[r] = []string{from, r}
			queue = append(queue, r)
		}
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if g[p] == nil {
			continue
		}
		for _, next := range g[p].Imports {
			if _, seen := chains[next]; seen || next == from {
				continue
			}
			chains[next] = append(slices.Clip(chains[p]), next)
			queue = append(queue, next)
		}
	}
	return chains
}

// check returns the violations of rules in g, without the allowed ones,
// and the allowances that no violation needed.
func check(g graph, rules []rule, allowed []allowance) (found []violation, unused []allowance) {
	seen := make(map[[2]string]bool)
	var all []violation
	for _, p := range slices.Sorted(maps.Keys(g)) {
		for _, r := range rules {
			if !matchAny(r.from, p) {
				continue
			}
			passes := []bool{false}
			if r.tests {
				passes = append(passes, true)
			}
			for _, test := range passes {
				roots := g[p].Imports
				if test {
					roots = g[p].Tests
				}
				chains := g.reach(p, roots)
				for _, dep := range slices.Sorted(maps.Keys(chains)) {
					key := [2]string{p, dep}
					if !r.forbids(dep) || seen[key] {
						continue
					}
					seen[key] = true
					all = append(all, violation{from: p, to: dep, rule: r.name, chain: chains[dep], test: test})
				}
			}
		}
	}
	used := make([]bool, len(allowed))
	for _, v := range all {
		i := slices.IndexFunc(allowed, func(a allowance) bool { return a.from == v.from && a.to == v.to })
		if i < 0 {
			found = append(found, v)
			continue
		}
		used[i] = true
	}
	for i, a := range allowed {
		if !used[i] {
			unused = append(unused, a)
		}
	}
	return found, unused
}

// load lists the module's packages with `go list` and returns them with
// the module's path.
func load(t *testing.T) (string, graph) {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("find the go command: %v", err)
	}
	run := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(goCmd, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return out
	}
	module := strings.TrimSpace(string(run("list", "-m")))
	out := run("list", "-e", "-json=ImportPath,Dir,GoFiles,Imports,TestImports,XTestImports,Error", module+"/...")

	rel := func(p string) (string, bool) {
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	inModule := func(paths []string) []string {
		var in []string
		for _, p := range paths {
			if r, ok := rel(p); ok && !slices.Contains(in, r) {
				in = append(in, r)
			}
		}
		return in
	}
	g := make(graph)
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var lp struct {
			ImportPath                         string
			Dir                                string
			GoFiles                            []string
			Imports, TestImports, XTestImports []string
			Error                              *struct{ Err string }
		}
		if err := dec.Decode(&lp); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("read go list: %v", err)
		}
		if lp.Error != nil {
			t.Fatalf("go list %s: %s", lp.ImportPath, lp.Error.Err)
		}
		p, ok := rel(lp.ImportPath)
		if !ok {
			continue
		}
		g[p] = &pkg{
			Path:    p,
			Dir:     lp.Dir,
			GoFiles: lp.GoFiles,
			Imports: inModule(lp.Imports),
			Tests:   inModule(append(lp.TestImports, lp.XTestImports...)),
		}
	}
	if len(g) == 0 {
		t.Fatalf("go list found no package in %s", module)
	}
	return module, g
}

// TestDependencies fails when a package depends on one a rule forbids and
// the allow-list does not name, and when the allow-list names one that is
// gone.
func TestDependencies(t *testing.T) {
	_, g := load(t)
	paths := slices.Sorted(maps.Keys(g))
	for _, r := range rules {
		for _, from := range r.from {
			if !slices.ContainsFunc(paths, func(p string) bool { return match(from, p) }) {
				t.Errorf("rule %q: no package matches %q; fix the rule", r.name, from)
			}
		}
	}
	found, unused := check(g, rules, allowed)
	for _, v := range found {
		r := rules[slices.IndexFunc(rules, func(r rule) bool { return r.name == v.rule })]
		t.Errorf("%v\n\t%s", v, r.why)
	}
	for _, a := range unused {
		t.Errorf("%s no longer depends on %s (%s): remove it from the allow-list in rules_test.go", a.from, a.to, a.why)
	}
}

// TestRefserverSharesOnlyWireTypes fails when the reference server uses
// anything of package guestapi outside its wire types: it is a second,
// independent side of the API, so it must not run the client's code.
func TestRefserverSharesOnlyWireTypes(t *testing.T) {
	module, g := load(t)
	api := g["guestapi"]
	if api == nil {
		t.Fatal("package guestapi not found")
	}
	fset := token.NewFileSet()
	declaredIn := make(map[string]string) // exported identifier -> file
	for _, name := range api.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(api.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					declaredIn[d.Name.Name] = name
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						declaredIn[s.Name.Name] = name
					case *ast.ValueSpec:
						for _, n := range s.Names {
							declaredIn[n.Name] = name
						}
					}
				}
			}
		}
	}
	for _, w := range wireFiles {
		if !slices.Contains(api.GoFiles, w) {
			t.Fatalf("guestapi has no %s: update wireFiles in rules_test.go", w)
		}
	}

	apiPath := module + "/guestapi"
	checked := 0
	for _, p := range slices.Sorted(maps.Keys(g)) {
		if !match("guestapi/refserver/...", p) {
			continue
		}
		for _, name := range g[p].GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(g[p].Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			local := ""
			for _, imp := range f.Imports {
				if v, _ := strconv.Unquote(imp.Path.Value); v == apiPath {
					local = "guestapi"
					if imp.Name != nil {
						local = imp.Name.Name
					}
				}
			}
			if local == "" {
				continue
			}
			checked++
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); !ok || x.Name != local {
					return true
				}
				if file := declaredIn[sel.Sel.Name]; !slices.Contains(wireFiles, file) {
					t.Errorf("%s: uses guestapi.%s (declared in %s): the reference server shares only the wire types (%s)",
						fset.Position(sel.Pos()), sel.Sel.Name, file, strings.Join(wireFiles, ", "))
				}
				return true
			})
		}
	}
	if checked == 0 {
		t.Fatal("no file of guestapi/refserver imports guestapi: is the test looking in the right place?")
	}
}
