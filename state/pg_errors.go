package state

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/ticketbridge/ticketbridge/internal/redact"
)

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
// not the other values, and it quotes pieces of a URL it could not. A
// keyword/value connection string is hidden as [redact.DSN] hides it.
func parseURLError(rawURL string, err error) error {
	if !hasPostgresScheme(rawURL) {
		return parseDSNError(rawURL, err)
	}
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
	return &redactedError{msg: hideValues(err.Error(), redact.URL(rawURL), secrets), err: err}
}

// parseDSNError is [parseURLError] for a keyword/value connection string:
// pgx quotes it with its password hidden, not the other values, and it
// quotes a piece of a string it could not split (a password with an
// unquoted space in it).
func parseDSNError(dsn string, err error) error {
	settings, perr := redact.ParseDSN(dsn)
	if perr != nil {
		return &redactedError{msg: "it does not parse as keyword=value settings: " + perr.Error() +
			" (quote a value that holds a space or a quote: password='it\\'s secret')", err: err}
	}
	var secrets []string
	for _, s := range settings {
		if !s.Shown() {
			secrets = append(secrets, s.Value, strings.TrimSpace(s.Value))
		}
	}
	return &redactedError{msg: hideValues(err.Error(), redact.DSN(dsn), secrets), err: err}
}

// hideValues returns pgx's message msg with the connection string it
// quotes replaced by printed (as redact prints it), and every secret
// hidden.
func hideValues(msg, printed string, secrets []string) string {
	// pgx says "cannot parse `CONNSTRING`: what (why)".
	if rest, ok := strings.CutPrefix(msg, "cannot parse `"); ok {
		if _, why, ok := strings.Cut(rest, "`: "); ok {
			msg = "cannot parse `" + printed + "`: " + why
		}
	}
	// Longest first, so that a value holding another is hidden whole.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, sec := range secrets {
		if len(sec) >= 3 {
			msg = strings.ReplaceAll(msg, sec, redact.Mask)
		}
	}
	return msg
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

// ctxErr returns err as the error of ctx's end when ctx has ended: a round
// trip cut short by its context fails with the context's error, which pgx
// reports as the server's "canceling statement" or a broken connection.
func ctxErr(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil || errors.Is(err, ctx.Err()) {
		return err
	}
	return fmt.Errorf("%w (%w)", ctx.Err(), err)
}
