package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/demo"
	"github.com/ticketbridge/ticketbridge/sync"
)

const demoAbout = `Play the whole loop on this machine, with nothing to configure: a
reference Guest Requests API (real HTTP on a loopback port, seeded with a
demo hotel), the sync engine, and the files helpdesk in a folder. A short
script shows each step as it crosses: the first import, a guest writing, an
agent's reply reaching the guest, an internal note staying internal, status
changes both ways, and a last cycle where nothing echoes.

With --helpdesk email the helpdesk is the email one, on a local Postfix and
Dovecot (deploy/dev/mail.sh in the source starts them and prints the
TICKETBRIDGE_TEST_MAIL_* lines to put into the environment): requests are
mailed to the departments' mailboxes and the agent answers by mail.

The folder stays when the demo ends, for you to look around.`

func runDemo(ctx context.Context, sh shell, args []string) error {
	stdout, stderr := sh.stdout, sh.stderr
	fs := newFlagSet("demo", demoAbout, stdout)
	dir := fs.String("dir", "", "put the helpdesk folder and the state file in `DIR` (new or empty) instead of a new temporary folder")
	helpdesk := fs.String("helpdesk", "files", "the `helpdesk`: files (a folder), or email (a local mail server, see above)")
	keep := fs.Bool("keep", false, "after the script, keep the server and the daemon running on the schedule until Ctrl-C")
	schedule := fs.String("schedule", "@every 10s", "the daemon's `schedule` with --keep")
	level := fs.String("log-level", "warn", "log `level` of the engine (to stderr): debug, info, warn or error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: demo: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if _, err := config.ParseLevel(*level); err != nil {
		return fmt.Errorf("%w: demo: --log-level %v", errUsage, err)
	}
	sched, err := sync.NewSchedule(*schedule)
	if err != nil {
		return fmt.Errorf("%w: demo: --schedule: %v", errUsage, err)
	}
	d, err := demo.Start(ctx, demo.Options{Dir: *dir, Helpdesk: *helpdesk, Log: newLogger(stderr, "auto", *level), Out: stdout})
	switch {
	case errors.Is(err, demo.ErrNotEmpty):
		return fmt.Errorf("%w: demo: --dir %s %w", errUsage, *dir, demo.ErrNotEmpty)
	case errors.Is(err, demo.ErrNoMailServer):
		return fmt.Errorf("demo --helpdesk email: %w", err)
	}
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Script(ctx); err != nil {
		return err
	}
	if !*keep {
		fmt.Fprintf(stdout, "\nDone. The helpdesk folder stays in %s; delete it when you are done.\n", d.Dir())
		fmt.Fprintf(stdout, "Run `%s --keep` to keep the server and the daemon running and try it yourself.\n", demoCommand(os.Args[0]))
		return nil
	}
	return d.Keep(ctx, sched)
}

// demoCommand is how the person who ran the demo runs it again: the
// binary's name when it is installed, the go run line when go run built it
// in a temporary folder.
func demoCommand(arg0 string) string {
	if strings.Contains(filepath.ToSlash(arg0), "/go-build") {
		return "go run ./cmd/ticketbridge demo"
	}
	return "ticketbridge demo"
}
