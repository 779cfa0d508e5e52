package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/internal/envvar"
	"github.com/ticketbridge/ticketbridge/internal/secretfile"
	"github.com/ticketbridge/ticketbridge/internal/smtpsend"
)

// Config is the notifications' part of the daemon's settings,
// TICKETBRIDGE_NOTIFY_*, as written. Each list of targets and each ping
// URL is a secret and has a _FILE form (one or the other). [Load] reads
// it and [Config.Validate] checks and parses it, once, into [Settings].
type Config struct {
	// URLs are the operators' targets (see [ParseTargets]); empty sends
	// no notice.
	URLs     string `env:"TICKETBRIDGE_NOTIFY_URLS"`
	URLsFile string `env:"TICKETBRIDGE_NOTIFY_URLS_FILE"`
	// SupportURLs receive the deadline warnings; empty sends them to URLs.
	SupportURLs     string `env:"TICKETBRIDGE_NOTIFY_SUPPORT_URLS"`
	SupportURLsFile string `env:"TICKETBRIDGE_NOTIFY_SUPPORT_URLS_FILE"`
	// SMTPURL is the mail server of the mailto: targets,
	// smtp://host[:587] (STARTTLS) or smtps://host[:465].
	SMTPURL          string `env:"TICKETBRIDGE_NOTIFY_SMTP_URL"`
	SMTPUser         string `env:"TICKETBRIDGE_NOTIFY_SMTP_USER"`
	SMTPPassword     string `env:"TICKETBRIDGE_NOTIFY_SMTP_PASSWORD"`
	SMTPPasswordFile string `env:"TICKETBRIDGE_NOTIFY_SMTP_PASSWORD_FILE"`
	// From is the mails' sender address.
	From string `env:"TICKETBRIDGE_NOTIFY_FROM"`

	Repeat             time.Duration `env:"TICKETBRIDGE_NOTIFY_REPEAT, default=1h"`
	CyclesFailingAfter time.Duration `env:"TICKETBRIDGE_NOTIFY_CYCLES_FAILING_AFTER, default=15m"`
	RequestErrorAfter  time.Duration `env:"TICKETBRIDGE_NOTIFY_REQUEST_ERROR_AFTER, default=1h"`
	// DeadlineWarnBefore is how long before a deadline the support team
	// is warned while nobody answered the guest (internal/fleet).
	DeadlineWarnBefore time.Duration `env:"TICKETBRIDGE_NOTIFY_DEADLINE_WARN_BEFORE, default=1h"`
	GroupWindow        time.Duration `env:"TICKETBRIDGE_NOTIFY_GROUP_WINDOW, default=1m"`

	// PingURL is called after each successful cycle; PingFailURL after a
	// failed one ("" means PingURL + "/fail", "off" none).
	PingURL         string        `env:"TICKETBRIDGE_NOTIFY_PING_URL"`
	PingURLFile     string        `env:"TICKETBRIDGE_NOTIFY_PING_URL_FILE"`
	PingFailURL     string        `env:"TICKETBRIDGE_NOTIFY_PING_FAIL_URL"`
	PingFailURLFile string        `env:"TICKETBRIDGE_NOTIFY_PING_FAIL_URL_FILE"`
	PingInterval    time.Duration `env:"TICKETBRIDGE_NOTIFY_PING_INTERVAL, default=1m"`
	// PingPer is "process" (one URL for the daemon) or "hotel" (each hotel
	// file sets its own TICKETBRIDGE_NOTIFY_PING_URL).
	PingPer string `env:"TICKETBRIDGE_NOTIFY_PING_PER, default=process"`

	// AllowInsecureHTTP is TICKETBRIDGE_ALLOW_INSECURE_HTTP, the daemon's
	// one switch for plain http off loopback.
	AllowInsecureHTTP bool `env:"TICKETBRIDGE_ALLOW_INSECURE_HTTP, default=false"`
}

// Settings are a [Config] checked and parsed, once, where the settings
// are read: the targets (with the mail server) and the ping URLs as
// typed values, which [Settings.Build] and [Settings.Heartbeat] use as
// they are. Nothing after [Config.Validate] parses a URL of the settings
// again.
type Settings struct {
	Config
	// Operators and Support are the parsed URLs and SupportURLs.
	Operators, Support []Target
	// Ping is the process's ping: nil when PingURL is empty or PingPer
	// is "hotel" (each hotel's is read with its file, see [LoadPing]).
	Ping *Ping
}

// Load reads Config from env, resolves the _FILE forms (package
// secretfile's rules) and checks and parses it with [Config.Validate].
// Errors name the variable, never a URL.
func Load(ctx context.Context, env envconfig.Lookuper) (Settings, error) {
	var c Config
	if err := envvar.Load(ctx, env, "", "notification settings", &c); err != nil {
		return Settings{Config: c}, err
	}
	if err := readSecretFiles([]secretVar{
		{"TICKETBRIDGE_NOTIFY_URLS", &c.URLs, &c.URLsFile},
		{"TICKETBRIDGE_NOTIFY_SUPPORT_URLS", &c.SupportURLs, &c.SupportURLsFile},
		{"TICKETBRIDGE_NOTIFY_SMTP_PASSWORD", &c.SMTPPassword, &c.SMTPPasswordFile},
		{"TICKETBRIDGE_NOTIFY_PING_URL", &c.PingURL, &c.PingURLFile},
		{"TICKETBRIDGE_NOTIFY_PING_FAIL_URL", &c.PingFailURL, &c.PingFailURLFile},
	}); err != nil {
		return Settings{Config: c}, err
	}
	s, err := c.Validate()
	if err != nil {
		return Settings{Config: c}, fmt.Errorf("read notification settings: %w", err)
	}
	return s, nil
}

// secretVar is a setting with a _FILE form.
type secretVar struct {
	v         string
	val, file *string
}

// readSecretFiles resolves the _FILE forms of vars: one or the other.
func readSecretFiles(vars []secretVar) error {
	for _, s := range vars {
		v, err := secretfile.Resolve(s.v, *s.val, *s.file)
		if err != nil {
			return fmt.Errorf("read notification settings: %w", err)
		}
		*s.val = v
	}
	return nil
}

// hotelPing is the part of Config a hotel file may set: its own ping.
type hotelPing struct {
	PingURL           string `env:"TICKETBRIDGE_NOTIFY_PING_URL"`
	PingURLFile       string `env:"TICKETBRIDGE_NOTIFY_PING_URL_FILE"`
	PingFailURL       string `env:"TICKETBRIDGE_NOTIFY_PING_FAIL_URL"`
	PingFailURLFile   string `env:"TICKETBRIDGE_NOTIFY_PING_FAIL_URL_FILE"`
	AllowInsecureHTTP bool   `env:"TICKETBRIDGE_ALLOW_INSECURE_HTTP, default=false"`
}

// LoadPing reads and parses the ping URLs of a hotel's env (its file's,
// which names its own or none): nil when it names none. Errors name the
// variable, never the URL.
func LoadPing(ctx context.Context, env envconfig.Lookuper) (*Ping, error) {
	var c hotelPing
	if err := envvar.Load(ctx, env, "", "notification settings", &c); err != nil {
		return nil, err
	}
	if err := readSecretFiles([]secretVar{
		{"TICKETBRIDGE_NOTIFY_PING_URL", &c.PingURL, &c.PingURLFile},
		{"TICKETBRIDGE_NOTIFY_PING_FAIL_URL", &c.PingFailURL, &c.PingFailURLFile},
	}); err != nil {
		return nil, err
	}
	if c.PingURL == "" {
		if c.PingFailURL != "" && c.PingFailURL != "off" {
			return nil, errors.New("read notification settings: TICKETBRIDGE_NOTIFY_PING_FAIL_URL is set without TICKETBRIDGE_NOTIFY_PING_URL")
		}
		return nil, nil
	}
	p, err := ParsePing(c.PingURL, c.PingFailURL, PingOptions{AllowInsecureHTTP: c.AllowInsecureHTTP})
	if err != nil {
		return nil, fmt.Errorf("read notification settings: TICKETBRIDGE_NOTIFY_PING_URL: %w", err)
	}
	return p, nil
}

// Validate checks the values and parses the targets, the mail server and
// the ping URLs, once: what it returns is what the daemon uses.
func (c Config) Validate() (Settings, error) {
	s := Settings{Config: c}
	for _, d := range []struct {
		v string
		d time.Duration
	}{
		{"TICKETBRIDGE_NOTIFY_REPEAT", c.Repeat}, {"TICKETBRIDGE_NOTIFY_CYCLES_FAILING_AFTER", c.CyclesFailingAfter},
		{"TICKETBRIDGE_NOTIFY_REQUEST_ERROR_AFTER", c.RequestErrorAfter}, {"TICKETBRIDGE_NOTIFY_PING_INTERVAL", c.PingInterval},
	} {
		if d.d <= 0 {
			return s, fmt.Errorf("%s=%s: want a positive duration, e.g. 1h", d.v, d.d)
		}
	}
	if c.GroupWindow < 0 || c.DeadlineWarnBefore < 0 {
		return s, errors.New("TICKETBRIDGE_NOTIFY_GROUP_WINDOW and TICKETBRIDGE_NOTIFY_DEADLINE_WARN_BEFORE must not be negative")
	}
	if c.PingPer != "process" && c.PingPer != "hotel" {
		return s, fmt.Errorf("TICKETBRIDGE_NOTIFY_PING_PER=%q: want process or hotel", c.PingPer)
	}
	if c.PingURL == "" && (c.PingFailURL != "" && c.PingFailURL != "off") {
		return s, errors.New("TICKETBRIDGE_NOTIFY_PING_FAIL_URL is set without TICKETBRIDGE_NOTIFY_PING_URL")
	}
	poster := &Poster{} // one client for every target and ping
	var mail *Email
	if c.SMTPURL != "" {
		sc, err := smtpsend.ParseURL("TICKETBRIDGE_NOTIFY_SMTP_URL", c.SMTPURL)
		if err != nil {
			return s, err
		}
		if c.From == "" {
			return s, errors.New("TICKETBRIDGE_NOTIFY_FROM is not set: give the address the notices are mailed from")
		}
		sc.Username, sc.Password = c.SMTPUser, c.SMTPPassword
		mail = &Email{Mailer: smtpsend.New(sc), From: c.From}
	}
	po := ParseOptions{Var: "TICKETBRIDGE_NOTIFY_URLS", HTTP: poster, Email: mail, AllowInsecureHTTP: c.AllowInsecureHTTP}
	var err error
	if s.Operators, err = ParseTargets(c.URLs, po); err != nil {
		return s, err
	}
	po.Var = "TICKETBRIDGE_NOTIFY_SUPPORT_URLS"
	if s.Support, err = ParseTargets(c.SupportURLs, po); err != nil {
		return s, err
	}
	if c.PingURL != "" && c.PingPer != "hotel" {
		if s.Ping, err = ParsePing(c.PingURL, c.PingFailURL, PingOptions{HTTP: poster, AllowInsecureHTTP: c.AllowInsecureHTTP}); err != nil {
			return s, fmt.Errorf("TICKETBRIDGE_NOTIFY_PING_URL: %w", err)
		}
	}
	return s, nil
}

// Build returns the notifier of s with journal (nil: in memory), and the
// process's heartbeat (nil when s has no process ping); [Settings.Heartbeat]
// makes a hotel's. Each call makes a notifier of its own over the same
// targets: a daemon builds one.
func (s Settings) Build(journal Journal, statusURL string, log *slog.Logger) (*Notifier, *Heartbeat) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := New(Options{Operators: s.Operators, Support: s.Support, Journal: journal, Repeat: s.Repeat,
		CyclesFailingAfter: s.CyclesFailingAfter, RequestErrorAfter: s.RequestErrorAfter,
		GroupWindow: groupWindow(s.GroupWindow), StatusURL: statusURL, Logger: log})
	if s.Ping == nil {
		return n, nil
	}
	return n, s.Heartbeat(s.Ping)
}

// Heartbeat makes the heartbeat of p (a hotel's, when PingPer is
// "hotel") with s's interval.
func (s Settings) Heartbeat(p *Ping) *Heartbeat { return NewHeartbeat(p, s.PingInterval) }

// groupWindow maps the setting's 0 (no grouping) to the option's negative.
func groupWindow(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
