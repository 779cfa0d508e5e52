//go:build unix

package secretfile_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/internal/secretfile"
)

// TestResolve: a setting's secret given as a value or in a file (v_FILE),
// one or the other; the file's errors name v_FILE, never the secret.
func TestResolve(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("  s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := secretfile.Resolve("X_TOKEN", "direct", ""); err != nil || got != "direct" {
		t.Errorf("value only: %q, %v", got, err)
	}
	if got, err := secretfile.Resolve("X_TOKEN", "", ""); err != nil || got != "" {
		t.Errorf("neither: %q, %v", got, err)
	}
	if got, err := secretfile.Resolve("X_TOKEN", "", file); err != nil || got != "s3cret" {
		t.Errorf("file: %q, %v", got, err)
	}
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte("s3cret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := secretfile.Resolve("X_TOKEN", "", open); err == nil || !strings.Contains(err.Error(), "every user may") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a file every user may read: %v", err)
	}
	if _, err := secretfile.Resolve("X_TOKEN", "direct", file); err == nil || err.Error() != "X_TOKEN and X_TOKEN_FILE are both set: use one" {
		t.Errorf("both: %v", err)
	}
	if _, err := secretfile.Resolve("X_TOKEN", "", empty); err == nil || err.Error() != fmt.Sprintf("read X_TOKEN_FILE %s: the file is empty", empty) {
		t.Errorf("empty file: %v", err)
	}
	_, err := secretfile.Resolve("X_TOKEN", "", filepath.Join(dir, "missing"))
	if err == nil || !strings.HasPrefix(err.Error(), "read X_TOKEN_FILE: ") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
