package adapters

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"

	"github.com/sethvargo/go-envconfig"
	"github.com/ticketbridge/ticketbridge/internal/redact"
)

// InsecureHTTPVar is the one variable that lets the daemon speak plain
// http to a host that is not loopback (see [CheckHTTPS]).
const InsecureHTTPVar = "TICKETBRIDGE_ALLOW_INSECURE_HTTP"

// InsecureHTTP is the env-tagged setting of [InsecureHTTPVar]; the daemon's
// configuration and every adapter whose address may be http read it with
// [LoadInsecureHTTP].
type InsecureHTTP struct {
	Allow bool `env:"TICKETBRIDGE_ALLOW_INSECURE_HTTP, default=false"`
}

// LoadInsecureHTTP reads [InsecureHTTPVar] from env (not prefixed); a
// nil env finds nothing.
func LoadInsecureHTTP(ctx context.Context, env envconfig.Lookuper) (bool, error) {
	if env == nil {
		env = envconfig.MapLookuper(nil)
	}
	var c InsecureHTTP
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: &c, Lookuper: env}); err != nil {
		return false, fmt.Errorf("read %s: want true or false", InsecureHTTPVar)
	}
	return c.Allow, nil
}

// CheckHTTPS is the daemon's one rule for the addresses it sends
// credentials to (the API, every helpdesk, the webhook receiver): https,
// or plain http to a loopback host (a local fake, a tunnel, the reference
// server), or plain http anywhere when the operator opted out with
// [InsecureHTTPVar]. v names the variable for the error, which shows the
// address through package redact only.
func CheckHTTPS(v string, u *url.URL, allowInsecure bool) error {
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if Loopback(u.Hostname()) || allowInsecure {
			return nil
		}
		return fmt.Errorf("%s %q: plain http to a host that is not loopback would carry the credentials in clear: use https, or set %s=true to accept it",
			v, redact.Parsed(u), InsecureHTTPVar)
	}
	return fmt.Errorf("%s %q: the scheme must be https (or http to a loopback address)", v, redact.Parsed(u))
}

// URL is a helpdesk's address as read from its variable, parsed once
// when read (go-envconfig's Decoder). Parsing never fails: what is wrong
// with the address (no host, credentials, plain http, not a URL at all)
// is said by [BaseURL.Check], which knows the variable's name and hints.
// It prints through package redact only.
type URL struct {
	raw string
	u   *url.URL // nil when raw does not parse
}

// ParseURL returns raw, without surrounding white space, as a [URL].
func ParseURL(raw string) URL {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil {
		u = nil
	}
	return URL{raw: raw, u: u}
}

// EnvDecode sets a to [ParseURL] of s.
func (a *URL) EnvDecode(s string) error {
	*a = ParseURL(s)
	return nil
}

// IsZero reports whether the address is not set.
func (a URL) IsZero() bool { return a.raw == "" }

// String is the address without credentials (package redact).
func (a URL) String() string {
	if a.u == nil {
		return redact.URL(a.raw)
	}
	return redact.Parsed(a.u)
}

// GoString is String, so that %#v does not show credentials either.
func (a URL) GoString() string { return a.String() }

// LogValue logs the address as String does.
func (a URL) LogValue() slog.Value { return slog.StringValue(a.String()) }

// Parsed returns a copy of the parsed address, nil when it does not parse.
func (a URL) Parsed() *url.URL {
	if a.u == nil {
		return nil
	}
	c := *a.u
	return &c
}

// Trimmed returns the address without a trailing slash or suffix (an API
// path such as /api/v2, so that either form may be given); "" when it does
// not parse. Check the address first.
func (a URL) Trimmed(suffix string) string {
	u := a.Parsed()
	if u == nil {
		return ""
	}
	p := strings.TrimRight(u.Path, "/")
	if suffix != "" {
		p = strings.TrimSuffix(p, suffix)
	}
	u.Path = strings.TrimRight(p, "/")
	u.RawPath = ""
	return u.String()
}

// BaseURL describes a helpdesk's address variable for [BaseURL.Check]: its
// name and the hints its error messages give.
type BaseURL struct {
	// Var is the variable's name, e.g. TICKETBRIDGE_ZENDESK_URL.
	Var string
	// What says what the address is, e.g. "the Zendesk account's address".
	What string
	// Example is an address shown in the messages, e.g.
	// https://hotel.zendesk.com.
	Example string
	// Credentials says where credentials go instead of the URL, e.g.
	// "put the token in TICKETBRIDGE_ZAMMAD_TOKEN".
	Credentials string
	// APISuffix is the API path trimmed from the end of the address, e.g.
	// /api/v2, so that either form may be given (see [BaseURL.Base]).
	APISuffix string
	// AllowInsecureHTTP accepts plain http to any host (see [CheckHTTPS]).
	AllowInsecureHTTP bool
}

// Check says what is wrong with a: unset, not a URL, no host, credentials,
// a query or a fragment. Plain http is accepted only for a loopback host
// (a local fake or a tunnel), unless AllowInsecureHTTP is set
// ([CheckHTTPS]): a helpdesk's credentials must not cross a network in
// clear. The errors name b.Var and never show credentials.
func (b BaseURL) Check(a URL) error {
	if a.raw == "" {
		return fmt.Errorf("%s is not set: give %s, e.g. %s", b.Var, b.What, b.Example)
	}
	u := a.u
	if u == nil {
		return fmt.Errorf("%s does not parse as a URL: want e.g. %s", b.Var, b.Example)
	}
	if u.User != nil {
		return fmt.Errorf("%s carries credentials: %s", b.Var, b.Credentials)
	}
	if u.Host == "" {
		return fmt.Errorf("%s %q has no host: want e.g. %s", b.Var, redact.Parsed(u), b.Example)
	}
	if err := CheckHTTPS(b.Var, u, b.AllowInsecureHTTP); err != nil {
		return err
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%s %q: remove the query or fragment", b.Var, redact.Parsed(u))
	}
	return nil
}

// Base returns a checked address without a trailing slash or APISuffix.
func (b BaseURL) Base(a URL) string { return a.Trimmed(b.APISuffix) }

// Loopback reports whether host (a URL's Hostname) is localhost or a
// loopback IP address.
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ParseDepartments parses s, the value of the variable v, a
// comma-separated list of department=value items, into a map from
// department code to value. White space around items, codes and values is
// ignored, and so are empty items: an empty s is an empty map. An item
// without "=" or without a code is an error saying it should look like
// form (e.g. "department=groupid"); a department may appear once. value
// converts the text after "=" of item, which may be empty, and returns an
// error naming v and item when the text is not a value.
func ParseDepartments[T any](v, form, s string, value func(item, text string) (T, error)) (map[string]T, error) {
	out := map[string]T{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		dept, text, ok := strings.Cut(item, "=")
		dept, text = strings.TrimSpace(dept), strings.TrimSpace(text)
		if !ok || dept == "" {
			return nil, fmt.Errorf("%s item %q: want %s", v, item, form)
		}
		val, err := value(item, text)
		if err != nil {
			return nil, err
		}
		if _, dup := out[dept]; dup {
			return nil, fmt.Errorf("%s names department %q twice", v, dept)
		}
		out[dept] = val
	}
	return out, nil
}
