package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Record versions: the "v" field of each stored JSON object. A record of a
// higher version than the reader knows is refused as corrupt rather than
// misread.
const (
	ticketVersion   = 1
	mirroredVersion = 1
	ownVersion      = 1
	entryVersion    = 1
	cursorVersion   = 1
	cycleVersion    = 1
)

// Limits on keys.
const (
	maxIDLen  = 200  // ticket and message ids (upstream UUIDs are 36 bytes)
	maxKeyLen = 1024 // event ids, cursor names, meta keys
)

// Ticket is what the engine remembers of one upstream ticket. Times are
// stored in UTC; the zero time means "never" or "not set".
type Ticket struct {
	// ID is the upstream ticket id, the record's key. Required; no "/".
	ID string `json:"id"`
	// Department is the upstream department code.
	Department string `json:"department,omitempty"`
	// Ref is the helpdesk's reference of the mirror ticket; empty until the
	// helpdesk ticket was made.
	Ref string `json:"ref,omitempty"`

	// UpstreamStatus is the last upstream status read.
	UpstreamStatus string `json:"upstream_status,omitempty"`
	// UpstreamUpdatedAt is the last upstream updated_at read.
	UpstreamUpdatedAt time.Time `json:"upstream_updated_at,omitzero"`
	// HelpdeskStatus is the helpdesk ticket's last known status, in upstream
	// terms, and HelpdeskStatusAt when it changed.
	HelpdeskStatus   string    `json:"helpdesk_status,omitempty"`
	HelpdeskStatusAt time.Time `json:"helpdesk_status_at,omitzero"`
	// HelpdeskEventAt is the time, on the helpdesk's clock, of the newest
	// status change the helpdesk reported: a change reported later with
	// an older time (a helpdesk that commits out of order) is superseded.
	// It is compared only with the helpdesk's own times, never with the
	// bridge's clock.
	HelpdeskEventAt time.Time `json:"helpdesk_event_at,omitzero"`

	// AgreedStatus is the status both sides last agreed on, in upstream
	// terms; "" (unknown) until the first reconcile records one. AgreedAt
	// is when it was recorded: a helpdesk status older than that is not a
	// change the helpdesk made since. ReconciledAt is when the ticket was last reconciled and
	// LastReconcile what that found; ReconcileSoon asks for a reconcile
	// in the next cycle (a call's outcome was unknown).
	AgreedStatus  string    `json:"agreed_status,omitempty"`
	AgreedAt      time.Time `json:"agreed_at,omitzero"`
	ReconciledAt  time.Time `json:"reconciled_at,omitzero"`
	LastReconcile string    `json:"last_reconcile,omitempty"`
	ReconcileSoon bool      `json:"reconcile_soon,omitempty"`

	// NextDue is when the ticket should be read again and DueReason why
	// (e.g. "active", "quiet", "closed", "retry").
	NextDue   time.Time `json:"next_due,omitzero"`
	DueReason string    `json:"due_reason,omitempty"`
	// QuietStreak counts the reads in a row that found nothing new.
	QuietStreak int `json:"quiet_streak,omitempty"`
	// LastActivity is the time of the last change seen on either side.
	LastActivity time.Time `json:"last_activity,omitzero"`
	// ClosedAt is when the ticket was first seen closed; zero while open.
	ClosedAt time.Time `json:"closed_at,omitzero"`
	// Retired is set when the ticket is no longer polled.
	Retired bool `json:"retired,omitempty"`
	// Missing counts the reads in a row, each in a cycle of its own, that
	// the API answered 404 while another request of the hotel read 200
	// in the same cycle; a read that succeeds sets it back to 0.
	Missing int `json:"missing,omitempty"`
	// Deleted is when the engine took the ticket for deleted on the
	// platform (Missing reached its threshold): it is no longer read,
	// and the helpdesk's events on it are ignored. Zero while it is not.
	Deleted time.Time `json:"deleted,omitzero"`
	// Paused is when an operator paused the request and PausedBy who
	// (see sync.Pause): nothing of it crosses in either direction until
	// it is resumed. The helpdesk's events on it are still journaled,
	// and wait. Zero while it is not paused.
	Paused   time.Time `json:"paused,omitzero"`
	PausedBy string    `json:"paused_by,omitempty"`
	// Unlinked is when an operator unlinked the request from its
	// helpdesk ticket and UnlinkedBy who (see sync.Apply): it is no
	// longer mirrored either way, its helpdesk ticket stays as it is,
	// and the helpdesk's events on it are ignored, until an operator
	// connects it again. UnlinkNoted says the helpdesk ticket got the
	// note saying so. Zero while it is linked.
	Unlinked    time.Time `json:"unlinked,omitzero"`
	UnlinkedBy  string    `json:"unlinked_by,omitempty"`
	UnlinkNoted bool      `json:"unlink_noted,omitempty"`
	// ConnectRef is the helpdesk ticket an operator connected the
	// request to (see sync.Apply), until a cycle has stored the request's
	// id in it and adopted it: Ref is empty meanwhile.
	ConnectRef string `json:"connect_ref,omitempty"`
	// Commands counts the operators' commands applied to the record (see
	// sync.Apply): a cycle that read the record before a command stores
	// what it did with the command's own fields kept.
	Commands int `json:"commands,omitempty"`

	// LastError is the last failure syncing this ticket ("" after a success)
	// and Attempts the number of consecutive failures.
	LastError string `json:"last_error,omitempty"`
	Attempts  int    `json:"attempts,omitempty"`

	// Carried is what the bridge last carried of the platform's fields to
	// the helpdesk ticket (adapters.Updater); its zero value (At zero)
	// means never: a record older than it, or a lost state. The engine
	// compares the platform's values with it, never with the helpdesk's.
	Carried Fields `json:"carried,omitzero"`

	// GuestWroteAt is when the guest last wrote: the newest of the
	// guest's messages mirrored, as the API dates it. AnsweredAt is when
	// staff last answered the guest: the newest reply the bridge carried
	// upstream (when the API confirmed it), or staff message visible to
	// the guest mirrored (as the API dates it). Zero: none seen. The
	// request is unanswered while AnsweredAt is zero or before
	// GuestWroteAt (see Unanswered). Both are written only with a
	// message mirrored or a reply sent, never by a quiet read.
	GuestWroteAt time.Time `json:"guest_wrote_at,omitzero"`
	AnsweredAt   time.Time `json:"answered_at,omitzero"`

	// CreatedAt is set by PutTicket when the record is first stored (unless
	// given); UpdatedAt is set by PutTicket on every put.
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`

	// rev is the record's revision as read (see Revision); not stored.
	rev uint64
}

// Fields are the platform's fields of a request as the bridge last
// carried them to the helpdesk. It is a value, not a pointer, so that a
// Ticket stays comparable and the ticket cache unpacks it without
// allocating. Records that predate it decode it as zero; a reader that
// predates it ignores it (records are decoded field by field, and
// unknown fields are skipped), so it needs no new record version.
type Fields struct {
	// At is when they were last carried; zero: never.
	At         time.Time `json:"at,omitzero"`
	Department string    `json:"department,omitempty"`
	Title      string    `json:"title,omitempty"`
	Due        time.Time `json:"due,omitzero"` // target_due_at; zero: none
	Rated      bool      `json:"rated,omitempty"`
	Rating     float64   `json:"rating,omitempty"` // when Rated
	Comment    string    `json:"comment,omitempty"`
	Priority   string    `json:"priority,omitempty"`
	// Unsure holds the fields (the bits of adapters.Field) whose last
	// update's outcome is unknown: an update that failed after the
	// helpdesk may have applied it, or one a crash may have cut between
	// the helpdesk's write and the record's. The values above stay those
	// known to be carried; the next update sets the Unsure fields too,
	// even where the platform's value is back to the one above.
	Unsure uint8 `json:"unsure,omitempty"`
}

// Known reports whether the fields were ever carried.
func (f Fields) Known() bool { return !f.At.IsZero() }

// Revision identifies the stored bytes the ticket was read from: a hash
// of them, keyed with a seed the store draws when it opens, so it differs
// between two records of one store open unless their bytes are the same.
// It is zero for a ticket not read from state. A caller that keeps a
// change to a ticket in memory (the engine's quiet reads) applies it only
// while the stored record's revision is the one it read, so that a newer
// write always wins.
func (t Ticket) Revision() uint64 { return t.rev }

// Same reports whether t and u are the same record: every field equal,
// times as instants (a time read from the API and the same time read
// back from state differ in their location only). The revision is not
// compared.
func (t Ticket) Same(u Ticket) bool {
	t.normalize()
	u.normalize()
	t.rev, u.rev = 0, 0
	return t == u
}

func (t *Ticket) normalize() {
	utc(&t.UpstreamUpdatedAt, &t.HelpdeskStatusAt, &t.HelpdeskEventAt, &t.AgreedAt, &t.ReconciledAt, &t.NextDue, &t.LastActivity, &t.ClosedAt, &t.Deleted, &t.CreatedAt, &t.UpdatedAt,
		&t.Paused, &t.Unlinked, &t.Carried.At, &t.Carried.Due, &t.GuestWroteAt, &t.AnsweredAt)
}

// Halted reports whether an operator stopped the request crossing:
// paused, or unlinked. The engine neither reads a halted request nor
// writes its helpdesk ticket (but for the unlink's one note).
func (t Ticket) Halted() bool { return !t.Paused.IsZero() || !t.Unlinked.IsZero() }

// Unanswered reports whether nobody on the hotel's side answered the
// guest publicly since the request was made or since the guest last
// wrote, as far as the bridge saw (GuestWroteAt, AnsweredAt).
func (t Ticket) Unanswered() bool {
	return t.AnsweredAt.IsZero() || t.GuestWroteAt.After(t.AnsweredAt)
}

// NoteGuestWrote and NoteAnswered move GuestWroteAt and AnsweredAt
// forward to at, never back (messages are mirrored in any order).
func (t *Ticket) NoteGuestWrote(at time.Time) {
	if at.After(t.GuestWroteAt) {
		t.GuestWroteAt = at.UTC()
	}
}

// NoteAnswered: see NoteGuestWrote.
func (t *Ticket) NoteAnswered(at time.Time) {
	if at.After(t.AnsweredAt) {
		t.AnsweredAt = at.UTC()
	}
}

func (t *Ticket) validate() error {
	if err := checkID("id", t.ID); err != nil {
		return err
	}
	if t.QuietStreak < 0 {
		return fmt.Errorf("quiet_streak %d is negative", t.QuietStreak)
	}
	if t.Attempts < 0 {
		return fmt.Errorf("attempts %d is negative", t.Attempts)
	}
	if t.Missing < 0 {
		return fmt.Errorf("missing %d is negative", t.Missing)
	}
	if t.Commands < 0 {
		return fmt.Errorf("commands %d is negative", t.Commands)
	}
	if c := t.Carried; !c.Known() && c != (Fields{}) {
		return fmt.Errorf("carried fields without the time they were carried (at)")
	}
	return nil
}

// MirroredMessage is an upstream message already copied into the helpdesk.
type MirroredMessage struct {
	// HelpdeskID is the helpdesk's id of the comment it became.
	HelpdeskID string `json:"helpdesk_id,omitempty"`
	// At is when it was mirrored.
	At time.Time `json:"at,omitzero"`
	MessageInfo
}

// OwnMessage is an upstream message the bridge posted itself (an agent reply
// or note carried upstream); refresh must not mirror it back.
type OwnMessage struct {
	// EventID is the helpdesk event it was posted for.
	EventID string `json:"event_id,omitempty"`
	// At is when the upstream post was confirmed.
	At time.Time `json:"at,omitzero"`
	MessageInfo
}

// MessageInfo is what a mirrored or own message record keeps of the
// message for staff (the status page shows it to signed-in users): who
// wrote it, when, and its first words. The guest's words are personal
// data: nothing logs them. Records written before it was kept, and
// messages found in the helpdesk rather than mirrored, hold none.
type MessageInfo struct {
	// AuthorType is the API's author_type (guest, staff, ai, system).
	AuthorType string `json:"author_type,omitempty"`
	AuthorName string `json:"author_name,omitempty"`
	// WrittenAt is when the message was written upstream.
	WrittenAt time.Time `json:"written_at,omitzero"`
	// FirstWords is the start of the message, about 80 characters cut at
	// a word, its line breaks and runs of spaces made one space.
	FirstWords string `json:"first_words,omitempty"`
}

// Journal entry kinds: the values of adapters.EventKind.
const (
	KindReply  = "reply"  // agent reply, posted with visible_to_guest true
	KindNote   = "note"   // internal note, posted with visible_to_guest false
	KindStatus = "status" // status change
)

// JournalState is where an outbound journal entry stands.
type JournalState string

// Journal states.
const (
	// Pending: journaled, not yet confirmed upstream. Resent (with the same
	// Idempotency-Key) until it is sent or failed.
	Pending JournalState = "pending"
	// Sent: the API confirmed it. Final.
	Sent JournalState = "sent"
	// Failed: the API refused it for good (e.g. 400, 404). It is not resent
	// unless put back to Pending.
	Failed JournalState = "failed"
	// Abandoned: an operator set it aside (skip); LastError keeps who did
	// and why. It is never sent and never pruned, so that the event, seen
	// again, is not journaled anew; only a retry puts it back to Pending.
	Abandoned JournalState = "abandoned"
)

// Payload is what an entry sends upstream; enough to resend it after a crash
// without asking the helpdesk again.
type Payload struct {
	Body       string `json:"body,omitempty"`        // reply and note
	AuthorName string `json:"author_name,omitempty"` // reply and note; "" for the API's default
	Visible    bool   `json:"visible,omitempty"`     // visible_to_guest: true for a reply, false for a note
	Status     string `json:"status,omitempty"`      // status: the upstream status to set
}

// Hash returns the hex SHA-256 of the payload's canonical encoding. Two
// payloads have the same hash exactly when their fields are equal.
func (p Payload) Hash() string {
	h := sha256.New()
	// Length-prefixed fields: no two payloads share an encoding.
	for _, f := range []string{p.Body, p.AuthorName, fmt.Sprint(p.Visible), p.Status} {
		fmt.Fprintf(h, "%d:%s;", len(f), f)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Entry is one outbound journal entry: a helpdesk event carried upstream.
// It is written before the request is made, so a crash at any point resends
// it with the same Idempotency-Key.
type Entry struct {
	// EventID is the adapter's event id, the record's key. Required.
	EventID string `json:"event_id"`
	// TicketID is the upstream ticket id and Ref the helpdesk ticket the
	// event came from. TicketID is required and must be in state when the
	// entry is first put.
	TicketID string `json:"ticket_id"`
	Ref      string `json:"ref,omitempty"`
	// IdempotencyKey is sent with every attempt. Required; never changes.
	IdempotencyKey string `json:"idempotency_key"`
	// Kind is KindReply, KindNote or KindStatus.
	Kind string `json:"kind"`
	// Payload is what is sent; PayloadHash its [Payload.Hash], set by
	// PutJournal and checked on every read. Neither changes once journaled.
	Payload     Payload `json:"payload"`
	PayloadHash string  `json:"payload_hash"`

	// State is Pending, Sent, Failed or Abandoned; empty means Pending.
	State JournalState `json:"state"`
	// UpstreamMessageID is the message_id the API returned ("" for status).
	UpstreamMessageID string `json:"upstream_message_id,omitempty"`
	// Attempts counts the requests made, LastError the last failure and
	// NextAttempt when to try again.
	Attempts    int       `json:"attempts,omitempty"`
	LastError   string    `json:"last_error,omitempty"`
	NextAttempt time.Time `json:"next_attempt,omitzero"`

	// CreatedAt is set when first journaled (unless given), SentAt when the
	// API confirmed it (required for Sent), MarkedAt when the adapter
	// recorded the delivery in the helpdesk (MarkSent), UpdatedAt on every
	// put.
	CreatedAt time.Time `json:"created_at,omitzero"`
	SentAt    time.Time `json:"sent_at,omitzero"`
	MarkedAt  time.Time `json:"marked_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`

	// Seq orders the journal: assigned by PutJournal when the entry is
	// first put, never changed. Lists are returned in Seq order.
	Seq uint64 `json:"seq"`
}

func (e *Entry) normalize() {
	if e.State == "" {
		e.State = Pending
	}
	utc(&e.NextAttempt, &e.CreatedAt, &e.SentAt, &e.MarkedAt, &e.UpdatedAt)
}

func (e *Entry) validate() error {
	if err := checkKey("event_id", e.EventID); err != nil {
		return err
	}
	if err := checkID("ticket_id", e.TicketID); err != nil {
		return err
	}
	if err := checkKey("idempotency_key", e.IdempotencyKey); err != nil {
		return err
	}
	switch e.Kind {
	case KindReply, KindNote:
		if e.Payload.Status != "" {
			return fmt.Errorf("payload.status %q set on a %s entry", e.Payload.Status, e.Kind)
		}
		if want := e.Kind == KindReply; e.Payload.Visible != want {
			return fmt.Errorf("payload.visible is %t on a %s entry (want %t)", e.Payload.Visible, e.Kind, want)
		}
	case KindStatus:
		if e.Payload.Status == "" {
			return errors.New("payload.status is empty on a status entry")
		}
		if e.Payload.Body != "" || e.Payload.AuthorName != "" || e.Payload.Visible {
			return errors.New("payload carries a body, author or visibility on a status entry")
		}
	default:
		return fmt.Errorf("kind %q is not one of %s, %s, %s", e.Kind, KindReply, KindNote, KindStatus)
	}
	switch e.State {
	case Pending, Failed, Abandoned:
	case Sent:
		if e.SentAt.IsZero() {
			return errors.New("sent_at is zero on a sent entry")
		}
	default:
		return fmt.Errorf("state %q is not one of %s, %s, %s, %s", e.State, Pending, Sent, Failed, Abandoned)
	}
	if e.Attempts < 0 {
		return fmt.Errorf("attempts %d is negative", e.Attempts)
	}
	return nil
}

// Cycle is the bookkeeping of one sync cycle.
type Cycle struct {
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end,omitzero"`
	// Outcome is the engine's word for how it went, e.g. "ok", "partial",
	// "failed".
	Outcome string `json:"outcome,omitempty"`
	// Success marks a cycle the engine counts as successful; PutCycle keeps
	// the last such cycle apart (see Tx.LastSuccess).
	Success bool `json:"success,omitempty"`
	// Report is the engine's report of the cycle, any JSON value.
	Report json.RawMessage `json:"report,omitempty"`
}

func (c *Cycle) normalize() { utc(&c.Start, &c.End) }

func (c *Cycle) validate() error {
	if len(c.Report) > 0 && !json.Valid(c.Report) {
		return errors.New("report is not valid JSON")
	}
	if !c.End.IsZero() && c.End.Before(c.Start) {
		return fmt.Errorf("end %s is before start %s", c.End.Format(time.RFC3339Nano), c.Start.Format(time.RFC3339Nano))
	}
	return nil
}

// cursorRecord is how an adapter cursor is stored.
type cursorRecord struct {
	Cursor string    `json:"cursor"`
	At     time.Time `json:"at,omitzero"`
}

func utc(ts ...*time.Time) {
	for _, t := range ts {
		if t.IsZero() {
			*t = time.Time{}
		} else {
			*t = t.UTC()
		}
	}
}

// CheckID returns why v cannot be stored as a ticket or message id (1 to
// 200 bytes of UTF-8, no control character, no "/"), or nil when it can.
// Callers check ids with it before a transaction, so that one bad id never
// fails the writes it shares a transaction with.
func CheckID(v string) error { return checkID("id", v) }

// CheckEventID returns why v cannot be stored as a helpdesk event id (1 to
// 1024 bytes of UTF-8, no control character), or nil when it can.
func CheckEventID(v string) error { return checkKey("event id", v) }

// checkID validates a ticket or message id: a key or a key part.
func checkID(field, v string) error {
	if err := checkKey(field, v); err != nil {
		return err
	}
	if len(v) > maxIDLen {
		return fmt.Errorf("%s is %d bytes long (at most %d)", field, len(v), maxIDLen)
	}
	if strings.Contains(v, "/") {
		return fmt.Errorf("%s %q contains a /", field, v)
	}
	return nil
}

// checkKey validates a string used as a key.
func checkKey(field, v string) error {
	switch {
	case v == "":
		return fmt.Errorf("%s is empty", field)
	case len(v) > maxKeyLen:
		return fmt.Errorf("%s is %d bytes long (at most %d)", field, len(v), maxKeyLen)
	case !utf8.ValidString(v):
		return fmt.Errorf("%s %q is not valid UTF-8", field, v)
	case strings.IndexFunc(v, unicode.IsControl) >= 0:
		return fmt.Errorf("%s %q contains a control character", field, v)
	}
	return nil
}

// encode marshals v as a JSON object and puts the record version first.
func encode(version int, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(body) < 2 || body[0] != '{' {
		return nil, fmt.Errorf("encode record: %T is not a JSON object", v)
	}
	out := make([]byte, 0, len(body)+8)
	out = fmt.Appendf(out, `{"v":%d`, version)
	if !bytes.Equal(body, []byte("{}")) {
		out = append(out, ',')
	}
	return append(out, body[1:]...), nil
}

// decode unmarshals a stored record into out after checking its version.
// Errors are *RecordError naming bucket and key. data may alias the mmap:
// json.Unmarshal copies every string it keeps.
func decode(bucket, key string, data []byte, version int, out any) error {
	var hdr struct {
		V *int `json:"v"`
	}
	if v, ok := leadingVersion(data); ok {
		hdr.V = &v // the form encode writes: no need to scan the record twice
	} else if err := json.Unmarshal(data, &hdr); err != nil {
		return &RecordError{Bucket: bucket, Key: key, Err: err}
	}
	switch {
	case hdr.V == nil:
		return &RecordError{Bucket: bucket, Key: key, Err: errors.New("record version (v) missing")}
	case *hdr.V < 1:
		return &RecordError{Bucket: bucket, Key: key, Err: fmt.Errorf("record version %d is not positive", *hdr.V)}
	case *hdr.V > version:
		return &RecordError{Bucket: bucket, Key: key, Err: fmt.Errorf("record version %d is newer than %d, the newest this ticketbridge reads", *hdr.V, version)}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &RecordError{Bucket: bucket, Key: key, Err: err}
	}
	return nil
}

// leadingVersion reads the version of a record that starts the way encode
// writes it: {"v":N, or {"v":N}. ok is false for any other form.
func leadingVersion(data []byte) (v int, ok bool) {
	const prefix = `{"v":`
	if !bytes.HasPrefix(data, []byte(prefix)) {
		return 0, false
	}
	digits := 0
	for _, c := range data[len(prefix):] {
		switch {
		case c >= '0' && c <= '9' && digits < 6:
			v = v*10 + int(c-'0')
			digits++
		case (c == ',' || c == '}') && digits > 0:
			return v, true
		default:
			return 0, false
		}
	}
	return 0, false
}

// The decoders below also check what the record says against its key, so
// that a record stored under the wrong key reads as corrupt.

func decodeTicket(key string, data []byte) (Ticket, error) {
	var t Ticket
	if err := decode(bucketTickets, key, data, ticketVersion, &t); err != nil {
		return Ticket{}, err
	}
	if t.ID != key {
		return Ticket{}, &RecordError{Bucket: bucketTickets, Key: key, Err: fmt.Errorf("record id %q differs from its key", t.ID)}
	}
	if err := t.validate(); err != nil {
		return Ticket{}, &RecordError{Bucket: bucketTickets, Key: key, Err: err}
	}
	return t, nil
}

func decodeEntry(key string, data []byte) (Entry, error) {
	var e Entry
	if err := decode(bucketJournal, key, data, entryVersion, &e); err != nil {
		return Entry{}, err
	}
	if e.EventID != key {
		return Entry{}, &RecordError{Bucket: bucketJournal, Key: key, Err: fmt.Errorf("record event_id %q differs from its key", e.EventID)}
	}
	if err := e.validate(); err != nil {
		return Entry{}, &RecordError{Bucket: bucketJournal, Key: key, Err: err}
	}
	if h := e.Payload.Hash(); e.PayloadHash != h {
		return Entry{}, &RecordError{Bucket: bucketJournal, Key: key, Err: fmt.Errorf("payload_hash %q does not match the payload (%s)", e.PayloadHash, h)}
	}
	return e, nil
}

func decodeCursor(key string, data []byte) (cursorRecord, error) {
	var c cursorRecord
	err := decode(bucketCursors, key, data, cursorVersion, &c)
	return c, err
}

func decodeCycle(key string, data []byte) (Cycle, error) {
	var c Cycle
	if err := decode(bucketCycles, key, data, cycleVersion, &c); err != nil {
		return Cycle{}, err
	}
	if err := c.validate(); err != nil {
		return Cycle{}, &RecordError{Bucket: bucketCycles, Key: key, Err: err}
	}
	return c, nil
}
