package state

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
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
	// 3: the records of schema 2 (NotOurs, a deleted ticket's fields),
	// which live in ticketbridge_state like every bucket. The version
	// alone keeps an older ticketbridge from syncing those tickets again.
	{
		`COMMENT ON TABLE ticketbridge_state IS 'ticketbridge records, a row per key of a bucket (tickets, not_ours, journal, ...), encoded as in a state file'`,
	},
	// 4: the notifications' episodes (bucket notices, state file schema
	// 3), rows of ticketbridge_state too. As for 3, the version keeps a
	// ticketbridge that does not know them off the database: beside a
	// newer replica it would neither resolve nor send what they record.
	{
		`COMMENT ON TABLE ticketbridge_state IS 'ticketbridge records, a row per key of a bucket (tickets, not_ours, journal, notices, ...), encoded as in a state file'`,
	},
	// 5: the requests' audit trails (buckets audit and audit_days, state
	// file schema 4), rows of ticketbridge_state as well: the table's
	// primary key orders a ticket's entries and a day's tickets, so that
	// a trail is read, and a day pruned, by a range of keys. As for 3
	// and 4, the version keeps an older ticketbridge off the database,
	// which would cross requests without recording them.
	{
		`COMMENT ON TABLE ticketbridge_state IS 'ticketbridge records, a row per key of a bucket (tickets, not_ours, journal, notices, audit, ...), encoded as in a state file'`,
	},
}

// PostgresSchemaVersion is the schema version of a database this
// ticketbridge writes: the records' layout of [SchemaVersion] plus the
// database's own tables (leases). A test keeps it equal to
// len(pgMigrations).
const PostgresSchemaVersion = 5

// initSchema checks the database's schema version, creates or migrates it
// in one transaction (PostgreSQL's DDL is transactional, so a failure
// leaves the old schema), and adds the hotel when it is new. Concurrent
// opens (replicas starting together) wait for each other on an advisory
// lock.
func (b *pgBackend) initSchema(ctx context.Context, s *Store, migs []pgMigration) (err error) {
	ctx, cancel := roundTripCtx(ctx)
	defer func() { err = ctxErr(ctx, err) }()
	defer cancel()
	tx, err := b.pool.Load().pool.BeginTx(ctx, migrateTx)
	if err != nil {
		return err
	}
	defer func() {
		// After a commit, a no-op; after ctx ended, still sent.
		rctx, cancel := rollbackCtx(ctx)
		_ = tx.Rollback(rctx)
		cancel()
	}()
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
