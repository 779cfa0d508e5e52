package redact

import (
	"errors"
	"fmt"
	"strings"
)

// Setting is one keyword = value of a keyword/value connection string
// (PostgreSQL's "host=db user=tb password=… dbname=tb").
type Setting struct {
	Key, Value string
}

// Shown reports whether [DSN] prints the setting's value: the host, the
// port, the database and the user name, as [URL] keeps a URL's host,
// port, path and user name. Every other value is hidden, whatever its key:
// a password, an sslpassword, or a secret put in options or
// application_name.
func (s Setting) Shown() bool {
	switch s.Key {
	case "host", "hostaddr", "port", "dbname", "database", "user":
		return true
	}
	return false
}

// ParseDSN splits a keyword/value connection string into its settings, in
// order, as libpq and pgx read it: keyword = value pairs apart by spaces,
// a value in single quotes when it holds spaces, a backslash escaping the
// next character. Its errors never quote raw.
func ParseDSN(raw string) ([]Setting, error) {
	if strings.IndexByte(raw, 0) >= 0 {
		return nil, errors.New("a NUL byte in the connection string")
	}
	var out []Setting
	s := strings.TrimLeft(raw, dsnSpace)
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return nil, fmt.Errorf("setting %d has no =", len(out)+1)
		}
		key := strings.Trim(s[:eq], dsnSpace)
		if key == "" || strings.ContainsAny(key, dsnSpace) {
			return nil, fmt.Errorf("setting %d: want keyword=value", len(out)+1)
		}
		s = strings.TrimLeft(s[eq+1:], dsnSpace)
		var val string
		if strings.HasPrefix(s, "'") {
			end, ok := dsnEnd(s[1:], func(c byte) bool { return c == '\'' })
			if !ok {
				return nil, fmt.Errorf("the value of %s: unterminated quoted string", key)
			}
			val, s = unescapeDSN(s[1:1+end]), s[end+2:]
		} else {
			end, _ := dsnEnd(s, func(c byte) bool { return strings.IndexByte(dsnSpace, c) >= 0 })
			val, s = unescapeDSN(s[:end]), s[end:]
		}
		s = strings.TrimLeft(s, dsnSpace)
		out = append(out, Setting{Key: key, Value: val})
	}
	return out, nil
}

// DSN returns a keyword/value connection string fit to print: each
// setting's keyword, with the values [Setting.Shown] does not keep
// replaced by [Mask]. A value that does not parse is never echoed.
func DSN(raw string) string {
	settings, err := ParseDSN(raw)
	if err != nil {
		return "(a connection string that does not parse)"
	}
	var b strings.Builder
	for i, s := range settings {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s.Key)
		b.WriteByte('=')
		if !s.Shown() {
			b.WriteString(Mask)
			continue
		}
		b.WriteString(quoteDSN(s.Value))
	}
	return b.String()
}

// quoteDSN returns v as a value of a keyword/value connection string:
// as it is when it needs no quotes, else in single quotes with ' and \
// escaped.
func quoteDSN(v string) string {
	if v != "" && !strings.ContainsAny(v, dsnSpace+`'\`) {
		return v
	}
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return "'" + r.Replace(v) + "'"
}

// dsnSpace is what parts the settings of a connection string.
const dsnSpace = " \t\n\r\v\f"

// dsnEnd returns the index of the first byte of s that stop matches,
// skipping each byte a backslash escapes; ok is false when none does.
func dsnEnd(s string, stop func(byte) bool) (end int, ok bool) {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\':
			i++
		case stop(s[i]):
			return i, true
		}
	}
	return len(s), false
}

// unescapeDSN drops the backslashes that escape a value's characters.
func unescapeDSN(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			if i == len(s) {
				break
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
