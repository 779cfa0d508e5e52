package state

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// seqKey is the index key of a journal sequence number: 16 hex digits, so
// byte order is numeric order.
func seqKey(seq uint64) []byte {
	return fmt.Appendf(nil, "%016x", seq)
}

func ticketSeqKey(ticketID string, seq uint64) []byte {
	return append(messageKey(ticketID, ""), seqKey(seq)...)
}

// indexes returns the index buckets and keys an entry belongs to.
func (e *Entry) indexes() map[string][]byte {
	ix := map[string][]byte{bucketJournalTicket: ticketSeqKey(e.TicketID, e.Seq)}
	switch {
	case e.State == Pending:
		ix[bucketJournalPending] = seqKey(e.Seq)
	case e.State == Failed:
		ix[bucketJournalFailed] = seqKey(e.Seq)
	case e.State == Sent && e.MarkedAt.IsZero():
		ix[bucketJournalUnmarked] = seqKey(e.Seq)
	}
	return ix
}

// JournalEntry returns the entry of helpdesk event eventID; ok is false when
// the event was never journaled (or was pruned).
func (tx *Tx) JournalEntry(eventID string) (e Entry, ok bool, err error) {
	if err := checkKey("event id", eventID); err != nil {
		return Entry{}, false, invalid("get journal entry", err)
	}
	data, err := tx.kv.get(bucketJournal, []byte(eventID))
	if err != nil {
		return Entry{}, false, fmt.Errorf("get journal entry %q: %w", eventID, err)
	}
	if data == nil {
		return Entry{}, false, nil
	}
	e, err = decodeEntry(eventID, data)
	if err != nil {
		return Entry{}, false, err
	}
	return e, true, nil
}

// PutJournal stores e under e.EventID and returns it as stored.
//
// A new entry gets the next Seq and, when zero, CreatedAt = now; its ticket
// must be in state. An existing entry keeps its Seq and CreatedAt, and
// PutJournal refuses (ErrInvalid) to change what identifies the request:
// TicketID, Ref, IdempotencyKey, Kind and Payload, and the UpstreamMessageID
// of a sent entry; a Sent entry cannot leave Sent. PayloadHash is computed;
// a non-empty one that does not match the payload is refused. UpdatedAt is
// set to now.
func (tx *Tx) PutJournal(e Entry) (Entry, error) {
	what := fmt.Sprintf("put journal entry %q", e.EventID)
	e.normalize()
	if err := e.validate(); err != nil {
		return Entry{}, invalid(what, err)
	}
	givenHash := e.PayloadHash
	e.PayloadHash = e.Payload.Hash()

	var old *Entry
	data, err := tx.kv.get(bucketJournal, []byte(e.EventID))
	if err != nil {
		return Entry{}, fmt.Errorf("%s: %w", what, err)
	}
	if data != nil {
		prev, err := decodeEntry(e.EventID, data)
		if err != nil {
			return Entry{}, fmt.Errorf("%s: %w", what, err)
		}
		old = &prev
		// Compare with what is stored first: a changed payload is
		// reported as such, not as a stale hash.
		if err := checkUpdate(old, &e); err != nil {
			return Entry{}, invalid(what, err)
		}
	}
	if givenHash != "" && givenHash != e.PayloadHash {
		return Entry{}, invalid(what, fmt.Errorf("payload_hash %q does not match the payload (%s)", givenHash, e.PayloadHash))
	}
	if old != nil {
		e.Seq = old.Seq
		if e.CreatedAt.IsZero() {
			e.CreatedAt = old.CreatedAt
		}
	} else {
		if err := tx.requireTicket(what, e.TicketID); err != nil {
			return Entry{}, err
		}
		seq, err := tx.kv.nextSeq(bucketJournal)
		if err != nil {
			return Entry{}, fmt.Errorf("%s: %w", what, err)
		}
		e.Seq = seq
		if e.CreatedAt.IsZero() {
			e.CreatedAt = tx.s.now()
		}
	}
	e.UpdatedAt = tx.s.now()
	e.normalize()

	if err := tx.put(what, bucketJournal, []byte(e.EventID), entryVersion, &e); err != nil {
		return Entry{}, err
	}
	if err := tx.reindex(old, &e); err != nil {
		return Entry{}, fmt.Errorf("%s: %w", what, err)
	}
	return e, nil
}

// checkUpdate refuses changes to what an entry sent (or will send) upstream.
func checkUpdate(old, e *Entry) error {
	same := func(field, a, b string) error {
		if a != b {
			return fmt.Errorf("%s changed from %q to %q; a journaled event never changes what it sends", field, a, b)
		}
		return nil
	}
	for _, err := range []error{
		same("ticket_id", old.TicketID, e.TicketID),
		same("ref", old.Ref, e.Ref),
		same("idempotency_key", old.IdempotencyKey, e.IdempotencyKey),
		same("kind", old.Kind, e.Kind),
		same("payload_hash", old.PayloadHash, e.PayloadHash),
	} {
		if err != nil {
			return err
		}
	}
	if e.Seq != 0 && e.Seq != old.Seq {
		return fmt.Errorf("seq changed from %d to %d; it is assigned once", old.Seq, e.Seq)
	}
	if old.State == Sent {
		if e.State != Sent {
			return fmt.Errorf("state changed from %s to %s; a sent entry stays sent", old.State, e.State)
		}
		if err := same("upstream_message_id", old.UpstreamMessageID, e.UpstreamMessageID); err != nil {
			return err
		}
	}
	return nil
}

// reindex moves an entry's index keys from old's (nil for a new entry) to
// e's.
func (tx *Tx) reindex(old, e *Entry) error {
	want := e.indexes()
	if old != nil {
		for name, key := range old.indexes() {
			if bytes.Equal(want[name], key) {
				continue
			}
			if err := tx.kv.del(name, key); err != nil {
				return err
			}
		}
	}
	for name, key := range want {
		if err := tx.kv.put(name, key, []byte(e.EventID)); err != nil {
			return err
		}
	}
	return nil
}

// listIndex returns the entries an index bucket points to, in key order,
// for keys under prefix. Entries that cannot be read are left out and
// reported together in an error matching ErrCorrupt; the entries returned
// with it are valid.
func (tx *Tx) listIndex(name string, prefix []byte) ([]Entry, error) {
	var keys, ids [][]byte
	err := tx.kv.scan(name, prefix, func(k, v []byte) error {
		keys = append(keys, bytes.Clone(k))
		ids = append(ids, bytes.Clone(v))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", name, err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	// One lookup for all entries: one round trip on PostgreSQL.
	vals, err := tx.kv.getMany(bucketJournal, ids)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", name, err)
	}
	var (
		out     []Entry
		corrupt []error
	)
	for i, data := range vals {
		id := string(ids[i])
		if data == nil {
			corrupt = append(corrupt, &RecordError{Bucket: name, Key: string(keys[i]), Err: fmt.Errorf("points to journal entry %q, which does not exist", id)})
			continue
		}
		e, err := decodeEntry(id, data)
		if err != nil {
			corrupt = append(corrupt, err)
			continue
		}
		out = append(out, e)
	}
	return out, errors.Join(corrupt...)
}

// PendingJournal returns the Pending entries, oldest (lowest Seq) first.
// Entries that cannot be decoded are left out and reported in an error
// matching ErrCorrupt, returned together with the good entries.
func (tx *Tx) PendingJournal() ([]Entry, error) {
	return tx.listIndex(bucketJournalPending, nil)
}

// UnmarkedJournal returns the Sent entries whose MarkedAt is zero (the
// adapter's MarkSent is still to be done), oldest first; errors as
// PendingJournal.
func (tx *Tx) UnmarkedJournal() ([]Entry, error) {
	return tx.listIndex(bucketJournalUnmarked, nil)
}

// FailedJournal returns the Failed entries, oldest first; errors as
// PendingJournal.
func (tx *Tx) FailedJournal() ([]Entry, error) {
	return tx.listIndex(bucketJournalFailed, nil)
}

// JournalForTicket returns every entry of upstream ticket ticketID, oldest
// first; errors as PendingJournal.
func (tx *Tx) JournalForTicket(ticketID string) ([]Entry, error) {
	if err := checkID("ticket id", ticketID); err != nil {
		return nil, invalid(fmt.Sprintf("list journal of ticket %q", ticketID), err)
	}
	return tx.listIndex(bucketJournalTicket, messageKey(ticketID, ""))
}

// DeleteJournal removes the entry of eventID and its index keys, also when
// the entry is corrupt. Removing an absent entry is not an error. Once
// removed, an event seen again would be journaled anew, with the
// Idempotency-Key the engine derives for it.
func (tx *Tx) DeleteJournal(eventID string) error {
	what := fmt.Sprintf("delete journal entry %q", eventID)
	if err := checkKey("event id", eventID); err != nil {
		return invalid(what, err)
	}
	data, err := tx.kv.get(bucketJournal, []byte(eventID))
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if data == nil {
		return nil
	}
	if e, err := decodeEntry(eventID, data); err == nil {
		for name, key := range e.indexes() {
			if err := tx.kv.del(name, key); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
		}
	} else if err := tx.unindex(eventID); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := tx.kv.del(bucketJournal, []byte(eventID)); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// unindex removes every index key pointing to eventID, by scanning: the
// route for an entry too corrupt to say where it is indexed.
func (tx *Tx) unindex(eventID string) error {
	for _, name := range []string{bucketJournalPending, bucketJournalUnmarked, bucketJournalFailed, bucketJournalTicket} {
		var keys [][]byte
		err := tx.kv.scan(name, nil, func(k, v []byte) error {
			if string(v) == eventID {
				keys = append(keys, bytes.Clone(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := tx.kv.del(name, k); err != nil {
				return err
			}
		}
	}
	return nil
}

// PruneJournal removes the entries that are done and older than before:
// Sent entries marked in the helpdesk with SentAt before it, and Failed
// entries last updated before it. Pending, unmarked and abandoned entries
// are kept.
// Prune only what the adapter's cursor has long moved past: a pruned event
// that came back would be journaled again. It returns how many entries it
// removed; corrupt entries are kept and reported as PendingJournal does.
func (tx *Tx) PruneJournal(before time.Time) (int, error) {
	var (
		victims []Entry
		corrupt []error
	)
	err := tx.kv.scan(bucketJournal, nil, func(k, v []byte) error {
		e, err := decodeEntry(string(k), v)
		if err != nil {
			corrupt = append(corrupt, err)
			return nil
		}
		sentDone := e.State == Sent && !e.MarkedAt.IsZero() && e.SentAt.Before(before)
		failedOld := e.State == Failed && e.UpdatedAt.Before(before)
		if sentDone || failedOld {
			victims = append(victims, e)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("prune journal: %w", err)
	}
	for i := range victims {
		e := &victims[i]
		for name, key := range e.indexes() {
			if err := tx.kv.del(name, key); err != nil {
				return 0, fmt.Errorf("prune journal entry %q: %w", e.EventID, err)
			}
		}
		if err := tx.kv.del(bucketJournal, []byte(e.EventID)); err != nil {
			return 0, fmt.Errorf("prune journal entry %q: %w", e.EventID, err)
		}
	}
	return len(victims), errors.Join(corrupt...)
}

// RecentJournal returns, for every ticket with journal entries, its last n
// entries, oldest first: what JournalForTicket returns of each ticket,
// trimmed (unless more than four of its last n+4 are corrupt), read in two
// lookups whatever the number of tickets (two round
// trips on PostgreSQL, where JournalForTicket costs two per ticket).
// Entries that cannot be read are left out and reported together in an
// error matching ErrCorrupt, returned with the good ones.
func (tx *Tx) RecentJournal(n int) (map[string][]Entry, error) {
	if n < 1 {
		return nil, invalid("list recent journal entries", fmt.Errorf("want 1 or more entries a ticket, got %d", n))
	}
	// A few more than n are read, so that a corrupt one among the last
	// leaves n good ones, as JournalForTicket's would.
	keep := n + 4
	byTicket := map[string][][2][]byte{} // ticket -> its last keep (index key, event id)
	err := tx.kv.scan(bucketJournalTicket, nil, func(k, v []byte) error {
		i := bytes.IndexByte(k, '/')
		if i < 0 {
			return nil // not an index key: listIndex of its ticket would not see it either
		}
		t := string(k[:i])
		ks := append(byTicket[t], [2][]byte{bytes.Clone(k), bytes.Clone(v)})
		if len(ks) > keep {
			ks = ks[1:]
		}
		byTicket[t] = ks
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", bucketJournalTicket, err)
	}
	tickets := slices.Sorted(maps.Keys(byTicket)) // one order for both loops
	var ids [][]byte
	for _, t := range tickets {
		for _, kv := range byTicket[t] {
			ids = append(ids, kv[1])
		}
	}
	if len(ids) == 0 {
		return map[string][]Entry{}, nil
	}
	vals, err := tx.kv.getMany(bucketJournal, ids)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", bucketJournalTicket, err)
	}
	out := make(map[string][]Entry, len(byTicket))
	var corrupt []error
	i := 0
	for _, t := range tickets {
		for _, kv := range byTicket[t] {
			data := vals[i]
			i++
			if data == nil {
				corrupt = append(corrupt, &RecordError{Bucket: bucketJournalTicket, Key: string(kv[0]), Err: fmt.Errorf("points to journal entry %q, which does not exist", kv[1])})
				continue
			}
			e, err := decodeEntry(string(kv[1]), data)
			if err != nil {
				corrupt = append(corrupt, err)
				continue
			}
			out[t] = append(out[t], e)
		}
		if es := out[t]; len(es) > n {
			out[t] = es[len(es)-n:]
		}
	}
	return out, errors.Join(corrupt...)
}
