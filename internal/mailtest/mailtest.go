// Package mailtest is the test kit of the email helpdesk's tests against a
// real Postfix and Dovecot: the servers deploy/dev/mail.sh starts, found
// through the TICKETBRIDGE_TEST_MAIL_* lines it prints, and helpers that
// send mail as a user or as the internet would, and wait for it over IMAP.
// Tests only: no binary links it.
//
// The servers serve the domain in TICKETBRIDGE_TEST_MAIL_DOMAIN (hotel.test)
// on loopback, with the users bridge, frontdesk, housekeeping, maintenance
// and agent, each of whom may submit mail as itself (and its
// sub-addresses, bridge+token@) only. Mailboxes live as long as the
// servers, so a test finds its own mail by a Message-ID of its own
// ([Servers.MessageID]), never by counting.
//
// The bridge's mailbox is one for every test process, and a bridge
// carries or sets aside whatever it finds there: [FromEnv] therefore holds
// a lock beside the servers' password file for the life of the test
// process, so that the packages whose tests use the servers (the email
// helpdesk's, the demo's, the notifications') run one at a time under
// `go test ./...`, never one consuming another's mail.
package mailtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// The variables deploy/dev/mail.sh prints.
const (
	EnvSMTP         = "TICKETBRIDGE_TEST_MAIL_SMTP"          // submission, STARTTLS and AUTH
	EnvSMTPS        = "TICKETBRIDGE_TEST_MAIL_SMTPS"         // submissions, implicit TLS and AUTH
	EnvIMAP         = "TICKETBRIDGE_TEST_MAIL_IMAP"          // IMAP, STARTTLS offered
	EnvIMAPS        = "TICKETBRIDGE_TEST_MAIL_IMAPS"         // IMAP, implicit TLS
	EnvDelivery     = "TICKETBRIDGE_TEST_MAIL_DELIVERY"      // SMTP as the internet delivers: no AUTH, any sender
	EnvDomain       = "TICKETBRIDGE_TEST_MAIL_DOMAIN"        // the domain the servers deliver
	EnvPasswordFile = "TICKETBRIDGE_TEST_MAIL_PASSWORD_FILE" // "user=password" lines
	EnvCA           = "TICKETBRIDGE_TEST_MAIL_CA"            // the PEM of the CA of the servers' certificate
)

// SkipHint is what a test without the servers says when it skips.
const SkipHint = "start a mail server: deploy/dev/mail.sh start, then source its lines"

// Users are the users the servers know, each with a mailbox.
var Users = []string{"bridge", "frontdesk", "housekeeping", "maintenance", "agent"}

// Servers are the running mail servers, as the environment names them.
type Servers struct {
	SMTP     string // host:port of submission (STARTTLS, AUTH)
	SMTPS    string // host:port of submissions (implicit TLS, AUTH)
	IMAP     string // host:port of IMAP (STARTTLS)
	IMAPS    string // host:port of IMAPS (implicit TLS)
	Delivery string // host:port of SMTP as from the internet (no AUTH)
	Domain   string
	// Passwords holds each user's password, by user name.
	Passwords map[string]string
	// CA holds the CA that signed the servers' certificate.
	CA *x509.CertPool
}

// FromEnv returns the servers the TICKETBRIDGE_TEST_MAIL_* variables name.
// It skips the test when none is set, and fails it when only some are, or
// when the password file or the CA cannot be read.
func FromEnv(t testing.TB) *Servers {
	t.Helper()
	names := []string{EnvSMTP, EnvSMTPS, EnvIMAP, EnvIMAPS, EnvDelivery, EnvDomain, EnvPasswordFile, EnvCA}
	vals := make(map[string]string, len(names))
	var missing []string
	for _, n := range names {
		vals[n] = os.Getenv(n)
		if vals[n] == "" {
			missing = append(missing, n)
		}
	}
	if len(missing) == len(names) {
		t.Skip(SkipHint)
	}
	if len(missing) > 0 {
		t.Fatalf("mailtest: %s unset while other %s variables are set; source all the lines deploy/dev/mail.sh start prints",
			strings.Join(missing, ", "), "TICKETBRIDGE_TEST_MAIL_*")
	}
	s := &Servers{
		SMTP: vals[EnvSMTP], SMTPS: vals[EnvSMTPS], IMAP: vals[EnvIMAP], IMAPS: vals[EnvIMAPS],
		Delivery: vals[EnvDelivery], Domain: vals[EnvDomain],
	}
	pws, err := readPasswords(vals[EnvPasswordFile])
	if err != nil {
		t.Fatalf("mailtest: %s: %v", EnvPasswordFile, err)
	}
	for _, u := range Users {
		if pws[u] == "" {
			t.Fatalf("mailtest: %s: no password of user %s; restart the servers (deploy/dev/mail.sh stop, then start)", EnvPasswordFile, u)
		}
	}
	s.Passwords = pws
	if err := holdServers(filepath.Dir(vals[EnvPasswordFile])); err != nil {
		t.Fatalf("mailtest: %v", err)
	}
	pem, err := os.ReadFile(vals[EnvCA])
	if err != nil {
		t.Fatalf("mailtest: %s: %v", EnvCA, err)
	}
	s.CA = x509.NewCertPool()
	if !s.CA.AppendCertsFromPEM(pem) {
		t.Fatalf("mailtest: %s: %s holds no PEM certificate", EnvCA, vals[EnvCA])
	}
	return s
}

// readPasswords reads "user=password" lines.
// held is the lock holdServers takes, once a process.
var held struct {
	once sync.Once
	err  error
}

// holdServers takes the lock of the servers' tests in dir, waiting while
// another test process holds it, and keeps it until this process ends:
// its file is never closed, so the kernel lets it go at the exit, a
// crash's included.
func holdServers(dir string) error {
	held.once.Do(func() {
		name := filepath.Join(dir, "tests.lock")
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			held.err = fmt.Errorf("the lock of the mail servers' tests: %w", err)
			return
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			held.err = fmt.Errorf("the lock of the mail servers' tests: lock %s: %w", name, err)
		}
	})
	return held.err
}

func readPasswords(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pws := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, pw, ok := strings.Cut(line, "=")
		if !ok || user == "" || pw == "" {
			return nil, fmt.Errorf("line %d is not user=password", n)
		}
		pws[user] = pw
	}
	return pws, sc.Err()
}

// Addr is user's address: agent@hotel.test.
func (s *Servers) Addr(user string) string { return user + "@" + s.Domain }

// TLSConfig is a client TLS configuration that trusts the servers' CA.
func (s *Servers) TLSConfig() *tls.Config {
	return &tls.Config{RootCAs: s.CA, MinVersion: tls.VersionTLS12}
}

func (s *Servers) password(t testing.TB, user string) string {
	t.Helper()
	pw, ok := s.Passwords[user]
	if !ok {
		t.Fatalf("mailtest: no user %q (users: %s)", user, strings.Join(Users, ", "))
	}
	return pw
}

// MessageID returns a Message-ID (without angle brackets) no other test
// run uses, at the servers' domain.
func (s *Servers) MessageID(t testing.TB) string {
	t.Helper()
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "mailtest-" + hex.EncodeToString(b[:]) + "@" + s.Domain
}

// Submit sends msg as user through submission (STARTTLS, AUTH PLAIN), with
// the envelope sender from (which must be user's address or one of its
// sub-addresses) to the envelope recipients to.
func (s *Servers) Submit(t testing.TB, user, from string, to []string, msg []byte) {
	t.Helper()
	c, err := smtp.DialStartTLS(s.SMTP, s.TLSConfig())
	if err != nil {
		t.Fatalf("mailtest: submission %s: %v", s.SMTP, err)
	}
	defer c.Close()
	if err := c.Auth(sasl.NewPlainClient("", user, s.password(t, user))); err != nil {
		t.Fatalf("mailtest: submission %s: AUTH as %s: %v", s.SMTP, user, err)
	}
	if err := c.SendMail(from, to, bytes.NewReader(msg)); err != nil {
		t.Fatalf("mailtest: submission %s: sending as %s: %v", s.SMTP, user, err)
	}
	if err := c.Quit(); err != nil {
		t.Fatalf("mailtest: submission %s: QUIT: %v", s.SMTP, err)
	}
}

// Deliver sends msg as the internet would, without AUTH, from any envelope
// sender to recipients at the servers' domain: mail from outsiders, and
// mail whose sender would not pass submission.
func (s *Servers) Deliver(t testing.TB, from string, to []string, msg []byte) {
	t.Helper()
	c, err := smtp.Dial(s.Delivery)
	if err != nil {
		t.Fatalf("mailtest: delivery %s: %v", s.Delivery, err)
	}
	defer c.Close()
	if err := c.SendMail(from, to, bytes.NewReader(msg)); err != nil {
		t.Fatalf("mailtest: delivery %s: %v", s.Delivery, err)
	}
	if err := c.Quit(); err != nil {
		t.Fatalf("mailtest: delivery %s: QUIT: %v", s.Delivery, err)
	}
}

// IMAPClient returns a client logged in as user over IMAPS, closed when the
// test ends. opts may be nil; its TLS configuration is set to trust the CA.
func (s *Servers) IMAPClient(t testing.TB, user string, opts *imapclient.Options) *imapclient.Client {
	t.Helper()
	if opts == nil {
		opts = &imapclient.Options{}
	}
	o := *opts
	o.TLSConfig = s.TLSConfig()
	c, err := imapclient.DialTLS(s.IMAPS, &o)
	if err != nil {
		t.Fatalf("mailtest: IMAPS %s: %v", s.IMAPS, err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Login(user, s.password(t, user)).Wait(); err != nil {
		t.Fatalf("mailtest: IMAPS %s: LOGIN as %s: %v", s.IMAPS, user, err)
	}
	return c
}

// Await waits until user's mailbox holds a message whose Message-ID header
// is messageID (without angle brackets) and returns the whole message as
// stored. Delivery runs after the SMTP server's 250, so it waits on IMAP
// IDLE for the mailbox to grow, searching again each time; it waits as
// long as ctx lets it (a test's context ends with the test's -timeout).
func (s *Servers) Await(ctx context.Context, t testing.TB, user, mailbox, messageID string) []byte {
	t.Helper()
	grew := make(chan struct{}, 1)
	c := s.IMAPClient(t, user, &imapclient.Options{
		UnilateralDataHandler: &imapclient.UnilateralDataHandler{
			Mailbox: func(data *imapclient.UnilateralDataMailbox) {
				if data.NumMessages != nil {
					select {
					case grew <- struct{}{}:
					default:
					}
				}
			},
		},
	})
	if _, err := c.Select(mailbox, &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
		t.Fatalf("mailtest: SELECT %s as %s: %v", mailbox, user, err)
	}
	for {
		msg, err := fetchByMessageID(c, messageID)
		if err != nil {
			t.Fatalf("mailtest: %s's %s: %v", user, mailbox, err)
		}
		if msg != nil {
			return msg
		}
		idle, err := c.Idle()
		if err != nil {
			t.Fatalf("mailtest: IDLE as %s: %v", user, err)
		}
		// A message delivered between the search and IDLE is announced
		// once IDLE runs (Dovecot reports what changed since the last
		// command), so nothing is missed.
		select {
		case <-grew:
		case <-ctx.Done():
			idle.Close()
			t.Fatalf("mailtest: no message <%s> in %s's %s: %v", messageID, user, mailbox, ctx.Err())
		}
		if err := idle.Close(); err != nil {
			t.Fatalf("mailtest: ending IDLE as %s: %v", user, err)
		}
		if err := idle.Wait(); err != nil {
			t.Fatalf("mailtest: IDLE as %s: %v", user, err)
		}
	}
}

// fetchByMessageID returns the message of the selected mailbox whose
// Message-ID is id, or nil when there is none.
func fetchByMessageID(c *imapclient.Client, id string) ([]byte, error) {
	data, err := c.UIDSearch(&imap.SearchCriteria{
		Header: []imap.SearchCriteriaHeaderField{{Key: "Message-ID", Value: "<" + id + ">"}},
	}, nil).Wait()
	if err != nil {
		return nil, fmt.Errorf("SEARCH: %w", err)
	}
	uids := data.AllUIDs()
	if len(uids) == 0 {
		return nil, nil
	}
	if len(uids) > 1 {
		return nil, fmt.Errorf("%d messages have the Message-ID <%s>", len(uids), id)
	}
	section := &imap.FetchItemBodySection{Peek: true}
	msgs, err := c.Fetch(imap.UIDSetNum(uids[0]), &imap.FetchOptions{BodySection: []*imap.FetchItemBodySection{section}}).Collect()
	if err != nil {
		return nil, fmt.Errorf("FETCH: %w", err)
	}
	if len(msgs) != 1 {
		return nil, errors.New("FETCH returned no message")
	}
	return msgs[0].FindBodySection(section), nil
}
