package state

import (
	"errors"
	"fmt"
	"time"
)

// notOursVersion is the record version of [NotOurs].
const notOursVersion = 1

// NotOurs is a helpdesk ticket that is not this hotel's: the helpdesk
// reported events on it naming an upstream ticket that state held no
// mapping of (the bridge did not create it), and the API answered 404 for
// that ticket. In a helpdesk queue that several hotels share, it is
// another hotel's; the engine ignores its events from then on. It is kept
// under the upstream id.
type NotOurs struct {
	// ID is the upstream ticket id the helpdesk's events name.
	ID string `json:"id"`
	// Ref is the helpdesk ticket, when the helpdesk named one.
	Ref string `json:"ref,omitempty"`
	// At is when the API answered 404 for it.
	At time.Time `json:"at,omitzero"`
}

// NotOurs returns the record of upstream ticket id; ok is false when
// state holds none.
func (tx *Tx) NotOurs(id string) (n NotOurs, ok bool, err error) {
	data, err := tx.kv.get(bucketNotOurs, []byte(id))
	if err != nil {
		return NotOurs{}, false, fmt.Errorf("get not-ours ticket %q: %w", id, err)
	}
	if data == nil {
		return NotOurs{}, false, nil
	}
	n, err = decodeNotOurs(id, data)
	return n, err == nil, err
}

// PutNotOurs stores n under n.ID, replacing what was there.
func (tx *Tx) PutNotOurs(n NotOurs) error {
	what := fmt.Sprintf("put not-ours ticket %q", n.ID)
	if err := checkID("id", n.ID); err != nil {
		return invalid(what, err)
	}
	utc(&n.At)
	return tx.put(what, bucketNotOurs, []byte(n.ID), notOursVersion, &n)
}

// DeleteNotOurs removes the record of upstream ticket id; one state does
// not hold is no error.
func (tx *Tx) DeleteNotOurs(id string) error {
	if err := checkID("id", id); err != nil {
		return invalid(fmt.Sprintf("delete not-ours ticket %q", id), err)
	}
	if err := tx.kv.del(bucketNotOurs, []byte(id)); err != nil {
		return fmt.Errorf("delete not-ours ticket %q: %w", id, err)
	}
	return nil
}

// ForEachNotOurs calls fn with every not-ours record, in id order. A
// record that cannot be decoded is skipped and returned at the end, as
// ForEachTicket does.
func (tx *Tx) ForEachNotOurs(fn func(NotOurs) error) error {
	var corrupt []error
	err := tx.kv.scan(bucketNotOurs, nil, func(k, v []byte) error {
		n, err := decodeNotOurs(string(k), v)
		if err != nil {
			corrupt = append(corrupt, err)
			return nil
		}
		return fn(n)
	})
	if err != nil {
		return err
	}
	return errors.Join(corrupt...)
}

func decodeNotOurs(key string, data []byte) (NotOurs, error) {
	var n NotOurs
	if err := decode(bucketNotOurs, key, data, notOursVersion, &n); err != nil {
		return NotOurs{}, err
	}
	if n.ID != key {
		return NotOurs{}, &RecordError{Bucket: bucketNotOurs, Key: key, Err: fmt.Errorf("record id %q differs from its key", n.ID)}
	}
	return n, nil
}
