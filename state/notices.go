package state

// This file keeps the notifications' episodes (package notify's
// Journal) in the hotel's state, so that a restart, or the replica that
// takes the hotel over, neither repeats a notice nor loses one.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/notify"
)

// noticeVersion is the "v" of a stored episode.
const noticeVersion = 1

// noticeRecord is how an episode is stored, under <kind>/<subject>.
type noticeRecord struct {
	Hotel     string    `json:"hotel,omitempty"`
	Kind      string    `json:"kind"`
	Subject   string    `json:"subject,omitempty"`
	Version   uint64    `json:"version"`
	Since     time.Time `json:"since,omitzero"`
	Cause     string    `json:"cause,omitempty"`
	Fix       string    `json:"fix,omitempty"`
	Fired     bool      `json:"fired,omitempty"`
	Count     int       `json:"count,omitempty"`
	LastAt    time.Time `json:"last_at,omitzero"`
	Resolved  bool      `json:"resolved,omitempty"`
	Pending   string    `json:"pending,omitempty"`
	PendingAt time.Time `json:"pending_at,omitzero"`
}

func noticeKey(k notify.Key) ([]byte, error) {
	if k.Kind == "" || strings.Contains(string(k.Kind), "/") {
		return nil, invalid("notice key", fmt.Errorf("kind %q: want a name without /", k.Kind))
	}
	key := string(k.Kind) + "/" + k.Subject
	if len(key) > maxKeyLen {
		return nil, invalid("notice key", fmt.Errorf("%d bytes, more than %d", len(key), maxKeyLen))
	}
	return []byte(key), nil
}

func toRecord(ep notify.Episode) noticeRecord {
	return noticeRecord{Hotel: ep.Hotel, Kind: string(ep.Kind), Subject: ep.Subject, Version: ep.Version,
		Since: ep.Since.UTC(), Cause: ep.Cause, Fix: ep.Fix, Fired: ep.Fired, Count: ep.Count, LastAt: ep.LastAt.UTC(),
		Resolved: ep.Resolved, Pending: string(ep.Pending), PendingAt: ep.PendingAt.UTC()}
}

func (r noticeRecord) episode() notify.Episode {
	return notify.Episode{Key: notify.Key{Hotel: r.Hotel, Kind: notify.Kind(r.Kind), Subject: r.Subject}, Version: r.Version,
		Since: r.Since, Cause: r.Cause, Fix: r.Fix, Fired: r.Fired, Count: r.Count, LastAt: r.LastAt,
		Resolved: r.Resolved, Pending: notify.Phase(r.Pending), PendingAt: r.PendingAt}
}

func (tx *Tx) notice(k notify.Key) (notify.Episode, bool, error) {
	key, err := noticeKey(k)
	if err != nil {
		return notify.Episode{}, false, err
	}
	data, err := tx.kv.get(bucketNotices, key)
	if err != nil || data == nil {
		return notify.Episode{}, false, err
	}
	var r noticeRecord
	if err := decode(bucketNotices, string(key), data, noticeVersion, &r); err != nil {
		return notify.Episode{}, false, err
	}
	return r.episode(), true, nil
}

// Notices is the hotel's journal of notification episodes; the store's
// hotel is every episode's (a daemon of many hotels routes each to its
// hotel's store). An episode is keyed by its kind and subject only, and
// read back under the name it is asked for: the hotel's name is not part
// of its identity, so that the episodes follow the state when `hotels
// adopt` makes the one hotel's state (named default) a hotel of the
// hotels directory, and the hotel resolves what fired before the move.
// The name stored in the record says under which name it was written.
func (s *Store) Notices() notify.Journal { return notices{s} }

type notices struct{ s *Store }

// Get returns the stored episode of k, named k's hotel.
func (j notices) Get(ctx context.Context, k notify.Key) (ep notify.Episode, ok bool, err error) {
	err = j.s.View(ctx, func(tx *Tx) error {
		ep, ok, err = tx.notice(k)
		return err
	})
	if ok {
		ep.Hotel = k.Hotel
	}
	return ep, ok, err
}

// Put stores ep over version prev in one transaction: on PostgreSQL, a
// replica that wrote in between makes it fail (a serialization error), as
// does one whose lease of the hotel moved on; on bbolt the file's lock
// keeps other processes out. A resolved episode with no pending notice is
// deleted. The write is not one of the store's Commits.
func (j notices) Put(ctx context.Context, ep notify.Episode, prev uint64) (ok bool, err error) {
	key, err := noticeKey(ep.Key)
	if err != nil {
		return false, err
	}
	err = j.s.update(ctx, func(tx *Tx) error {
		cur, found, err := tx.notice(ep.Key)
		if err != nil {
			return err
		}
		if (found && cur.Version != prev) || (!found && prev != 0) {
			return nil
		}
		ok = true
		if ep.Resolved && ep.Pending == "" {
			return tx.kv.del(bucketNotices, key)
		}
		data, err := encode(noticeVersion, toRecord(ep))
		if err != nil {
			return err
		}
		return tx.kv.put(bucketNotices, key, data)
	})
	if err != nil {
		return false, fmt.Errorf("put notice %s: %w", ep.Key, err)
	}
	return ok, nil
}

// Open returns the episodes of the store that are not resolved, named
// hotel: every episode the store keeps is its hotel's, whatever name it
// was written under (see Notices).
func (j notices) Open(ctx context.Context, hotel string) ([]notify.Episode, error) {
	open, err := j.list(ctx, func(ep notify.Episode) bool { return !ep.Resolved })
	for i := range open {
		open[i].Hotel = hotel
	}
	return open, err
}

// Unsent returns the episodes with a notice decided before before and not
// marked sent.
func (j notices) Unsent(ctx context.Context, before time.Time) ([]notify.Episode, error) {
	return j.list(ctx, func(ep notify.Episode) bool { return ep.Pending != "" && ep.PendingAt.Before(before) })
}

func (j notices) list(ctx context.Context, keep func(notify.Episode) bool) ([]notify.Episode, error) {
	var out []notify.Episode
	err := j.s.View(ctx, func(tx *Tx) error {
		return tx.kv.scan(bucketNotices, nil, func(k, v []byte) error {
			var r noticeRecord
			if err := decode(bucketNotices, string(k), v, noticeVersion, &r); err != nil {
				return err
			}
			if ep := r.episode(); keep(ep) {
				out = append(out, ep)
			}
			return nil
		})
	})
	return out, err
}
