package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/lease"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// actionAbout is how retry, skip and the commands on a request reach the
// state, in the help of each;
// it ends with the daemon's path short of the command's name, which each
// help adds.
const actionAbout = `While the daemon runs it holds the state file: the command then asks the
daemon, on TICKETBRIDGE_LISTEN, with the console token (the service's
/etc/ticketbridge/console-token, or TICKETBRIDGE_CONSOLE_TOKEN_FILE).
Otherwise it changes the state file itself. With the state in PostgreSQL,
a daemon's lease of the hotel says whether one runs: the command asks it
when it runs on this host, refuses naming it when elsewhere, and otherwise
holds the lease while it changes the state itself.

With TICKETBRIDGE_HOTELS_DIR, --hotel NAME (required) says which hotel's it
is; the daemon is then asked at /hotels/NAME/`

const retryAbout = `Put a stuck journal entry back to pending: a reply, note or status change
refused for good, set aside with skip, or backing off after errors. ID is
the entry's helpdesk event id (the EVENT column of ticketbridge status). The
next cycle sends it with its own Idempotency-Key, so the guest never gets it
twice. With a ticket's upstream id instead, the ticket is read on the next
cycle, also while it backs off after errors.

` + actionAbout + `retry.`

const skipAbout = `Set a journal entry aside: mark it abandoned, so that it is never sent. The
entry stays in the journal with your name and --reason (required). ID is the
entry's helpdesk event id (the EVENT column of ticketbridge status). A sent
entry cannot be skipped; ticketbridge retry ID undoes a skip.

` + actionAbout + `skip.`

// commandAbout is what pause, resume and resync share in their help,
// before actionAbout.
const commandAbout = `

ID is the request's whole upstream id (ticketbridge status ID shows it, from
the short one of the TICKET column, and so does the status page). The
command is recorded with your name; the next cycle does the work.

`

const pauseAbout = `Pause a request: nothing of it crosses in either direction until it is
resumed. The bridge neither reads it on the platform nor writes its
helpdesk ticket, and sends nothing upstream for it. The helpdesk's replies,
notes and status changes on it are journaled as usual and wait, unsent.` + commandAbout + actionAbout + "pause."

const resumeAbout = `Resume a paused request: the next cycle reads it on the platform and
reconciles both sides (a status changed on both sides while it was paused:
the later change wins), mirrors what the guest wrote, and sends the
helpdesk's replies and changes that waited, each once.` + commandAbout + actionAbout + "resume."

const resyncAbout = `Read both sides of a request now and reconcile everything: the next cycle
reads it on the platform, looks its ticket up in the helpdesk, and brings
status, messages both ways and fields together. Its journal entries backing
off, and its replies and notes refused, are pending again (as retry does for
one); an entry set aside with skip stays so. The answer to "it looks wrong,
fix it". A paused request is not resynced: resume it.` + commandAbout + actionAbout + "resync."

const unlinkAbout = `Unlink a request from its helpdesk ticket: it is no longer mirrored, in
either direction, and the ticket stays as it is. The next cycle leaves one
internal note on the ticket saying so; after it, nothing of the request is
written there, the platform's changes to it are not read, and the team's
replies and changes on the ticket are ignored. Replies and notes the bridge
had already taken from the ticket are still sent; a status change waiting
is set aside. A later change on the platform never makes a second ticket.` + commandAbout + actionAbout + "unlink."

const connectAbout = `Connect a request to helpdesk ticket REF, one someone made by hand (REF as
ticketbridge status shows refs: an RT ticket number, a Zendesk, Freshdesk or
Zammad ticket id, a files helpdesk folder), or to its own ticket again
after an unlink. The next cycle stores the request's id in the ticket and
mirrors the messages it lacks, none twice; the team's replies and notes
already there are set aside, not sent (retry sends one). A request linked
to a ticket is refused: unlink it first. ID is the request's whole
upstream id, tracked or not yet; the command is recorded with your name.

` + actionAbout + "connect."

func runConnect(ctx context.Context, sh shell, args []string) error {
	return runAction(ctx, sh, sync.CommandConnect, connectAbout, args)
}

func runUnlink(ctx context.Context, sh shell, args []string) error {
	return runAction(ctx, sh, sync.CommandUnlink, unlinkAbout, args)
}

func runPause(ctx context.Context, sh shell, args []string) error {
	return runAction(ctx, sh, sync.CommandPause, pauseAbout, args)
}

func runResume(ctx context.Context, sh shell, args []string) error {
	return runAction(ctx, sh, sync.CommandResume, resumeAbout, args)
}

func runResync(ctx context.Context, sh shell, args []string) error {
	return runAction(ctx, sh, sync.CommandResync, resyncAbout, args)
}

func runRetry(ctx context.Context, sh shell, args []string) error {
	return runAction(ctx, sh, "retry", retryAbout, args)
}

func runSkip(ctx context.Context, sh shell, args []string) error {
	return runAction(ctx, sh, "skip", skipAbout, args)
}

func runAction(ctx context.Context, sh shell, name, about string, args []string) error {
	stdout, stderr := sh.stdout, sh.stderr
	usage := name + " ID"
	if name == sync.CommandConnect {
		usage += " REF"
	}
	fs := newFlagSet(usage, about, stdout)
	var ef envFlag
	ef.register(fs, sh.layout)
	var hf hotelFlag
	fs.StringVar(&hf.name, "hotel", "", "with TICKETBRIDGE_HOTELS_DIR, the hotel `NAME` it acts for (required there)")
	var reason string
	if name == "skip" {
		fs.StringVar(&reason, "reason", "", "why the entry is set aside (required; one line, at most 300 characters)")
	}
	// Flags may come before and after ID.
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var id string
	if fs.NArg() > 0 {
		id = fs.Arg(0)
		if err := parseFlags(fs, fs.Args()[1:]); err != nil {
			return err
		}
	}
	if name == sync.CommandConnect && id != "" && fs.NArg() > 0 {
		reason = fs.Arg(0) // the helpdesk ticket, connect's argument
		if err := parseFlags(fs, fs.Args()[1:]); err != nil {
			return err
		}
	}
	onEntry := name == "retry" || name == "skip"
	switch {
	case id == "" && onEntry:
		return fmt.Errorf("%w: %s: want the ID of a journal entry (see ticketbridge status)", errUsage, name)
	case id == "":
		return fmt.Errorf("%w: %s: want the upstream id of a request (ticketbridge status ID shows it whole)", errUsage, name)
	case fs.NArg() > 0:
		return fmt.Errorf("%w: %s: unexpected argument %q", errUsage, name, fs.Arg(0))
	case name == sync.CommandConnect && reason == "":
		return fmt.Errorf("%w: connect: want the helpdesk ticket after the request's id: connect ID REF", errUsage)
	case name == "skip" && strings.TrimSpace(reason) == "":
		return fmt.Errorf("%w: skip: --reason is required: say why the entry is set aside", errUsage)
	}
	src, err := ef.source()
	if err != nil {
		return err
	}
	if n := src.SkipNote(); n != "" {
		fmt.Fprintln(stderr, "ticketbridge:", n)
	}
	env := src.Env
	cfg, err := config.LoadDaemon(ctx, env)
	if err != nil {
		return src.Explain(err)
	}
	// With a hotels directory the entry is one hotel's: its state, and
	// its actions under /hotels/NAME/ on the daemon's listener.
	whose := "whose entry it is"
	if !onEntry {
		whose = "whose request it is"
	}
	hotel := ""
	sec, err := hf.one(ctx, src, cfg, warnStderr(stderr), name, whose)
	if err != nil {
		return err
	}
	if sec != nil {
		cfg, hotel = sec.conf.Daemon, sec.name
	}
	if _, err := os.Stat(cfg.State.Value()); !cfg.State.IsDB() && errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("no state file at %s: the bridge has not run yet; TICKETBRIDGE_STATE names the file", cfg.State)
	}
	who := operator()
	// On PostgreSQL the hotel's lease says whether a daemon acts for it:
	// one on this host is asked, as a daemon holding a state file is.
	ctx, h, err := holdHotel(ctx, name, env, cfg, newLogger(stderr, cfg.LogFormat, "error"))
	if held := (*leaseHeldError)(nil); errors.As(err, &held) && lease.MadeHere(held.holder.Replica) {
		return actThroughDaemon(ctx, env, name, hotel, id, reason, who, stdout)
	}
	if err != nil {
		return err
	}
	defer h.release()
	st, err := state.OpenAt(ctx, cfg.State, state.Options{LockTimeout: 300 * time.Millisecond, Hotel: cfg.Hotel, Fence: h.fence()})
	if errors.Is(err, state.ErrLocked) {
		return actThroughDaemon(ctx, env, name, hotel, id, reason, who, stdout)
	}
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now()
	switch name {
	case "retry":
		e, err := sync.RetryEntry(ctx, st, id, who, now)
		if errors.Is(err, sync.ErrNoSuchEntry) {
			t, terr := sync.ReadNow(ctx, st, id, who, now)
			if terr == nil {
				fmt.Fprintf(stdout, "read now: ticket %s. %s\n", t.ID, sync.Answer("read now", 0))
				return nil
			}
			if !errors.Is(terr, sync.ErrNoSuchTicket) {
				return terr
			}
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "retry: entry %s of ticket %s. %s\n", e.EventID, e.TicketID, sync.Answer(name, 0))
	case "skip":
		e, err := sync.SkipEntry(ctx, st, id, who, reason)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "skip: entry %s of ticket %s. %s\n", e.EventID, e.TicketID, sync.Answer(name, 0))
	default:
		d, err := sync.Apply(ctx, st, sync.Command{Name: name, Ticket: id, Who: who, Ref: reason}, now)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: ticket %s. %s\n", name, d.Ticket.ID, sync.Answer(name, len(d.Requeued)))
	}
	return nil
}

// actThroughDaemon asks the running daemon to act, through its console
// (for the hotel hotel of a daemon of many).
func actThroughDaemon(ctx context.Context, env envconfig.Lookuper, name, hotel, id, reason, who string, stdout io.Writer) error {
	c, err := consoleClient(ctx, env, name, hotel, true)
	if err != nil {
		return err
	}
	answer, err := c.Act(ctx, name, id, reason, who)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, answer)
	return nil
}

// operator names the user running the command, for the journal and log.
func operator() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if n := os.Getenv("USER"); n != "" {
		return n
	}
	return "cli"
}
