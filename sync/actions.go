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

// Operator actions: what the status page and `ticketbridge retry` and
// `ticketbridge skip` do to a stuck ticket or journal entry. Each is one
// write transaction on the store, so it is safe while a cycle runs: the
// engine reads the journal again before it stores what it sent (see
// storeSent), and an entry an operator abandoned stays abandoned. None of
// them makes a request: the next cycle does the work, with the entry's own
// Idempotency-Key, so no action can make the guest see a message twice.
// Each appends to the request's audit trail, in its transaction, what it
// did and who asked (state.Tx.AppendCommand).

// DueAsked is the due reason of a ticket an operator asked to read now.
const DueAsked = "asked"

// MaxSkipReason bounds the reason given for a skip, in characters.
const MaxSkipReason = 300

// Errors of the actions. Each is wrapped with what was asked.
var (
	// ErrNoSuchEntry: no journal entry has the event id.
	ErrNoSuchEntry = errors.New("no journal entry has this event id")
	// ErrNoSuchTicket: no tracked ticket has the id.
	ErrNoSuchTicket = errors.New("no tracked ticket has this id")
	// ErrNotActionable: the entry's state does not allow the action (a
	// sent entry can be neither retried nor skipped).
	ErrNotActionable = errors.New("not possible in this state")
	// ErrBadReason: a skip's reason is missing or unfit.
	ErrBadReason = errors.New("skip reason refused")
)

// RetryEntry puts the journal entry of helpdesk event eventID back to
// pending, due at now: a failed entry (refused for good), an abandoned one
// (a skip undone), or a pending one backing off. It keeps the entry's
// Idempotency-Key, payload and attempts; the next cycle sends it. A sent
// entry is refused with ErrNotActionable. who names the operator.
func RetryEntry(ctx context.Context, st *state.Store, eventID, who string, now time.Time) (state.Entry, error) {
	return changeEntry(ctx, st, "retry", eventID, who, func(en *state.Entry) state.Audit {
		was := en.State
		requeue(en, now)
		return state.Audit{TicketID: en.TicketID, At: now, Direction: state.AuditToPlatform, Kind: "retry",
			Ref: en.Ref, EventID: en.EventID, IdempotencyKey: en.IdempotencyKey, Status: en.Payload.Status, Outcome: state.AuditOK,
			Detail: fmt.Sprintf("%s %s put back to pending: sent by the next cycle", was, en.Kind)}
	})
}

// requeue puts en back to pending, due at now (retry, and resync for each
// entry it puts back).
func requeue(en *state.Entry, now time.Time) {
	en.State, en.NextAttempt = state.Pending, now
}

// SkipEntry marks the journal entry of helpdesk event eventID abandoned:
// it is never sent, and never deleted. who (the operator) and reason are
// kept in its LastError. reason is required: one line of at most
// MaxSkipReason characters. A sent entry is refused with ErrNotActionable;
// skipping an abandoned entry again replaces the reason. An entry whose
// request a running cycle has already started may still go through: the
// cycle then records it as sent, which is what happened.
func SkipEntry(ctx context.Context, st *state.Store, eventID, who, reason string) (state.Entry, error) {
	reason = strings.TrimSpace(reason)
	if err := checkReason(reason); err != nil {
		return state.Entry{}, fmt.Errorf("skip journal entry %q: %w: %w", eventID, ErrBadReason, err)
	}
	who = strings.TrimSpace(who)
	if who == "" {
		who = "an operator"
	}
	return changeEntry(ctx, st, "skip", eventID, who, func(en *state.Entry) state.Audit {
		en.State, en.NextAttempt = state.Abandoned, time.Time{}
		en.LastError = fmt.Sprintf("abandoned by %s: %s", who, reason)
		return state.Audit{TicketID: en.TicketID, Direction: state.AuditToPlatform, Kind: "skip",
			Ref: en.Ref, EventID: en.EventID, IdempotencyKey: en.IdempotencyKey, Status: en.Payload.Status, Outcome: state.AuditAbandoned,
			Detail: reason}
	})
}

// ReadNow makes tracked ticket ticketID due at now, also when it backs off
// after errors or is retired: the next cycle reads it. who names the
// operator.
func ReadNow(ctx context.Context, st *state.Store, ticketID, who string, now time.Time) (state.Ticket, error) {
	var out state.Ticket
	err := st.Update(ctx, func(tx *state.Tx) error {
		if err := state.CheckID(ticketID); err != nil {
			return fmt.Errorf("%w: %w", ErrNoSuchTicket, err)
		}
		t, ok, err := tx.Ticket(ticketID)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNoSuchTicket
		}
		askRead(&t, now)
		if err := tx.PutTicket(t); err != nil {
			return err
		}
		out = t
		return tx.AppendCommand(who, state.Audit{TicketID: t.ID, At: now, Kind: "read now", Ref: t.Ref, Outcome: state.AuditOK,
			Detail: "due now: the next cycle reads it"})
	})
	if err != nil {
		return state.Ticket{}, fmt.Errorf("read ticket %q now: %w", ticketID, err)
	}
	return out, nil
}

// askRead makes t due at now, also when it backs off after errors or is
// retired (ReadNow, and the commands that read a request now). A request
// taken for deleted on the platform is read again too: a 404 retires it
// again at once, a 200 brings it back.
func askRead(t *state.Ticket, now time.Time) {
	t.NextDue, t.DueReason, t.Retired, t.Deleted = now, DueAsked, false, time.Time{}
}

// changeEntry applies change to the journal entry of helpdesk event
// eventID, unless it was sent (ErrNotActionable), and appends the audit
// entry change returns as who's command, in one transaction; op ("retry",
// "skip") names the action in errors.
func changeEntry(ctx context.Context, st *state.Store, op, eventID, who string, change func(*state.Entry) state.Audit) (state.Entry, error) {
	var out state.Entry
	err := st.Update(ctx, func(tx *state.Tx) error {
		en, err := actionEntry(tx, eventID)
		if err != nil {
			return err
		}
		if en.State == state.Sent {
			return fmt.Errorf("%w: it was sent at %s", ErrNotActionable, en.SentAt.Format(time.RFC3339))
		}
		audit := change(&en)
		if out, err = tx.PutJournal(en); err != nil {
			return err
		}
		return tx.AppendCommand(who, audit)
	})
	if err != nil {
		return state.Entry{}, fmt.Errorf("%s journal entry %q: %w", op, eventID, err)
	}
	return out, nil
}

func actionEntry(tx *state.Tx, eventID string) (state.Entry, error) {
	if err := state.CheckEventID(eventID); err != nil {
		return state.Entry{}, fmt.Errorf("%w: %w", ErrNoSuchEntry, err)
	}
	en, ok, err := tx.JournalEntry(eventID)
	if err != nil {
		return state.Entry{}, err
	}
	if !ok {
		return state.Entry{}, ErrNoSuchEntry
	}
	return en, nil
}

func checkReason(r string) error {
	switch {
	case r == "":
		return errors.New("a reason is required")
	case !utf8.ValidString(r):
		return errors.New("the reason is not valid UTF-8")
	case utf8.RuneCountInString(r) > MaxSkipReason:
		return fmt.Errorf("the reason is %d characters long (at most %d)", utf8.RuneCountInString(r), MaxSkipReason)
	case strings.IndexFunc(r, unicode.IsControl) >= 0:
		return errors.New("the reason must be one line without control characters")
	}
	return nil
}
