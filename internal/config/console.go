package config

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/internal/redact"
	"github.com/ticketbridge/ticketbridge/internal/statuspage"
)

// consoleConfig is read from the daemon's environment.
type consoleConfig struct {
	// TokenFile holds the console token that signs in to the status page
	// and authorises `ticketbridge retry` and `skip` while the daemon runs.
	// Unset, the token is systemd's credential console-token (the unit's
	// LoadCredential=, from /etc/ticketbridge/console-token) when there is
	// one; without either the page is read-only.
	TokenFile string `env:"TICKETBRIDGE_CONSOLE_TOKEN_FILE"`
	// ExternalURL is the address people open the page at through a proxy,
	// e.g. https://bridge.example.com/; with https the session cookies are
	// Secure by default.
	ExternalURL string `env:"TICKETBRIDGE_CONSOLE_EXTERNAL_URL"`
	// SecureCookie is true or false; empty follows ExternalURL.
	SecureCookie string `env:"TICKETBRIDGE_CONSOLE_SECURE_COOKIE"`
	// TrustedProxies lists the proxies (addresses or CIDR networks) whose
	// X-Forwarded-For names the client a wrong token is counted against,
	// and whose share of the page's views is taken; empty trusts none.
	TrustedProxies string `env:"TICKETBRIDGE_CONSOLE_TRUSTED_PROXIES"`
	// AllowedHosts lists more host names (or addresses) the page is
	// opened at, beyond the listen address's, the loopback names and
	// ExternalURL's host; a request for any other host is refused, against
	// DNS rebinding.
	AllowedHosts string `env:"TICKETBRIDGE_CONSOLE_ALLOWED_HOSTS"`
}

// ConsoleCredential is the name of the console token among the unit's
// credentials (LoadCredential=console-token:...).
const ConsoleCredential = "console-token"

// Console are the status page's settings, read and checked.
type Console struct {
	Token          redact.Secret // "" keeps the page read-only; never printed
	SecureCookie   bool
	TrustedProxies []netip.Prefix
	ExternalHost   string   // TICKETBRIDGE_CONSOLE_EXTERNAL_URL's host; "" when unset
	AllowedHosts   []string // TICKETBRIDGE_CONSOLE_ALLOWED_HOSTS
}

// LoadConsole reads the status page's variables and the console token:
// from TICKETBRIDGE_CONSOLE_TOKEN_FILE, or else from the credential
// console-token ($CREDENTIALS_DIRECTORY/console-token, as the API key is
// found), where a blank one means none (the unit's SetCredential=
// default when /etc/ticketbridge/console-token does not exist). A token
// file its group or other users may read, or a token shorter than
// statuspage.MinTokenLen bytes, is refused; errors never hold the token.
func LoadConsole(ctx context.Context, env envconfig.Lookuper) (Console, error) {
	var c consoleConfig
	var s Console
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: &c, Lookuper: env}); err != nil {
		return s, fmt.Errorf("read configuration: %w", err)
	}
	var err error
	if s.TrustedProxies, err = statuspage.ParseProxies(c.TrustedProxies); err != nil {
		return s, fmt.Errorf("read configuration: TICKETBRIDGE_CONSOLE_TRUSTED_PROXIES: %w", err)
	}
	if s.AllowedHosts, err = statuspage.ParseHosts(c.AllowedHosts); err != nil {
		return s, fmt.Errorf("read configuration: TICKETBRIDGE_CONSOLE_ALLOWED_HOSTS: %w", err)
	}
	if u := strings.TrimSpace(c.ExternalURL); u != "" {
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return s, fmt.Errorf("read configuration: TICKETBRIDGE_CONSOLE_EXTERNAL_URL=%q: want the address the page is opened at, e.g. https://bridge.example.com/", redact.URL(u))
		}
		s.SecureCookie, s.ExternalHost = pu.Scheme == "https", pu.Host
	}
	if v := strings.TrimSpace(c.SecureCookie); v != "" {
		if s.SecureCookie, err = strconv.ParseBool(v); err != nil {
			return s, fmt.Errorf("read configuration: TICKETBRIDGE_CONSOLE_SECURE_COOKIE=%q: want true or false (empty: true when TICKETBRIDGE_CONSOLE_EXTERNAL_URL starts with https)", v)
		}
	}
	path, what := strings.TrimSpace(c.TokenFile), "TICKETBRIDGE_CONSOLE_TOKEN_FILE"
	if path == "" {
		if path = credentialFile(env, ConsoleCredential); path == "" {
			return s, nil
		}
		what = "the credential " + ConsoleCredential
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == "" {
			return s, nil
		}
	}
	tok, err := readSecretFile(path, "console token")
	if err != nil {
		if c.TokenFile != "" && UnderSystemd() && errors.Is(err, fs.ErrPermission) {
			return s, fmt.Errorf("read configuration: %s: %w; under the service, leave the variable unset: the unit passes /etc/ticketbridge/console-token as its credential %s", what, err, ConsoleCredential)
		}
		return s, fmt.Errorf("read configuration: %s: %w", what, err)
	}
	if err := statuspage.CheckToken(tok); err != nil {
		return s, fmt.Errorf("read configuration: %s: %s: %w", what, path, err)
	}
	s.Token = redact.Secret(tok)
	return s, nil
}
