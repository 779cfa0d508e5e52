package adapters_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/files"
	"github.com/ticketbridge/ticketbridge/adapters/memory"
)

func TestHelpdeskIdentity(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("helpdesk", 0o700); err != nil {
		t.Fatal(err)
	}
	fa, err := files.New(t.Context(), files.Options{Dir: "helpdesk/"})
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	// A folder is named absolute, however it was written.
	if got, want := adapters.HelpdeskIdentity(fa), "files "+filepath.Join(dir, "helpdesk"); got != want {
		t.Errorf("files: %q, want %q", got, want)
	}
	// A helpdesk without a place is named by its adapter alone.
	if got := adapters.HelpdeskIdentity(memory.New(memory.NewBackend(), memory.Options{})); got != "memory" {
		t.Errorf("memory: %q", got)
	}
}
