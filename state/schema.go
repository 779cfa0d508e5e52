package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SchemaVersion is the layout version this ticketbridge writes. A file of a
// lower version is migrated at Open; a file of a higher one is refused.
const SchemaVersion = 4

// Bucket names.
const (
	bucketMeta            = "meta"
	bucketTickets         = "tickets"
	bucketMirrored        = "mirrored"
	bucketOwn             = "own"
	bucketJournal         = "journal"
	bucketJournalPending  = "journal_pending"
	bucketJournalUnmarked = "journal_unmarked"
	bucketJournalFailed   = "journal_failed"
	bucketJournalTicket   = "journal_ticket"
	bucketCursors         = "cursors"
	bucketCycles          = "cycles"
	bucketNotOurs         = "not_ours"
	bucketNotices         = "notices"
	bucketAudit           = "audit"
	bucketAuditDays       = "audit_days"
)

// allBuckets is every bucket of the current schema.
var allBuckets = []string{
	bucketMeta, bucketTickets, bucketMirrored, bucketOwn,
	bucketJournal, bucketJournalPending, bucketJournalUnmarked, bucketJournalFailed, bucketJournalTicket,
	bucketCursors, bucketCycles, bucketNotOurs, bucketNotices,
	bucketAudit, bucketAuditDays,
}

// Reserved meta keys: SetMeta refuses them.
const (
	metaSchema  = "schema_version"
	metaCreated = "created_at"
)

// migration moves a file from schema N to N+1 inside the write transaction
// that runs all pending migrations. It must not touch meta/schema_version;
// the caller bumps it.
type migration func(tx *bolt.Tx) error

// migrations[i] moves schema i+1 to i+2, so len(migrations)+1 must equal
// SchemaVersion (a test checks it). Append only; never edit a released one.
var migrations = []migration{
	// 1 -> 2: the helpdesk tickets that are not this hotel's (NotOurs),
	// and in ticket records the 404s of a request deleted upstream
	// (Ticket.Missing, Ticket.Deleted), which need no change of the
	// records already stored. An older ticketbridge refuses the file,
	// rather than sync those tickets again.
	func(btx *bolt.Tx) error {
		_, err := btx.CreateBucketIfNotExists([]byte(bucketNotOurs))
		return err
	},
	// 2 -> 3: the notifications' episodes (notices.go).
	func(btx *bolt.Tx) error {
		_, err := btx.CreateBucketIfNotExists([]byte(bucketNotices))
		return err
	},
	// 3 -> 4: the requests' audit trails (audit.go).
	func(btx *bolt.Tx) error {
		for _, name := range []string{bucketAudit, bucketAuditDays} {
			if _, err := btx.CreateBucketIfNotExists([]byte(name)); err != nil {
				return err
			}
		}
		return nil
	},
}

// initSchema creates the buckets of a fresh file, checks the version of an
// existing one and migrates it forward. migs decides the target version
// (len(migs)+1), so tests can run a table of their own.
func (s *Store) initSchema(ctx context.Context, migs []migration) error {
	target := len(migs) + 1
	var (
		found int
		fresh bool
	)
	err := s.db.View(func(btx *bolt.Tx) error {
		var err error
		found, fresh, err = readSchema(btx)
		return err
	})
	if err != nil {
		return fmt.Errorf("open state file %s: %w", s.path, err)
	}
	switch {
	case fresh && s.readOnly:
		return fmt.Errorf("open state file %s: %w: it holds no meta bucket (empty file)", s.path, ErrNotStateFile)
	case fresh:
		err := s.db.Update(func(btx *bolt.Tx) error {
			if err := createBuckets(btx); err != nil {
				return err
			}
			meta := btx.Bucket([]byte(bucketMeta))
			if err := meta.Put([]byte(metaSchema), []byte(strconv.Itoa(target))); err != nil {
				return err
			}
			return meta.Put([]byte(metaCreated), []byte(s.now().UTC().Format(time.RFC3339Nano)))
		})
		if err != nil {
			return fmt.Errorf("create state file %s: %w", s.path, err)
		}
	case found > target:
		return fmt.Errorf("open state file %s: %w: file has schema %d, this ticketbridge knows up to %d; use a newer ticketbridge or restore a backup",
			s.path, ErrNewerSchema, found, target)
	case found < target && s.readOnly:
		return fmt.Errorf("open state file %s: %w: file has schema %d, this ticketbridge needs %d; run the daemon once to migrate it",
			s.path, ErrOldSchema, found, target)
	case found < target:
		if err := s.migrate(ctx, found, target, migs); err != nil {
			return err
		}
	}
	// Every Tx method relies on the buckets of the schema being there.
	err = s.db.View(func(btx *bolt.Tx) error {
		for _, name := range allBuckets {
			if btx.Bucket([]byte(name)) == nil {
				return fmt.Errorf("%w: bucket %q is missing", ErrNotStateFile, name)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("open state file %s: %w", s.path, err)
	}
	s.schema = target
	return nil
}

// readSchema returns the file's schema version, or fresh when the file holds
// no bucket at all.
func readSchema(btx *bolt.Tx) (version int, fresh bool, err error) {
	meta := btx.Bucket([]byte(bucketMeta))
	if meta == nil {
		empty := true
		_ = btx.ForEach(func([]byte, *bolt.Bucket) error {
			empty = false
			return errStop
		})
		if empty {
			return 0, true, nil
		}
		return 0, false, fmt.Errorf("%w: it has buckets but no %q bucket", ErrNotStateFile, bucketMeta)
	}
	raw := meta.Get([]byte(metaSchema))
	if raw == nil {
		return 0, false, fmt.Errorf("%w: %s/%s is missing", ErrNotStateFile, bucketMeta, metaSchema)
	}
	v, err := strconv.Atoi(string(raw))
	if err != nil || v < 1 {
		return 0, false, &RecordError{Bucket: bucketMeta, Key: metaSchema, Err: fmt.Errorf("schema version %q is not a positive number", raw)}
	}
	return v, false, nil
}

var errStop = errors.New("stop")

func createBuckets(btx *bolt.Tx) error {
	for _, name := range allBuckets {
		if _, err := btx.CreateBucketIfNotExists([]byte(name)); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

// migrate copies the file aside, then runs migs[from-1:target-1] and bumps
// the version in one transaction.
func (s *Store) migrate(ctx context.Context, from, target int, migs []migration) error {
	bak := fmt.Sprintf("%s.schema-%d.bak", s.path, from)
	if err := s.BackupFile(ctx, bak); err != nil {
		return fmt.Errorf("migrate state file %s: copy old schema aside: %w", s.path, err)
	}
	err := s.db.Update(func(btx *bolt.Tx) error {
		// Read again inside the write transaction: the version decides
		// which migrations run.
		v, _, err := readSchema(btx)
		if err != nil {
			return err
		}
		if v != from {
			return fmt.Errorf("schema version changed from %d to %d during open", from, v)
		}
		for n := from; n < target; n++ {
			if err := migs[n-1](btx); err != nil {
				return fmt.Errorf("migrate schema %d to %d: %w", n, n+1, err)
			}
		}
		if err := createBuckets(btx); err != nil {
			return err
		}
		return btx.Bucket([]byte(bucketMeta)).Put([]byte(metaSchema), []byte(strconv.Itoa(target)))
	})
	if err != nil {
		return fmt.Errorf("migrate state file %s: %w (the file is unchanged)", s.path, err)
	}
	s.log.Warn("state file migrated", slog.String("path", s.path), slog.Int("from", from), slog.Int("to", target), slog.String("backup", bak))
	return nil
}
