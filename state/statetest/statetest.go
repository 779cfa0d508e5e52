// Package statetest gives tests a PostgreSQL database of their own for the
// state, when one is at hand: PostgresURL makes a PostgreSQL schema for the
// test, dropped after it, in the database named by TICKETBRIDGE_TEST_POSTGRES
// (deploy/dev/postgres.sh start prints that line), and skips the test with
// a line saying so when the variable is unset.
//
// It is test support only, and opens no state itself.
package statetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env names the variable that holds the URL of the test database.
const Env = "TICKETBRIDGE_TEST_POSTGRES"

// SkipMessage is the line a test without a database skips with.
const SkipMessage = "PostgreSQL state tests skipped: set " + Env +
	"=postgres://... (deploy/dev/postgres.sh start prints it) to run them"

// PostgresURL returns the URL of a new, empty PostgreSQL schema for t
// (the test database's URL with a search_path), dropped when t ends. It
// skips t when Env is unset.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(Env)
	if base == "" {
		t.Skip(SkipMessage)
	}
	return SchemaURL(t, base)
}

// SchemaURL makes a schema for t in the database at base, dropped when t
// ends, and returns base with a search_path that puts the tables there.
func SchemaURL(t testing.TB, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s does not parse as a URL", Env)
	}
	secret, _ := u.User.Password()
	hide := func(err error) string {
		if secret == "" {
			return err.Error()
		}
		return strings.ReplaceAll(err.Error(), secret, "xxxxx")
	}
	exec := func(sql string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "tbtest_" + hex.EncodeToString(b[:])
	if err := exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema in %s: %s", Env, hide(err))
	}
	t.Cleanup(func() {
		if err := exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("drop schema %s: %s", schema, hide(err))
		}
	})
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
