package sync

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/state"
)

// The audit trail (state.Audit): what crossed for a request and why. The
// engine notes an entry where a crossing happens, on the result it will
// store (refresh) or beside the outcome (send), and appends the entries
// in the transaction that stores the rest: a crossing costs no commit of
// its own, and a quiet cycle, which crosses nothing, writes nothing. The
// operators' commands (actions.go) append theirs in their own
// transaction. Entries hold ids, kinds, outcomes and the errors status
// shows; never a message's text.

// auditPruneEvery is how often, at most, the engine prunes the trails:
// in the first cycle report it stores after a day has passed.
const auditPruneEvery = 24 * time.Hour

// readCause says why refresh read ticket t: the trail's cause of what the
// read carried to the helpdesk.
func readCause(t state.Ticket, reconcile bool) string {
	switch {
	case reconcile:
		return state.AuditReconcile
	case t.DueReason == DueNew || t.DueReason == DueUpdated || t.DueReason == DueMoved:
		return state.AuditListChange
	case t.DueReason == DueEvent:
		return state.AuditHelpdeskChange
	case t.DueReason == DueAsked:
		return state.AuditOperator
	}
	return state.AuditFullRead
}

// audit notes on r an entry into the helpdesk of what its read carried,
// with r's ticket, helpdesk reference and cause, at the engine's time.
func (c *cycle) audit(r *refreshResult, a state.Audit) {
	a.TicketID, a.Ref, a.Cause, a.At = r.t.ID, r.t.Ref, r.cause, c.e.now()
	if a.Direction == "" {
		a.Direction = state.AuditToHelpdesk
	}
	if a.Cause == state.AuditOperator {
		a.Operator = "an operator" // read now: its own entry names who
	}
	r.audit = append(r.audit, a)
}

// auditFailed notes on r a write to the helpdesk of kind that failed with
// err: the ticket is backed off and tried again.
func (c *cycle) auditFailed(r *refreshResult, kind string, err error) {
	c.audit(r, state.Audit{Kind: kind, Outcome: state.AuditRetrying, Detail: err.Error()})
}

// auditAppended notes the messages an Append wrote, and the one it
// failed on.
func (c *cycle) auditAppended(r *refreshResult, app []adapters.Appended, err error) {
	for _, a := range app {
		if a.Existed || !validID(a.UpstreamID) {
			continue
		}
		c.audit(r, state.Audit{Kind: "message", MessageID: a.UpstreamID, EventID: a.HelpdeskID, Outcome: state.AuditOK})
	}
	if err != nil {
		c.auditFailed(r, "message", err)
	}
}

// fieldNames lists the names of the fields of s.
func fieldNames(s adapters.FieldSet) []string {
	if s == 0 {
		return nil
	}
	return strings.Split(s.String(), ",")
}

// sendAudit is the trail's entry of a journal entry's outcome in send.
func sendAudit(o sendOutcome, at time.Time) state.Audit {
	en := o.en
	a := state.Audit{
		TicketID: en.TicketID, At: at, Direction: state.AuditToPlatform, Kind: en.Kind, Ref: en.Ref,
		EventID: en.EventID, IdempotencyKey: en.IdempotencyKey, MessageID: en.UpstreamMessageID,
		Status: en.Payload.Status, Cause: entryCause(en),
	}
	switch {
	case o.request:
		a.Outcome = state.AuditOK
	case o.sent:
		a.Outcome, a.Detail = state.AuditNothing, en.LastError
	case o.failed:
		a.Outcome, a.Detail = state.AuditRefused, en.LastError
	default:
		a.Outcome, a.Detail = state.AuditRetrying, en.LastError
	}
	return a
}

// abandonAudit is the trail's entry of a journal entry set aside, for
// cause, with the reason in its LastError. Set aside by a read an
// operator asked for, it names "an operator", as audit does: the
// command's own entry names who.
func abandonAudit(en state.Entry, at time.Time, cause string) state.Audit {
	a := state.Audit{
		TicketID: en.TicketID, At: at, Direction: state.AuditToPlatform, Kind: en.Kind, Ref: en.Ref,
		EventID: en.EventID, IdempotencyKey: en.IdempotencyKey, Status: en.Payload.Status,
		Outcome: state.AuditAbandoned, Cause: cause, Detail: en.LastError,
	}
	if cause == state.AuditOperator {
		a.Operator = "an operator"
	}
	return a
}

// entryCause says why a journal entry goes up: a change the helpdesk
// reported, or one reconcile found.
func entryCause(en state.Entry) string {
	if strings.HasPrefix(en.EventID, "reconcile:") {
		return state.AuditReconcile
	}
	return state.AuditHelpdeskChange
}

// pruneAudit deletes, at most once a day, the trails' entries older than
// TICKETBRIDGE_AUDIT_DAYS, in tx: the transaction of a cycle's report,
// which a busy cycle writes anyway and a quiet one every few minutes. A
// prune that left days for later runs again at the next report. done,
// called once tx committed, remembers the prune. A trail that cannot be
// read is logged, not the report's failure: the next day tries again.
func (e *Engine) pruneAudit(tx *state.Tx, now time.Time) (done func(), err error) {
	done = func() {}
	if e.cfg.AuditDays <= 0 || (!e.auditPruned.IsZero() && now.Sub(e.auditPruned) < auditPruneEvery && !e.auditMore) {
		return done, nil
	}
	n, err := tx.PruneAudit(now.AddDate(0, 0, -e.cfg.AuditDays))
	if errors.Is(err, state.ErrCorrupt) {
		e.log.LogAttrs(context.Background(), slog.LevelWarn, "prune the audit trails", slog.Any("error", err), slog.String("op", "audit"))
		n, err = 0, nil
	}
	if err != nil {
		return done, err
	}
	return func() { e.auditPruned, e.auditMore = now, n >= state.AuditPruneDays }, nil
}
