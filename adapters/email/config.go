package email

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/mail"
	"os"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/envvar"
	"github.com/ticketbridge/ticketbridge/internal/redact"
	"github.com/ticketbridge/ticketbridge/internal/secretfile"
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
	Address Address `env:"ADDRESS"`
	// FromName is the display name of the bridge's mails.
	FromName string `env:"FROM_NAME,default=Guest Requests"`
	// To receives the requests of departments Departments does not map.
	To Address `env:"TO"`
	// Departments maps department codes to addresses:
	// "housekeeping=housekeeping@hotel.example,maintenance=...".
	Departments Routes `env:"DEPARTMENTS"`
	// SMTPURL is the submission server: smtp://host:587 (STARTTLS) or
	// smtps://host:465.
	SMTPURL SMTPServer `env:"SMTP_URL"`
	// IMAPURL is the bridge's mailbox: imap://host:143 (STARTTLS) or
	// imaps://host:993.
	IMAPURL IMAPServer `env:"IMAP_URL"`
	// User logs in to both servers; empty means Address.
	User string `env:"USER"`
	// Password is User's password (or PasswordFile names a file holding
	// it).
	Password     redact.Secret `env:"PASSWORD"`
	PasswordFile string        `env:"PASSWORD_FILE"`
	// CAFile, when set, is a PEM file of the CA the servers' certificates
	// are checked against (a private CA); otherwise the system's.
	CAFile string `env:"CA_FILE"`
	// TokenKey signs the reply addresses (at least 16 bytes; or
	// TokenKeyFile). Changing it makes the reply addresses of every
	// request mailed before unusable.
	TokenKey     redact.Secret `env:"TOKEN_KEY"`
	TokenKeyFile string        `env:"TOKEN_KEY_FILE"`
	// Allow lists who may write to the guests: addresses
	// (anna@hotel.example) and domains (hotel.example or @hotel.example),
	// comma-separated. Mail from anybody else is set aside.
	Allow AllowList `env:"ALLOW"`
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
	var c Config
	if err := envvar.Load(ctx, env, EnvPrefix, "email configuration", &c); err != nil {
		return Config{}, err
	}
	for _, s := range []struct {
		name  string
		value *redact.Secret
		file  string
	}{{"PASSWORD", &c.Password, c.PasswordFile}, {"TOKEN_KEY", &c.TokenKey, c.TokenKeyFile}} {
		v, err := secretfile.Resolve(EnvPrefix+s.name, s.value.Reveal(), s.file)
		if err != nil {
			return Config{}, err
		}
		*s.value = redact.Secret(v)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate checks what the variables' decoders cannot: the settings
// that must be set, and those that depend on each other. It names the
// variable at fault.
func (c Config) Validate() error {
	if c.Address == "" {
		return fmt.Errorf("%sADDRESS is not set: give an address, e.g. bridge@hotel.example", EnvPrefix)
	}
	if strings.Contains(localPart(string(c.Address)), "+") {
		return fmt.Errorf("%sADDRESS %q: give the address without a +sub-address; the bridge adds its own", EnvPrefix, c.Address)
	}
	if c.To == "" {
		return fmt.Errorf("%sTO is not set: give the address that receives the requests of departments %sDEPARTMENTS does not name", EnvPrefix, EnvPrefix)
	}
	if c.SMTPURL.IsZero() {
		_, err := smtpsend.ParseServer(EnvPrefix+"SMTP_URL", "", smtpsend.SMTP)
		return err
	}
	if c.IMAPURL.IsZero() {
		_, err := smtpsend.ParseServer(EnvPrefix+"IMAP_URL", "", imapSchemes)
		return err
	}
	if c.Password == "" {
		return fmt.Errorf("%sPASSWORD is not set: give the password of the bridge's mailbox, or a file holding it in %sPASSWORD_FILE", EnvPrefix, EnvPrefix)
	}
	if len(c.TokenKey) < minKeyBytes {
		return fmt.Errorf("%sTOKEN_KEY must hold at least %d bytes (e.g. the output of `openssl rand -hex 32`), or a file holding them in %sTOKEN_KEY_FILE: it signs the reply addresses", EnvPrefix, minKeyBytes, EnvPrefix)
	}
	if c.Allow.empty() {
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
	return string(c.Address)
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

// Address is a bare mail address in lower case, parsed once when read
// (go-envconfig's Decoder).
type Address string

// EnvDecode sets a to the bare address v.
func (a *Address) EnvDecode(v string) error {
	p, err := parseAddress(v)
	*a = Address(p)
	return err
}

// Domain is the address's domain.
func (a Address) Domain() string {
	_, d, _ := strings.Cut(string(a), "@")
	return d
}

func parseAddress(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil // not set: Validate says so where it must be
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" {
		return "", fmt.Errorf("%q: want a bare address such as bridge@hotel.example", s)
	}
	return strings.ToLower(a.Address), nil
}

// SMTPServer is TICKETBRIDGE_EMAIL_SMTP_URL, the submission server,
// parsed once when read: smtp://host:587 (STARTTLS) or smtps://host:465.
type SMTPServer struct{ smtpsend.Server }

// EnvDecode parses v with smtpsend.ParseServer.
func (s *SMTPServer) EnvDecode(v string) (err error) {
	s.Server, err = smtpsend.ParseServer(EnvPrefix+"SMTP_URL", v, smtpsend.SMTP)
	return err
}

// IMAPServer is TICKETBRIDGE_EMAIL_IMAP_URL, the bridge's mailbox,
// parsed once when read: imap://host:143 (STARTTLS) or imaps://host:993.
type IMAPServer struct{ smtpsend.Server }

// imapSchemes are IMAP's schemes, read by the one parser of mail
// servers' addresses.
var imapSchemes = smtpsend.Schemes{STARTTLS: "imap", Implicit: "imaps", STARTTLSPort: "143", ImplicitPort: "993", What: "the bridge's mailbox server"}

// EnvDecode parses v with smtpsend.ParseServer.
func (s *IMAPServer) EnvDecode(v string) (err error) {
	s.Server, err = smtpsend.ParseServer(EnvPrefix+"IMAP_URL", v, imapSchemes)
	return err
}

// Routes is TICKETBRIDGE_EMAIL_DEPARTMENTS, department code to address,
// parsed once when read.
type Routes map[string]string

// EnvDecode parses "housekeeping=housekeeping@hotel.example,...".
func (r *Routes) EnvDecode(s string) error {
	v := EnvPrefix + "DEPARTMENTS"
	m, err := adapters.ParseDepartments(v, "department=address, e.g. housekeeping=housekeeping@hotel.example", s,
		func(item, text string) (string, error) {
			a, err := parseAddress(text)
			if err != nil || a == "" {
				return "", fmt.Errorf("%s item %q: want department=address with a bare address", v, item)
			}
			return a, nil
		})
	*r = m
	return err
}

// AllowList is TICKETBRIDGE_EMAIL_ALLOW, who may write to the guests,
// parsed once when read.
type AllowList struct {
	addresses map[string]bool
	domains   map[string]bool
}

// EnvDecode parses addresses and domains, comma-separated.
func (l *AllowList) EnvDecode(s string) (err error) {
	*l, err = parseAllow(s)
	return err
}

func parseAllow(s string) (AllowList, error) {
	l := AllowList{addresses: map[string]bool{}, domains: map[string]bool{}}
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
func (l AllowList) allows(addr string) bool {
	addr = strings.ToLower(addr)
	if l.addresses[addr] {
		return true
	}
	_, domain, ok := strings.Cut(addr, "@")
	return ok && l.domains[domain]
}

func (l AllowList) empty() bool { return len(l.addresses) == 0 && len(l.domains) == 0 }

func localPart(addr string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(addr), "@")
	return l
}
