package state

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/ticketbridge/ticketbridge/internal/atomicfile"
)

// Backup writes a consistent copy of the state file to w and returns the
// number of bytes written. It runs in a read transaction (bbolt's
// Tx.WriteTo), so Updates go on while it copies and the copy is the state
// as of its start. Cancelling ctx stops the copy at its next write.
//
// On PostgreSQL the copy is a bbolt state file holding the hotel's
// records as of one snapshot (see [Store.BackupFile]).
func (s *Store) Backup(ctx context.Context, w io.Writer) (int64, error) {
	if s.pg != nil {
		n, err := s.pgBackup(ctx, w)
		if err != nil {
			return n, fmt.Errorf("back up state %s (hotel %s): %w", s.path, s.hotel, err)
		}
		return n, nil
	}
	n, err := backup(ctx, s.db, w)
	if err != nil {
		return n, fmt.Errorf("back up state file %s: %w", s.path, err)
	}
	return n, nil
}

// BackupFile writes a consistent copy of the state file to dest, atomically:
// a temporary file in dest's directory is written, fsync'ed and renamed over
// dest (mode 0600), and the directory is fsync'ed. dest is replaced when it
// exists; a failed backup leaves it as it was. Updates go on meanwhile.
//
// On PostgreSQL it writes the hotel's records, as of one snapshot, into a
// new bbolt state file: a logical copy that `TICKETBRIDGE_STATE=dest` can
// run on, or that helps inspect one hotel. It is no backup of the database
// (that is pg_dump's job, or the database's own backups).
func (s *Store) BackupFile(ctx context.Context, dest string) error {
	if s.pg != nil {
		if err := writeBackup(ctx, "", dest, func(w io.Writer) error {
			_, err := s.pgBackup(ctx, w)
			return err
		}); err != nil {
			return fmt.Errorf("back up state %s (hotel %s) to %s: %w", s.path, s.hotel, dest, err)
		}
		return nil
	}
	if err := writeBackup(ctx, s.path, dest, func(w io.Writer) error {
		_, err := backup(ctx, s.db, w)
		return err
	}); err != nil {
		return fmt.Errorf("back up state file %s to %s: %w", s.path, dest, err)
	}
	return nil
}

// BackupFile copies the state file at statePath to dest (as
// [Store.BackupFile] does) when no daemon holds it: it opens the file
// read-only, so while a ticketbridge daemon runs on statePath it fails with
// [ErrLocked]; stop the daemon first, or have the daemon make the copy with
// Store.BackupFile. It copies files of any schema version, older and newer
// ones included, so it can save a file before an upgrade.
//
// For a PostgreSQL URL it copies the default hotel's records into a bbolt
// file, as [Store.BackupFile] does, while the daemon runs.
func BackupFile(ctx context.Context, statePath, dest string) error {
	if IsURL(statePath) {
		s, err := Open(ctx, statePath, Options{ReadOnly: true})
		if err != nil {
			return fmt.Errorf("back up state to %s: %w", dest, err)
		}
		defer func() { _ = s.Close() }()
		return s.BackupFile(ctx, dest)
	}
	return backupFile(ctx, statePath, dest, DefaultLockTimeout)
}

func backupFile(ctx context.Context, statePath, dest string, lockTimeout time.Duration) error {
	wrap := func(err error) error {
		return fmt.Errorf("back up state file %s to %s: %w", statePath, dest, err)
	}
	if _, err := os.Stat(statePath); err != nil {
		return wrap(err)
	}
	db, err := bolt.Open(statePath, fileMode, &bolt.Options{
		Timeout:  lockTimeout,
		ReadOnly: true,
	})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return wrap(fmt.Errorf("%w: stop the daemon, or let it make the copy", ErrLocked))
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrChecksum):
		return wrap(fmt.Errorf("%w: %w", ErrNotStateFile, err))
	case err != nil:
		return wrap(err)
	}
	defer func() { _ = db.Close() }()
	err = db.View(func(btx *bolt.Tx) error {
		_, fresh, err := readSchema(btx)
		if err == nil && fresh {
			err = fmt.Errorf("%w: it holds no meta bucket", ErrNotStateFile)
		}
		return err
	})
	if err != nil {
		return wrap(err)
	}
	if err := writeBackup(ctx, statePath, dest, func(w io.Writer) error {
		_, err := backup(ctx, db, w)
		return err
	}); err != nil {
		return wrap(err)
	}
	return nil
}

// backup copies db to w in one read transaction.
func backup(ctx context.Context, db *bolt.DB, w io.Writer) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int64
	err := db.View(func(btx *bolt.Tx) error {
		var err error
		n, err = btx.WriteTo(ctxWriter{ctx: ctx, w: w})
		return err
	})
	if cerr := ctx.Err(); err != nil && cerr != nil {
		// bbolt formats some write errors with %s; say why plainly.
		return n, cerr
	}
	return n, err
}

// ctxWriter fails its writes once ctx is done.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// writeBackup writes dest atomically with fill (see package atomicfile);
// a context that ends before the rename leaves dest as it was.
func writeBackup(ctx context.Context, src, dest string, fill func(io.Writer) error) error {
	if dest == "" {
		return fmt.Errorf("%w: empty backup path", ErrInvalid)
	}
	if fi, err := os.Stat(dest); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%w: %s is a directory; name the backup file", ErrInvalid, dest)
		}
		if si, err := os.Stat(src); src != "" && err == nil && os.SameFile(si, fi) {
			return fmt.Errorf("%w: the backup would overwrite the state file itself", ErrInvalid)
		}
	}
	return atomicfile.Write(dest, fileMode, func(w io.Writer) error {
		if err := fill(w); err != nil {
			return err
		}
		return ctx.Err()
	})
}

// pgBackup copies the hotel's records, in one snapshot, into a bbolt state
// file made in a temporary directory, and writes that file to w.
func (s *Store) pgBackup(ctx context.Context, w io.Writer) (int64, error) {
	dir, err := os.MkdirTemp("", "ticketbridge-backup-*")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "state.db")
	dst, err := Open(ctx, path, Options{Now: s.clock, Hotel: s.hotel})
	if err != nil {
		return 0, err
	}
	defer func() { _ = dst.Close() }()
	var seq int64
	err = s.be.view(ctx, func(src kvTx) error {
		return dst.be.update(ctx, func(d kvTx) error {
			for _, name := range allBuckets {
				if err := ctx.Err(); err != nil {
					return err
				}
				err := src.scan(name, nil, func(k, v []byte) error {
					return d.put(name, k, v)
				})
				if err != nil {
					return fmt.Errorf("copy %s: %w", name, err)
				}
			}
			if pt, ok := src.(*pgTx); ok {
				var err error
				if seq, err = pt.journalSeq(); err != nil {
					return err
				}
			}
			return d.(boltTx).bucket(bucketJournal).SetSequence(uint64(seq))
		})
	})
	if err != nil {
		return 0, err
	}
	return dst.Backup(ctx, w)
}
