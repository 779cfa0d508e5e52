package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

func invalid(what string, err error) error {
	return fmt.Errorf("%s: %w: %w", what, ErrInvalid, err)
}

// put encodes v and stores it, wrapping errors with what.
func (tx *Tx) put(what, bucket string, key []byte, version int, v any) error {
	data, err := encode(version, v)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := tx.kv.put(bucket, key, data); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// Ticket returns the ticket with upstream id id; ok is false when state has
// none.
func (tx *Tx) Ticket(id string) (t Ticket, ok bool, err error) {
	data, err := tx.kv.get(bucketTickets, []byte(id))
	if err != nil {
		return Ticket{}, false, fmt.Errorf("get ticket %q: %w", id, err)
	}
	if data == nil {
		return Ticket{}, false, nil
	}
	t, err = tx.s.tickets.decode([]byte(id), data)
	if err != nil {
		return Ticket{}, false, err
	}
	return t, true, nil
}

// Tickets returns the tickets of ids that state holds, by id: one lookup
// for all of them (one round trip on PostgreSQL). An id state does not
// hold is left out.
func (tx *Tx) Tickets(ids []string) (map[string]Ticket, error) {
	keys := make([][]byte, len(ids))
	for i, id := range ids {
		keys[i] = []byte(id)
	}
	vals, err := tx.kv.getMany(bucketTickets, keys)
	if err != nil {
		return nil, fmt.Errorf("get %d tickets: %w", len(ids), err)
	}
	out := make(map[string]Ticket, len(ids))
	for i, data := range vals {
		if data == nil {
			continue
		}
		t, err := tx.s.tickets.decode(keys[i], data)
		if err != nil {
			return nil, err
		}
		out[ids[i]] = t
	}
	return out, nil
}

// PutTicket stores t under t.ID, replacing what was there. It sets UpdatedAt
// to now, and CreatedAt to the stored record's (or now) when t's is zero.
// Times are stored in UTC.
func (tx *Tx) PutTicket(t Ticket) error {
	what := fmt.Sprintf("put ticket %q", t.ID)
	if err := t.validate(); err != nil {
		return invalid(what, err)
	}
	now := tx.s.now()
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now
		old, err := tx.kv.get(bucketTickets, []byte(t.ID))
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if old != nil {
			if prev, err := decodeTicket(t.ID, old); err == nil && !prev.CreatedAt.IsZero() {
				t.CreatedAt = prev.CreatedAt
			}
		}
	}
	t.UpdatedAt = now
	t.normalize()
	return tx.put(what, bucketTickets, []byte(t.ID), ticketVersion, &t)
}

// DeleteTicket removes the ticket with id id together with its mirrored and
// own message records. Its journal entries stay (see PruneJournal). Deleting
// a ticket that is not in state is not an error; a corrupt record is deleted
// like any other.
func (tx *Tx) DeleteTicket(id string) error {
	what := fmt.Sprintf("delete ticket %q", id)
	if err := checkID("id", id); err != nil {
		return invalid(what, err)
	}
	if err := tx.kv.del(bucketTickets, []byte(id)); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	tx.s.tickets.forget(id)
	if err := tx.deleteMessages(id); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// ForEachTicket calls fn with every ticket, in id order. An error from fn
// stops the walk and is returned as is. A record that cannot be decoded is
// skipped, so that one bad record never hides the others; once every other
// record was visited, the skipped ones are returned together as an error
// matching ErrCorrupt (each a *RecordError naming its key).
//
// Inside Update, fn may write to the Tx (put or delete tickets): the walk
// reads every ticket first and hands fn each one as it was when the walk
// began. Inside View it streams.
func (tx *Tx) ForEachTicket(fn func(Ticket) error) error {
	var corrupt []error
	visit := fn
	var all []Ticket
	if tx.Writable() {
		// A scan may not be written to (a bbolt cursor is invalidated by
		// writes to its bucket).
		visit = func(t Ticket) error { all = append(all, t); return nil }
	}
	err := tx.kv.scan(bucketTickets, nil, func(k, v []byte) error {
		t, err := tx.s.tickets.decode(k, v)
		if err != nil {
			corrupt = append(corrupt, err)
			return nil
		}
		return visit(t)
	})
	if err != nil {
		return err
	}
	for _, t := range all {
		if err := fn(t); err != nil {
			return err
		}
	}
	return errors.Join(corrupt...)
}

// messageKey is "<ticket id>/<message id>".
func messageKey(ticketID, msgID string) []byte {
	k := make([]byte, 0, len(ticketID)+1+len(msgID))
	k = append(k, ticketID...)
	k = append(k, '/')
	return append(k, msgID...)
}

func checkMessageIDs(ticketID, msgID string) error {
	if err := checkID("ticket id", ticketID); err != nil {
		return err
	}
	return checkID("message id", msgID)
}

// requireTicket fails (ErrInvalid) unless the ticket is in state; errors
// are wrapped with what.
func (tx *Tx) requireTicket(what, id string) error {
	data, err := tx.kv.get(bucketTickets, []byte(id))
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if data == nil {
		return invalid(what, fmt.Errorf("ticket %q is not in state (put the ticket first)", id))
	}
	return nil
}

// messageKind is one of the two records kept per upstream message of a
// ticket, under "<ticket id>/<message id>": a mirrored message or one of
// the bridge's own. M is the record.
type messageKind[M any] struct {
	bucket  string
	version int
}

var (
	mirroredKind = messageKind[MirroredMessage]{bucketMirrored, mirroredVersion}
	ownKind      = messageKind[OwnMessage]{bucketOwn, ownVersion}
)

// decode decodes the record stored under key.
func (k messageKind[M]) decode(key string, data []byte) (M, error) {
	var m M
	err := decode(k.bucket, key, data, k.version, &m)
	return m, err
}

// put stores m for message msgID of ticket ticketID, which must be in
// state; errors are wrapped with what.
func (k messageKind[M]) put(tx *Tx, what, ticketID, msgID string, m *M) error {
	if err := checkMessageIDs(ticketID, msgID); err != nil {
		return invalid(what, err)
	}
	if err := tx.requireTicket(what, ticketID); err != nil {
		return err
	}
	return tx.put(what, k.bucket, messageKey(ticketID, msgID), k.version, m)
}

// has reports whether message msgID of ticket ticketID has a record. It
// reads one key; it does not decode the record.
func (k messageKind[M]) has(tx *Tx, ticketID, msgID string) (bool, error) {
	if err := checkMessageIDs(ticketID, msgID); err != nil {
		return false, invalid(fmt.Sprintf("look up %s message %q of ticket %q", k.bucket, msgID, ticketID), err)
	}
	return tx.has(k.bucket, messageKey(ticketID, msgID))
}

// all returns the records of a ticket by message id; an empty map when
// there are none.
func (k messageKind[M]) all(tx *Tx, ticketID string) (map[string]M, error) {
	out := map[string]M{}
	err := tx.scanMessages(k.bucket, ticketID, func(msgID string, key, v []byte) error {
		m, err := k.decode(string(key), v)
		if err != nil {
			return err
		}
		out[msgID] = m
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PutMirrored records that upstream message upstreamMsgID of ticket ticketID
// was copied into the helpdesk as helpdeskID at time at, with what staff
// see of it (info; zero when unknown). The ticket must be in state.
// Putting the same message again replaces the record.
func (tx *Tx) PutMirrored(ticketID, upstreamMsgID, helpdeskID string, at time.Time, info MessageInfo) error {
	m := MirroredMessage{HelpdeskID: helpdeskID, At: at, MessageInfo: info}
	utc(&m.At, &m.WrittenAt)
	return mirroredKind.put(tx, fmt.Sprintf("put mirrored message %q of ticket %q", upstreamMsgID, ticketID), ticketID, upstreamMsgID, &m)
}

// IsMirrored reports whether upstream message msgID of ticket ticketID was
// mirrored. It reads one key; it does not decode the record.
func (tx *Tx) IsMirrored(ticketID, msgID string) (bool, error) {
	return mirroredKind.has(tx, ticketID, msgID)
}

// Mirrored returns the mirrored messages of a ticket by upstream message id;
// an empty map when there are none.
func (tx *Tx) Mirrored(ticketID string) (map[string]MirroredMessage, error) {
	return mirroredKind.all(tx, ticketID)
}

// MarkOwn records that upstream message upstreamMsgID of ticket ticketID is
// the bridge's own post, made for helpdesk event eventID and confirmed at
// at, so that refresh never mirrors it back; info is what staff see of it
// (zero when unknown). The ticket must be in state.
func (tx *Tx) MarkOwn(ticketID, upstreamMsgID, eventID string, at time.Time, info MessageInfo) error {
	m := OwnMessage{EventID: eventID, At: at, MessageInfo: info}
	utc(&m.At, &m.WrittenAt)
	return ownKind.put(tx, fmt.Sprintf("mark own message %q of ticket %q", upstreamMsgID, ticketID), ticketID, upstreamMsgID, &m)
}

// IsOwn reports whether upstream message msgID of ticket ticketID is one of
// the bridge's own posts.
func (tx *Tx) IsOwn(ticketID, msgID string) (bool, error) {
	return ownKind.has(tx, ticketID, msgID)
}

// OwnMessages returns the bridge's own posts on a ticket by upstream message
// id; an empty map when there are none.
func (tx *Tx) OwnMessages(ticketID string) (map[string]OwnMessage, error) {
	return ownKind.all(tx, ticketID)
}

// Known reports whether refresh must skip upstream message msgID of ticket
// ticketID: it was mirrored already, or it is the bridge's own post.
func (tx *Tx) Known(ticketID, msgID string) (bool, error) {
	if ok, err := tx.IsMirrored(ticketID, msgID); ok || err != nil {
		return ok, err
	}
	return tx.IsOwn(ticketID, msgID)
}

// DeleteMessages forgets the mirrored and own message records of a ticket,
// keeping the ticket itself (e.g. when it is retired).
func (tx *Tx) DeleteMessages(ticketID string) error {
	what := fmt.Sprintf("delete messages of ticket %q", ticketID)
	if err := checkID("ticket id", ticketID); err != nil {
		return invalid(what, err)
	}
	if err := tx.deleteMessages(ticketID); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (tx *Tx) deleteMessages(ticketID string) error {
	prefix := messageKey(ticketID, "")
	for _, name := range []string{bucketMirrored, bucketOwn} {
		if err := tx.kv.delPrefix(name, prefix); err != nil {
			return err
		}
	}
	return nil
}

// has reports whether key is in bucket.
func (tx *Tx) has(bucket string, key []byte) (bool, error) {
	data, err := tx.kv.get(bucket, key)
	if err != nil {
		return false, fmt.Errorf("look up %s/%q: %w", bucket, key, err)
	}
	return data != nil, nil
}

// scanMessages calls fn for each key of bucket under "<ticketID>/".
func (tx *Tx) scanMessages(bucket, ticketID string, fn func(msgID string, key, v []byte) error) error {
	if err := checkID("ticket id", ticketID); err != nil {
		return invalid(fmt.Sprintf("list %s messages of ticket %q", bucket, ticketID), err)
	}
	prefix := messageKey(ticketID, "")
	return tx.kv.scan(bucket, prefix, func(k, v []byte) error {
		return fn(string(k[len(prefix):]), k, v)
	})
}

// Cursor returns the stored cursor of name; "" (from the beginning) when
// none was stored.
func (tx *Tx) Cursor(name string) (string, error) {
	if err := checkKey("cursor name", name); err != nil {
		return "", invalid("get cursor", err)
	}
	data, err := tx.kv.get(bucketCursors, []byte(name))
	if err != nil {
		return "", fmt.Errorf("get cursor %q: %w", name, err)
	}
	if data == nil {
		return "", nil
	}
	c, err := decodeCursor(name, data)
	if err != nil {
		return "", err
	}
	return c.Cursor, nil
}

// SetCursor stores cursor c under name. Store it only once every event
// before it was journaled.
func (tx *Tx) SetCursor(name, c string) error {
	what := fmt.Sprintf("set cursor %q", name)
	if err := checkKey("cursor name", name); err != nil {
		return invalid(what, err)
	}
	rec := cursorRecord{Cursor: c, At: tx.s.now()}
	utc(&rec.At)
	return tx.put(what, bucketCursors, []byte(name), cursorVersion, &rec)
}

// Cursors returns every stored cursor by name.
func (tx *Tx) Cursors() (map[string]string, error) {
	out := map[string]string{}
	err := tx.kv.scan(bucketCursors, nil, func(k, v []byte) error {
		c, err := decodeCursor(string(k), v)
		if err != nil {
			return err
		}
		out[string(k)] = c.Cursor
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func checkMetaKey(key string) error {
	if err := checkKey("meta key", key); err != nil {
		return err
	}
	if key == metaSchema || key == metaCreated {
		return fmt.Errorf("meta key %q is reserved", key)
	}
	return nil
}

// Meta returns the engine value stored under key; ok is false when there is
// none. The reserved keys (schema_version, created_at) can be read too.
func (tx *Tx) Meta(key string) (val string, ok bool, err error) {
	if err := checkKey("meta key", key); err != nil {
		return "", false, invalid("get meta", err)
	}
	if key == metaSchema {
		// The schema version is the store's; a PostgreSQL database keeps
		// it for all hotels at once.
		return strconv.Itoa(tx.s.schema), true, nil
	}
	data, err := tx.kv.get(bucketMeta, []byte(key))
	if err != nil {
		return "", false, fmt.Errorf("get meta %q: %w", key, err)
	}
	if data == nil {
		return "", false, nil
	}
	return string(data), true, nil
}

// SetMeta stores val under key, e.g. the adapter name the state was made
// for. The reserved keys schema_version and created_at are refused.
func (tx *Tx) SetMeta(key, val string) error {
	what := fmt.Sprintf("set meta %q", key)
	if err := checkMetaKey(key); err != nil {
		return invalid(what, err)
	}
	if err := tx.kv.put(bucketMeta, []byte(key), []byte(val)); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// DeleteMeta removes key; removing an absent key is not an error.
func (tx *Tx) DeleteMeta(key string) error {
	what := fmt.Sprintf("delete meta %q", key)
	if err := checkMetaKey(key); err != nil {
		return invalid(what, err)
	}
	if err := tx.kv.del(bucketMeta, []byte(key)); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// Cycle record keys.
const (
	cycleLast    = "last"
	cycleSuccess = "last_success"
)

// PutCycle records c as the last cycle and, when c.Success, also as the last
// successful one.
func (tx *Tx) PutCycle(c Cycle) error {
	what := "put cycle"
	if err := c.validate(); err != nil {
		return invalid(what, err)
	}
	c.normalize()
	if len(c.Report) > 0 {
		var compact bytes.Buffer
		if err := json.Compact(&compact, c.Report); err != nil {
			return invalid(what, err)
		}
		c.Report = compact.Bytes()
	}
	if err := tx.put(what, bucketCycles, []byte(cycleLast), cycleVersion, &c); err != nil {
		return err
	}
	if c.Success {
		return tx.put(what, bucketCycles, []byte(cycleSuccess), cycleVersion, &c)
	}
	return nil
}

// LastCycle returns the last cycle recorded; ok is false before the first.
func (tx *Tx) LastCycle() (c Cycle, ok bool, err error) {
	return tx.cycle(cycleLast)
}

// LastSuccess returns the last cycle recorded with Success set; ok is false
// when there was none.
func (tx *Tx) LastSuccess() (c Cycle, ok bool, err error) {
	return tx.cycle(cycleSuccess)
}

func (tx *Tx) cycle(key string) (Cycle, bool, error) {
	data, err := tx.kv.get(bucketCycles, []byte(key))
	if err != nil {
		return Cycle{}, false, fmt.Errorf("get cycle %q: %w", key, err)
	}
	if data == nil {
		return Cycle{}, false, nil
	}
	c, err := decodeCycle(key, data)
	if err != nil {
		return Cycle{}, false, err
	}
	return c, true, nil
}

// CreatedAt returns when the state file was made.
func (tx *Tx) CreatedAt() (time.Time, error) {
	data, err := tx.kv.get(bucketMeta, []byte(metaCreated))
	if err != nil {
		return time.Time{}, fmt.Errorf("get creation time: %w", err)
	}
	if data == nil {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, string(data))
	if err != nil {
		return time.Time{}, &RecordError{Bucket: bucketMeta, Key: metaCreated, Err: err}
	}
	return t, nil
}

// MessageCounts returns, for every ticket with messages, how many upstream
// messages are mirrored and how many are the bridge's own: the lengths of
// what Mirrored and OwnMessages return, read in two scans whatever the
// number of tickets (two round trips on PostgreSQL).
func (tx *Tx) MessageCounts() (mirrored, own map[string]int, err error) {
	count := func(bucket string) (map[string]int, error) {
		m := map[string]int{}
		err := tx.kv.scan(bucket, nil, func(k, _ []byte) error {
			if i := bytes.IndexByte(k, '/'); i >= 0 {
				m[string(k[:i])]++
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("count %s messages: %w", bucket, err)
		}
		return m, nil
	}
	if mirrored, err = count(bucketMirrored); err != nil {
		return nil, nil, err
	}
	if own, err = count(bucketOwn); err != nil {
		return nil, nil, err
	}
	return mirrored, own, nil
}
