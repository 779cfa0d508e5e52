package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/envvar"
	"github.com/ticketbridge/ticketbridge/internal/redact"
	"github.com/ticketbridge/ticketbridge/internal/secretfile"
)

// Defaults of [Config].
const (
	DefaultListen  = "127.0.0.1:9465"
	DefaultDir     = "ticketbridge-webhook" // beside the state file; "webhook" below $STATE_DIRECTORY
	DefaultTimeout = 30 * time.Second
	// MinSecretLen is the shortest secret accepted, in bytes: 256 bits of
	// HMAC-SHA256 key, as openssl rand -hex 32 makes (64 bytes).
	MinSecretLen = 32
	// MaxInboundBytes limits the body of an inbound event.
	MaxInboundBytes = 1 << 20
	// InboundPath is the path of the inbound endpoint.
	InboundPath = "/events"
	// ListenOff as TICKETBRIDGE_WEBHOOK_LISTEN serves no inbound endpoint.
	ListenOff = "off"
)

// Config is the adapter's configuration, read from TICKETBRIDGE_WEBHOOK_*.
type Config struct {
	// URL receives every event as a signed POST; required, http or https.
	URL string `env:"TICKETBRIDGE_WEBHOOK_URL"`
	// Secret is the shared HMAC secret of both directions, at least
	// MinSecretLen bytes. Give it or SecretFile, not both.
	Secret redact.Secret `env:"TICKETBRIDGE_WEBHOOK_SECRET"`
	// SecretFile names a file holding the secret (mode 600 or stricter).
	// Without either, $CREDENTIALS_DIRECTORY/webhook-secret is read when
	// systemd provides it.
	SecretFile string `env:"TICKETBRIDGE_WEBHOOK_SECRET_FILE"`
	// Listen is the address of the inbound endpoint, POST /events; "off"
	// serves none (events then flow one way). Empty means DefaultListen.
	Listen string `env:"TICKETBRIDGE_WEBHOOK_LISTEN"`
	// Dir keeps what was delivered and what came in. Empty means
	// $STATE_DIRECTORY/webhook under systemd, else DefaultDir beside the
	// state file.
	Dir string `env:"TICKETBRIDGE_WEBHOOK_DIR"`
	// Tolerance is how far an inbound request's timestamp may be from the
	// daemon's clock.
	Tolerance time.Duration `env:"TICKETBRIDGE_WEBHOOK_TOLERANCE, default=5m"`
	// Timeout bounds one delivery attempt.
	Timeout time.Duration `env:"TICKETBRIDGE_WEBHOOK_TIMEOUT, default=30s"`
	// Events lists the event types to send. Empty means [DefaultEvents];
	// the list must hold those three, and may add ticket.updated. A
	// receiver sees no type it did not ask for, so one that refuses
	// unknown types (the adapter retries every answer but 2xx, and never
	// drops a delivery) is never blocked by a type added later.
	Events []string `env:"TICKETBRIDGE_WEBHOOK_EVENTS"`
	// AllowInsecureHTTP accepts a plain http URL to a host that is not
	// loopback; LoadConfig sets it from TICKETBRIDGE_ALLOW_INSECURE_HTTP
	// (see adapters.CheckHTTPS).
	AllowInsecureHTTP bool
}

// LoadConfig reads the configuration from env and resolves the secret and
// the defaults that depend on the environment: Dir defaults to
// $STATE_DIRECTORY/webhook under systemd, else to DefaultDir in stateDir,
// the directory of the state file (see [adapters.Deps]); with neither it
// must be set. It checks every value and names the variable at fault; no
// error contains the secret.
func LoadConfig(ctx context.Context, env envconfig.Lookuper, stateDir string) (Config, error) {
	var c Config
	if err := envvar.Load(ctx, env, "", "webhook configuration", &c); err != nil {
		return c, err
	}
	allow, err := adapters.LoadInsecureHTTP(ctx, env)
	if err != nil {
		return c, fmt.Errorf("read webhook configuration: %w", err)
	}
	c.AllowInsecureHTTP = allow
	if c.Dir == "" {
		if dir, ok := env.Lookup("STATE_DIRECTORY"); ok && dir != "" {
			c.Dir = filepath.Join(strings.Split(dir, ":")[0], "webhook")
		} else if stateDir != "" {
			c.Dir = filepath.Join(stateDir, DefaultDir)
		}
	}
	if c.Secret == "" && c.SecretFile == "" {
		if dir, ok := env.Lookup("CREDENTIALS_DIRECTORY"); ok && dir != "" {
			if p := filepath.Join(dir, "webhook-secret"); fileExists(p) {
				c.SecretFile = p
			}
		}
	}
	s, err := secretfile.Resolve("TICKETBRIDGE_WEBHOOK_SECRET", strings.TrimSpace(c.Secret.Reveal()), c.SecretFile)
	if err != nil {
		return c, fmt.Errorf("read webhook configuration: %w", err)
	}
	c.Secret = redact.Secret(s)
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("read webhook configuration: %w", err)
	}
	return c, nil
}

// Validate checks c, filling the defaults of empty fields (Listen,
// Tolerance, Timeout; not Dir, which New requires).
func (c *Config) Validate() error {
	if c.URL == "" {
		return errors.New("TICKETBRIDGE_WEBHOOK_URL is not set: want the receiver's http(s) URL")
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("TICKETBRIDGE_WEBHOOK_URL %q: want an absolute http or https URL", redact.URL(c.URL))
	}
	if err := adapters.CheckHTTPS("TICKETBRIDGE_WEBHOOK_URL", u, c.AllowInsecureHTTP); err != nil {
		return err
	}
	switch n := len(c.Secret); {
	case n == 0:
		return errors.New("no webhook secret: set TICKETBRIDGE_WEBHOOK_SECRET_FILE (or TICKETBRIDGE_WEBHOOK_SECRET) to the secret shared with the receiver")
	case n < MinSecretLen && c.SecretFile != "":
		return fmt.Errorf("TICKETBRIDGE_WEBHOOK_SECRET_FILE: the secret in %s is %d bytes long; want at least %d (e.g. openssl rand -hex 32)", c.SecretFile, n, MinSecretLen)
	case n < MinSecretLen:
		return fmt.Errorf("TICKETBRIDGE_WEBHOOK_SECRET is %d bytes long; want at least %d (e.g. openssl rand -hex 32)", n, MinSecretLen)
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Listen != ListenOff {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			return fmt.Errorf("TICKETBRIDGE_WEBHOOK_LISTEN %q: want host:port (e.g. %s) or %q", c.Listen, DefaultListen, ListenOff)
		}
	}
	if c.Dir == "" {
		return errors.New("TICKETBRIDGE_WEBHOOK_DIR is not set: want a directory for the delivery records (left out, they go beside the state file, and the state is in no file)")
	}
	if c.Tolerance == 0 {
		c.Tolerance = DefaultTolerance
	}
	if c.Tolerance < time.Second {
		return fmt.Errorf("TICKETBRIDGE_WEBHOOK_TOLERANCE %s: want at least 1s", c.Tolerance)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Timeout < 0 {
		return fmt.Errorf("TICKETBRIDGE_WEBHOOK_TIMEOUT %s: want a positive duration", c.Timeout)
	}
	return c.validEvents()
}

// DefaultEvents are the event types sent when TICKETBRIDGE_WEBHOOK_EVENTS
// is empty: those every receiver has had since the first release.
var DefaultEvents = []string{EventTicketCreated, EventMessageAdded, EventStatusChanged}

// validEvents checks Events, filling the default.
func (c *Config) validEvents() error {
	var evs []string
	for _, e := range c.Events {
		if e = strings.TrimSpace(e); e != "" && !slices.Contains(evs, e) {
			evs = append(evs, e)
		}
	}
	if len(evs) == 0 {
		evs = slices.Clone(DefaultEvents)
	}
	for _, e := range evs {
		if !slices.Contains(DefaultEvents, e) && e != EventTicketUpdated {
			return fmt.Errorf("TICKETBRIDGE_WEBHOOK_EVENTS: unknown event type %q (want %s, and optionally %s)", e, strings.Join(DefaultEvents, ","), EventTicketUpdated)
		}
	}
	for _, e := range DefaultEvents {
		if !slices.Contains(evs, e) {
			return fmt.Errorf("TICKETBRIDGE_WEBHOOK_EVENTS: %s is missing: the list must hold %s (the receiver needs them), and may add %s", e, strings.Join(DefaultEvents, ","), EventTicketUpdated)
		}
	}
	c.Events = evs
	return nil
}

// sends reports whether the configuration asks for event type typ.
func (c *Config) sends(typ string) bool { return slices.Contains(c.Events, typ) }

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Factory builds the adapter from deps' environment; register it as
// "webhook".
func Factory(ctx context.Context, deps adapters.Deps) (adapters.Helpdesk, error) {
	cfg, err := LoadConfig(ctx, deps.Env, deps.StateDir)
	if err != nil {
		return nil, err
	}
	return New(ctx, cfg, Options{
		Logger:   deps.Logger,
		Status:   adapters.APIStatusMap().Override(deps),
		ReadOnly: deps.ReadOnly,
		HTTP:     deps.HTTP(cfg.Timeout),
		Guard:    deps.Guard,
	})
}
