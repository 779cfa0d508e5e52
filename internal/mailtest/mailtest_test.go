package mailtest

import (
	"bytes"
	"fmt"
	"net/mail"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

func message(from, to, id, body string) []byte {
	return []byte(fmt.Sprintf("From: %s\r\nTo: %s\r\nSubject: mailtest\r\nMessage-ID: <%s>\r\n"+
		"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n%s\r\n", from, to, id, body))
}

// TestSubmitAndRead sends a mail by submission as agent to a sub-address of
// bridge and reads it over IMAP as bridge: the path of an agent's reply.
func TestSubmitAndRead(t *testing.T) {
	s := FromEnv(t)
	id := s.MessageID(t)
	to := "bridge+abc@" + s.Domain
	s.Submit(t, "agent", s.Addr("agent"), []string{to}, message(s.Addr("agent"), to, id, "Done, the towels are in room 12."))

	raw := s.Await(t.Context(), t, "bridge", "INBOX", id)
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("the delivered message does not parse: %v\n%s", err, raw)
	}
	if got := m.Header.Get("Delivered-To"); got != to {
		t.Errorf("Delivered-To = %q, want %q (the sub-address kept)", got, to)
	}
	if got := m.Header.Get("Return-Path"); got != "<"+s.Addr("agent")+">" {
		t.Errorf("Return-Path = %q, want the agent's address", got)
	}
	var body bytes.Buffer
	body.ReadFrom(m.Body)
	if !strings.Contains(body.String(), "towels are in room 12") {
		t.Errorf("body = %q, want the text sent", body.String())
	}
}

// TestSubmissionsAndDelivery sends over implicit TLS and as the internet
// would, and both arrive.
func TestSubmissionsAndDelivery(t *testing.T) {
	s := FromEnv(t)
	implicit := s.MessageID(t)
	c, err := smtp.DialTLS(s.SMTPS, s.TLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Auth(sasl.NewPlainClient("", s.Addr("frontdesk"), s.Passwords["frontdesk"])); err != nil {
		t.Fatalf("AUTH with the full address: %v", err)
	}
	to := s.Addr("housekeeping")
	if err := c.SendMail(s.Addr("frontdesk"), []string{to}, bytes.NewReader(message(s.Addr("frontdesk"), to, implicit, "hello"))); err != nil {
		t.Fatal(err)
	}
	c.Quit()

	outside := s.MessageID(t)
	s.Deliver(t, "guest@elsewhere.example", []string{to}, message("guest@elsewhere.example", to, outside, "hi"))
	s.Await(t.Context(), t, "housekeeping", "INBOX", implicit)
	s.Await(t.Context(), t, "housekeeping", "INBOX", outside)
}

// TestSubmitAsAnother is refused: a user submits as itself only.
func TestSubmitAsAnother(t *testing.T) {
	s := FromEnv(t)
	c, err := smtp.DialStartTLS(s.SMTP, s.TLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Auth(sasl.NewPlainClient("", "agent", s.Passwords["agent"])); err != nil {
		t.Fatal(err)
	}
	to := s.Addr("bridge")
	err = c.SendMail(s.Addr("frontdesk"), []string{to}, bytes.NewReader(message(s.Addr("frontdesk"), to, s.MessageID(t), "x")))
	if err == nil {
		t.Fatal("agent sent as frontdesk; want the server to refuse")
	}
	if se, ok := err.(*smtp.SMTPError); !ok || se.Code != 553 {
		t.Errorf("err = %v, want a 553 (sender not owned)", err)
	}
}

// TestIMAPStartTLS logs in over STARTTLS and finds CONDSTORE and QRESYNC,
// which the adapter's cursor uses.
func TestIMAPStartTLS(t *testing.T) {
	s := FromEnv(t)
	c, err := imapclient.DialStartTLS(s.IMAP, &imapclient.Options{TLSConfig: s.TLSConfig()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login("bridge", s.Passwords["bridge"]).Wait(); err != nil {
		t.Fatal(err)
	}
	caps, err := c.Capability().Wait()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []imap.Cap{imap.CapCondStore, imap.CapQResync, imap.CapIdle, imap.CapMove, imap.CapUIDPlus} {
		if !caps.Has(want) {
			t.Errorf("the server lacks %s", want)
		}
	}
}

// TestFromEnv skips without the variables and fails on half of them.
func TestFromEnv(t *testing.T) {
	for _, n := range []string{EnvSMTP, EnvSMTPS, EnvIMAP, EnvIMAPS, EnvDelivery, EnvDomain, EnvPasswordFile, EnvCA} {
		t.Setenv(n, "")
	}
	skipped := &recorder{}
	runTB(skipped, func(tb *recorder) { FromEnv(tb) })
	if !skipped.skipped || !strings.Contains(skipped.msg, "deploy/dev/mail.sh start") {
		t.Errorf("without the variables: skipped=%v %q, want a skip saying how to start the servers", skipped.skipped, skipped.msg)
	}

	t.Setenv(EnvSMTP, "127.0.0.1:1")
	half := &recorder{}
	runTB(half, func(tb *recorder) { FromEnv(tb) })
	if !half.failed || !strings.Contains(half.msg, EnvIMAPS) {
		t.Errorf("with one variable: failed=%v %q, want a failure naming the missing ones", half.failed, half.msg)
	}

	dir := t.TempDir()
	pw := filepath.Join(dir, "passwords")
	os.WriteFile(pw, []byte("bridge=a\nfrontdesk=b\nhousekeeping=c\nmaintenance=d\nagent=e\n"), 0o600)
	ca := filepath.Join(dir, "ca.pem")
	os.WriteFile(ca, []byte("not a certificate"), 0o644)
	for _, n := range []string{EnvSMTPS, EnvIMAP, EnvIMAPS, EnvDelivery} {
		t.Setenv(n, "127.0.0.1:1")
	}
	t.Setenv(EnvDomain, "hotel.test")
	t.Setenv(EnvPasswordFile, pw)
	t.Setenv(EnvCA, ca)
	bad := &recorder{}
	runTB(bad, func(tb *recorder) { FromEnv(tb) })
	if !bad.failed || !strings.Contains(bad.msg, "no PEM certificate") {
		t.Errorf("with a CA file of no certificate: failed=%v %q", bad.failed, bad.msg)
	}
}

// recorder is a testing.TB that records a skip or failure; its Skip and
// Fatalf end the goroutine, as testing's do.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper() {}

func (r *recorder) Skip(args ...any) {
	r.skipped, r.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// runTB runs fn on a goroutine of its own, so that a Goexit ends it only.
func runTB(r *recorder, fn func(*recorder)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
}
