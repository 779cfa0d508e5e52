package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryHTTPServerHasTimeouts: each http.Server the project starts (the
// telemetry listener, the webhook inbound endpoint, the reference server,
// which the demo serves too, the example webhook receiver) bounds the time a client may take
// to send its request and to read the answer, and how long an idle
// connection stays: without them a client sending a byte at a time holds a
// connection and its goroutine for ever.
func TestEveryHTTPServerHasTimeouts(t *testing.T) {
	want := []string{"ReadHeaderTimeout", "ReadTimeout", "WriteTimeout", "IdleTimeout"}
	root := filepath.Join("..", "..")
	servers := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			sel, ok := lit.Type.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Server" {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "http" {
				return true
			}
			servers++
			set := map[string]bool{}
			for _, e := range lit.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					if k, ok := kv.Key.(*ast.Ident); ok {
						set[k.Name] = true
					}
				}
			}
			for _, w := range want {
				if !set[w] {
					t.Errorf("%s: an http.Server without %s", fset.Position(lit.Pos()), w)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if servers < 4 {
		t.Errorf("found %d http.Server literals, want the telemetry's, the webhook's, the reference server's and the receiver's at least", servers)
	}
}
