package state

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/ticketbridge/ticketbridge/internal/redact"
)

// IsURL reports whether a TICKETBRIDGE_STATE value names a PostgreSQL
// database rather than a bbolt file, in either form pgx reads:
//
//   - a URL, postgres://… or postgresql://…, its scheme in any case
//     (POSTGRES://… too: a scheme is case-insensitive);
//   - a keyword/value connection string, "host=db user=tb password=…
//     dbname=tb": a value that starts with a keyword (letters, digits
//     and _) and =.
//
// Anything else is a file's path; a file whose name starts with word=
// is named ./word=… to tell it from a connection string.
func IsURL(state string) bool {
	return hasPostgresScheme(state) || isKeywordValue(state)
}

// hasPostgresScheme reports whether s is a postgres:// or postgresql://
// URL, whatever the scheme's case.
func hasPostgresScheme(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	return ok && (strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql"))
}

// isKeywordValue reports whether s starts as a keyword/value connection
// string does: spaces, a keyword, spaces, =.
func isKeywordValue(s string) bool {
	s = strings.TrimLeft(s, " \t\n\r\v\f")
	n := 0
	for n < len(s) && (s[n] == '_' || 'a' <= s[n] && s[n] <= 'z' || 'A' <= s[n] && s[n] <= 'Z' || n > 0 && '0' <= s[n] && s[n] <= '9') {
		n++
	}
	return n > 0 && strings.HasPrefix(strings.TrimLeft(s[n:], " \t"), "=")
}

// connString is s as pgx parses it: a URL's scheme in lower case (pgx
// knows postgres:// and postgresql:// only so spelled, and reads anything
// else as keyword/value settings).
func connString(s string) string {
	if scheme, rest, ok := strings.Cut(s, "://"); ok && hasPostgresScheme(s) {
		return strings.ToLower(scheme) + "://" + rest
	}
	return s
}

// hasSetting reports whether the connection string s sets key: a URL's
// query parameter, or a keyword/value setting.
func hasSetting(s, key string) bool {
	if hasPostgresScheme(s) {
		u, err := url.Parse(s)
		return err == nil && u.Query().Has(key)
	}
	settings, err := redact.ParseDSN(s)
	if err != nil {
		return false
	}
	for _, st := range settings {
		if st.Key == key {
			return true
		}
	}
	return false
}

// WithMaxConns returns the PostgreSQL connection string s with its pool
// sized to n connections (pgx's pool_max_conns), replacing the size s
// sets: a URL gets the query parameter, a keyword/value string a last
// setting, which wins over an earlier one. Its errors hide s's secrets.
func WithMaxConns(s string, n int) (string, error) {
	if !hasPostgresScheme(s) {
		return s + " pool_max_conns=" + strconv.Itoa(n), nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return s, fmt.Errorf("TICKETBRIDGE_STATE is not a URL: %w", redact.Error(err))
	}
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(n))
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// HasPassword reports whether the PostgreSQL connection string s holds a
// password: a URL's (its user part or its password parameter), or a
// keyword/value string's password setting. A string that does not parse
// is taken to hold one.
func HasPassword(s string) bool {
	if hasPostgresScheme(s) {
		u, err := url.Parse(s)
		if err != nil {
			return true
		}
		_, pw := u.User.Password()
		return pw || u.Query().Has("password")
	}
	settings, err := redact.ParseDSN(s)
	if err != nil {
		return true
	}
	for _, st := range settings {
		if st.Key == "password" {
			return true
		}
	}
	return false
}
