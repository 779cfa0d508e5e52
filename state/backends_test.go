package state

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/ticketbridge/ticketbridge/state/statetest"
)

// postgresEnv names the variable that holds the URL of a PostgreSQL
// database the tests may use; deploy/dev/postgres.sh start prints it.
// Each test works in a PostgreSQL schema of its own, dropped after it.
const (
	postgresEnv  = statetest.Env
	postgresSkip = statetest.SkipMessage
)

func TestMain(m *testing.M) {
	if os.Getenv(postgresEnv) == "" {
		fmt.Fprintln(os.Stderr, "state: "+postgresSkip)
	}
	os.Exit(m.Run())
}

// testBackend makes empty state locations of one backend.
type testBackend struct {
	name string
	// location returns the path or URL of a new, empty state.
	location func(t *testing.T) string
}

// openTest opens a new, empty state with a short lock timeout and a fake
// clock at t0, and returns it with its location.
func (b testBackend) openTest(t *testing.T, opts Options) (*Store, string) {
	t.Helper()
	loc := b.location(t)
	return openAt(t, loc, opts), loc
}

var boltBackendForTest = testBackend{name: "bbolt", location: func(t *testing.T) string {
	return filepath.Join(t.TempDir(), "state.db")
}}

// eachBackend runs fn as a subtest on bbolt, and on PostgreSQL when
// postgresEnv holds a URL (it skips with a line saying how to run it
// otherwise).
func eachBackend(t *testing.T, fn func(t *testing.T, b testBackend)) {
	t.Run("bbolt", func(t *testing.T) { fn(t, boltBackendForTest) })
	t.Run("postgres", func(t *testing.T) { fn(t, postgresBackend(t)) })
}

// postgresBackend returns the PostgreSQL backend, or skips the test.
func postgresBackend(t *testing.T) testBackend {
	t.Helper()
	base := os.Getenv(postgresEnv)
	if base == "" {
		t.Skip(postgresSkip)
	}
	return testBackend{name: "postgres", location: func(t *testing.T) string { return pgSchemaURL(t, base) }}
}

// pgSchemaURL makes a PostgreSQL schema for the test, dropped after it,
// and returns base with a search_path that puts the tables there.
func pgSchemaURL(t testing.TB, base string) string {
	t.Helper()
	return statetest.SchemaURL(t, base)
}

func pgPassword(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}
