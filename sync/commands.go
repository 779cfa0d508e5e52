package sync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ticketbridge/ticketbridge/state"
)

// Per-request commands: what an operator asks of one request, from the
// command line, the status page or the daemon's console API. Each is one
// write transaction on the store, applied in one place (Apply) with the
// operator's name, like the actions of actions.go: none makes a request
// itself, the next cycle does the work. Each appends to the request's
// audit trail, in its transaction, what it did and who asked.
//
//   - pause: nothing of the request crosses in either direction. The
//     engine does not read it upstream (discover leaves it as it is,
//     refresh and reconcile skip it), writes nothing in the helpdesk for
//     it, and sends none of its journal entries. The helpdesk's events on
//     it are still journaled, so that the helpdesk's cursor moves past
//     them and nothing is lost: the entries wait, pending.
//   - resume: the request is read and reconciled at the next cycle (due
//     now, ReconcileSoon): what changed on either side while it was
//     paused is brought together by the reconcile's rules, and the
//     entries that waited are sent.
//   - resync: the whole comparison now: the request is read and
//     reconciled at the next cycle (the reconcile looks the ticket up in
//     the helpdesk: status, messages both ways, fields), and its journal
//     entries backing off, and its replies and notes refused, are put
//     back to pending, as retry does for one. A refused status change
//     is not (it may have been superseded: the reconcile carries the
//     helpdesk's status as it is now), nor an entry an operator set
//     aside (skip). A paused request stays paused: resume it first.

// The commands, as Command.Name says them.
const (
	CommandPause  = "pause"
	CommandResume = "resume"
	CommandResync = "resync"
)

// MaxOperator bounds an operator's name, in characters.
const MaxOperator = 100

// Command is an operator's command on one request.
type Command struct {
	// Name is one of the Command* constants.
	Name string
	// Ticket is the request's upstream id.
	Ticket string
	// Who names the operator ("" records "an operator").
	Who string
}

// Done is what a command did.
type Done struct {
	// Ticket is the request's record as the command left it.
	Ticket state.Ticket
	// Requeued are the journal entries resync put back to pending.
	Requeued []state.Entry
}

// Apply applies cmd at now, in one write transaction: the one place
// where a command changes state, so that whatever records commands
// records each here. Errors wrap ErrNoSuchTicket (no tracked request has
// the id), ErrNotActionable (pausing a paused request, resuming one that
// is not, resyncing a paused one) or ErrUnknownCommand.
func Apply(ctx context.Context, st *state.Store, cmd Command, now time.Time) (Done, error) {
	who := operatorName(cmd.Who)
	var (
		done  Done
		apply func(tx *state.Tx, t *state.Ticket) error
	)
	switch cmd.Name {
	case CommandPause:
		apply = func(_ *state.Tx, t *state.Ticket) error {
			if !t.Paused.IsZero() {
				return fmt.Errorf("%w: it was paused by %s at %s", ErrNotActionable, t.PausedBy, t.Paused.Format(time.RFC3339))
			}
			t.Paused, t.PausedBy = now.UTC(), who
			return nil
		}
	case CommandResume:
		apply = func(_ *state.Tx, t *state.Ticket) error {
			if t.Paused.IsZero() {
				return fmt.Errorf("%w: it is not paused", ErrNotActionable)
			}
			t.Paused, t.PausedBy = time.Time{}, ""
			askReconcile(t, now)
			return nil
		}
	case CommandResync:
		apply = func(tx *state.Tx, t *state.Ticket) error {
			if !t.Paused.IsZero() {
				return fmt.Errorf("%w: it is paused (by %s at %s): resume it, which reads and reconciles it too", ErrNotActionable, t.PausedBy, t.Paused.Format(time.RFC3339))
			}
			askReconcile(t, now)
			es, err := tx.JournalForTicket(t.ID)
			if err != nil {
				return err
			}
			for _, en := range es {
				// A refused status change is not sent again: it may
				// have been superseded, and the reconcile carries the
				// helpdesk's status as it is now, if the sides differ.
				refused := en.State == state.Failed && en.Kind != state.KindStatus
				if refused || (en.State == state.Pending && en.NextAttempt.After(now)) {
					requeue(&en, now)
					if en, err = tx.PutJournal(en); err != nil {
						return err
					}
					done.Requeued = append(done.Requeued, en)
				}
			}
			return nil
		}
	default:
		return Done{}, fmt.Errorf("%w %q (want %s, %s or %s)", ErrUnknownCommand, cmd.Name, CommandPause, CommandResume, CommandResync)
	}
	err := st.Update(ctx, func(tx *state.Tx) error {
		done.Requeued = nil
		if err := state.CheckID(cmd.Ticket); err != nil {
			return fmt.Errorf("%w: %w", ErrNoSuchTicket, err)
		}
		t, ok, err := tx.Ticket(cmd.Ticket)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNoSuchTicket
		}
		if err := apply(tx, &t); err != nil {
			return err
		}
		if err := tx.PutTicket(t); err != nil {
			return err
		}
		done.Ticket = t
		return tx.AppendCommand(who, state.Audit{TicketID: t.ID, At: now, Kind: cmd.Name, Ref: t.Ref, Outcome: state.AuditOK,
			Detail: commandDetail(cmd.Name, len(done.Requeued))})
	})
	if err != nil {
		return Done{}, fmt.Errorf("%s request %q: %w", cmd.Name, cmd.Ticket, err)
	}
	return done, nil
}

// putTicket stores t as the engine does. Whether the request is paused
// is the operator's, not the engine's: the stored record's is kept, as a
// command may have written it since the cycle read t. When a resume came
// in between, the read and reconcile it asked for are kept too.
func putTicket(tx *state.Tx, t state.Ticket) error {
	cur, ok, err := tx.Ticket(t.ID)
	if err != nil && !errors.Is(err, state.ErrCorrupt) {
		return err
	}
	if ok && (!cur.Paused.Equal(t.Paused) || cur.PausedBy != t.PausedBy) {
		if cur.Paused.IsZero() {
			t.NextDue, t.DueReason, t.ReconcileSoon = cur.NextDue, cur.DueReason, cur.ReconcileSoon || t.ReconcileSoon
		}
		t.Paused, t.PausedBy = cur.Paused, cur.PausedBy
	}
	return tx.PutTicket(t)
}

// commandDetail is what the audit trail says a command did.
func commandDetail(name string, requeued int) string {
	switch name {
	case CommandPause:
		return "paused: nothing of it crosses until it is resumed"
	case CommandResume:
		return "resumed: the next cycle reads and reconciles it"
	}
	return fmt.Sprintf("due now with a reconcile; %d journal entries pending again", requeued)
}

// ErrUnknownCommand: Command.Name is none of the commands.
var ErrUnknownCommand = errors.New("unknown command")

// askReconcile makes t read (askRead) and reconciled at the next cycle.
func askReconcile(t *state.Ticket, now time.Time) {
	askRead(t, now)
	t.ReconcileSoon = true
}

// operatorName is who as a command records it: one line, bounded, or
// "an operator".
func operatorName(who string) string {
	who = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.TrimSpace(who))
	if !utf8.ValidString(who) {
		who = strings.ToValidUTF8(who, "?")
	}
	if r := []rune(who); len(r) > MaxOperator {
		who = string(r[:MaxOperator])
	}
	if who == "" {
		return "an operator"
	}
	return who
}
