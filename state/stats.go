package state

import (
	"bytes"
	"fmt"
	"os"
)

// Stats is a summary of the state for `ticketbridge status` and metrics.
type Stats struct {
	// Schema is the file's schema version; FileSize its size in bytes.
	Schema   int
	FileSize int64

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
}

// Stats summarises the state in one read transaction. It decodes every
// ticket record and counts the other buckets' keys, so it costs some tens of
// milliseconds per ten thousand tickets; corrupt ticket records are counted,
// not returned as an error.
func (s *Store) Stats() (Stats, error) {
	var st Stats
	err := s.View(func(tx *Tx) error {
		st.Schema = tx.schemaOf()
		st.FileSize = tx.tx.Size()
		st.ByStatus = map[string]int{}
		c := tx.bucket(bucketTickets).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			st.Tickets++
			t, err := decodeTicket(string(k), v)
			if err != nil {
				st.Corrupt++
				continue
			}
			st.ByStatus[t.UpstreamStatus]++
			if t.Retired {
				st.Retired++
			}
			if t.LastError != "" {
				st.WithErrors++
			}
		}
		st.Mirrored = keyN(tx.bucket(bucketMirrored))
		st.Own = keyN(tx.bucket(bucketOwn))
		st.JournalPending = keyN(tx.bucket(bucketJournalPending))
		st.JournalFailed = keyN(tx.bucket(bucketJournalFailed))
		st.JournalUnmarked = keyN(tx.bucket(bucketJournalUnmarked))
		// Abandoned entries have no index of their own: they are few, and
		// found by their state's bytes without decoding the journal.
		abandoned := []byte(`"state":"` + string(Abandoned) + `"`)
		_ = tx.bucket(bucketJournal).ForEach(func(_, v []byte) error {
			if bytes.Contains(v, abandoned) {
				st.JournalAbandoned++
			}
			return nil
		})
		st.JournalSent = keyN(tx.bucket(bucketJournal)) - st.JournalPending - st.JournalFailed - st.JournalAbandoned
		st.Cursors = keyN(tx.bucket(bucketCursors))
		return nil
	})
	if err != nil {
		return Stats{}, fmt.Errorf("summarise state file %s: %w", s.path, err)
	}
	if fi, err := os.Stat(s.path); err == nil {
		st.FileSize = fi.Size()
	}
	return st, nil
}
