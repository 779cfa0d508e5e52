package state

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
)

// Location is where a hotel's state is kept (TICKETBRIDGE_STATE): a bbolt
// file or a PostgreSQL database, its kind judged once, when the value is
// read (go-envconfig's Decoder) or made ([ParseLocation]), by [IsURL].
// It prints as [Redacted]: a connection string may hold a password.
type Location struct {
	value string
	db    bool
}

// ParseLocation returns s as a [Location].
func ParseLocation(s string) Location { return Location{value: s, db: IsURL(s)} }

// EnvDecode sets l to [ParseLocation] of s; it never fails.
func (l *Location) EnvDecode(s string) error {
	*l = ParseLocation(s)
	return nil
}

// IsZero reports whether no location is set.
func (l Location) IsZero() bool { return l.value == "" }

// IsDB reports whether the state is in PostgreSQL, not in a file.
func (l Location) IsDB() bool { return l.db }

// Value is the file's path or the database's connection string, as
// given. A connection string may hold a password: print the Location
// (or [Redacted]), never Value.
func (l Location) Value() string { return l.value }

// Dir is the directory of the state file, "" for a database.
func (l Location) Dir() string {
	if l.db {
		return ""
	}
	return filepath.Dir(l.value)
}

// String is the location without secrets ([Redacted]).
func (l Location) String() string { return Redacted(l.value) }

// GoString is String, so that %#v does not show a password either.
func (l Location) GoString() string { return l.String() }

// LogValue logs the location as String does.
func (l Location) LogValue() slog.Value { return slog.StringValue(l.String()) }

// WithMaxConns returns the database's location with its pool sized to n
// connections ([WithMaxConns]); a file's is returned as it is.
func (l Location) WithMaxConns(n int) (Location, error) {
	if !l.db {
		return l, nil
	}
	s, err := WithMaxConns(l.value, n)
	if err != nil {
		return l, err
	}
	return Location{value: s, db: true}, nil
}

// OpenAt is [Open] at l, whose kind is judged already.
func OpenAt(ctx context.Context, l Location, opts Options) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("open state %s: %w", l, err)
	}
	if l.db {
		return openPG(ctx, l.value, opts, pgMigrations)
	}
	return open(ctx, l.value, opts, migrations)
}
