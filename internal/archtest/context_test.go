package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// TestNoPolicyInContext fails when production code puts a value in a
// context.Context, or reads one, under a key that contextValues does not
// list: the request slots and the lease guard once travelled that way,
// and now belong to the HTTP clients. Keys are found as the composite
// literals (key{}) passed to context.WithValue and to a Value method.
func TestNoPolicyInContext(t *testing.T) {
	_, g := load(t)
	fset := token.NewFileSet()
	seen := map[string]map[string]bool{}
	for _, p := range slices.Sorted(maps.Keys(g)) {
		for _, name := range g[p].GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(g[p].Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ctxName := ""
			for _, imp := range f.Imports {
				if v, _ := strconv.Unquote(imp.Path.Value); v == "context" {
					ctxName = "context"
					if imp.Name != nil {
						ctxName = imp.Name.Name
					}
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				var key ast.Expr
				switch {
				case sel.Sel.Name == "WithValue" && isIdent(sel.X, ctxName) && len(call.Args) == 3:
					key = call.Args[1]
				case sel.Sel.Name == "Value" && len(call.Args) == 1:
					key = call.Args[0]
				default:
					return true
				}
				lit, ok := key.(*ast.CompositeLit)
				if !ok {
					if sel.Sel.Name == "WithValue" {
						t.Errorf("%s: a context value under a key that is not a key{} literal; use one, listed in contextValues", fset.Position(call.Pos()))
					}
					return true
				}
				typ, ok := lit.Type.(*ast.Ident)
				if !ok {
					return true
				}
				if _, listed := contextValues[p][typ.Name]; !listed {
					t.Errorf("%s: %s carries a value in a context under %s{}: give it to what uses it when that is built (the HTTP clients take theirs through internal/httpx), or list it in contextValues with why it belongs to the call",
						fset.Position(call.Pos()), p, typ.Name)
				}
				if seen[p] == nil {
					seen[p] = map[string]bool{}
				}
				seen[p][typ.Name] = true
				return true
			})
		}
	}
	for p, keys := range contextValues {
		for k := range keys {
			if !seen[p][k] {
				t.Errorf("%s no longer carries %s{} in a context: remove it from contextValues in rules_test.go", p, k)
			}
		}
	}
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && name != "" && id.Name == name
}
