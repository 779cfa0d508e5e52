package state

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	gosync "sync"
)

// Stats is a summary of the state for `ticketbridge status` and metrics.
type Stats struct {
	// Backend is "bbolt" or "postgres" (see [Store.Backend]).
	Backend string
	// Schema is the schema version. FileSize is the bbolt file's size in
	// bytes; 0 on PostgreSQL, where the hotel's rows share tables with
	// other hotels (see DataBytes).
	Schema   int
	FileSize int64
	// DataBytes is, on PostgreSQL, the size of the hotel's keys and
	// values (the database's own overhead and indexes not counted); 0 on
	// bbolt, where FileSize says it.
	DataBytes int64

	// Tickets counts the ticket records, retired ones included.
	Tickets int
	// ByStatus counts the tickets by last upstream status seen; a ticket
	// never read is counted under "".
	ByStatus map[string]int
	// Retired counts the retired tickets, WithErrors those whose LastError
	// is set, and Corrupt the records that cannot be decoded.
	Retired    int
	WithErrors int
	Corrupt    int

	// Mirrored counts the upstream messages mirrored into the helpdesk, Own
	// the bridge's own upstream posts.
	Mirrored int
	Own      int

	// Journal entries by state; JournalUnmarked counts the Sent entries
	// whose MarkedAt is zero (included in JournalSent).
	JournalPending  int
	JournalSent     int
	JournalFailed   int
	JournalUnmarked int
	// JournalAbandoned counts the entries an operator set aside (skip).
	JournalAbandoned int

	// Cursors counts the stored adapter cursors.
	Cursors int
	// NotOurs counts the helpdesk tickets that are not this hotel's
	// (see [NotOurs]); Deleted the tickets taken for deleted on the
	// platform (see Ticket.Deleted), counted in Tickets and Retired too.
	NotOurs int
	Deleted int
}

// Stats summarises the state in one read transaction. It decodes every
// ticket record and counts the other buckets' keys, so it costs some tens of
// milliseconds per ten thousand tickets; corrupt ticket records are counted,
// not returned as an error. ctx bounds it as it does View.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	st := Stats{Backend: s.Backend(), Schema: s.schema, ByStatus: map[string]int{}}
	err := s.View(ctx, func(tx *Tx) error {
		err := tx.kv.scan(bucketTickets, nil, func(k, v []byte) error {
			st.Tickets++
			t, err := s.tickets.decode(k, v)
			if err != nil {
				st.Corrupt++
				return nil
			}
			st.ByStatus[t.UpstreamStatus]++
			if t.Retired {
				st.Retired++
			}
			if !t.Deleted.IsZero() {
				st.Deleted++
			}
			if t.LastError != "" {
				st.WithErrors++
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, c := range []struct {
			bucket string
			n      *int
		}{
			{bucketMirrored, &st.Mirrored},
			{bucketOwn, &st.Own},
			{bucketJournalPending, &st.JournalPending},
			{bucketJournalFailed, &st.JournalFailed},
			{bucketJournalUnmarked, &st.JournalUnmarked},
			{bucketJournal, &st.JournalSent},
			{bucketCursors, &st.Cursors},
			{bucketNotOurs, &st.NotOurs},
		} {
			if *c.n, err = tx.kv.count(c.bucket); err != nil {
				return err
			}
		}
		st.JournalSent -= st.JournalPending + st.JournalFailed
		if pt, ok := tx.kv.(*pgTx); ok {
			st.DataBytes = pt.bytes // read with the counts
		}
		// Abandoned entries have no index of their own: they are few, and
		// found by their state's bytes without decoding the journal.
		abandoned := []byte(`"state":"` + string(Abandoned) + `"`)
		if err := tx.kv.scan(bucketJournal, nil, func(_, v []byte) error {
			if bytes.Contains(v, abandoned) {
				st.JournalAbandoned++
			}
			return nil
		}); err != nil {
			return err
		}
		st.JournalSent -= st.JournalAbandoned
		return nil
	})
	if err != nil {
		return Stats{}, fmt.Errorf("summarise state %s: %w", s.path, err)
	}
	if s.pg == nil {
		if fi, err := os.Stat(s.path); err == nil {
			st.FileSize = fi.Size()
		}
	}
	return st, nil
}

// statsCache is the last Stats a store read, and its commits then.
type statsCache struct {
	mu      gosync.Mutex
	st      *Stats
	commits int64
}

// StatsOnCommit returns what [Store.Stats] returns, read again only when
// the store committed since its last read: the metrics' gauges are taken
// after every cycle, and a quiet cycle changes nothing. Stats scans every
// ticket and journal record (on PostgreSQL, a transfer of them all), which
// was a tenth of a quiet daemon's CPU at 2,000 hotels. Writes by another
// process (a command run against a PostgreSQL state) show after this
// store's next commit.
func (s *Store) StatsOnCommit(ctx context.Context) (Stats, error) {
	commits := s.Commits() // before the read: a commit during it reads again next time
	s.stats.mu.Lock()
	if c := s.stats.st; c != nil && s.stats.commits == commits {
		st := *c
		st.ByStatus = maps.Clone(c.ByStatus)
		s.stats.mu.Unlock()
		return st, nil
	}
	s.stats.mu.Unlock()
	st, err := s.Stats(ctx)
	if err != nil {
		return st, err
	}
	c := st
	c.ByStatus = maps.Clone(st.ByStatus)
	s.stats.mu.Lock()
	s.stats.st, s.stats.commits = &c, commits
	s.stats.mu.Unlock()
	return st, nil
}
