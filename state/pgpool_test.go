package state

import (
	"strings"
	"testing"
)

// A process's pool to one database holds at most DefaultMaxConns
// connections, unless the URL's pool_max_conns says otherwise.
func TestPostgresMaxConns(t *testing.T) {
	b := postgresBackend(t)
	loc := b.location(t)
	s := openAt(t, loc, Options{})
	if got := s.pg.pool.Load().pool.Config().MaxConns; got != DefaultMaxConns {
		t.Errorf("pool of %s: at most %d connections, want %d", s.Path(), got, DefaultMaxConns)
	}
	sep := "?"
	if strings.Contains(loc, "?") {
		sep = "&"
	}
	s3 := openAt(t, loc+sep+"pool_max_conns=3", Options{Hotel: "other"})
	if got := s3.pg.pool.Load().pool.Config().MaxConns; got != 3 {
		t.Errorf("pool with pool_max_conns=3: at most %d connections", got)
	}
}
