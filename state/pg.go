package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/ticketbridge/ticketbridge/internal/redact"
)

// pgRoundTripTimeout bounds each exchange with PostgreSQL, so that a dead
// server or a lock held elsewhere fails an Update instead of hanging it.
const pgRoundTripTimeout = 30 * time.Second

// The PostgreSQL tables. Every row carries its hotel.
const (
	pgSchemaTable = "ticketbridge_schema"
	pgHotelsTable = "ticketbridge_hotels"
	pgStateTable  = "ticketbridge_state"
	pgLeaseTable  = "ticketbridge_leases"
	pgReplicaTbl  = "ticketbridge_replicas"
)

// pgMigration is a list of SQL statements that moves the database's schema
// from one version to the next. pgMigrations[i] moves version i to i+1
// (version 0: no ticketbridge tables), so len(pgMigrations) must equal
// PostgresSchemaVersion (a test checks it). Append only; never edit a
// released one.
type pgMigration []string

var pgMigrations = []pgMigration{
	// 1: the hotels and one table of keys and values, a row per bbolt
	// bucket key, so that records are encoded and checked by the same code
	// on both backends.
	{
		`CREATE TABLE ticketbridge_hotels (
			hotel       text PRIMARY KEY,
			created_at  timestamptz NOT NULL,
			journal_seq bigint NOT NULL DEFAULT 0,
			commits     bigint NOT NULL DEFAULT 0
		)`,
		`CREATE TABLE ticketbridge_state (
			hotel  text  NOT NULL,
			bucket text  NOT NULL,
			key    bytea NOT NULL,
			value  bytea NOT NULL,
			PRIMARY KEY (hotel, bucket, key)
		)`,
		// Every Update's commit goes through this row: under REPEATABLE
		// READ, two writers of one hotel conflict on it, so the second to
		// commit fails instead of overwriting what it did not see.
		`CREATE FUNCTION ticketbridge_commit(h text, seq bigint) RETURNS void
		LANGUAGE plpgsql AS $$
		BEGIN
			UPDATE ticketbridge_hotels
			   SET journal_seq = greatest(journal_seq, coalesce(seq, 0)), commits = commits + 1
			 WHERE hotel = h;
			IF NOT FOUND THEN
				RAISE EXCEPTION 'hotel % is not in ticketbridge_hotels', h USING ERRCODE = 'no_data_found';
			END IF;
		END $$`,
	},
	// 2: leases. A replica keeps a row in ticketbridge_replicas while it
	// lives; a hotel's lease names the replica that syncs it until
	// expires_at (the database's clock). Each take of a lease raises the
	// hotel's fence, and every commit of a replica's Update names the fence
	// it took: a replica whose lease moved on commits nothing more.
	{
		`CREATE TABLE ticketbridge_replicas (
			replica    text PRIMARY KEY,
			started_at timestamptz NOT NULL,
			expires_at timestamptz NOT NULL
		)`,
		`CREATE TABLE ticketbridge_leases (
			hotel      text PRIMARY KEY,
			replica    text NOT NULL,
			fence      bigint NOT NULL,
			taken_at   timestamptz NOT NULL,
			expires_at timestamptz NOT NULL
		)`,
		`ALTER TABLE ticketbridge_hotels ADD COLUMN fence bigint NOT NULL DEFAULT 0`,
		`DROP FUNCTION ticketbridge_commit(text, bigint)`,
		`CREATE FUNCTION ticketbridge_commit(h text, seq bigint, f bigint) RETURNS void
		LANGUAGE plpgsql AS $$
		BEGIN
			UPDATE ticketbridge_hotels
			   SET journal_seq = greatest(journal_seq, coalesce(seq, 0)), commits = commits + 1
			 WHERE hotel = h AND (f IS NULL OR fence = f);
			IF NOT FOUND THEN
				IF EXISTS (SELECT 1 FROM ticketbridge_hotels WHERE hotel = h) THEN
					RAISE EXCEPTION 'the lease of hotel % was taken over (fence % is stale)', h, f USING ERRCODE = 'TBL01';
				END IF;
				RAISE EXCEPTION 'hotel % is not in ticketbridge_hotels', h USING ERRCODE = 'no_data_found';
			END IF;
		END $$`,
	},
}

// PostgresSchemaVersion is the schema version of a database this
// ticketbridge writes: the records' layout of [SchemaVersion] plus the
// database's own tables (leases). A test keeps it equal to
// len(pgMigrations).
const PostgresSchemaVersion = 2

// pgBackend keeps one hotel's buckets in a PostgreSQL database. Stores of
// one process opened with the same URL share a connection pool.
type pgBackend struct {
	pool  atomic.Pointer[sharedPool] // nil once closed
	hotel string
	// fence is the hotel's lease fence this store writes under (see
	// Options.Fence); 0 writes without a lease.
	fence int64
	// wmu serialises the store's updates, as bbolt does.
	wmu gosync.Mutex
	// commits counts the updates committed, for the benchmarks.
	commits atomic.Int64
}

// sharedPool is a pgxpool shared by the stores opened with one URL.
type sharedPool struct {
	url    string
	secret string // the password, redacted from every error
	pool   *pgxpool.Pool
	refs   int
	// roundTrips counts the client's turns on the wire: each time it
	// writes after having read (see countingConn).
	roundTrips atomic.Int64
}

var (
	poolsMu gosync.Mutex
	pools   = map[string]*sharedPool{}
)

// acquirePool returns the process's pool for rawURL, making it on first use.
func acquirePool(rawURL string) (*sharedPool, error) {
	poolsMu.Lock()
	defer poolsMu.Unlock()
	if p, ok := pools[rawURL]; ok {
		p.refs++
		return p, nil
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: parse the PostgreSQL URL: %w", ErrInvalid, parseURLError(rawURL, err))
	}
	p := &sharedPool{url: rawURL, secret: cfg.ConnConfig.Password, refs: 1}
	dialer := &net.Dialer{KeepAlive: 5 * time.Minute}
	if d := cfg.ConnConfig.ConnectTimeout; d > 0 {
		dialer.Timeout = d
	}
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, n: &p.roundTrips}, nil
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "ticketbridge"
	// Each statement travels with its arguments' types, unprepared: one
	// round trip per exchange, always (a statement cache would add a
	// prepare round trip on each connection's first use of a statement).
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, hideSecret(fmt.Errorf("connect to PostgreSQL: %w", err), p.secret)
	}
	p.pool = pool
	pools[rawURL] = p
	return p, nil
}

// release drops a reference, closing the pool with the last one.
func (p *sharedPool) release() {
	poolsMu.Lock()
	defer poolsMu.Unlock()
	p.refs--
	if p.refs == 0 {
		delete(pools, p.url)
		p.pool.Close()
	}
}

// countingConn counts round trips: a write that follows a read (or opens
// the connection) is the start of one.
type countingConn struct {
	net.Conn
	n       *atomic.Int64
	pending atomic.Bool // a write was counted and no read followed yet
}

func (c *countingConn) Write(p []byte) (int, error) {
	if !c.pending.Swap(true) {
		c.n.Add(1)
	}
	return c.Conn.Write(p)
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.pending.Store(false)
	}
	return n, err
}

// redactedError replaces a secret in an error's text; errors.Is and As
// still see the error it wraps.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// hideSecret returns err with every occurrence of secret (the database
// password) in its text replaced.
func hideSecret(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), secret, "xxxxx"), err: err}
}

// parseURLError returns pgx's error about rawURL with what of the URL may
// be secret hidden, as [redact.URL] hides it: the password, every query
// value and the fragment. pgx hides the password of a URL it could split,
// not the other values, and it quotes pieces of a URL it could not.
func parseURLError(rawURL string, err error) error {
	u, uerr := url.Parse(strings.TrimSpace(rawURL))
	if uerr != nil {
		return &redactedError{msg: "it does not parse as a URL", err: err}
	}
	var secrets []string
	if pw, ok := u.User.Password(); ok {
		secrets = append(secrets, pw)
	}
	for _, vs := range strings.Split(u.RawQuery, "&") {
		_, v, _ := strings.Cut(vs, "=")
		if uv, err := url.QueryUnescape(v); err == nil {
			secrets = append(secrets, uv, strings.TrimSpace(uv))
		}
		secrets = append(secrets, v, strings.TrimSpace(v))
	}
	secrets = append(secrets, u.Fragment, strings.TrimSpace(u.Fragment))
	msg := err.Error()
	// pgx says "cannot parse `URL`: what (why)": the URL as redact
	// prints it instead.
	if rest, ok := strings.CutPrefix(msg, "cannot parse `"); ok {
		if _, why, ok := strings.Cut(rest, "`: "); ok {
			msg = "cannot parse `" + redact.URL(rawURL) + "`: " + why
		}
	}
	// Longest first, so that a value holding another is hidden whole.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, sec := range secrets {
		if len(sec) >= 3 {
			msg = strings.ReplaceAll(msg, sec, redact.Mask)
		}
	}
	return &redactedError{msg: msg, err: err}
}

// openPG opens opts.Hotel's state in the database at rawURL, creating or
// migrating the schema (to len(migs)) first.
func openPG(ctx context.Context, rawURL string, opts Options, migs []pgMigration) (*Store, error) {
	s, err := newStore(redact.URL(rawURL), opts)
	if err != nil {
		return nil, err
	}
	p, err := acquirePool(rawURL)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", s.path, err)
	}
	b := &pgBackend{hotel: s.hotel, fence: opts.Fence}
	b.pool.Store(p)
	s.pg, s.be = b, b
	if err := b.initSchema(ctx, s, migs); err != nil {
		p.release()
		return nil, fmt.Errorf("open state %s (hotel %s): %w", s.path, s.hotel, hideSecret(err, p.secret))
	}
	return s, nil
}

// initSchema checks the database's schema version, creates or migrates it
// in one transaction (PostgreSQL's DDL is transactional, so a failure
// leaves the old schema), and adds the hotel when it is new. Concurrent
// opens (replicas starting together) wait for each other on an advisory
// lock.
func (b *pgBackend) initSchema(ctx context.Context, s *Store, migs []pgMigration) error {
	ctx, cancel := context.WithTimeout(ctx, pgRoundTripTimeout)
	defer cancel()
	tx, err := b.pool.Load().pool.BeginTx(ctx, migrateTx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	found, err := migratePG(ctx, tx, s.readOnly, migs)
	if err != nil {
		return err
	}
	if found > 0 && found < len(migs) {
		s.log.Warn("state database migrated", "path", s.path, "from", found, "to", len(migs))
	}
	if s.readOnly {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+pgHotelsTable+` WHERE hotel = $1`, b.hotel).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: the database holds no state of hotel %q yet; run the daemon once to create it", ErrNotStateFile, b.hotel)
		}
	} else {
		created := s.now().UTC()
		if _, err := tx.Exec(ctx, `INSERT INTO `+pgHotelsTable+` (hotel, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`, b.hotel, created); err != nil {
			return fmt.Errorf("add hotel: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+pgStateTable+` (hotel, bucket, key, value) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
			b.hotel, bucketMeta, []byte(metaCreated), []byte(created.Format(time.RFC3339Nano))); err != nil {
			return fmt.Errorf("add hotel: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	s.schema = len(migs)
	return nil
}

// readPGSchema returns the database's schema version, 0 when it has no
// ticketbridge tables; a version table that is not one positive version
// is an error.
func readPGSchema(ctx context.Context, tx pgx.Tx) (int, error) {
	// pg_class is read by a query, under the statement's snapshot:
	// to_regclass would ask the session's catalog cache, which does not
	// learn of a table another session created until this one locks a
	// table, and so misses the schema a replica made while this one
	// waited for the schema lock.
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relname = '`+pgSchemaTable+`' AND n.nspname = ANY (current_schemas(false)))`).Scan(&exists); err != nil {
		return 0, fmt.Errorf("read the schema version: %w", err)
	}
	if !exists {
		return 0, nil
	}
	rows, err := tx.Query(ctx, `SELECT version FROM `+pgSchemaTable)
	if err != nil {
		return 0, fmt.Errorf("read the schema version: %w", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return 0, fmt.Errorf("read the schema version: %w", err)
	}
	if len(versions) != 1 || versions[0] < 1 {
		return 0, fmt.Errorf("%w: %s holds %v, want one positive version", ErrNotStateFile, pgSchemaTable, versions)
	}
	return int(versions[0]), nil
}

// checkPGSchema says whether a database of schema found can be used by a
// ticketbridge that writes target (readOnly: without migrating it).
func checkPGSchema(found, target int, readOnly bool) (int, error) {
	switch {
	case found == 0 && readOnly:
		return 0, fmt.Errorf("%w: the database holds no ticketbridge state (table %s is missing); run the daemon once to create it", ErrNotStateFile, pgSchemaTable)
	case found > target:
		return found, fmt.Errorf("%w: the database has schema %d, this ticketbridge knows up to %d; use a newer ticketbridge or restore a backup",
			ErrNewerSchema, found, target)
	case found < target && readOnly:
		return found, fmt.Errorf("%w: the database has schema %d, this ticketbridge needs %d; run the daemon once to migrate it",
			ErrOldSchema, found, target)
	}
	return found, nil
}

// migrateTx begins the transaction of a migration. It must be READ
// COMMITTED whatever the server's default_transaction_isolation: a writer
// that waited for another on the schema lock reads the schema again, and
// must see what the other committed, not its snapshot from before the
// lock (under REPEATABLE READ it would create the tables a second time).
var migrateTx = pgx.TxOptions{IsoLevel: pgx.ReadCommitted}

// migratePG checks the database's schema version in tx and, unless
// readOnly, creates or migrates it to len(migs); it returns the version it
// found (0: none). Concurrent writers (replicas starting together) wait
// for each other on an advisory lock.
func migratePG(ctx context.Context, tx pgx.Tx, readOnly bool, migs []pgMigration) (int, error) {
	target := len(migs)
	// A current schema is read without the lock: replicas opening many
	// hotels at once do not wait for each other. A schema to create or
	// migrate is read again under it.
	found, err := readPGSchema(ctx, tx)
	switch {
	case err != nil:
		return found, err
	case readOnly:
		return checkPGSchema(found, target, true)
	case found == target:
		return found, nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('ticketbridge schema'))`); err != nil {
		return 0, fmt.Errorf("lock the schema: %w", err)
	}
	if found, err = readPGSchema(ctx, tx); err != nil {
		return 0, err
	}
	if found == 0 {
		if _, err := tx.Exec(ctx, `CREATE TABLE `+pgSchemaTable+` (version integer NOT NULL, migrated_at timestamptz NOT NULL)`); err != nil {
			return 0, fmt.Errorf("create %s: %w", pgSchemaTable, err)
		}
	}
	if _, err := checkPGSchema(found, target, false); err != nil {
		return found, err
	}
	if found < target {
		for v := found; v < target; v++ {
			for _, stmt := range migs[v] {
				if _, err := tx.Exec(ctx, stmt); err != nil {
					return found, fmt.Errorf("migrate schema %d to %d (the database is unchanged): %w", v, v+1, err)
				}
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM `+pgSchemaTable); err != nil {
			return found, err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+pgSchemaTable+` (version, migrated_at) VALUES ($1, now())`, target); err != nil {
			return found, err
		}
	}
	return found, nil
}

func (b *pgBackend) close() error {
	if p := b.pool.Swap(nil); p != nil {
		p.release()
	}
	return nil
}

// errClosed is returned by transactions on a closed store.
var errClosed = errors.New("the store is closed")

func (b *pgBackend) view(fn func(kvTx) error) error {
	return b.run(false, fn)
}

func (b *pgBackend) update(fn func(kvTx) error) error {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	err := b.run(true, fn)
	if err == nil {
		b.commits.Add(1)
	}
	return err
}

func (b *pgBackend) run(rw bool, fn func(kvTx) error) (err error) {
	p := b.pool.Load()
	if p == nil {
		return errClosed
	}
	t := &pgTx{b: b, p: p, rw: rw}
	defer func() {
		// Also on a panic in fn: end the transaction, free the connection.
		if t.conn != nil {
			if t.begun {
				ctx, cancel := context.WithTimeout(context.Background(), pgRoundTripTimeout)
				_, _ = t.conn.Exec(ctx, "ROLLBACK")
				cancel()
			}
			t.conn.Release()
		}
	}()
	if err := fn(t); err != nil {
		return hideSecret(err, p.secret) // err itself when the password is not in it
	}
	if err := t.commit(); err != nil {
		return hideSecret(err, p.secret)
	}
	return nil
}

// pgWrite is a buffered write: a value, or a deletion.
type pgWrite struct {
	val []byte
	del bool
}

// pgTx is a transaction on PostgreSQL. It begins lazily, with its first
// read (BEGIN travels in the same round trip), and buffers its writes: reads
// consult the buffer first, and commit sends every write, the hotel's
// commit check and COMMIT in one pipelined round trip. So a transaction
// costs one round trip per read that the buffer cannot answer, plus one.
//
// Transactions run at REPEATABLE READ: a View sees one snapshot, as on
// bbolt; an Update conflicts with any other Update of the hotel that
// committed after its snapshot was taken (both write the hotel's row), and
// fails with ErrConflict instead of overwriting. Updates of one hotel are
// thus serialisable without SERIALIZABLE's predicate locks.
type pgTx struct {
	b     *pgBackend
	p     *sharedPool
	rw    bool
	conn  *pgxpool.Conn
	begun bool

	seq       int64 // the journal sequence, read at BEGIN in an update
	seqLoaded bool

	writes   map[string]map[string]pgWrite // bucket -> key -> write
	prefixes []pgPrefix                    // deleted prefixes, in order
	// reads remembers what get and getMany read (nil: absent): the
	// snapshot does not change under the transaction, so a key is read
	// from the database once.
	reads  map[string]map[string][]byte
	counts map[string]int // key counts of a view, read once
	bytes  int64          // the hotel's key and value bytes, read with counts
}

type pgPrefix struct {
	bucket string
	prefix []byte
}

func (t *pgTx) writable() bool { return t.rw }

// exchange runs one round trip: BEGIN first when the transaction has not
// begun, then queue's statements, whose results read reads in order.
func (t *pgTx) exchange(queue func(*pgx.Batch), read func(pgx.BatchResults) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), pgRoundTripTimeout)
	defer cancel()
	if t.conn == nil {
		c, err := t.p.pool.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("connect to PostgreSQL: %w", err)
		}
		t.conn = c
	}
	batch := &pgx.Batch{}
	beginning := !t.begun
	if beginning {
		if t.rw {
			batch.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ")
			batch.Queue(`SELECT journal_seq FROM `+pgHotelsTable+` WHERE hotel = $1`, t.b.hotel)
		} else {
			batch.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
		}
	}
	queue(batch)
	br := t.conn.SendBatch(ctx, batch)
	err := func() error {
		if beginning {
			if _, err := br.Exec(); err != nil {
				return err
			}
			t.begun = true
			if t.rw {
				if err := br.QueryRow().Scan(&t.seq); err != nil {
					if errors.Is(err, pgx.ErrNoRows) {
						return fmt.Errorf("hotel %q is not in %s", t.b.hotel, pgHotelsTable)
					}
					return err
				}
				t.seqLoaded = true
			}
		}
		return read(br)
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return classify(err)
}

// classify maps PostgreSQL's serialization and deadlock failures to
// ErrConflict, and a commit under a stale fence to ErrLeaseLost.
func classify(err error) error {
	var pe *pgconn.PgError
	switch {
	case !errors.As(err, &pe):
	case pe.Code == "40001" || pe.Code == "40P01":
		return fmt.Errorf("%w (another process writes this hotel's state; nothing of this update was kept): %w", ErrConflict, err)
	case pe.Code == pgLeaseLostCode:
		return fmt.Errorf("%w: another replica took the hotel over; nothing of this update was kept", ErrLeaseLost)
	}
	return err
}

// pgLeaseLostCode is the SQLSTATE ticketbridge_commit raises for a stale
// fence.
const pgLeaseLostCode = "TBL01"

// buffered looks key up among the transaction's writes: found reports
// whether the buffer decides, val is nil for a deleted key.
func (t *pgTx) buffered(bucket string, key []byte) (val []byte, found bool) {
	if w, ok := t.writes[bucket][string(key)]; ok {
		if w.del {
			return nil, true
		}
		return w.val, true
	}
	if t.deletedPrefix(bucket, key) {
		return nil, true
	}
	if v, ok := t.reads[bucket][string(key)]; ok {
		return v, true
	}
	return nil, false
}

// written reports whether the transaction's writes decide key.
func (t *pgTx) written(bucket string, key []byte) bool {
	_, ok := t.writes[bucket][string(key)]
	return ok || t.deletedPrefix(bucket, key)
}

func (t *pgTx) deletedPrefix(bucket string, key []byte) bool {
	for _, p := range t.prefixes {
		if p.bucket == bucket && bytes.HasPrefix(key, p.prefix) {
			return true
		}
	}
	return false
}

// remember records a value read from the database (nil: absent).
func (t *pgTx) remember(bucket string, key, val []byte) {
	if t.reads == nil {
		t.reads = map[string]map[string][]byte{}
	}
	m := t.reads[bucket]
	if m == nil {
		m = map[string][]byte{}
		t.reads[bucket] = m
	}
	m[string(key)] = val
}

func (t *pgTx) get(bucket string, key []byte) ([]byte, error) {
	if v, ok := t.buffered(bucket, key); ok {
		return v, nil
	}
	var val []byte
	err := t.exchange(func(b *pgx.Batch) {
		b.Queue(`SELECT value FROM `+pgStateTable+` WHERE hotel = $1 AND bucket = $2 AND key = $3`, t.b.hotel, bucket, key)
	}, func(br pgx.BatchResults) error {
		err := br.QueryRow().Scan(&val)
		if errors.Is(err, pgx.ErrNoRows) {
			val = nil
			return nil
		}
		if err == nil && val == nil {
			val = []byte{} // an empty value is there, unlike a missing one
		}
		return err
	})
	if err == nil {
		t.remember(bucket, key, val)
	}
	return val, err
}

func (t *pgTx) getMany(bucket string, keys [][]byte) ([][]byte, error) {
	out := make([][]byte, len(keys))
	var ask [][]byte
	idx := map[string][]int{}
	for i, k := range keys {
		if v, ok := t.buffered(bucket, k); ok {
			out[i] = v
			continue
		}
		if _, dup := idx[string(k)]; !dup {
			ask = append(ask, k)
		}
		idx[string(k)] = append(idx[string(k)], i)
	}
	if len(ask) == 0 {
		return out, nil
	}
	err := t.exchange(func(b *pgx.Batch) {
		b.Queue(`SELECT key, value FROM `+pgStateTable+` WHERE hotel = $1 AND bucket = $2 AND key = ANY($3)`, t.b.hotel, bucket, ask)
	}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k, v []byte
			if err := rows.Scan(&k, &v); err != nil {
				return err
			}
			if v == nil {
				v = []byte{}
			}
			for _, i := range idx[string(k)] {
				out[i] = v
			}
		}
		return rows.Err()
	})
	if err == nil {
		for _, k := range ask {
			t.remember(bucket, k, out[idx[string(k)][0]])
		}
	}
	return out, err
}

func (t *pgTx) scan(bucket string, prefix []byte, fn func(k, v []byte) error) error {
	type kv struct{ k, v []byte }
	var rows []kv
	err := t.exchange(func(b *pgx.Batch) {
		where, args := keyRange(prefix)
		b.Queue(`SELECT key, value FROM `+pgStateTable+` WHERE hotel = $1 AND bucket = $2`+where+` ORDER BY key`,
			append([]any{t.b.hotel, bucket}, args...)...)
	}, func(br pgx.BatchResults) error {
		r, err := br.Query()
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
			var k, v []byte
			if err := r.Scan(&k, &v); err != nil {
				return err
			}
			if t.written(bucket, k) {
				continue // the buffer's version is added below
			}
			rows = append(rows, kv{k, v})
		}
		return r.Err()
	})
	if err != nil {
		return err
	}
	if ws := t.writes[bucket]; len(ws) > 0 {
		for k, w := range ws {
			if !w.del && strings.HasPrefix(k, string(prefix)) {
				rows = append(rows, kv{[]byte(k), w.val})
			}
		}
		slices.SortFunc(rows, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
	}
	for _, r := range rows {
		if err := fn(r.k, r.v); err != nil {
			return err
		}
	}
	return nil
}

func (t *pgTx) count(bucket string) (int, error) {
	if t.rw {
		n := 0
		err := t.scan(bucket, nil, func(_, _ []byte) error { n++; return nil })
		return n, err
	}
	if t.counts == nil {
		counts := map[string]int{}
		err := t.exchange(func(b *pgx.Batch) {
			b.Queue(`SELECT bucket, count(*), sum(octet_length(key) + octet_length(value))::bigint FROM `+pgStateTable+` WHERE hotel = $1 GROUP BY bucket`, t.b.hotel)
		}, func(br pgx.BatchResults) error {
			rows, err := br.Query()
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var name string
				var n, size int64
				if err := rows.Scan(&name, &n, &size); err != nil {
					return err
				}
				counts[name] = int(n)
				t.bytes += size
			}
			return rows.Err()
		})
		if err != nil {
			return 0, err
		}
		t.counts = counts
	}
	return t.counts[bucket], nil
}

var errNotWritable = errors.New("transaction not writable")

func (t *pgTx) write(bucket string, key []byte, w pgWrite) error {
	if !t.rw {
		return errNotWritable
	}
	if t.writes == nil {
		t.writes = map[string]map[string]pgWrite{}
	}
	m := t.writes[bucket]
	if m == nil {
		m = map[string]pgWrite{}
		t.writes[bucket] = m
	}
	m[string(key)] = w
	return nil
}

func (t *pgTx) put(bucket string, key, val []byte) error {
	v := make([]byte, len(val)) // never nil: a nil []byte is SQL's NULL
	copy(v, val)
	return t.write(bucket, key, pgWrite{val: v})
}

// keyRange returns the SQL condition, on parameters $3 and $4, that selects
// the keys starting with prefix.
func keyRange(prefix []byte) (string, []any) {
	if len(prefix) == 0 {
		return "", nil
	}
	if end := prefixEnd(prefix); end != nil {
		return " AND key >= $3 AND key < $4", []any{prefix, end}
	}
	return " AND key >= $3", []any{prefix}
}

func (t *pgTx) del(bucket string, key []byte) error {
	return t.write(bucket, key, pgWrite{del: true})
}

func (t *pgTx) delPrefix(bucket string, prefix []byte) error {
	if !t.rw {
		return errNotWritable
	}
	for k := range t.writes[bucket] {
		if strings.HasPrefix(k, string(prefix)) {
			delete(t.writes[bucket], k)
		}
	}
	t.prefixes = append(t.prefixes, pgPrefix{bucket: bucket, prefix: bytes.Clone(prefix)})
	return nil
}

func (t *pgTx) nextSeq(bucket string) (uint64, error) {
	if !t.rw {
		return 0, errNotWritable
	}
	if bucket != bucketJournal {
		return 0, fmt.Errorf("bucket %s has no sequence", bucket)
	}
	if !t.seqLoaded {
		// Nothing was read yet: begin, which reads the sequence.
		if err := t.exchange(func(*pgx.Batch) {}, func(pgx.BatchResults) error { return nil }); err != nil {
			return 0, err
		}
	}
	t.seq++
	return uint64(t.seq), nil
}

// commit ends the transaction: a view's or an update without writes with
// COMMIT alone (nothing when it never began), an update's with its writes in
// one round trip.
func (t *pgTx) commit() error {
	if !t.rw || (len(t.writes) == 0 && len(t.prefixes) == 0) {
		if !t.begun {
			return nil
		}
		err := t.exchange(func(b *pgx.Batch) { b.Queue("COMMIT") }, func(br pgx.BatchResults) error {
			_, err := br.Exec()
			return err
		})
		if err == nil {
			t.begun = false
		}
		return err
	}
	var seq *int64
	if t.seqLoaded {
		seq = &t.seq
	}
	n := 0
	err := t.exchange(func(b *pgx.Batch) {
		queue := func(sql string, args ...any) { b.Queue(sql, args...); n++ }
		var fence *int64
		if t.b.fence != 0 {
			fence = &t.b.fence
		}
		queue(`SELECT ticketbridge_commit($1, $2, $3)`, t.b.hotel, seq, fence)
		for _, p := range t.prefixes {
			where, args := keyRange(p.prefix)
			queue(`DELETE FROM `+pgStateTable+` WHERE hotel = $1 AND bucket = $2`+where, append([]any{t.b.hotel, p.bucket}, args...)...)
		}
		buckets := make([]string, 0, len(t.writes))
		for name := range t.writes {
			buckets = append(buckets, name)
		}
		slices.Sort(buckets) // a stable order of row locks
		for _, name := range buckets {
			var putK, putV, delK [][]byte
			keys := make([]string, 0, len(t.writes[name]))
			for k := range t.writes[name] {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				w := t.writes[name][k]
				if w.del {
					delK = append(delK, []byte(k))
				} else {
					putK, putV = append(putK, []byte(k)), append(putV, w.val)
				}
			}
			if len(delK) > 0 {
				queue(`DELETE FROM `+pgStateTable+` WHERE hotel = $1 AND bucket = $2 AND key = ANY($3)`, t.b.hotel, name, delK)
			}
			if len(putK) > 0 {
				queue(`INSERT INTO `+pgStateTable+` (hotel, bucket, key, value)
					SELECT $1, $2, k, v FROM unnest($3::bytea[], $4::bytea[]) AS w(k, v)
					ON CONFLICT (hotel, bucket, key) DO UPDATE SET value = excluded.value`, t.b.hotel, name, putK, putV)
			}
		}
		b.Queue("COMMIT")
	}, func(br pgx.BatchResults) error {
		for range n + 1 {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	t.begun = false
	return nil
}

// journalSeq reads the hotel's journal sequence (for a copy).
func (t *pgTx) journalSeq() (int64, error) {
	var seq int64
	err := t.exchange(func(b *pgx.Batch) {
		b.Queue(`SELECT journal_seq FROM `+pgHotelsTable+` WHERE hotel = $1`, t.b.hotel)
	}, func(br pgx.BatchResults) error {
		return br.QueryRow().Scan(&seq)
	})
	return seq, err
}
