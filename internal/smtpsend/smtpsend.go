// Package smtpsend submits mail to a mail server: SMTP submission with
// STARTTLS (port 587) or implicit TLS (port 465), and AUTH PLAIN with the
// sender's credentials. It is the one way the module sends mail, for the
// email helpdesk and for anything else that mails (notifications).
//
// Plain text is refused off loopback, as the daemon refuses http:// off
// loopback: an smtp:// address must offer STARTTLS unless its host is a
// loopback address (a local relay, a test server), and the password is
// never sent over a connection that is not encrypted except to such a
// host. Errors name the server's address and never the password.
//
// Each Send opens its own connection and closes it: a bridge sends a few
// mails a cycle, and a connection kept open between cycles would time
// out on the server's side and need retrying anyway.
package smtpsend

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/ticketbridge/ticketbridge/internal/redact"
)

// Security is how a connection to the server is encrypted.
type Security string

// Securities.
const (
	// StartTLS connects in clear and upgrades with STARTTLS before
	// anything else (submission, port 587). A loopback server that
	// offers no STARTTLS is spoken to in clear.
	StartTLS Security = "starttls"
	// ImplicitTLS speaks TLS from the first byte (submissions, port
	// 465).
	ImplicitTLS Security = "tls"
)

// DefaultTimeout bounds a whole Send when the context has no deadline.
const DefaultTimeout = 60 * time.Second

// ErrAuth says that the server refused the credentials.
var ErrAuth = errors.New("the mail server refused the credentials")

// ErrPlaintext says that the server offers no encryption and is not on
// loopback, so the mail and the password would cross a network in clear.
var ErrPlaintext = errors.New("the mail server offers no STARTTLS")

// Config says where and how to submit mail.
type Config struct {
	// Host and Port of the submission server.
	Host string
	Port string
	// Security is StartTLS or ImplicitTLS.
	Security Security
	// Username and Password for AUTH PLAIN; an empty Username sends
	// without authenticating (a loopback relay).
	Username string
	Password string
	// TLS, when set, is the TLS configuration to use (its RootCAs for a
	// private CA); ServerName defaults to Host.
	TLS *tls.Config
	// LocalName is the name given in EHLO; "" means "localhost".
	LocalName string
	// Timeout bounds a Send when ctx has no earlier deadline; 0 means
	// DefaultTimeout.
	Timeout time.Duration
}

// Server is a mail server's address as a setting gives it, in the form
// scheme://host[:port] of [Schemes]: the submission server here, the
// mailbox's IMAP server for the email helpdesk. The zero Server is not
// set.
type Server struct {
	Host string
	Port string
	// Implicit is TLS from the first byte (smtps://, imaps://); false is
	// STARTTLS.
	Implicit bool
	scheme   string
}

// Addr is the server's host:port.
func (s Server) Addr() string { return net.JoinHostPort(s.Host, s.Port) }

// IsZero reports whether the address is not set.
func (s Server) IsZero() bool { return s.Host == "" }

// String is scheme://host:port; a Server never holds credentials.
func (s Server) String() string {
	if s.IsZero() {
		return ""
	}
	return s.scheme + "://" + s.Addr()
}

// Schemes are a protocol's two URL schemes, with their default ports and
// an example for error messages.
type Schemes struct {
	STARTTLS, Implicit         string // "smtp", "smtps"
	STARTTLSPort, ImplicitPort string // "587", "465"
	// What the server is, for "is not set: give ..." ("the submission
	// server").
	What string
}

// SMTP are submission's schemes: smtp:// (STARTTLS, port 587) and
// smtps:// (implicit TLS, port 465).
var SMTP = Schemes{STARTTLS: "smtp", Implicit: "smtps", STARTTLSPort: "587", ImplicitPort: "465", What: "the submission server"}

// ParseServer reads raw as a server address of s's schemes; v names the
// variable in errors. An address with credentials, a path, a query or a
// fragment is refused, and errors never show a password written into it.
func ParseServer(v, raw string, s Schemes) (Server, error) {
	example := fmt.Sprintf("%s://mail.example.com:%s or %s://mail.example.com:%s", s.STARTTLS, s.STARTTLSPort, s.Implicit, s.ImplicitPort)
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return Server{}, fmt.Errorf("%s is not set: give %s, e.g. %s", v, s.What, example)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return Server{}, fmt.Errorf("%s %q: want e.g. %s", v, redact.URL(raw), example)
	}
	if u.User != nil {
		return Server{}, fmt.Errorf("%s carries credentials: give the user and password in their own settings", v)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return Server{}, fmt.Errorf("%s %q: remove the path, query or fragment", v, u.Redacted())
	}
	srv := Server{Host: u.Hostname(), Port: u.Port(), scheme: u.Scheme}
	switch u.Scheme {
	case s.STARTTLS:
		if srv.Port == "" {
			srv.Port = s.STARTTLSPort
		}
	case s.Implicit:
		srv.Implicit = true
		if srv.Port == "" {
			srv.Port = s.ImplicitPort
		}
	default:
		return Server{}, fmt.Errorf("%s %q: the scheme must be %s (STARTTLS) or %s (implicit TLS)", v, u.Redacted(), s.STARTTLS, s.Implicit)
	}
	return srv, nil
}

// ParseURL reads a submission server's address (see [ParseServer] and
// [SMTP]) into the Config of sending there.
func ParseURL(v, raw string) (Config, error) {
	srv, err := ParseServer(v, raw, SMTP)
	if err != nil {
		return Config{}, err
	}
	return srv.Config(), nil
}

// Config returns the Config of submitting to s, without credentials.
func (s Server) Config() Config {
	c := Config{Host: s.Host, Port: s.Port, Security: StartTLS}
	if s.Implicit {
		c.Security = ImplicitTLS
	}
	return c
}

// Addr is the server's host:port.
func (c Config) Addr() string { return net.JoinHostPort(c.Host, c.Port) }

// String shows where mail goes, never the password.
func (c Config) String() string {
	scheme := "smtp"
	if c.Security == ImplicitTLS {
		scheme = "smtps"
	}
	return scheme + "://" + c.Addr()
}

// Loopback reports whether host is localhost or a loopback address.
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Sender submits mail as its Config says. It is safe for concurrent use.
type Sender struct {
	cfg Config
	// dialContext replaces the dialer in tests (a server that is not on
	// loopback by name).
	dialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// New returns a Sender for cfg.
func New(cfg Config) *Sender { return &Sender{cfg: cfg} }

// Config returns the sender's configuration.
func (s *Sender) Config() Config { return s.cfg }

// Send submits msg, a whole RFC 5322 message with CRLF line ends, from
// the envelope sender from to the recipients to. A nil error means the
// server answered 250 to the message's data: it took the mail.
// A rejection answered with a 5xx code wraps a *smtp.SMTPError whose
// Permanent reports so (see [Permanent]).
func (s *Sender) Send(ctx context.Context, from string, to []string, msg []byte) error {
	if len(to) == 0 {
		return errors.New("send mail: no recipient")
	}
	c, stop, err := s.dial(ctx)
	if err != nil {
		return err
	}
	defer stop()
	defer func() { _ = c.Close() }()
	if err := c.SendMail(from, to, strings.NewReader(string(msg))); err != nil {
		return fmt.Errorf("send mail through %s: %w", s.cfg, err)
	}
	_ = c.Quit()
	return nil
}

// Check connects, encrypts and authenticates, and sends nothing.
func (s *Sender) Check(ctx context.Context) error {
	c, stop, err := s.dial(ctx)
	if err != nil {
		return err
	}
	defer stop()
	_ = c.Quit() // closes the connection
	return nil
}

// Permanent reports whether err is a rejection the server says will not
// change by repeating the same mail (a 5xx answer such as an unknown
// recipient). A refused login is not: it is a configuration to fix.
func Permanent(err error) bool {
	var se *smtp.SMTPError
	return errors.As(err, &se) && se.Code >= 500 && !errors.Is(err, ErrAuth)
}

// dial opens an encrypted, authenticated connection bounded by ctx; stop
// ends the watch of ctx and must be called once the client is done.
func (s *Sender) dial(ctx context.Context) (_ *smtp.Client, _ func() bool, err error) {
	timeout := s.cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	tc := s.tlsConfig()
	dialer := s.dialContext
	if dialer == nil {
		var d net.Dialer
		dialer = d.DialContext
	}
	conn, err := dialer(ctx, "tcp", s.cfg.Addr())
	if err != nil {
		return nil, nil, fmt.Errorf("connect to the mail server %s: %w", s.cfg, err)
	}
	_ = conn.SetDeadline(deadline)
	// Closing the connection when ctx ends unblocks every read.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer func() {
		if err != nil {
			stop()
		}
	}()
	var c *smtp.Client
	switch {
	case s.cfg.Security == ImplicitTLS:
		tconn := tls.Client(conn, tc)
		if err := tconn.HandshakeContext(ctx); err != nil {
			_ = conn.Close()
			return nil, nil, fmt.Errorf("TLS with the mail server %s: %w", s.cfg, err)
		}
		c = smtp.NewClient(tconn)
	default:
		c, err = smtp.NewClientStartTLS(conn, tc)
		// go-smtp says so only in words; a loopback server without
		// STARTTLS (a local relay) is spoken to in clear on a fresh
		// connection.
		if err != nil && strings.Contains(err.Error(), "support STARTTLS") {
			if !Loopback(s.cfg.Host) {
				return nil, nil, fmt.Errorf("STARTTLS with the mail server %s: %w and is not on loopback: the mail and the password would cross the network in clear; use a server that offers STARTTLS, or smtps:// for implicit TLS", s.cfg, ErrPlaintext)
			}
			conn, err = dialer(ctx, "tcp", s.cfg.Addr())
			if err == nil {
				_ = conn.SetDeadline(deadline)
				stop()
				stop = context.AfterFunc(ctx, func() { _ = conn.Close() })
				c = smtp.NewClient(conn)
			}
		}
		if err != nil {
			_ = conn.Close()
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return nil, nil, fmt.Errorf("STARTTLS with the mail server %s: %w", s.cfg, err)
		}
	}
	fail := func(what string, err error) (*smtp.Client, func() bool, error) {
		_ = c.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, nil, fmt.Errorf("%s with the mail server %s: %w", what, s.cfg, err)
	}
	if err := c.Hello(s.localName()); err != nil {
		return fail("EHLO", err)
	}
	if s.cfg.Username != "" {
		if err := c.Auth(sasl.NewPlainClient("", s.cfg.Username, s.cfg.Password)); err != nil {
			// Every refusal at this stage is the configuration's (the
			// credentials, or a server that wants TLS first), never the
			// mail's.
			var se *smtp.SMTPError
			if errors.As(err, &se) {
				return fail("AUTH", fmt.Errorf("%w (user %q): %d %s", ErrAuth, s.cfg.Username, se.Code, se.Message))
			}
			return fail("AUTH", err)
		}
	}
	return c, stop, nil
}

func (s *Sender) localName() string {
	if s.cfg.LocalName != "" {
		return s.cfg.LocalName
	}
	return "localhost"
}

func (s *Sender) tlsConfig() *tls.Config {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.cfg.TLS != nil {
		tc = s.cfg.TLS.Clone()
	}
	if tc.ServerName == "" {
		tc.ServerName = s.cfg.Host
	}
	return tc
}
