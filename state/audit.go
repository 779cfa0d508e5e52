package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"
	"unicode/utf8"
)

// A request's audit trail: an append-only record of what crossed between
// the platform and the helpdesk for it, and why. The engine appends an
// entry in the transaction that stores what the crossing changed (never
// in a transaction of its own), and the operators' commands in theirs; a
// quiet cycle appends nothing. Entries hold ids, kinds and outcomes,
// never a message's text or a secret.
//
//	bucket      key                                     value
//	audit       <ticket id>/<day>/<stamp>/<hash>        [Audit]
//	audit_days  <day>/<ticket id>                       empty: the ticket has entries of that day
//	            pruned                                  the last day pruned (see PruneAudit)
//
// <day> is the entry's stamp's UTC day (YYYYMMDD) and <stamp> its time in
// Unix nanoseconds, 16 hex digits, made strictly increasing within a Store
// so that one ticket's entries read in the order they were appended; <hash>
// (8 hex digits of the record) keeps two entries of one stamp apart.
// A ticket's trail is one prefix scan of audit; pruning a day costs one
// prefix scan of audit_days and a prefix delete per ticket of that day,
// never a scan of the trail.

// Directions of an audit entry.
const (
	// AuditToHelpdesk: from the platform into the helpdesk.
	AuditToHelpdesk = "to helpdesk"
	// AuditToPlatform: from the helpdesk up to the platform.
	AuditToPlatform = "to platform"
)

// Outcomes of an audit entry.
const (
	// AuditOK: the other side took it (or, for an operator's command, the
	// state was changed).
	AuditOK = "ok"
	// AuditNothing: nothing needed sending (the other side already had it,
	// or a newer change overtook it).
	AuditNothing = "nothing to send"
	// AuditRefused: refused for good; not tried again unless retried.
	AuditRefused = "refused"
	// AuditRetrying: failed, or its outcome is unknown; tried again later.
	AuditRetrying = "retrying"
	// AuditAbandoned: set aside (skip, or overridden by a newer change
	// upstream); never sent.
	AuditAbandoned = "abandoned"
)

// Causes of an audit entry: why the crossing happened.
const (
	// AuditListChange: a list of the platform showed the request new or
	// changed.
	AuditListChange = "list change"
	// AuditFullRead: the request's scheduled read (the full-read safety
	// net, or the polling of an active, quiet or closed request).
	AuditFullRead = "full read"
	// AuditReconcile: the comparison of both sides (reconcile).
	AuditReconcile = "reconcile"
	// AuditHelpdeskChange: the helpdesk reported a change (a reply, a
	// note, a status).
	AuditHelpdeskChange = "helpdesk change"
	// AuditOperator: an operator's command (retry, skip, read now, and
	// those to come).
	AuditOperator = "operator command"
)

// MaxAuditDetail bounds Audit.Detail, in bytes; a longer one is cut.
const MaxAuditDetail = 300

// auditVersion is the record version of an Audit.
const auditVersion = 1

// Audit is one entry of a request's audit trail.
type Audit struct {
	// TicketID is the upstream request id. Required.
	TicketID string `json:"ticket_id"`
	// At is when it happened, on the engine's clock. Required.
	At time.Time `json:"at"`
	// Direction is AuditToHelpdesk or AuditToPlatform; empty for an
	// operator's command that carries nothing itself.
	Direction string `json:"direction,omitempty"`
	// Kind says what crossed: "ticket", "message", "status", "fields",
	// "conflict note", "unlink note" into the helpdesk; "reply", "note",
	// "status" up; "retry", "skip", "read now", "pause", "resume",
	// "resync", "unlink" for an operator's command. Required.
	Kind string `json:"kind"`
	// Ref is the helpdesk ticket, MessageID the upstream message and
	// EventID the helpdesk's id of what crossed (a message appended, the
	// event carried up), where there is one.
	Ref       string `json:"ref,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	EventID   string `json:"event_id,omitempty"`
	// IdempotencyKey is the journal entry's key, for what went up.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Status is the status set, Fields the names of the fields updated.
	Status string   `json:"status,omitempty"`
	Fields []string `json:"fields,omitempty"`
	// Outcome is one of the Audit outcomes; Cause one of the causes.
	// Both required.
	Outcome string `json:"outcome"`
	Cause   string `json:"cause"`
	// Operator names who gave the command, for AuditOperator.
	Operator string `json:"operator,omitempty"`
	// Detail is the error or reason, as status shows it, cut at
	// MaxAuditDetail bytes. Never a message's text.
	Detail string `json:"detail,omitempty"`
}

func (a *Audit) validate() error {
	if err := checkID("ticket_id", a.TicketID); err != nil {
		return err
	}
	switch {
	case a.Kind == "":
		return errors.New("kind is empty")
	case a.Outcome == "":
		return errors.New("outcome is empty")
	case a.Cause == "":
		return errors.New("cause is empty")
	case a.Cause == AuditOperator && a.Operator == "":
		return errors.New("an operator's command without the operator")
	}
	return nil
}

// ClipDetail cuts s to at most MaxAuditDetail bytes, on a rune boundary.
func ClipDetail(s string) string {
	if len(s) <= MaxAuditDetail {
		return s
	}
	cut := MaxAuditDetail - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// auditDay is the day part of the keys of an entry stamped at ns.
func auditDay(ns int64) string {
	return time.Unix(0, ns).UTC().Format("20060102")
}

// auditPruned is the key of audit_days that holds the last day pruned;
// it sorts after every day.
var auditPruned = []byte("pruned")

// stamp returns a stamp of at for an entry's key: its Unix nanoseconds, or
// one more than the Store's last when that is not later.
func (s *Store) stamp(at time.Time) int64 {
	ns := at.UnixNano()
	for {
		last := s.auditStamp.Load()
		next := max(ns, last+1)
		if s.auditStamp.CompareAndSwap(last, next) {
			return next
		}
	}
}

// AppendAudit appends a to the trail of its ticket. A zero At is the
// store's clock now; times are stored in UTC, Detail cut at
// MaxAuditDetail. It refuses a malformed entry with ErrInvalid. It reads
// nothing: it costs no round trip on PostgreSQL.
func (tx *Tx) AppendAudit(a Audit) error {
	what := fmt.Sprintf("append audit entry of ticket %q", a.TicketID)
	if err := a.validate(); err != nil {
		return invalid(what, err)
	}
	if !tx.kv.writable() {
		return fmt.Errorf("%s: %w", what, errNotWritable)
	}
	if a.At.IsZero() {
		a.At = tx.s.now()
	}
	a.At = a.At.UTC()
	a.Detail = ClipDetail(a.Detail)
	data, err := encode(auditVersion, a)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	h := fnv.New32a()
	h.Write(data)
	ns := tx.s.stamp(a.At)
	day := auditDay(ns)
	key := fmt.Appendf(nil, "%s/%s/%016x/%08x", a.TicketID, day, uint64(ns), h.Sum32())
	if err := tx.kv.put(bucketAudit, key, data); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := tx.kv.put(bucketAuditDays, []byte(day+"/"+a.TicketID), []byte{}); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// AppendCommand appends to the trail of a.TicketID an operator's command:
// a with the cause AuditOperator and who as its operator ("an operator"
// when who is blank), in the transaction that carries the command out.
// Every command on a request records itself so: retry, skip, read now,
// pause, resume, resync.
func (tx *Tx) AppendCommand(who string, a Audit) error {
	a.Cause, a.Operator = AuditOperator, strings.TrimSpace(who)
	if a.Operator == "" {
		a.Operator = "an operator"
	}
	return tx.AppendAudit(a)
}

// AuditTrail returns the trail of ticket id, oldest first. An entry that
// cannot be decoded is left out, and reported with ErrCorrupt after the
// others.
func (tx *Tx) AuditTrail(id string) ([]Audit, error) {
	if err := checkID("ticket id", id); err != nil {
		return nil, invalid("read audit trail", err)
	}
	var out []Audit
	var bad error
	err := tx.kv.scan(bucketAudit, []byte(id+"/"), func(k, v []byte) error {
		var a Audit
		if err := decode(bucketAudit, string(k), v, auditVersion, &a); err != nil {
			bad = firstErr(bad, err)
			return nil
		}
		if a.TicketID != id {
			bad = firstErr(bad, &RecordError{Bucket: bucketAudit, Key: string(k), Err: fmt.Errorf("record ticket %q differs from its key", a.TicketID)})
			return nil
		}
		out = append(out, a)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read audit trail of ticket %q: %w", id, err)
	}
	return out, bad
}

// firstErr returns a, or b when a is nil.
func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// AuditPruneDays bounds the days one PruneAudit deletes: a daemon stopped
// for longer catches up over its next days.
const AuditPruneDays = 31

// PruneAudit deletes the audit entries of the days before the UTC day of
// before: each day at once, so an entry is kept until its whole day is
// past the cutoff. It deletes at most AuditPruneDays days and reports how
// many it deleted. It reads the last day it pruned and one list of each
// day's tickets: pruning every day costs a read or two, whatever the size
// of the trails.
func (tx *Tx) PruneAudit(before time.Time) (int, error) {
	if !tx.kv.writable() {
		return 0, fmt.Errorf("prune audit trail: %w", errNotWritable)
	}
	cutoff := before.UTC().Format("20060102")
	last, err := tx.kv.get(bucketAuditDays, auditPruned)
	if err != nil {
		return 0, fmt.Errorf("prune audit trail: %w", err)
	}
	var days []string
	if last == nil {
		// Never pruned: the days are read from the bucket, once.
		err = tx.kv.scan(bucketAuditDays, nil, func(k, _ []byte) error {
			d, _, ok := bytes.Cut(k, []byte("/"))
			if !ok || string(d) >= cutoff {
				return nil
			}
			if n := len(days); n == 0 || days[n-1] != string(d) {
				days = append(days, string(d))
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("prune audit trail: %w", err)
		}
	} else {
		from, err := time.Parse("20060102", string(last))
		if err != nil {
			return 0, &RecordError{Bucket: bucketAuditDays, Key: string(auditPruned), Err: err}
		}
		for d := from.AddDate(0, 0, 1); d.Format("20060102") < cutoff && len(days) < AuditPruneDays; d = d.AddDate(0, 0, 1) {
			days = append(days, d.Format("20060102"))
		}
	}
	if len(days) > AuditPruneDays {
		days = days[:AuditPruneDays]
	}
	for _, d := range days {
		prefix := []byte(d + "/")
		var tickets []string
		if err := tx.kv.scan(bucketAuditDays, prefix, func(k, _ []byte) error {
			tickets = append(tickets, string(k[len(prefix):]))
			return nil
		}); err != nil {
			return 0, fmt.Errorf("prune audit trail of %s: %w", d, err)
		}
		for _, id := range tickets {
			if err := tx.kv.delPrefix(bucketAudit, []byte(id+"/"+d+"/")); err != nil {
				return 0, fmt.Errorf("prune audit trail of %s: %w", d, err)
			}
		}
		if err := tx.kv.delPrefix(bucketAuditDays, prefix); err != nil {
			return 0, fmt.Errorf("prune audit trail of %s: %w", d, err)
		}
	}
	mark := ""
	switch {
	case len(days) > 0:
		mark = days[len(days)-1]
	case last == nil:
		// Nothing older than the cutoff: the days from it on are pruned
		// one by one from now on.
		d, _ := time.Parse("20060102", cutoff)
		mark = d.AddDate(0, 0, -1).Format("20060102")
	}
	if mark != "" {
		if err := tx.kv.put(bucketAuditDays, auditPruned, []byte(mark)); err != nil {
			return 0, fmt.Errorf("prune audit trail: %w", err)
		}
	}
	return len(days), nil
}

// AuditTrail returns the trail of ticket id, oldest first, in one read
// transaction.
func (s *Store) AuditTrail(ctx context.Context, id string) ([]Audit, error) {
	var out []Audit
	err := s.View(ctx, func(tx *Tx) error {
		var err error
		out, err = tx.AuditTrail(id)
		return err
	})
	return out, err
}
