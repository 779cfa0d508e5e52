package state

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ticketbridge/ticketbridge/internal/notify"
)

// Two replicas starting together on an empty database both want to create
// the schema; the second waits for the first on the schema lock and then
// must see the first's tables, whatever the server's default isolation.
// Under default_transaction_isolation = 'repeatable read' a migration
// transaction that takes the default reads the schema of its snapshot,
// taken before the first committed, and creates the tables again; under
// read committed, to_regclass's catalog cache missed them the same way.
func TestPostgresConcurrentMigration(t *testing.T) {
	for _, iso := range []string{"read committed", "repeatable read"} {
		t.Run(iso, func(t *testing.T) { testConcurrentMigration(t, iso) })
	}
}

func testConcurrentMigration(t *testing.T, isolation string) {
	loc := postgresBackend(t).location(t)
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	// with returns loc with the server's default isolation set, as a
	// database or role setting would.
	with := func() string {
		u, err := url.Parse(loc)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("default_transaction_isolation", isolation)
		u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20") // pgx reads + as itself
		return u.String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctl, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatalf("connect: %v", hideSecret(err, pgPassword(loc)))
	}
	defer ctl.Close(context.Background())
	// The first opener's migration stops on a lock the test holds, with
	// the schema lock taken, until the second waits for that.
	gate := int64(rnd[0])<<24 | int64(rnd[1])<<16 | int64(rnd[2])<<8 | int64(rnd[3])
	if _, err := ctl.Exec(ctx, `SELECT pg_advisory_lock($1)`, gate); err != nil {
		t.Fatal(err)
	}
	held := true
	defer func() {
		if held {
			_, _ = ctl.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, gate)
		}
	}()
	first := append([]pgMigration{append(pgMigration{`SELECT pg_advisory_xact_lock(` + itoa(gate) + `)`}, pgMigrations[0]...)}, pgMigrations[1:]...)
	type opened struct {
		s   *Store
		err error
	}
	results := make(chan opened, 2)
	// waiting waits until a session that the query finds waits on an
	// advisory lock, and returns its pid.
	waiting := func(what, query string, args ...any) int32 {
		t.Helper()
		for {
			var pid int32
			err := ctl.QueryRow(ctx, `SELECT coalesce(max(pid), 0) FROM pg_stat_activity
				WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' AND `+query, args...).Scan(&pid)
			if err != nil {
				t.Fatalf("%s does not wait on its lock: %v", what, err)
			}
			if pid != 0 {
				return pid
			}
			select {
			case r := <-results:
				t.Fatalf("an opener returned before %s waited: %v", what, r.err)
			default:
			}
		}
	}
	open := func(name string, migs []pgMigration) {
		s, err := openPG(ctx, with(), Options{Hotel: name}, migs)
		results <- opened{s, err}
	}
	go open("first", first)
	firstPID := waiting("the first opener", `query LIKE 'SELECT pg_advisory_xact_lock(`+itoa(gate)+`)%'`)
	go open("second", pgMigrations)
	waiting("the second opener", `$1 = ANY(pg_blocking_pids(pid))`, firstPID)
	if _, err := ctl.Exec(ctx, `SELECT pg_advisory_unlock($1)`, gate); err != nil {
		t.Fatal(err)
	}
	held = false
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Errorf("an opener failed: %v", r.err)
			continue
		}
		if r.s.Schema() != PostgresSchemaVersion {
			t.Errorf("schema %d, want %d", r.s.Schema(), PostgresSchemaVersion)
		}
		_ = r.s.Close()
	}
}

func itoa(n int64) string { return fmt.Sprint(n) }

// TestPostgresMigratesToNotices: a database of schema 3, written by a
// ticketbridge without notifications, migrates to the schema of the
// notices (the bucket of state file schema 3), keeps its rows and takes
// episodes; the ticketbridge of schema 3, which would not know them,
// refuses the migrated database instead of running beside them.
func TestPostgresMigratesToNotices(t *testing.T) {
	loc := postgresBackend(t).location(t)
	ctx := t.Context()
	s, err := openPG(ctx, loc, Options{Hotel: "h1"}, pgMigrations[:3])
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx *Tx) error { return tx.PutTicket(Ticket{ID: "t1"}) })
	_ = s.Close()
	if s, err = openPG(ctx, loc, Options{Hotel: "h1"}, pgMigrations); err != nil {
		t.Fatal(err)
	}
	if s.Schema() != PostgresSchemaVersion || PostgresSchemaVersion < 4 {
		t.Errorf("Schema = %d, want %d (past 3)", s.Schema(), PostgresSchemaVersion)
	}
	ep := notify.Episode{Key: notify.Key{Hotel: "h1", Kind: notify.KeyRefused}, Version: 1, Since: t0}
	if ok, err := s.Notices().Put(ctx, ep, 0); !ok || err != nil {
		t.Errorf("Put a notice after the migration: %t, %v", ok, err)
	}
	view(t, s, func(tx *Tx) error {
		if _, ok, err := tx.Ticket("t1"); !ok || err != nil {
			t.Errorf("t1 lost by the migration: %t, %v", ok, err)
		}
		return nil
	})
	_ = s.Close()
	if _, err := openPG(ctx, loc, Options{Hotel: "h1"}, pgMigrations[:3]); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("the ticketbridge of schema 3 on the migrated database: err = %v, want ErrNewerSchema", err)
	}
}
