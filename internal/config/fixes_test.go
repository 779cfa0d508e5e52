package config

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/state"
)

// TestWithFix: an error of the daemon on a path of its state or helpdesk
// folder carries the fix check gives for that path, from the one table.
func TestWithFix(t *testing.T) {
	who := Account{Name: "ticketbridge", Group: "ticketbridge", UID: 999}
	d := Daemon{State: state.ParseLocation("/var/lib/ticketbridge/state.db")}
	env := envconfig.MapLookuper(map[string]string{"TICKETBRIDGE_FILES_DIR": "/srv/ticketbridge/helpdesk/seaside"})
	denied := func(p string) error {
		return fmt.Errorf("open state file %s: %w", p, &fs.PathError{Op: "open", Path: p, Err: syscall.EACCES})
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{denied("/var/lib/ticketbridge/state.db"), NotWritable.Fix(Where{Path: "/var/lib/ticketbridge", Account: who})},
		{denied("/srv/ticketbridge/helpdesk/seaside/.lock"), NotWritable.Fix(Where{Path: "/srv/ticketbridge/helpdesk/seaside", Account: who})},
		{&fs.PathError{Op: "mkdir", Path: "/srv/ticketbridge/helpdesk/seaside/tickets", Err: syscall.EROFS},
			ReadOnlyPath.Fix(Where{Path: "/srv/ticketbridge/helpdesk/seaside", Var: "TICKETBRIDGE_FILES_DIR"})},
	} {
		got := WithFix(tc.err, d, env, who).Error()
		if !strings.HasSuffix(got, "; fix: "+tc.want) || !strings.HasPrefix(got, tc.err.Error()) {
			t.Errorf("%v:\n got %s\nwant the fix %s", tc.err, got, tc.want)
		}
	}
	other := denied(filepath.Join("/etc", "other"))
	if got := WithFix(other, d, env, who); got != other {
		t.Errorf("an error on a path of neither the state nor a helpdesk folder is changed: %v", got)
	}
}
