package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/check"
)

const checkAbout = `Check what the daemon needs, one line each, PASS or FAIL with the fix:
the configuration, the API key, the API (reachable, key accepted, tickets
readable), the right to write (proven without writing anything), the
helpdesk and the state file. Exit status 0 only when everything passed.

With the packaged /etc/ticketbridge/ticketbridge.env (the default when it
exists and no TICKETBRIDGE_* variable is set, for every command), the check
runs as the service would: credentials from /etc/ticketbridge (where the
unit's LoadCredential reads them), the state below /var/lib/ticketbridge.
There, with the unit installed, "as the service" judges what the daemon
reads and writes at start as the unit runs it: its user (from the unit's
User= or DynamicUser=), its credentials (LoadCredential=) and its sandbox
(ProtectSystem=, ReadWritePaths=, ProtectHome=, PrivateTmp=), with the
files' owners, groups and modes; a key, token, state or helpdesk folder
the service could not use fails, though root could.
A TICKETBRIDGE_* name that is not a variable fails the configuration
check.

The write right is probed with POST /tickets/<random id>/status and an empty
status: an API that knows the key's rights answers 403 (tickets:write
missing) or 404 (the right is there; no such ticket). The ticket does not
exist and the status is not valid, so nothing is created or changed.`

func runCheck(ctx context.Context, sh shell, args []string) error {
	stdout, stderr := sh.stdout, sh.stderr
	fs := newFlagSet("check", checkAbout, stdout)
	var ef envFlag
	ef.register(fs, sh.layout)
	timeout := fs.Duration("timeout", 15*time.Second, "bound each network check to `duration`")
	var hf hotelFlag
	hf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: check: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *timeout <= 0 {
		return fmt.Errorf("%w: check: --timeout %s: want a positive duration", errUsage, *timeout)
	}
	return checkAll(ctx, ef.path, stdout, check.Options{
		Registry: bridge.Adapters(),
		Timeout:  *timeout,
		Service:  sh.layout,
		// The table is check's whole output: what an adapter logs while
		// it retries (a helpdesk down) is in its row's verdict already.
		Logger: newLogger(stderr, "auto", "error"),
		Hotel:  hf.name,
	})
}

// checkAll runs the checks (see check.Run) and gives their verdict its exit
// status: 1 when a check failed, 2 when --hotel names no hotel of the
// configuration.
func checkAll(ctx context.Context, envFile string, out io.Writer, opts check.Options) error {
	err := check.Run(ctx, envFile, out, opts)
	if errors.Is(err, check.ErrFailed) {
		return &exitError{code: 1}
	}
	return hotelUsage(err)
}
