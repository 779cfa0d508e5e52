package main

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/check"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/state/statetest"
)

// TestPostgresState drives the commands a hotel uses by hand with
// TICKETBRIDGE_STATE naming a PostgreSQL database: check, once, status, a
// dry run and state backup, none of which shows the database password.
func TestPostgresState(t *testing.T) {
	dbURL := statetest.PostgresURL(t) // before newBridge clears the environment
	b := newBridge(t)
	b.vars["TICKETBRIDGE_STATE"] = dbURL
	u, _ := url.Parse(dbURL)
	password, _ := u.User.Password()
	noPassword := func(what, s string) {
		t.Helper()
		if password != "" && strings.Contains(s, password) {
			t.Errorf("%s shows the database password:\n%s", what, s)
		}
	}
	a := b.ticket("towels")

	out, _, v := runChecks(t, b.envFile(), check.Options{Registry: bridge.Adapters()})
	noPassword("check", out)
	if v["state database"] != check.Pass || !strings.Contains(out, "holds no state yet") {
		t.Errorf("check before the first run: state database %q:\n%s", v["state database"], out)
	}

	out, errOut, code := b.cmd("once")
	if code != 0 {
		t.Fatalf("once: exit %d\n%s\n%s", code, out, errOut)
	}
	noPassword("once", out+errOut)
	mustContain(t, "once", out, "helpdesk tickets created  1")

	out, errOut, code = b.cmd("status")
	if code != 0 {
		t.Fatalf("status: exit %d\n%s\n%s", code, out, errOut)
	}
	noPassword("status", out+errOut)
	mustContain(t, "status", out, "1 tracked", a[:8], "adapter files", "xxxxx@")

	out, errOut, code = b.cmd("log", a[:8])
	if code != 0 {
		t.Fatalf("log: exit %d\n%s\n%s", code, out, errOut)
	}
	noPassword("log", out+errOut)
	mustContain(t, "log", out, "to helpdesk ticket ok list change", "to helpdesk message ok list change")

	b.drop("reply.txt", "ticket: "+b.folder(a)+"\nkind: reply\nauthor: Maria\n\nOn their way.\n")
	out, errOut, code = b.cmd("once", "--dry-run")
	if code != 0 {
		t.Fatalf("once --dry-run: exit %d\n%s\n%s", code, out, errOut)
	}
	// The dry run starts from the database's state: the ticket is known,
	// not discovered and adopted again.
	mustContain(t, "dry run", out, "would post a reply the guest sees to ticket "+a, "tickets discovered 0")

	out, _, v = runChecks(t, b.envFile(), check.Options{Registry: bridge.Adapters()})
	noPassword("check", out)
	if v["state database"] != check.Pass || !strings.Contains(out, "1 tickets tracked") {
		t.Errorf("check after a run: state database %q:\n%s", v["state database"], out)
	}

	dest := filepath.Join(t.TempDir(), "copy.db")
	out, errOut, code = b.cmd("state", "backup", dest)
	if code != 0 {
		t.Fatalf("state backup: exit %d\n%s\n%s", code, out, errOut)
	}
	noPassword("state backup", out+errOut)
	st, err := state.Open(t.Context(), dest, state.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	stats, _ := st.Stats(t.Context())
	st.Close()
	if stats.Tickets != 1 {
		t.Errorf("the copy holds %d tickets, want 1", stats.Tickets)
	}
}
