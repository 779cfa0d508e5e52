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
// TICKETBRIDGE_NOTIFY_*. Each list of targets and each ping URL is a
// secret and has a _FILE form (one or the other). [Load] reads and
// checks it; [Config.Build] makes the notifier and the heartbeat.
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
	// is warned; the daemon's deadline check reads it.
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

// Load reads Config from env, resolves the _FILE forms (package
// secretfile's rules) and checks it with [Config.Validate]. Errors name
// the variable, never a URL.
func Load(ctx context.Context, env envconfig.Lookuper) (Config, error) {
	var c Config
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: &c, Lookuper: env}); err != nil {
		return c, fmt.Errorf("read notification settings: %w", envvar.Explain(err, &c, env, ""))
	}
	for _, s := range []struct {
		v         string
		val, file *string
	}{
		{"TICKETBRIDGE_NOTIFY_URLS", &c.URLs, &c.URLsFile},
		{"TICKETBRIDGE_NOTIFY_SUPPORT_URLS", &c.SupportURLs, &c.SupportURLsFile},
		{"TICKETBRIDGE_NOTIFY_SMTP_PASSWORD", &c.SMTPPassword, &c.SMTPPasswordFile},
		{"TICKETBRIDGE_NOTIFY_PING_URL", &c.PingURL, &c.PingURLFile},
		{"TICKETBRIDGE_NOTIFY_PING_FAIL_URL", &c.PingFailURL, &c.PingFailURLFile},
	} {
		if *s.file == "" {
			continue
		}
		if *s.val != "" {
			return c, fmt.Errorf("read notification settings: %s and %s_FILE are both set: use one", s.v, s.v)
		}
		v, err := secretfile.Read(*s.file, s.v+"_FILE")
		if err != nil {
			return c, fmt.Errorf("read notification settings: %w", err)
		}
		*s.val = v
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("read notification settings: %w", err)
	}
	return c, nil
}

// Validate checks the values, parsing the targets and the ping URLs.
func (c Config) Validate() error {
	for _, d := range []struct {
		v string
		d time.Duration
	}{
		{"TICKETBRIDGE_NOTIFY_REPEAT", c.Repeat}, {"TICKETBRIDGE_NOTIFY_CYCLES_FAILING_AFTER", c.CyclesFailingAfter},
		{"TICKETBRIDGE_NOTIFY_REQUEST_ERROR_AFTER", c.RequestErrorAfter}, {"TICKETBRIDGE_NOTIFY_PING_INTERVAL", c.PingInterval},
	} {
		if d.d <= 0 {
			return fmt.Errorf("%s=%s: want a positive duration, e.g. 1h", d.v, d.d)
		}
	}
	if c.GroupWindow < 0 || c.DeadlineWarnBefore < 0 {
		return errors.New("TICKETBRIDGE_NOTIFY_GROUP_WINDOW and TICKETBRIDGE_NOTIFY_DEADLINE_WARN_BEFORE must not be negative")
	}
	if c.PingPer != "process" && c.PingPer != "hotel" {
		return fmt.Errorf("TICKETBRIDGE_NOTIFY_PING_PER=%q: want process or hotel", c.PingPer)
	}
	if c.PingURL == "" && (c.PingFailURL != "" && c.PingFailURL != "off") {
		return errors.New("TICKETBRIDGE_NOTIFY_PING_FAIL_URL is set without TICKETBRIDGE_NOTIFY_PING_URL")
	}
	_, _, err := c.build(&Poster{}, nil)
	return err
}

// Build returns the notifier of c with journal (nil: in memory), sending
// through poster (nil: a client of its own), and the process's heartbeat
// (nil when PingURL is empty or PingPer is "hotel"); [Config.Heartbeat]
// makes a hotel's.
func (c Config) Build(journal Journal, poster *Poster, statusURL string, log *slog.Logger) (*Notifier, *Heartbeat, error) {
	if poster == nil {
		poster = &Poster{}
	}
	n, hb, err := c.build(poster, journal)
	if err != nil {
		return nil, nil, err
	}
	n.o.StatusURL, n.o.Logger = statusURL, log
	if log == nil {
		n.o.Logger = slog.New(slog.DiscardHandler)
	}
	return n, hb, nil
}

func (c Config) build(poster *Poster, journal Journal) (*Notifier, *Heartbeat, error) {
	var mail *Email
	if c.SMTPURL != "" {
		sc, err := smtpsend.ParseURL("TICKETBRIDGE_NOTIFY_SMTP_URL", c.SMTPURL)
		if err != nil {
			return nil, nil, err
		}
		if c.From == "" {
			return nil, nil, errors.New("TICKETBRIDGE_NOTIFY_FROM is not set: give the address the notices are mailed from")
		}
		sc.Username, sc.Password = c.SMTPUser, c.SMTPPassword
		mail = &Email{Mailer: smtpsend.New(sc), From: c.From}
	}
	po := ParseOptions{Var: "TICKETBRIDGE_NOTIFY_URLS", HTTP: poster, Email: mail, AllowInsecureHTTP: c.AllowInsecureHTTP}
	ops, err := ParseTargets(c.URLs, po)
	if err != nil {
		return nil, nil, err
	}
	po.Var = "TICKETBRIDGE_NOTIFY_SUPPORT_URLS"
	sup, err := ParseTargets(c.SupportURLs, po)
	if err != nil {
		return nil, nil, err
	}
	n := New(Options{Operators: ops, Support: sup, Journal: journal, Repeat: c.Repeat,
		CyclesFailingAfter: c.CyclesFailingAfter, RequestErrorAfter: c.RequestErrorAfter,
		GroupWindow: groupWindow(c.GroupWindow)})
	if c.PingURL == "" || c.PingPer == "hotel" {
		return n, nil, nil
	}
	hb, err := c.Heartbeat(c.PingURL, c.PingFailURL, poster)
	if err != nil {
		return nil, nil, err
	}
	return n, hb, nil
}

// Heartbeat makes the heartbeat of url and failURL (a hotel's, when
// PingPer is "hotel") with c's interval. Errors name the variable.
func (c Config) Heartbeat(url, failURL string, poster *Poster) (*Heartbeat, error) {
	hb, err := NewHeartbeat(HeartbeatOptions{URL: url, FailURL: failURL, Interval: c.PingInterval, HTTP: poster,
		AllowInsecureHTTP: c.AllowInsecureHTTP})
	if err != nil {
		return nil, fmt.Errorf("TICKETBRIDGE_NOTIFY_PING_URL: %w", err)
	}
	return hb, nil
}

// groupWindow maps the setting's 0 (no grouping) to the option's negative.
func groupWindow(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
