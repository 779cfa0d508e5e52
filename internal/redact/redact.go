// Package redact makes URLs and errors fit to print: in logs, in error
// texts, on /readyz and on the status page. It is the one place that
// decides what of a URL is secret, so that every printed URL hides the
// same parts.
//
// A URL keeps its scheme, host, port, path and the names of its query
// parameters; its password and every query value are replaced by
// [Mask], and its fragment is dropped. Query values are hidden whatever
// their name: a secret parameter may be called anything (api_key, sig,
// x-amz-credential, password). The user name is kept, since it tells an
// operator which account is meant and is not a credential on its own.
//
// A PostgreSQL keyword/value connection string ("host=db password=…")
// is printed by [DSN] on the same terms: its host, port, database and user
// name are kept, every other value (the password first) is replaced.
//
// A credential a configuration holds (an API key, a token, a password)
// is a [Secret], which prints and logs as "[redacted]", so that the
// configuration needs no printing of its own.
//
// It is not a scrubber of arbitrary text: callers that know a secret's
// value (a key, a token) must keep it out of their texts themselves.
package redact

import (
	"errors"
	"net/url"
	"sort"
	"strings"
)

// Mask replaces what is hidden.
const Mask = "xxxxx"

// URL returns raw fit to print: the password and every query value
// replaced by [Mask], the fragment dropped. A value that does not parse as
// a URL is never echoed: only its scheme, when it has one, is named.
func URL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		scheme, _, found := strings.Cut(raw, "://")
		if found && validScheme(scheme) {
			return scheme + "://(a URL that does not parse)"
		}
		return "(a URL that does not parse)"
	}
	return Parsed(u)
}

// Parsed is [URL] for a parsed URL; u is not changed.
func Parsed(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	if c.User != nil {
		if _, has := c.User.Password(); has {
			c.User = url.UserPassword(c.User.Username(), Mask)
		}
	}
	if c.RawQuery != "" || c.ForceQuery {
		c.RawQuery = query(c.RawQuery)
	}
	c.Fragment, c.RawFragment = "", ""
	if c.Opaque != "" {
		// mailto:a@b or host:port parsed as scheme:opaque; the opaque part
		// may hold anything.
		c.Opaque = Mask
	}
	// String would escape the mask's characters in a password; it has none.
	return c.String()
}

// query keeps the parameter names of a raw query and masks every value.
func query(raw string) string {
	q, err := url.ParseQuery(raw)
	if err != nil && len(q) == 0 {
		return Mask
	}
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		for range q[k] {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(url.QueryEscape(k))
			b.WriteByte('=')
			b.WriteString(Mask)
		}
	}
	return b.String()
}

func validScheme(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// Error returns err with the URL of every *url.Error in its chain
// redacted (net/http puts the whole request URL, query included, into
// its errors). The result still matches the original chain with
// errors.Is and errors.As. A nil err stays nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	clean := URL(ue.URL)
	if clean == ue.URL {
		return err
	}
	return &redacted{msg: strings.ReplaceAll(err.Error(), ue.URL, clean), err: err}
}

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }
