package config

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/internal/safefile"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
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

// TestWithFixKnowsErrorsByTheirSentinel: the errors that stop a cycle say
// what is wrong, short; the fix comes from the table, naming the key's file
// or the adapter's settings.
func TestWithFixKnowsErrorsByTheirSentinel(t *testing.T) {
	d := Daemon{State: state.ParseLocation("state.db"), APIKeyFile: "/etc/ticketbridge/keys/seaside", Adapter: "zendesk"}
	env := envconfig.MapLookuper(nil)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("run cycle: %w: list tickets: 401", sync.ErrKeyRefused), "write it to /etc/ticketbridge/keys/seaside and run chmod 600"},
		{fmt.Errorf("run cycle: %w: it needs tickets:write: 403", sync.ErrMissingRight), "read + replies in the platform's console"},
		{fmt.Errorf("run cycle: %w: 401", sync.ErrHelpdeskRefused), "check the token or password in the TICKETBRIDGE_ZENDESK_* settings"},
		{fmt.Errorf("outbox: processed: %w", safefile.ErrLink), "a link there is not followed"},
		{ErrNoHotels, "--hotel needs TICKETBRIDGE_HOTELS_DIR"},
		{&sync.MovedError{Moved: sync.Moves{Helpdesk: true}}, "run the confirm-move command the error names, or set TICKETBRIDGE_ALLOW_MOVE"},
	} {
		got := WithFix(tc.err, d, env, Account{}).Error()
		if !strings.HasPrefix(got, tc.err.Error()+"; fix: ") || !strings.Contains(got, tc.want) {
			t.Errorf("%v:\n got %s\nwant a fix holding %s", tc.err, got, tc.want)
		}
	}
	if got := WithFix(ErrNoHotels, Daemon{}, nil, Account{}); !strings.Contains(got.Error(), "leave --hotel out") {
		t.Errorf("without a configuration read: %v", got)
	}
	for _, sentinel := range []error{sync.ErrKeyRefused, sync.ErrMissingRight, sync.ErrHelpdeskRefused, safefile.ErrLink, ErrNoHotels, sync.ErrMoved} {
		if msg := sentinel.Error(); len(msg) > 70 || strings.Contains(msg, "check ") || strings.Contains(msg, "TICKETBRIDGE_") {
			t.Errorf("%q: a sentinel says what is wrong, briefly; what to do is the table's", msg)
		}
	}
}
