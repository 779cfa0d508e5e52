package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/state"
)

// TestFlagsAfterArguments: flags may follow positional arguments, and
// everything after -- is positional.
func TestFlagsAfterArguments(t *testing.T) {
	b := newBridge(t)
	id := b.ticket("towels")
	if out, errOut, code := b.cmd("once"); code != 0 {
		t.Fatalf("once: exit %d\n%s%s", code, out, errOut)
	}
	// b.cmd puts --env-file first; here it comes last.
	env := b.envFile()
	out, errOut, code := b.cmd("status", id[:8], "--json", "--env-file", env)
	if code != 0 || !strings.Contains(out, `"id": "`+id+`"`) {
		t.Fatalf("status ID --json: exit %d\n%s%s", code, out, errOut)
	}
	dest := filepath.Join(t.TempDir(), "copy.db")
	out, errOut, code = b.cmd("state", "backup", dest, "--env-file", env)
	if code != 0 {
		t.Fatalf("state backup FILE --env-file X: exit %d\n%s%s", code, out, errOut)
	}
	if st, err := state.Open(t.Context(), dest, state.Options{ReadOnly: true}); err != nil {
		t.Fatalf("the copy: %v", err)
	} else {
		st.Close()
	}
	// After --, a name that looks like a flag is a FILE.
	odd := filepath.Join(t.TempDir(), "-odd.db")
	t.Chdir(filepath.Dir(odd))
	if out, errOut, code = b.cmd("state", "backup", "--", "-odd.db"); code != 0 {
		t.Fatalf("state backup -- -odd.db: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(odd); err != nil {
		t.Fatal(err)
	}
	if _, _, code = b.cmd("status", id[:8], "--nope"); code != 2 {
		t.Fatalf("an unknown flag after an argument: exit %d, want 2", code)
	}
}

// TestMistypedCommand: a command one or two letters off is named, not
// answered with the whole usage; a name far from every command gets the
// usage.
func TestMistypedCommand(t *testing.T) {
	var out, errOut strings.Builder
	code := exitCode(run(t.Context(), []string{"chek"}, &out, &errOut), &errOut)
	if code != 2 || !strings.Contains(errOut.String(), `unknown command "chek"; did you mean check?`) || strings.Contains(errOut.String(), "Commands:") {
		t.Fatalf("chek: exit %d\n%s", code, errOut.String())
	}
	errOut.Reset()
	code = exitCode(run(t.Context(), []string{"frobnicate"}, &out, &errOut), &errOut)
	if code != 2 || strings.Contains(errOut.String(), "did you mean") || !strings.Contains(errOut.String(), "Commands:") {
		t.Fatalf("frobnicate: exit %d\n%s", code, errOut.String())
	}
}
