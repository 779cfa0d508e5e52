// Command ticketbridge mirrors a hotel's guest requests from the Guest
// Requests Public API v1 into its helpdesk and carries the support team's
// replies and status changes back to the guest.
//
// Subcommands: run (the daemon), once (one cycle), status, retry, skip,
// pause, resume, resync,
// check, demo, refserver (the reference server), state backup, hotels
// adopt, notify test, version.
// Each takes --help. main only maps the error of run to an exit code;
// everything else lives in functions that take their context, arguments
// and writers, so tests call them directly.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/ticketbridge/ticketbridge/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitError carries an exit code other than 1 and a message already printed
// (or none to print).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// exitInterrupted is the exit status of a command interrupted by Ctrl-C or
// SIGTERM, as a shell reports a command ended by SIGINT (128+2).
const exitInterrupted = 130

// exitPutOff is the exit status of once after a cycle put off (a side
// asked for a long wait, see sync.PutOff): the cycle did not sync, and
// running it again later does. It is EX_TEMPFAIL of sysexits.h, "try
// again later", so that scripts and OnFailure= tell it from a failure.
const exitPutOff = 75

// errUsage marks a command line the program cannot understand; it exits 2.
var errUsage = errors.New("usage")

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "ticketbridge:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "ticketbridge:", err)
	if errors.Is(err, errUsage) {
		return 2
	}
	return 1
}

// shell is what every command is given besides its arguments: where it
// prints, and where the packaged service keeps its files (tests put that
// layout in a temporary directory).
type shell struct {
	layout         config.Layout
	stdout, stderr io.Writer
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, sh shell, args []string) error
}

func commands() []command {
	return []command{
		{"run", "run the daemon: a sync cycle on every tick of the schedule", runDaemon},
		{"once", "run one sync cycle and print its report (--dry-run writes nothing)", runOnce},
		{"status", "show tracked tickets, the last cycle and errors; status TICKET shows one", runStatus},
		{"log", "print a request's audit trail, what crossed and why: log ID [--json]", runLog},
		{"retry", "retry a stuck journal entry (or read a ticket now): retry ID", runRetry},
		{"skip", "set a journal entry aside, never to be sent: skip ID --reason TEXT", runSkip},
		{"confirm-move", "confirm that a held hotel moved: confirm-move --helpdesk PLACE (or --api, --key)", runConfirmMove},
		{"pause", "stop syncing one request either way, its helpdesk changes kept: pause ID", runPause},
		{"resume", "sync a paused request again, reconciling both sides: resume ID", runResume},
		{"resync", "read both sides of a request now and reconcile everything: resync ID", runResync},
		{"unlink", "stop mirroring a request for good, its helpdesk ticket left as it is: unlink ID", runUnlink},
		{"connect", "mirror a request into a helpdesk ticket made by hand: connect ID REF", runConnect},
		{"check", "check the configuration, the API, the helpdesk and the state file", runCheck},
		{"demo", "play the whole loop locally: reference server, engine, files adapter", runDemo},
		{"refserver", "serve the reference Guest Requests API v1 (tests, local runs)", runRefserver},
		{"state", "state file tools: state backup FILE", runState},
		{"hotels", "hotels directory tools: hotels adopt NAME makes the one hotel a hotel of it", runHotels},
		{"notify", "notifications: notify test sends a test notice to every target", runNotify},
		{"version", "print version, commit and Go version", runVersion},
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `ticketbridge mirrors guest requests into your helpdesk and carries replies back.

Usage: ticketbridge <command> [flags]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Configuration comes from TICKETBRIDGE_* environment variables (see
config.example.env) and, with --env-file FILE, from a file of the same form.
On an installed system, without --env-file and with no TICKETBRIDGE_*
variable set, every command reads /etc/ticketbridge/ticketbridge.env and
finds the key and the state where the service has them.
Run "ticketbridge <command> --help" for a command's flags.
`)
}

// run runs the command args name, as the packaged service's layout has
// it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runWith(ctx, shell{layout: config.Packaged, stdout: stdout, stderr: stderr}, args)
}

// runWith runs the command args names in the shell sh.
func runWith(ctx context.Context, sh shell, args []string) error {
	stdout, stderr := sh.stdout, sh.stderr
	if len(args) == 0 {
		usage(stderr)
		return &exitError{code: 2}
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		usage(stdout)
		return nil
	case "-v", "--version":
		return runVersion(ctx, sh, nil)
	}
	var names []string
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, sh, args[1:])
		}
		names = append(names, c.name)
	}
	if best := config.Closest(args[0], names); best != "" {
		return fmt.Errorf("%w: unknown command %q; did you mean %s? (ticketbridge --help lists the commands)", errUsage, args[0], best)
	}
	usage(stderr)
	return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
}
