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

// TestWebURL: a helpdesk page is built from the configured address as
// redact.Place gives it, never with its credentials, query or fragment;
// a helpdesk without a web UI links nothing.
func TestWebURL(t *testing.T) {
	for base, want := range map[string]string{
		"https://bridge:s3cret@RT.example.com/rt/?token=s3cret#x": "https://rt.example.com/rt/Ticket/Display.html?id=1",
		"http://127.0.0.1:8080":                                   "http://127.0.0.1:8080/Ticket/Display.html?id=1",
		"not a url":                                               "",
	} {
		if got := adapters.WebURL(base, "/Ticket/Display.html?id=1"); got != want {
			t.Errorf("WebURL(%q) = %q, want %q", base, got, want)
		}
	}
	if got := adapters.TicketURL(memory.New(memory.NewBackend(), memory.Options{}), "1"); got != "" {
		t.Errorf("memory has no web UI, yet TicketURL = %q", got)
	}
}
