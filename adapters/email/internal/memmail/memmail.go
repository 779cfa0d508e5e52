// Package memmail is an in-process mail system for the email helpdesk's
// tests: an SMTP server (go-smtp) that delivers each recipient's copy to
// the INBOX of the user its local part names (sub-addressing with "+",
// a Delivered-To line added as a delivery agent does), and an IMAP server
// (go-imap's in-memory server) on the same users. It offers neither
// CONDSTORE nor QRESYNC, so the adapter's path without them runs here;
// the real servers (package mailtest) run the other.
package memmail

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Password is every user's password.
const Password = "memmail-password"

// System is a running mail system.
type System struct {
	Domain   string
	IMAPAddr string // host:port, plain (loopback)
	SMTPAddr string // host:port, plain (loopback), no AUTH needed

	mu    sync.Mutex
	users map[string]*imapmemserver.User
	// Refuse, when set, is asked for each recipient; a non-nil error is
	// the server's answer to RCPT (a 5xx *smtp.SMTPError for a rejection).
	Refuse func(rcpt string) error
	// Taken counts the mails the SMTP server answered 250 to.
	taken int
}

// Start serves a mail system for domain with the given users until t
// ends.
func Start(t testing.TB, domain string, users ...string) *System {
	t.Helper()
	s := &System{Domain: domain, users: map[string]*imapmemserver.User{}}
	mem := imapmemserver.New()
	for _, name := range users {
		u := imapmemserver.NewUser(name, Password)
		if err := u.Create("INBOX", nil); err != nil {
			t.Fatal(err)
		}
		mem.AddUser(u)
		s.users[name] = u
	}
	isrv := imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return mem.NewSession(), nil, nil
		},
		Caps: imap.CapSet{
			imap.CapIMAP4rev1: {}, imap.CapMove: {}, imap.CapUIDPlus: {}, imap.CapESearch: {},
		},
		InsecureAuth: true,
		Logger:       discard{},
	})
	iln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = isrv.Serve(iln) }()
	t.Cleanup(func() { _ = isrv.Close() })
	s.IMAPAddr = iln.Addr().String()

	ssrv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) {
		return &session{sys: s}, nil
	}))
	ssrv.Domain = "localhost"
	ssrv.ErrorLog = discard{}
	ssrv.AllowInsecureAuth = true
	sln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = ssrv.Serve(sln) }()
	t.Cleanup(func() { _ = ssrv.Close() })
	s.SMTPAddr = sln.Addr().String()
	return s
}

// User returns the in-memory user name, for tests that reach into a
// mailbox (a server rebuilding its index and changing UIDVALIDITY).
func (s *System) User(name string) *imapmemserver.User {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.users[name]
}

// Taken returns how many mails the SMTP server took.
func (s *System) Taken() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.taken
}

// Deliver puts raw into the INBOX of the user rcpt's local part names, as
// the SMTP server does (a mail from outside, a bounce).
func (s *System) Deliver(rcpt string, raw []byte) error {
	local, domain, ok := strings.Cut(rcpt, "@")
	if !ok || !strings.EqualFold(domain, s.Domain) {
		return fmt.Errorf("memmail: %q is not an address of %s", rcpt, s.Domain)
	}
	local, _, _ = strings.Cut(local, "+")
	u := s.User(strings.ToLower(local))
	if u == nil {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user " + local}
	}
	b := append([]byte("Delivered-To: "+rcpt+"\r\n"), raw...)
	_, err := u.Append("INBOX", bytes.NewReader(b), &imap.AppendOptions{})
	return err
}

type session struct {
	sys *System
	to  []string
}

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if s.sys.User(user) == nil || pass != Password {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "authentication failed"}
		}
		return nil
	}), nil
}
func (s *session) Mail(string, *smtp.MailOptions) error { return nil }
func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if s.sys.Refuse != nil {
		if err := s.sys.Refuse(to); err != nil {
			return err
		}
	}
	s.to = append(s.to, to)
	return nil
}
func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	for _, to := range s.to {
		if err := s.sys.Deliver(to, b); err != nil {
			return err
		}
	}
	s.sys.mu.Lock()
	s.sys.taken++
	s.sys.mu.Unlock()
	return nil
}
func (s *session) Reset()        { s.to = nil }
func (s *session) Logout() error { return nil }

type discard struct{}

func (discard) Printf(string, ...any) {}
func (discard) Println(...any)        {}
