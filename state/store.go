package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/redact"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// DefaultLockTimeout is how long Open waits for the file lock when
// [Options.LockTimeout] is zero.
const DefaultLockTimeout = time.Second

// fileMode is the mode of the state file and of every backup.
const fileMode fs.FileMode = 0o600

// Errors returned by Open, Update and the Tx methods. Each is wrapped with
// the path or record it concerns; match them with errors.Is.
var (
	// ErrLocked: another ticketbridge process (or another Store of this
	// process) holds the state file. A read-only open fails with it while
	// the daemon runs.
	ErrLocked = errors.New("in use by another ticketbridge process")
	// ErrNewerSchema: the file was written by a newer ticketbridge.
	ErrNewerSchema = errors.New("state file schema is newer than this ticketbridge")
	// ErrOldSchema: a read-only open found a file that needs migrating.
	ErrOldSchema = errors.New("state file schema is older than this ticketbridge")
	// ErrNotStateFile: the file is a bbolt database but not a ticketbridge
	// state file, or not a bbolt database at all.
	ErrNotStateFile = errors.New("not a ticketbridge state file")
	// ErrReadOnly: Update was called on a Store opened read-only.
	ErrReadOnly = errors.New("state file opened read-only")
	// ErrInvalid: a record handed to a Tx method is malformed (an empty id,
	// an unknown kind, a changed Idempotency-Key). Nothing was written.
	ErrInvalid = errors.New("invalid record")
	// ErrConflict: on PostgreSQL, another writer committed to the same
	// hotel's state while this Update ran (two daemons serve one hotel);
	// nothing of this Update was kept.
	ErrConflict = errors.New("state changed by another writer of the same hotel")
	// ErrLeaseLost: on PostgreSQL, the Store was opened under a lease
	// fence (Options.Fence) and another replica has taken the hotel's lease
	// since; nothing of this Update was kept. Close the Store: this replica
	// no longer syncs the hotel.
	ErrLeaseLost = errors.New("the hotel's lease is held by another replica")
	// ErrCorrupt: a stored record cannot be decoded. The error is a
	// *[RecordError] naming the bucket and key.
	ErrCorrupt = errors.New("corrupt record")
)

// RecordError is the error for a stored record that cannot be decoded. It
// matches [ErrCorrupt].
type RecordError struct {
	Bucket string
	Key    string
	Err    error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("decode record %s/%q: %v", e.Bucket, e.Key, e.Err)
}

// Unwrap returns the decoding error.
func (e *RecordError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrCorrupt].
func (e *RecordError) Is(target error) bool { return target == ErrCorrupt }

// Options tunes Open. The zero value is a read-write open with the default
// lock timeout, no logging and the system clock.
type Options struct {
	// ReadOnly opens the file with a shared lock and refuses Update. It is
	// meant for `ticketbridge status`; while a daemon holds the file it fails
	// with [ErrLocked]. The file must exist.
	ReadOnly bool
	// LockTimeout is how long Open waits for the file lock before failing
	// with ErrLocked; zero means [DefaultLockTimeout]. Open never waits
	// forever.
	LockTimeout time.Duration
	// Logger receives warnings (a tightened file mode, a migration). Nil
	// discards them.
	Logger *slog.Logger
	// Now is the clock that stamps records (CreatedAt, UpdatedAt, a
	// cursor's time, the schema's creation); nil means time.Now. Kept
	// because the simulator of package sync, internal/looptest and the
	// state's own tests on PostgreSQL move one fake clock across real
	// sockets, where a testing/synctest bubble's clock cannot advance.
	Now func() time.Time
	// Hotel names the hotel whose state a PostgreSQL database holds:
	// lower-case letters, digits and "-", at most 63 bytes. Empty means
	// [DefaultHotel]. A bbolt file holds one hotel; the name is not
	// stored in it.
	Hotel string
	// Fence is the fence of the hotel's lease the Store writes under, as
	// [Leases.Acquire] returned it (PostgreSQL only). Every Update's commit
	// checks it: once another replica has taken the lease, Update fails
	// with [ErrLeaseLost] and keeps nothing (an Update whose snapshot was
	// taken before the takeover fails with [ErrConflict]: it keeps nothing
	// either). Zero writes without a lease
	// (the commands that change state beside a running daemon).
	Fence int64
}

// DefaultHotel is the hotel of a daemon that serves one.
const DefaultHotel = "default"

// CheckHotel reports whether name is a valid hotel name: 1 to 63
// lower-case letters, digits and "-", starting with a letter or digit.
func CheckHotel(name string) error {
	if name == "" || len(name) > 63 {
		return fmt.Errorf("hotel name %q: want 1 to 63 characters", name)
	}
	for i, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0:
		default:
			return fmt.Errorf("hotel name %q: want lower-case letters, digits and -, starting with a letter or digit", name)
		}
	}
	return nil
}

// Redacted returns a TICKETBRIDGE_STATE value fit for logs and output: a
// PostgreSQL URL as [redact.URL] prints it (password and query values
// masked), a keyword/value connection string as [redact.DSN] does
// (password and every value but the host, port, database and user
// masked), a path as it is.
func Redacted(state string) string {
	switch {
	case hasPostgresScheme(state):
		return redact.URL(state)
	case IsURL(state):
		return redact.DSN(state)
	}
	return state
}

// Store is an open state: a bbolt file, or one hotel's rows in a
// PostgreSQL database. Its methods are safe for concurrent use: any number
// of View transactions run alongside at most one Update.
type Store struct {
	be       backend
	db       *bolt.DB   // the bbolt file; nil on PostgreSQL
	pg       *pgBackend // the database; nil on bbolt
	path     string     // the file's path, or the database URL without its password
	hotel    string
	readOnly bool
	log      *slog.Logger
	clock    func() time.Time // Options.Now as given, nil or not: read it through now
	schema   int
	tickets  *ticketCache // decoded ticket records, by key (see ticketCache)
	commits  atomic.Int64 // Updates committed (see Commits)
	stats    statsCache   // the last Stats (see StatsOnCommit)
	// auditStamp is the stamp of the last audit entry appended (see
	// AppendAudit), in Unix nanoseconds.
	auditStamp atomic.Int64
}

// Open opens the state file at path, creating it (mode 0600, and its
// directory, mode 0700) when it does not exist and opts.ReadOnly is false.
// It fails with [ErrLocked] when another process holds the file, with
// [ErrNewerSchema] when a newer ticketbridge wrote it, and with
// [ErrNotStateFile] when it is something else. An older file is migrated
// to [SchemaVersion] before Open returns (see the package documentation).
//
// A PostgreSQL connection string ([IsURL]) opens opts.Hotel's state in
// that database instead (see the package documentation); the database's
// schema is created or migrated as a file's is.
//
// ctx bounds the opening's I/O: on PostgreSQL every round trip of it (the
// schema's check or migration, the hotel's row); on bbolt Open fails at
// once when ctx is already done, and otherwise waits for the file lock at
// most opts.LockTimeout. ctx does not outlive Open: the Store's later
// transactions take their own.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	return OpenAt(ctx, ParseLocation(path), opts)
}

// now is the time on the store's clock: [Options.Now], or time.Now.
func (s *Store) now() time.Time {
	if s.clock != nil {
		return s.clock()
	}
	return time.Now()
}

// newStore fills a Store's defaults from opts.
func newStore(path string, opts Options) (*Store, error) {
	s := &Store{path: path, hotel: opts.Hotel, readOnly: opts.ReadOnly, log: opts.Logger, clock: opts.Now, tickets: newTicketCache()}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.hotel == "" {
		s.hotel = DefaultHotel
	}
	if err := CheckHotel(s.hotel); err != nil {
		return nil, fmt.Errorf("open state: %w: %w", ErrInvalid, err)
	}
	return s, nil
}

func open(ctx context.Context, path string, opts Options, migs []migration) (*Store, error) {
	if path == "" {
		return nil, fmt.Errorf("open state file: %w: empty path", ErrInvalid)
	}
	s, err := newStore(path, opts)
	if err != nil {
		return nil, err
	}
	timeout := opts.LockTimeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}

	if err := s.checkMode(); err != nil {
		return nil, err
	}
	if !opts.ReadOnly {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("open state file %s: %w", path, err)
		}
	}

	db, err := bolt.Open(path, fileMode, &bolt.Options{
		Timeout:      timeout,
		ReadOnly:     opts.ReadOnly,
		FreelistType: bolt.FreelistMapType,
	})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("open state file %s: %w (no lock within %s)", path, ErrLocked, timeout)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch):
		return nil, fmt.Errorf("open state file %s: %w: %w", path, ErrNotStateFile, err)
	case errors.Is(err, berrors.ErrChecksum):
		return nil, fmt.Errorf("open state file %s: the file is damaged (%w); restore a backup, or move it aside and let the bridge rescan", path, err)
	case err != nil:
		return nil, fmt.Errorf("open state file %s: %w", path, err)
	}
	s.db = db
	s.be = &boltBackend{db: db}

	if err := s.initSchema(ctx, migs); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// checkMode tightens an existing file readable by others to 0600 (read-write
// opens) or warns about it (read-only opens).
func (s *Store) checkMode() error {
	fi, err := os.Stat(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // bbolt creates it with fileMode, or a read-only open reports it
	}
	if err != nil {
		return fmt.Errorf("open state file %s: %w", s.path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("open state file %s: %w: not a regular file (%s)", s.path, ErrNotStateFile, fi.Mode().Type())
	}
	perm := fi.Mode().Perm()
	if perm&0o077 == 0 {
		return nil
	}
	if s.readOnly {
		s.log.Warn("state file is accessible to other users; a read-write open will tighten it to 0600",
			"path", s.path, "mode", perm.String())
		return nil
	}
	if err := os.Chmod(s.path, fileMode); err != nil {
		return fmt.Errorf("tighten state file mode %s: %w", s.path, err)
	}
	s.log.Warn("state file was accessible to other users; tightened to 0600",
		"path", s.path, "was", perm.String())
	return nil
}

// Close releases the file and its lock, or the database connections. It
// waits for running transactions to end. Calling it again returns nil.
func (s *Store) Close() error {
	if err := s.be.close(); err != nil {
		return fmt.Errorf("close state %s: %w", s.path, err)
	}
	return nil
}

// Path returns the path the store was opened with; for PostgreSQL the URL
// with its password replaced by "xxxxx", fit for logs and errors.
func (s *Store) Path() string { return s.path }

// Hotel returns the hotel whose state the store holds ([DefaultHotel]
// unless [Options.Hotel] named another). A bbolt file holds one hotel and
// does not record its name.
func (s *Store) Hotel() string { return s.hotel }

// Backend names where the state is kept: "bbolt" or "postgres".
func (s *Store) Backend() string {
	if s.pg != nil {
		return "postgres"
	}
	return "bbolt"
}

// ReadOnly reports whether the store was opened read-only.
func (s *Store) ReadOnly() bool { return s.readOnly }

// Schema returns the schema version of the open file; after a successful
// Open it is always [SchemaVersion].
func (s *Store) Schema() int { return s.schema }

// View runs fn in a read-only transaction. Several Views run at once and
// alongside an Update; each sees the state as of its start. The Tx must not
// be used after fn returns. fn's error is returned as is.
//
// ctx bounds the transaction. On PostgreSQL every round trip of it uses
// ctx: once ctx is done, the read in flight and those after it fail with
// ctx's error, and the transaction is rolled back. A bbolt transaction
// cannot be interrupted: there ctx is only checked when the transaction
// starts and when fn returns. Either way a View whose ctx ends before it
// returns fails with ctx's error (unless fn failed first).
func (s *Store) View(ctx context.Context, fn func(*Tx) error) error {
	var fnErr error
	err := s.be.view(ctx, func(kv kvTx) error {
		fnErr = fn(&Tx{kv: kv, s: s})
		return fnErr
	})
	if err != nil && fnErr == nil {
		return fmt.Errorf("read state %s: %w", s.path, err)
	}
	return err
}

// ViewWorkingSet is View for what every sync cycle reads: the tickets,
// the meta keys, the cursors, and the pending and unmarked journal
// entries. On PostgreSQL it reads all of that in one statement before fn
// runs, one round trip with no BEGIN or COMMIT, and fn reading anything
// else fails; on bbolt it is View. ctx bounds it as it does View.
func (s *Store) ViewWorkingSet(ctx context.Context, fn func(*Tx) error) error {
	if s.pg == nil {
		return s.View(ctx, fn)
	}
	var fnErr error
	err := s.pg.viewWorkingSet(ctx, func(kv kvTx) error {
		fnErr = fn(&Tx{kv: kv, s: s})
		return fnErr
	})
	if err != nil && fnErr == nil {
		return fmt.Errorf("read state %s: %w", s.path, err)
	}
	return err
}

// MessageIDs returns, for each ticket of ticketIDs, the ids of the
// upstream messages state records for it: those mirrored into the
// helpdesk and those the bridge posted (see Tx.Known). It reads them all
// at once: on PostgreSQL in one statement, one round trip with no BEGIN
// or COMMIT, keys only. A ticket with none is absent from the result.
// The engine reads those of a cycle's due tickets before it reads their
// threads, instead of one transaction per ticket.
func (s *Store) MessageIDs(ctx context.Context, ticketIDs []string) (map[string][]string, error) {
	prefixes := make([][]byte, 0, len(ticketIDs))
	for _, id := range ticketIDs {
		if err := checkID("ticket id", id); err != nil {
			return nil, invalid(fmt.Sprintf("read the message ids of ticket %q", id), err)
		}
		prefixes = append(prefixes, messageKey(id, ""))
	}
	out := map[string][]string{}
	add := func(k []byte) {
		if i := bytes.IndexByte(k, '/'); i > 0 {
			out[string(k[:i])] = append(out[string(k[:i])], string(k[i+1:]))
		}
	}
	if len(prefixes) == 0 {
		return out, nil
	}
	var err error
	if s.pg != nil {
		err = s.pg.keysUnder(ctx, []string{bucketMirrored, bucketOwn}, prefixes, add)
	} else {
		err = s.View(ctx, func(tx *Tx) error {
			for _, b := range []string{bucketMirrored, bucketOwn} {
				for _, p := range prefixes {
					if err := tx.kv.scan(b, p, func(k, _ []byte) error { add(k); return nil }); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	if err != nil {
		return nil, fmt.Errorf("read the message ids of %d tickets from state %s: %w", len(ticketIDs), s.path, err)
	}
	return out, nil
}

// Update runs fn in a read-write transaction and commits it when fn returns
// nil; when fn returns an error (or panics), or the commit fails, nothing
// fn did is kept and the error is returned (fn's as is). Updates are
// serialised: one waits for the one before it. A commit costs two fsyncs
// on bbolt and one round trip on PostgreSQL (see the package
// documentation), so group a cycle's writes into few Updates.
//
// ctx bounds the transaction as it does View's: an Update whose ctx ends
// before it commits keeps nothing and fails with ctx's error. On
// PostgreSQL that is so also while a round trip waits on the database;
// a bbolt transaction cannot be interrupted, and checks ctx when it
// starts and before it commits.
func (s *Store) Update(ctx context.Context, fn func(*Tx) error) error {
	err := s.update(ctx, fn)
	if err == nil {
		s.commits.Add(1)
	}
	return err
}

// update is Update but for the count of Commits: the notifications'
// episodes (notices.go) are written with it, off the cycle's goroutine
// and in a bucket no cycle reads, so that their writes neither make a
// quiet cycle look busy nor drop its working set.
func (s *Store) update(ctx context.Context, fn func(*Tx) error) error {
	if s.readOnly {
		return fmt.Errorf("update state %s: %w", s.path, ErrReadOnly)
	}
	var fnErr error
	err := s.be.update(ctx, func(kv kvTx) error {
		fnErr = fn(&Tx{kv: kv, s: s})
		return fnErr
	})
	if err != nil && fnErr == nil {
		return fmt.Errorf("commit state %s: %w", s.path, err)
	}
	return err
}

// Commits returns how many Updates this store committed since it opened:
// whether a stretch of work wrote anything. The notifications' writes
// (Store.Notices) do not count: no cycle reads what they write.
func (s *Store) Commits() int64 { return s.commits.Load() }

// RoundTrips returns how many round trips the connection pool of a
// PostgreSQL store made since it opened, those of the other stores of the
// process that share the pool included (see [Open]); 0 on bbolt. Tests
// and benchmarks count a cycle's round trips with it.
func (s *Store) RoundTrips() int64 {
	if s.pg == nil {
		return 0
	}
	if p := s.pg.pool.Load(); p != nil {
		return p.roundTrips.Load()
	}
	return 0
}

// Tx is a transaction on the store, handed to the functions of View and
// Update. Inside View its putters fail. A Tx is not safe for concurrent
// use and must not outlive the function it was handed to.
type Tx struct {
	kv kvTx
	s  *Store
}

// Writable reports whether the Tx belongs to an Update.
func (tx *Tx) Writable() bool { return tx.kv.writable() }
