package testutil

import (
	"bytes"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// maxFileLines is the most lines a non-test Go file of the module may have.
// A file past it is split into files named for what they hold, each with
// one theme, by moving code within its package.
const maxFileLines = 800

// longFiles are the files still allowed past maxFileLines, by path from the
// module's root, each with the line count it had when listed: it may shrink
// but not grow. An entry whose file is gone or back within the limit fails
// the test too, so the list only gets shorter.
var longFiles = map[string]int{}

// generatedRE is the line that marks a generated Go file.
var generatedRE = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// TestNoLongFiles fails naming every non-test Go file of the module, other
// than generated ones and those in longFiles, that has more than
// maxFileLines lines.
func TestNoLongFiles(t *testing.T) {
	root := moduleRoot(t)
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			// What the go command ignores: testdata, vendor, and
			// directories starting with . or _.
			if path != root && (name == "testdata" || name == "vendor" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if isGenerated(src) {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		n := bytes.Count(src, []byte("\n"))
		if len(src) > 0 && src[len(src)-1] != '\n' {
			n++
		}
		if allowed, ok := longFiles[rel]; ok {
			seen[rel] = true
			switch {
			case n <= maxFileLines:
				t.Errorf("%s has %d lines, within the limit of %d: remove it from longFiles", rel, n, maxFileLines)
			case n > allowed:
				t.Errorf("%s has %d lines, more than the %d it is allowed in longFiles: split it instead of growing it", rel, n, allowed)
			}
			return nil
		}
		if n > maxFileLines {
			t.Errorf("%s has %d lines, more than %d: split it into files named for what they hold, moving code within its package", rel, n, maxFileLines)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk the module: %v", err)
	}
	for _, rel := range slices.Sorted(maps.Keys(longFiles)) {
		if !seen[rel] {
			t.Errorf("%s is in longFiles but is no longer in the module: remove it from longFiles", rel)
		}
	}
}

// isGenerated reports whether src carries the generated-code marker before
// its package clause.
func isGenerated(src []byte) bool {
	head, _, _ := bytes.Cut(src, []byte("\npackage "))
	return generatedRE.Match(head)
}

// moduleRoot returns the directory holding the module's go.mod, found from
// the test's directory upwards.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("working directory: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod above the test's directory")
		}
		dir = parent
	}
}
