package adapters_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters"
)

func TestCanMakeDir(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{root, filepath.Join(root, "new", "deeper")} {
		if err := adapters.CanMakeDir(d); err != nil {
			t.Errorf("CanMakeDir(%s): %v", d, err)
		}
	}
	if err := adapters.CanMakeDir(filepath.Join(file, "sub")); err == nil || !strings.Contains(err.Error(), "is not a folder") {
		t.Errorf("a folder under a file: %v", err)
	}
	if des, _ := os.ReadDir(root); len(des) != 1 {
		t.Errorf("CanMakeDir made something: %v", des)
	}
	if os.Geteuid() == 0 {
		return // root may write anywhere: access(2) says yes
	}
	locked := filepath.Join(root, "locked")
	if err := os.Mkdir(locked, 0o500); err != nil {
		t.Fatal(err)
	}
	if err := adapters.CanMakeDir(filepath.Join(locked, "helpdesk")); err == nil || !strings.Contains(err.Error(), "cannot be written to make it") {
		t.Errorf("a folder under a read-only one: %v", err)
	}
}
