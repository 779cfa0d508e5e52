package state

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestIsURLKnowsEveryPostgresForm: TICKETBRIDGE_STATE names PostgreSQL in
// either form pgx reads, a URL (its scheme in any case: schemes are
// case-insensitive) or a keyword/value connection string (a value that
// starts with a word and =); any other value is a bbolt file's path.
func TestIsURLKnowsEveryPostgresForm(t *testing.T) {
	for _, v := range []string{
		"postgres://db/tb",
		"postgresql://tb@db/tb",
		"POSTGRES://tb:pw@db/tb",
		"PostgreSQL://db/tb?sslmode=require",
		"host=db dbname=tb",
		"  host=db user=tb password=pw",
		"dbname=tb",
		"user=tb password='a b' host=/run/postgresql",
		"service=ticketbridge",
		"host = db port = 5432",
	} {
		if !IsURL(v) {
			t.Errorf("IsURL(%q) = false, want true", v)
		}
	}
	for _, v := range []string{
		"",
		"state.db",
		"/var/lib/ticketbridge/state.db",
		"./data/a=b.db",
		"./a=b.db",
		"-a=b.db",
		"postgres.db",
		"postgres:/db/tb",
		"/srv/host=db/state.db",
	} {
		if IsURL(v) {
			t.Errorf("IsURL(%q) = true, want false (a file)", v)
		}
	}
}

// TestPostgresDSNPasswordIsHidden: a password in a keyword/value
// connection string, or in a URL whose scheme is in upper case, is in no
// printed form of the state and in no error of Open; neither is taken for
// a file's path. Nothing listens on port 1.
func TestPostgresDSNPasswordIsHidden(t *testing.T) {
	const secret = "s3cret-Pa55word"
	dir := t.TempDir()
	t.Chdir(dir) // a value taken for a relative path would make a file here
	for _, v := range []string{
		"host=127.0.0.1 port=1 user=tb password=" + secret + " dbname=tb connect_timeout=5 sslmode=disable",
		"password='" + secret + "' host=127.0.0.1 port=1 sslmode=disable",
		"host=127.0.0.1 port=1 password = " + secret + " sslmode=disable",
		`host=127.0.0.1 port=1 password='it\'s ` + secret + `' sslmode=disable`,
		"host=127.0.0.1 port=1 sslmode=disable application_name=" + secret,
		"POSTGRES://tb:" + secret + "@127.0.0.1:1/db?connect_timeout=5&sslmode=disable",
		"PostgreSQL://127.0.0.1:1/db?password=" + secret + "&sslmode=disable",
	} {
		if !IsURL(v) {
			t.Errorf("IsURL(%s) = false: taken for a file", Redacted(v))
		}
		if got := Redacted(v); strings.Contains(got, secret) {
			t.Errorf("Redacted shows the secret: %s", got)
		}
		s, err := Open(t.Context(), v, Options{ReadOnly: true})
		if err == nil {
			t.Errorf("Open(%s) succeeded: %s", Redacted(v), s.Path())
			s.Close()
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error of Open shows the secret: %v", err)
		}
		if errors.Is(err, ErrInvalid) {
			t.Errorf("Open refused a valid connection string: %v", err)
		}
		if !strings.Contains(err.Error(), "open state ") || !strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("error %q does not say what failed", err)
		}
	}
	// Connection strings pgx does not parse: the error names no secret.
	for _, v := range []string{
		"host=127.0.0.1 port=1 password=" + secret + " sslmode=bogus",
		"host=127.0.0.1 port=1 password='" + secret,
		"host=127.0.0.1 port=1 password=" + secret + " connect_timeout=x",
	} {
		_, err := Open(t.Context(), v, Options{ReadOnly: true})
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("Open of a bad connection string: %v; want an error without the secret", err)
		}
		if got := Redacted(v); strings.Contains(got, secret) {
			t.Errorf("Redacted shows the secret: %s", got)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Errorf("a connection string was taken for a file: %s made", ents[0].Name())
	}
}
