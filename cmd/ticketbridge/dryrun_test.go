package main

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fileTree lists every path below dir with its mode, size and modification
// time: two equal lists mean nothing was written.
func fileTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s %v %d %s\n", rel, fi.Mode(), fi.Size(), fi.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestDryRunLeavesTheTreeUnchanged: `once --dry-run` on a hotel that never
// ran, with the state file and the files helpdesk at their defaults in the
// working directory, creates no file or folder anywhere there, and says
// what it would create.
func TestDryRunLeavesTheTreeUnchanged(t *testing.T) {
	b := newBridge(t)
	id := b.ticket("towels")
	delete(b.vars, "TICKETBRIDGE_STATE")
	delete(b.vars, "TICKETBRIDGE_FILES_DIR")
	b.vars["TICKETBRIDGE_LOG_LEVEL"] = "info"
	cwd := t.TempDir()
	t.Chdir(cwd)
	before := fileTree(t, cwd)

	out, errOut, code := b.cmd("once", "--dry-run")
	if code != 0 {
		t.Fatalf("once --dry-run: exit %d\n%s\n%s", code, out, errOut)
	}
	mustContain(t, "dry run", out, "would create a helpdesk ticket for "+id, "dry run: nothing was written")
	if !strings.Contains(errOut, "would create helpdesk ticket") || strings.Contains(errOut, `msg="created helpdesk ticket"`) {
		t.Errorf("the log does not say \"would create\":\n%s", errOut)
	}
	if after := fileTree(t, cwd); after != before {
		t.Errorf("the dry run wrote in the working directory:\n%s", after)
	}
}
