package smtpsend

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// selfSigned returns a server certificate for localhost and 127.0.0.1
// and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "mail test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		DNSNames:              []string{"localhost", "mail.example"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// server is an in-process submission server that keeps what it takes.
type server struct {
	mu       sync.Mutex
	mails    []taken
	password string
}

type taken struct {
	from string
	to   []string
	data string
	tls  bool
	user string
}

type session struct {
	srv  *server
	conn *smtp.Conn
	cur  taken
}

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if pass != s.srv.password {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "bad credentials"}
		}
		s.cur.user = user
		return nil
	}), nil
}
func (s *session) Mail(from string, _ *smtp.MailOptions) error { s.cur.from = from; return nil }
func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if strings.HasPrefix(to, "nobody@") {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	}
	s.cur.to = append(s.cur.to, to)
	return nil
}
func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.data = string(b)
	_, s.cur.tls = s.conn.TLSConnectionState()
	s.srv.mu.Lock()
	s.srv.mails = append(s.srv.mails, s.cur)
	s.srv.mu.Unlock()
	return nil
}
func (s *session) Reset()        { s.cur = taken{user: s.cur.user} }
func (s *session) Logout() error { return nil }

// start serves srv on a loopback port: implicit TLS when implicit, else
// plain with STARTTLS when cert is set.
func start(t *testing.T, srv *server, cert *tls.Certificate, implicit bool) string {
	t.Helper()
	s := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &session{srv: srv, conn: c}, nil
	}))
	s.Domain = "localhost"
	s.AllowInsecureAuth = true
	if cert != nil {
		s.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*cert}}
	}
	var ln net.Listener
	var err error
	if implicit {
		ln, err = tls.Listen("tcp", "127.0.0.1:0", s.TLSConfig)
	} else {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close() })
	return ln.Addr().String()
}

func configFor(t *testing.T, addr string, sec Security, pool *x509.CertPool) Config {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return Config{Host: host, Port: port, Security: sec, Username: "bridge", Password: "s3cret-pw",
		TLS: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
}

const mail = "From: bridge@hotel.test\r\nTo: frontdesk@hotel.test\r\nSubject: hi\r\n\r\nbody\r\n"

func TestSendStartTLSAndImplicitTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	for _, implicit := range []bool{false, true} {
		srv := &server{password: "s3cret-pw"}
		sec := StartTLS
		if implicit {
			sec = ImplicitTLS
		}
		s := New(configFor(t, start(t, srv, &cert, implicit), sec, pool))
		if err := s.Send(t.Context(), "bridge@hotel.test", []string{"frontdesk@hotel.test"}, []byte(mail)); err != nil {
			t.Fatalf("%s: Send: %v", sec, err)
		}
		if len(srv.mails) != 1 || !srv.mails[0].tls || srv.mails[0].user != "bridge" || !strings.Contains(srv.mails[0].data, "body") {
			t.Fatalf("%s: the server took %+v, want one mail over TLS from user bridge", sec, srv.mails)
		}
		if err := s.Check(t.Context()); err != nil {
			t.Errorf("%s: Check: %v", sec, err)
		}
	}
}

func TestRefusedPasswordIsErrAuthAndNotShown(t *testing.T) {
	cert, pool := selfSigned(t)
	srv := &server{password: "the-right-one"}
	s := New(configFor(t, start(t, srv, &cert, false), StartTLS, pool))
	err := s.Send(t.Context(), "bridge@hotel.test", []string{"frontdesk@hotel.test"}, []byte(mail))
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("Send with a wrong password: %v, want ErrAuth", err)
	}
	if strings.Contains(err.Error(), "s3cret-pw") {
		t.Fatalf("the error shows the password: %v", err)
	}
	if Permanent(err) {
		t.Errorf("a refused login counts as a permanent rejection of the mail")
	}
}

func TestRejectedRecipientIsPermanent(t *testing.T) {
	cert, pool := selfSigned(t)
	srv := &server{password: "s3cret-pw"}
	s := New(configFor(t, start(t, srv, &cert, false), StartTLS, pool))
	err := s.Send(t.Context(), "bridge@hotel.test", []string{"nobody@hotel.test"}, []byte(mail))
	if err == nil || !Permanent(err) {
		t.Fatalf("Send to an unknown recipient: %v, want a permanent rejection", err)
	}
}

func TestPlaintextOnlyOnLoopback(t *testing.T) {
	srv := &server{password: "s3cret-pw"}
	addr := start(t, srv, nil, false) // no STARTTLS offered
	cfg := configFor(t, addr, StartTLS, nil)

	// On loopback by name, a server without STARTTLS is spoken to in clear.
	if err := New(cfg).Send(t.Context(), "bridge@hotel.test", []string{"frontdesk@hotel.test"}, []byte(mail)); err != nil {
		t.Fatalf("Send to a loopback server without STARTTLS: %v", err)
	}
	// The same server by a name that is not loopback: refused before AUTH.
	cfg.Host = "mail.example"
	s := New(cfg)
	s.dialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	err := s.Send(t.Context(), "bridge@hotel.test", []string{"frontdesk@hotel.test"}, []byte(mail))
	if !errors.Is(err, ErrPlaintext) {
		t.Fatalf("Send in clear off loopback: %v, want ErrPlaintext", err)
	}
	if len(srv.mails) != 1 {
		t.Errorf("the server took %d mails, want only the loopback one", len(srv.mails))
	}
	for _, m := range srv.mails {
		if m.user != "bridge" {
			t.Errorf("mail taken without the login: %+v", m)
		}
	}
}

func TestCancelledContextStopsSend(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c // never greets
		}
	}()
	ctx, cancel := context.WithCancel(t.Context())
	cfg := configFor(t, ln.Addr().String(), StartTLS, nil)
	done := make(chan error, 1)
	go func() { done <- New(cfg).Send(ctx, "a@b", []string{"c@d"}, []byte(mail)) }()
	c := <-accepted
	defer c.Close()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Send after cancel: %v, want context.Canceled", err)
	}
}

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
		err  string
	}{
		{"smtp://mail.example.com", "smtp://mail.example.com:587", ""},
		{"smtps://mail.example.com", "smtps://mail.example.com:465", ""},
		{"smtp://127.0.0.1:10587", "smtp://127.0.0.1:10587", ""},
		{"", "", "is not set"},
		{"http://mail.example.com", "", "scheme"},
		{"smtp://u:pw@mail.example.com", "", "carries credentials"},
		{"smtp://mail.example.com/x", "", "path"},
	} {
		got, err := ParseURL("V", c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "pw@") {
				t.Errorf("ParseURL(%q) = %v, want an error with %q and no password", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got.String() != c.want {
			t.Errorf("ParseURL(%q) = %v, %v; want %s", c.in, got, err, c.want)
		}
	}
}

// TestParseURLNeverEchoesAPassword: a submission address that does not
// parse, or names no host, is refused without quoting what was given: a
// password written into it stays out of the error.
func TestParseURLNeverEchoesAPassword(t *testing.T) {
	for _, raw := range []string{"smtps://bridge:s3cret-pw@", "smtp://bridge:s3cret-pw@%zz:587"} {
		_, err := ParseURL("TICKETBRIDGE_NOTIFY_SMTP_URL", raw)
		if err == nil {
			t.Fatalf("%q accepted", raw)
		}
		if strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}
