package sync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
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
//   - unlink: the request is no longer mirrored, in either direction,
//     and its helpdesk ticket stays as it is. The next cycle leaves one
//     internal note on the ticket saying so (written once, by its id);
//     nothing else is written there for it, the platform's changes to it
//     are not read, and the helpdesk's events on it are ignored. What
//     the helpdesk's replies and notes had journaled before still goes
//     up: nothing agents wrote while it was linked is lost. A status
//     change waiting is set aside: the sides no longer agree on one.
//     The record stays, so that a later platform change never makes a
//     second ticket.
//   - connect REF: the request is mirrored into helpdesk ticket REF,
//     one someone made by hand. The next cycle reads the request, stores
//     its id in REF (adapters.Connector) and adopts REF as a ticket found
//     after a state loss: the messages REF lacks are appended, those it
//     holds are not doubled, and the team's replies and notes already on
//     REF are journaled set aside, not sent (retry sends one). A request
//     linked to a ticket is refused (unlink it first); an unlinked one
//     connected to its own ticket again keeps what state knows of it,
//     and the replies and notes written there while it was unlinked are
//     set aside the same way. A request the bridge does not track yet is
//     tracked. A refusal of the helpdesk (no ticket REF; REF mirrors
//     another request; another ticket holds the request already) fails
//     the request, with why, until an operator connects it to another
//     ticket or unlinks it.

// The commands, as Command.Name says them.
const (
	CommandPause   = "pause"
	CommandResume  = "resume"
	CommandResync  = "resync"
	CommandUnlink  = "unlink"
	CommandConnect = "connect"
)

// MaxConnectRef bounds the helpdesk reference connect takes, in bytes.
const MaxConnectRef = 200

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
	// Ref is the helpdesk ticket connect links the request to.
	Ref string
}

// Done is what a command did.
type Done struct {
	// Ticket is the request's record as the command left it.
	Ticket state.Ticket
	// Requeued are the journal entries resync put back to pending.
	Requeued []state.Entry
	// Abandoned are the status changes unlink set aside.
	Abandoned []state.Entry
}

// Apply applies cmd at now, in one write transaction: the one place
// where a command changes state, so that whatever records commands
// records each here. Errors wrap ErrNoSuchTicket (no tracked request has
// the id), ErrNotActionable (pausing a paused request, resuming one that
// is not, resyncing a paused one, unlinking an unlinked one, connecting
// a linked one), ErrBadRef (connect's ticket missing or unfit) or
// ErrUnknownCommand.
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
			if !t.Unlinked.IsZero() {
				return fmt.Errorf("%w: it is unlinked (by %s at %s): connect it, which reads and reconciles it too", ErrNotActionable, t.UnlinkedBy, t.Unlinked.Format(time.RFC3339))
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
	case CommandConnect:
		ref, err := connectRef(cmd.Ref)
		if err != nil {
			return Done{}, fmt.Errorf("connect request %q: %w", cmd.Ticket, err)
		}
		apply = func(tx *state.Tx, t *state.Ticket) error {
			if t.Unlinked.IsZero() && t.Ref != "" {
				if t.Ref == ref {
					return fmt.Errorf("%w: it is linked to helpdesk ticket %s already", ErrNotActionable, t.Ref)
				}
				return fmt.Errorf("%w: it is linked to helpdesk ticket %s: unlink it first", ErrNotActionable, t.Ref)
			}
			relink := t.Ref == ref
			t.Unlinked, t.UnlinkedBy, t.UnlinkNoted = time.Time{}, "", false
			t.LastError, t.Attempts, t.ConnectRef = "", 0, ref
			askReconcile(t, now)
			if relink {
				// What state keeps of the ticket stays. A status the
				// team set while it was unlinked is older than the
				// agreement now: the reconcile carries the platform's
				// down, as it sets their replies aside.
				t.AgreedAt = now
				return nil
			}
			// Another ticket, or none yet: what state kept of the
			// messages, the status and the fields was of another
			// ticket; the adoption seeds it again from REF.
			t.Ref, t.AgreedStatus, t.AgreedAt, t.Carried = "", "", time.Time{}, state.Fields{}
			t.HelpdeskStatus, t.HelpdeskStatusAt, t.HelpdeskEventAt = "", time.Time{}, time.Time{}
			return tx.DeleteMessages(t.ID)
		}
	case CommandUnlink:
		apply = func(tx *state.Tx, t *state.Ticket) error {
			if !t.Unlinked.IsZero() {
				return fmt.Errorf("%w: it was unlinked by %s at %s", ErrNotActionable, t.UnlinkedBy, t.Unlinked.Format(time.RFC3339))
			}
			t.Unlinked, t.UnlinkedBy, t.UnlinkNoted, t.ConnectRef = now.UTC(), who, t.Ref == "", ""
			t.ReconcileSoon, t.LastError, t.Attempts = false, "", 0
			t.NextDue, t.DueReason = now, DueUnlinked // the note's (see planReads)
			es, err := tx.JournalForTicket(t.ID)
			if err != nil {
				return err
			}
			for _, en := range es {
				if en.State != state.Pending || en.Kind != state.KindStatus {
					continue
				}
				en.State = state.Abandoned
				en.LastError = "set aside: the request was unlinked by " + who + ", and its helpdesk status no longer crosses"
				if en, err = tx.PutJournal(en); err != nil {
					return err
				}
				done.Abandoned = append(done.Abandoned, en)
				if err := tx.AppendAudit(abandonAudit(en, now, state.AuditOperator)); err != nil {
					return err
				}
			}
			return nil
		}
	default:
		return Done{}, fmt.Errorf("%w %q (want %s, %s, %s, %s or %s)", ErrUnknownCommand, cmd.Name, CommandPause, CommandResume, CommandResync, CommandUnlink, CommandConnect)
	}
	err := st.Update(ctx, func(tx *state.Tx) error {
		done.Requeued, done.Abandoned = nil, nil
		if err := state.CheckID(cmd.Ticket); err != nil {
			return fmt.Errorf("%w: %w", ErrNoSuchTicket, err)
		}
		t, ok, err := tx.Ticket(cmd.Ticket)
		if err != nil {
			return err
		}
		if !ok && cmd.Name == CommandConnect {
			// Not tracked yet (left out by its age, say): tracked now,
			// read at the next cycle as an import.
			t, ok = state.Ticket{ID: cmd.Ticket}, true
		}
		if !ok {
			return ErrNoSuchTicket
		}
		if err := apply(tx, &t); err != nil {
			return err
		}
		t.Commands++ // a cycle that read the record before keeps what follows
		if err := tx.PutTicket(t); err != nil {
			return err
		}
		done.Ticket = t
		return tx.AppendCommand(who, state.Audit{TicketID: t.ID, At: now, Kind: cmd.Name, Ref: cmp.Or(t.ConnectRef, t.Ref), Outcome: state.AuditOK,
			Detail: Answer(cmd.Name, len(done.Requeued))})
	})
	if err != nil {
		return Done{}, fmt.Errorf("%s request %q: %w", cmd.Name, cmd.Ticket, err)
	}
	return done, nil
}

// putTicket stores t as the engine does. What an operator's command
// writes is the operator's, not the engine's: when a command was applied
// since the cycle read t (Ticket.Commands moved), the command's fields
// are kept as it wrote them (see keepCommanded).
func putTicket(tx *state.Tx, t state.Ticket) error {
	cur, ok, err := tx.Ticket(t.ID)
	if err != nil && !errors.Is(err, state.ErrCorrupt) {
		return err
	}
	if ok && cur.Commands != t.Commands {
		keepCommanded(&t, cur)
	}
	return tx.PutTicket(t)
}

// keepCommanded carries into t, what a cycle made of a record it read
// before an operator's command, what the command wrote in cur: the pause,
// the unlink, the connect (and the link a connect reset), and the read
// and reconcile a command asked for.
func keepCommanded(t *state.Ticket, cur state.Ticket) {
	// A ticket made or found meanwhile has not had the unlink's note.
	noted := cur.UnlinkNoted && cur.Ref == t.Ref
	t.Paused, t.PausedBy, t.Unlinked, t.UnlinkedBy, t.UnlinkNoted = cur.Paused, cur.PausedBy, cur.Unlinked, cur.UnlinkedBy, noted
	t.Commands, t.ConnectRef = cur.Commands, cur.ConnectRef
	if cur.ConnectRef != "" {
		t.Ref, t.AgreedStatus, t.AgreedAt, t.Carried = cur.Ref, cur.AgreedStatus, cur.AgreedAt, cur.Carried
		t.HelpdeskStatus, t.HelpdeskStatusAt, t.HelpdeskEventAt = cur.HelpdeskStatus, cur.HelpdeskStatusAt, cur.HelpdeskEventAt
	}
	if cur.NextDue.Before(t.NextDue) {
		t.NextDue, t.DueReason = cur.NextDue, cur.DueReason
	}
	t.ReconcileSoon = (cur.ReconcileSoon || t.ReconcileSoon) && cur.Unlinked.IsZero()
}

// Answer is the sentence an operator is answered with after an action
// on a request or a journal entry, on the command line, on the console and
// on the status page, and what the audit trail records of a command:
// action is a command's name, "retry", "skip" or "read now"; requeued is
// how many entries a resync made pending again (negative: not counted).
// It is "" for an action it does not know, so that a link cannot put text
// on a page.
func Answer(action string, requeued int) string {
	switch action {
	case "read now":
		return "The request is due now: the next cycle reads it."
	case "retry":
		return "The entry is pending again: the next cycle sends it, with its own Idempotency-Key."
	case "skip":
		return "The entry is abandoned: it will not be sent. It stays in the journal with the reason given."
	case CommandPause:
		return "The request is paused: nothing of it crosses either way until it is resumed. The helpdesk's replies and changes wait in the journal."
	case CommandResume:
		return "The request is resumed: the next cycle reads and reconciles it, and sends what waited."
	case CommandUnlink:
		return "The request is unlinked: nothing of it crosses either way any more. Its helpdesk ticket stays as it is, and the next cycle leaves a note on it."
	case CommandConnect:
		return "The request is connected: the next cycle stores its id in the helpdesk ticket and mirrors into it what it lacks."
	case CommandResync:
		entries := "its entries"
		if requeued >= 0 {
			entries = fmt.Sprintf("%d of its entries", requeued)
		}
		return "The request is due now: the next cycle reads both sides and reconciles them; " + entries + " backing off or refused are pending again."
	}
	return ""
}

// ErrBadRef: connect's helpdesk reference is missing or unfit.
var ErrBadRef = errors.New("helpdesk reference refused")

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

// noteUnlinked leaves on the helpdesk ticket of r's unlinked request the
// internal note saying so, and reads nothing. The note's id names the
// unlink, and Append is idempotent by it: a repeat after a crash does not
// write it twice, and a request connected and unlinked again gets a note
// of its own.
func (c *cycle) noteUnlinked(r refreshResult) refreshResult {
	r.cause = state.AuditOperator
	app, err := c.e.hd.Append(c.ctx, adapters.Ref(r.t.Ref), []adapters.Message{unlinkedNote(r.t)})
	if errors.Is(err, adapters.ErrNotFound) || errors.Is(err, adapters.ErrInvalid) {
		// The ticket is gone, or refuses the note: nothing more is
		// written there anyway.
		c.audit(&r, state.Audit{Kind: "unlink note", Outcome: state.AuditRefused, Detail: err.Error()})
		r.t.UnlinkNoted, r.t.NextDue = true, time.Time{}
		return r
	}
	if err != nil {
		c.auditFailed(&r, "unlink note", err)
		return c.ticketError(r, "note the request unlinked", err)
	}
	a := state.Audit{Kind: "unlink note", Outcome: state.AuditOK}
	if len(app) == 1 {
		a.EventID = app[0].HelpdeskID
	}
	c.audit(&r, a)
	r.t.UnlinkNoted, r.t.NextDue, r.t.LastError, r.t.Attempts = true, time.Time{}, "", 0
	c.e.log.LogAttrs(c.ctx, slog.LevelInfo, "request unlinked: its helpdesk ticket has the note saying so, and nothing of it crosses until it is connected again",
		slog.String("op", "refresh"), slog.String("ticket", r.t.ID), slog.String("ref", r.t.Ref), slog.String("operator", r.t.UnlinkedBy))
	return r
}

// unlinkedNote is the internal note left on the helpdesk ticket of a
// request t an operator unlinked.
func unlinkedNote(t state.Ticket) adapters.Message {
	return adapters.Message{
		UpstreamID: fmt.Sprintf("unlinked-%s-%d", t.ID, t.Unlinked.UnixNano()), AuthorType: guestapi.AuthorSystem, AuthorName: "ticketbridge",
		Body: fmt.Sprintf("%s unlinked this ticket from guest request %s at %s. ticketbridge no longer syncs it: replies and changes written here do not reach the guest, and the guest's new messages do not come here. An operator can link it again with: ticketbridge connect %s %s",
			t.UnlinkedBy, t.ID, t.Unlinked.UTC().Format(time.RFC3339), t.ID, t.Ref),
		Public: false, CreatedAt: t.Unlinked,
	}
}

// connectRef checks the helpdesk reference connect was given: one line
// of text, not empty, at most MaxConnectRef bytes.
func connectRef(ref string) (string, error) {
	ref = strings.TrimSpace(ref)
	switch {
	case ref == "":
		return "", fmt.Errorf("%w: no helpdesk ticket named: say which ticket to connect the request to", ErrBadRef)
	case len(ref) > MaxConnectRef:
		return "", fmt.Errorf("%w: the helpdesk ticket's reference is %d bytes, more than %d", ErrBadRef, len(ref), MaxConnectRef)
	case !utf8.ValidString(ref) || strings.ContainsFunc(ref, unicode.IsControl):
		return "", fmt.Errorf("%w: the helpdesk ticket's reference is not one line of text", ErrBadRef)
	}
	return ref, nil
}
