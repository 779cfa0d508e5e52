package redact

import "log/slog"

// Secret is a credential (an API key, a token, a signing secret) that
// never prints itself: String, GoString, LogValue and MarshalText give
// "[redacted]", or "" when it is empty, so that a configuration holding
// one can be printed, logged or encoded whole. Reveal gives the value to
// the code that sends it.
type Secret string

func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString hides the value from %#v too.
func (s Secret) GoString() string { return s.String() }

// LogValue hides the value from log/slog handlers, which do not call
// String.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText hides the value from encoders.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Reveal returns the secret itself, for the request or signature that
// needs it.
func (s Secret) Reveal() string { return string(s) }
