package email

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/mail"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/envvar"
	"github.com/ticketbridge/ticketbridge/internal/redact"
	"github.com/ticketbridge/ticketbridge/internal/smtpsend"
)

// EnvPrefix is the prefix of every variable the adapter reads.
const EnvPrefix = "TICKETBRIDGE_EMAIL_"

// Default folder names in the bridge's mailbox. They have no hierarchy,
// so they mean the same whatever separator the server uses.
const (
	DefaultInbox          = "INBOX"
	DefaultSentFolder     = "TicketBridge Sent"
	DefaultSetAsideFolder = "TicketBridge Set aside"
	DefaultTimeout        = 60 * time.Second
	minKeyBytes           = 16
)

// Config is the adapter's configuration, read from the
// TICKETBRIDGE_EMAIL_* variables by [LoadConfig]. Its String and LogValue
// never show the password or the token key.
type Config struct {
	// Address is the bridge's own address, e.g. bridge@hotel.example: the
	// sender of every mail, and, with "+token" added, the address replies
	// come back to. The mailbox must accept sub-addresses.
	Address string `env:"ADDRESS"`
	// FromName is the display name of the bridge's mails.
	FromName string `env:"FROM_NAME,default=Guest Requests"`
	// To receives the requests of departments Departments does not map.
	To string `env:"TO"`
	// Departments maps department codes to addresses:
	// "housekeeping=housekeeping@hotel.example,maintenance=...".
	Departments string `env:"DEPARTMENTS"`
	// SMTPURL is the submission server: smtp://host:587 (STARTTLS) or
	// smtps://host:465.
	SMTPURL string `env:"SMTP_URL"`
	// IMAPURL is the bridge's mailbox: imap://host:143 (STARTTLS) or
	// imaps://host:993.
	IMAPURL string `env:"IMAP_URL"`
	// User logs in to both servers; empty means Address.
	User string `env:"USER"`
	// Password is User's password (or PasswordFile names a file holding
	// it).
	Password     string `env:"PASSWORD"`
	PasswordFile string `env:"PASSWORD_FILE"`
	// CAFile, when set, is a PEM file of the CA the servers' certificates
	// are checked against (a private CA); otherwise the system's.
	CAFile string `env:"CA_FILE"`
	// TokenKey signs the reply addresses (at least 16 bytes; or
	// TokenKeyFile). Changing it makes the reply addresses of every
	// request mailed before unusable.
	TokenKey     string `env:"TOKEN_KEY"`
	TokenKeyFile string `env:"TOKEN_KEY_FILE"`
	// Allow lists who may write to the guests: addresses
	// (anna@hotel.example) and domains (hotel.example or @hotel.example),
	// comma-separated. Mail from anybody else is set aside.
	Allow string `env:"ALLOW"`
	// AuthservID names the receiving server's Authentication-Results
	// header to trust (its authserv-id); a failing DMARC result in it sets
	// the mail aside. Empty: no such header is read.
	AuthservID string `env:"AUTHSERV_ID"`
	// Inbox, SentFolder and SetAsideFolder are the folders of the
	// bridge's mailbox: where replies arrive, where a copy of each mail
	// the bridge sent is kept, and where mail not carried waits.
	Inbox          string `env:"INBOX,default=INBOX"`
	SentFolder     string `env:"SENT_FOLDER,default=TicketBridge Sent"`
	SetAsideFolder string `env:"SET_ASIDE_FOLDER,default=TicketBridge Set aside"`
	// CondStore uses CONDSTORE where the server offers it (to notice
	// changes of the set-aside folder cheaply); false never does.
	CondStore bool `env:"CONDSTORE,default=true"`
	// Timeout bounds each exchange with either server.
	Timeout time.Duration `env:"TIMEOUT,default=60s"`
}

// LoadConfig reads the TICKETBRIDGE_EMAIL_* variables from env and checks
// them (see [Config.Validate]); the secrets named by *_FILE are read.
func LoadConfig(ctx context.Context, env envconfig.Lookuper) (Config, error) {
	if env == nil {
		env = envconfig.MapLookuper(nil)
	}
	var c Config
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{
		Target:   &c,
		Lookuper: envconfig.PrefixLookuper(EnvPrefix, env),
	}); err != nil {
		return Config{}, fmt.Errorf("read email configuration: %w", envvar.Explain(err, &c, env, EnvPrefix))
	}
	var err error
	if c.Password, err = adapters.SecretOrFile(EnvPrefix+"PASSWORD", c.Password, c.PasswordFile); err != nil {
		return Config{}, err
	}
	if c.TokenKey, err = adapters.SecretOrFile(EnvPrefix+"TOKEN_KEY", c.TokenKey, c.TokenKeyFile); err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate checks the settings, naming the variable at fault.
func (c Config) Validate() error {
	if _, err := parseAddress(EnvPrefix+"ADDRESS", c.Address); err != nil {
		return err
	}
	if strings.Contains(localPart(c.Address), "+") {
		return fmt.Errorf("%sADDRESS %q: give the address without a +sub-address; the bridge adds its own", EnvPrefix, c.Address)
	}
	if strings.TrimSpace(c.To) == "" {
		return fmt.Errorf("%sTO is not set: give the address that receives the requests of departments %sDEPARTMENTS does not name", EnvPrefix, EnvPrefix)
	}
	if _, err := parseAddress(EnvPrefix+"TO", c.To); err != nil {
		return err
	}
	if _, err := parseDepartments(c.Departments); err != nil {
		return err
	}
	if _, err := smtpsend.ParseURL(EnvPrefix+"SMTP_URL", c.SMTPURL); err != nil {
		return err
	}
	if _, err := parseIMAPURL(c.IMAPURL); err != nil {
		return err
	}
	if c.Password == "" {
		return fmt.Errorf("%sPASSWORD is not set: give the password of the bridge's mailbox, or a file holding it in %sPASSWORD_FILE", EnvPrefix, EnvPrefix)
	}
	if len(c.TokenKey) < minKeyBytes {
		return fmt.Errorf("%sTOKEN_KEY must hold at least %d bytes (e.g. the output of `openssl rand -hex 32`), or a file holding them in %sTOKEN_KEY_FILE: it signs the reply addresses", EnvPrefix, minKeyBytes, EnvPrefix)
	}
	if l, err := parseAllow(c.Allow); err != nil {
		return err
	} else if l.empty() {
		return fmt.Errorf("%sALLOW is empty: name the addresses or domains of the team (e.g. hotel.example), or every reply is set aside", EnvPrefix)
	}
	for v, f := range map[string]string{"INBOX": c.Inbox, "SENT_FOLDER": c.SentFolder, "SET_ASIDE_FOLDER": c.SetAsideFolder} {
		if strings.TrimSpace(f) == "" {
			return fmt.Errorf("%s%s is empty: name a folder of the bridge's mailbox", EnvPrefix, v)
		}
	}
	if c.SentFolder == c.Inbox || c.SetAsideFolder == c.Inbox || c.SentFolder == c.SetAsideFolder {
		return fmt.Errorf("%sINBOX, %sSENT_FOLDER and %sSET_ASIDE_FOLDER must name three different folders", EnvPrefix, EnvPrefix, EnvPrefix)
	}
	if c.Timeout <= 0 {
		return fmt.Errorf("%sTIMEOUT must be positive", EnvPrefix)
	}
	return nil
}

func (c Config) user() string {
	if c.User != "" {
		return c.User
	}
	return c.Address
}

// tlsConfig returns the TLS configuration of both servers.
func (c Config) tlsConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile == "" {
		return tc, nil
	}
	pem, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, fmt.Errorf("%sCA_FILE: %w", EnvPrefix, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%sCA_FILE %q holds no PEM certificate", EnvPrefix, c.CAFile)
	}
	tc.RootCAs = pool
	return tc, nil
}

// String shows the configuration without its secrets.
func (c Config) String() string {
	return fmt.Sprintf("email{address=%s smtp=%s imap=%s user=%s}", c.Address, redact.URL(c.SMTPURL), redact.URL(c.IMAPURL), c.user())
}

// GoString is String.
func (c Config) GoString() string { return c.String() }

// LogValue logs the configuration without its secrets.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// imapServer is where the bridge's mailbox is.
type imapServer struct {
	host, port string
	implicit   bool // imaps://
}

func (s imapServer) addr() string { return net.JoinHostPort(s.host, s.port) }

func (s imapServer) String() string {
	if s.implicit {
		return "imaps://" + s.addr()
	}
	return "imap://" + s.addr()
}

func parseIMAPURL(raw string) (imapServer, error) {
	v := EnvPrefix + "IMAP_URL"
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return imapServer{}, fmt.Errorf("%s is not set: give the bridge's mailbox server, e.g. imaps://mail.example.com:993 or imap://mail.example.com:143 (STARTTLS)", v)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return imapServer{}, fmt.Errorf("%s %q: want e.g. imaps://mail.example.com:993", v, redact.URL(raw))
	}
	if u.User != nil {
		return imapServer{}, fmt.Errorf("%s carries credentials: give them in %sUSER and %sPASSWORD", v, EnvPrefix, EnvPrefix)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return imapServer{}, fmt.Errorf("%s %q: remove the path, query or fragment (folders have settings of their own)", v, u.Redacted())
	}
	s := imapServer{host: u.Hostname(), port: u.Port()}
	switch u.Scheme {
	case "imap":
		if s.port == "" {
			s.port = "143"
		}
	case "imaps":
		s.implicit = true
		if s.port == "" {
			s.port = "993"
		}
	default:
		return imapServer{}, fmt.Errorf("%s %q: the scheme must be imap (STARTTLS) or imaps (implicit TLS)", v, u.Redacted())
	}
	return s, nil
}

func parseAddress(v, s string) (string, error) {
	a, err := mail.ParseAddress(strings.TrimSpace(s))
	if err != nil || a.Name != "" {
		if strings.TrimSpace(s) == "" {
			return "", fmt.Errorf("%s is not set: give an address, e.g. bridge@hotel.example", v)
		}
		return "", fmt.Errorf("%s %q: want a bare address such as bridge@hotel.example", v, s)
	}
	return strings.ToLower(a.Address), nil
}

// parseDepartments parses TICKETBRIDGE_EMAIL_DEPARTMENTS.
func parseDepartments(s string) (map[string]string, error) {
	v := EnvPrefix + "DEPARTMENTS"
	return adapters.ParseDepartments(v, "department=address, e.g. housekeeping=housekeeping@hotel.example", s,
		func(item, text string) (string, error) {
			a, err := parseAddress(v, text)
			if err != nil {
				return "", fmt.Errorf("%s item %q: want department=address with a bare address", v, item)
			}
			return a, nil
		})
}

// allowList is who may write to the guests.
type allowList struct {
	addresses map[string]bool
	domains   map[string]bool
}

func parseAllow(s string) (allowList, error) {
	l := allowList{addresses: map[string]bool{}, domains: map[string]bool{}}
	for _, item := range strings.Split(s, ",") {
		item = strings.ToLower(strings.TrimSpace(item))
		switch {
		case item == "":
		case strings.HasPrefix(item, "@"):
			l.domains[item[1:]] = true
		case strings.Contains(item, "@"):
			if _, err := mail.ParseAddress(item); err != nil {
				return l, fmt.Errorf("%sALLOW item %q: want an address or a domain", EnvPrefix, item)
			}
			l.addresses[item] = true
		case strings.Contains(item, "."):
			l.domains[item] = true
		default:
			return l, fmt.Errorf("%sALLOW item %q: want an address (anna@hotel.example) or a domain (hotel.example)", EnvPrefix, item)
		}
	}
	return l, nil
}

// allows reports whether the bare address addr may write.
func (l allowList) allows(addr string) bool {
	addr = strings.ToLower(addr)
	if l.addresses[addr] {
		return true
	}
	_, domain, ok := strings.Cut(addr, "@")
	return ok && l.domains[domain]
}

func (l allowList) empty() bool { return len(l.addresses) == 0 && len(l.domains) == 0 }

func localPart(addr string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(addr), "@")
	return l
}
