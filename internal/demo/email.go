package demo

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/email"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/internal/smtpsend"
)

// The variables the local mail server's script (deploy/dev/mail.sh)
// prints: where its Postfix and Dovecot listen on loopback, their domain,
// the users' passwords and the CA of their certificate.
const (
	envMailSMTP      = "TICKETBRIDGE_TEST_MAIL_SMTP"
	envMailIMAP      = "TICKETBRIDGE_TEST_MAIL_IMAP"
	envMailDomain    = "TICKETBRIDGE_TEST_MAIL_DOMAIN"
	envMailPasswords = "TICKETBRIDGE_TEST_MAIL_PASSWORD_FILE"
	envMailCA        = "TICKETBRIDGE_TEST_MAIL_CA"
)

// ErrNoMailServer is the error of Start with the email helpdesk when no
// local mail server is named in the environment.
var ErrNoMailServer = errors.New("the email helpdesk needs a local mail server: start one with " +
	"`deploy/dev/mail.sh start` (Postfix and Dovecot on loopback, from a checkout of the source), " +
	"put the TICKETBRIDGE_TEST_MAIL_* lines it prints into the environment " +
	"(set -a; . <(deploy/dev/mail.sh start | grep ^TICKETBRIDGE_TEST_MAIL_); set +a), and run the demo again")

// mailServer is the local mail server of the email demo.
type mailServer struct {
	smtp, imap, domain, ca string
	passwords              map[string]string
}

func mailServerFrom(getenv func(string) string) (mailServer, error) {
	s := mailServer{smtp: getenv(envMailSMTP), imap: getenv(envMailIMAP), domain: getenv(envMailDomain), ca: getenv(envMailCA)}
	file := getenv(envMailPasswords)
	if s.smtp == "" || s.imap == "" || s.domain == "" || file == "" || s.ca == "" {
		return s, ErrNoMailServer
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return s, fmt.Errorf("demo: the mail server's passwords (%s): %w", envMailPasswords, err)
	}
	s.passwords = map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if u, p, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok {
			s.passwords[u] = p
		}
	}
	for _, u := range []string{"bridge", "agent", "housekeeping"} {
		if s.passwords[u] == "" {
			return s, fmt.Errorf("demo: %s has no password for the user %s", envMailPasswords, u)
		}
	}
	return s, nil
}

func (s mailServer) tls() (*tls.Config, error) {
	pem, err := os.ReadFile(s.ca)
	if err != nil {
		return nil, fmt.Errorf("demo: the mail server's CA (%s): %w", envMailCA, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("demo: %s holds no certificate", s.ca)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// openEmail opens the email helpdesk on the local mail server. Each run
// keeps the bridge's copies in folders of its own, since the demo hotel's
// requests have the same ids at every run.
func (d *Demo) openEmail(ctx context.Context) (*email.Adapter, error) {
	key := make([]byte, 24)
	_, _ = rand.Read(key)
	run := time.Now().Format("20060102-150405")
	s := d.mail
	cfg, err := email.LoadConfig(ctx, envconfig.MapLookuper(map[string]string{
		email.EnvPrefix + "ADDRESS": "bridge@" + s.domain, email.EnvPrefix + "TO": "frontdesk@" + s.domain,
		email.EnvPrefix + "DEPARTMENTS": "housekeeping=housekeeping@" + s.domain + ",maintenance=maintenance@" + s.domain,
		email.EnvPrefix + "SMTP_URL":    "smtp://" + s.smtp, email.EnvPrefix + "IMAP_URL": "imap://" + s.imap,
		email.EnvPrefix + "USER": "bridge", email.EnvPrefix + "PASSWORD": s.passwords["bridge"], email.EnvPrefix + "CA_FILE": s.ca,
		email.EnvPrefix + "TOKEN_KEY": hex.EncodeToString(key), email.EnvPrefix + "ALLOW": s.domain,
		email.EnvPrefix + "SENT_FOLDER": "Demo " + run + " Sent", email.EnvPrefix + "SET_ASIDE_FOLDER": "Demo " + run + " Set aside",
	}))
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	return email.New(cfg, adapters.Deps{Logger: d.log.With("adapter", email.Name)})
}

// mailScript plays the demo's steps with the email helpdesk: the team
// works from their mail client.
func (d *Demo) mailScript(ctx context.Context) error {
	s := d.mail
	d.say("ticketbridge demo: the whole loop on this machine, with the email helpdesk.")
	d.say("")
	d.say("  Guest Requests API  %s (reference server, demo hotel \"Hotel Aurora\")", d.url)
	d.say("  helpdesk            the mailboxes of %s (Postfix smtp://%s, Dovecot imap://%s)", s.domain, s.smtp, s.imap)
	d.say("  state               %s", d.statePath())
	d.say("")

	d.say("1. The first cycle mails the hotel's open requests to their departments.")
	if _, err := d.cycle(ctx); err != nil {
		return err
	}
	reply := d.email.ReplyAddress(towelsID)
	first, err := d.awaitMail(ctx, "housekeeping", reply, "Two extra bath towels")
	if err != nil {
		return err
	}
	d.say("   in housekeeping@%s's inbox:", s.domain)
	for _, l := range first.lines {
		d.say("   | %s", l)
	}

	d.say("")
	d.say("2. The guest writes again; the message follows in the same thread.")
	guestLine := "Thank you! Could we also have a second pillow?"
	if err := d.guest(towelsID, guestLine); err != nil {
		return err
	}
	if _, err := d.cycle(ctx); err != nil {
		return err
	}
	if _, err := d.awaitMail(ctx, "housekeeping", reply, guestLine); err != nil {
		return err
	}
	d.say("   housekeeping receives \"Re: %s\" with the guest's words.", first.subject)

	d.say("")
	d.say("3. An agent answers from their mail client; the reply reaches the guest.")
	answer := "Towels and a second pillow are on their way to 214!"
	if err := d.agentMail(ctx, reply, first, answer); err != nil {
		return err
	}
	if err := d.cyclesUntil(ctx, func() bool { v, _ := d.srv.Ticket(towelsID); return guestSees(v, answer) }); err != nil {
		return fmt.Errorf("demo: the reply did not reach the guest: %w", err)
	}
	d.say("   the guest's page now shows: %q", answer)

	d.say("")
	d.say("4. A mail whose first line is #note is an internal note: it stays internal.")
	note := "Use the hypoallergenic pillows for 214."
	if err := d.agentMail(ctx, reply, first, "#note\n"+note); err != nil {
		return err
	}
	if err := d.cyclesUntil(ctx, func() bool { v, _ := d.srv.Ticket(towelsID); return upstreamHas(v, note) }); err != nil {
		return fmt.Errorf("demo: the note did not arrive upstream: %w", err)
	}
	if v, _ := d.srv.Ticket(towelsID); guestSees(v, note) {
		return errors.New("demo: the guest sees the internal note")
	}
	d.say("   upstream holds the note, not visible to the guest.")

	d.say("")
	d.say("5. A mail whose first line is \"#status done\" changes the status.")
	if err := d.agentMail(ctx, reply, first, "#status done"); err != nil {
		return err
	}
	if err := d.cyclesUntil(ctx, func() bool { v, _ := d.srv.Ticket(towelsID); return v.Ticket.Status == "done" }); err != nil {
		return fmt.Errorf("demo: the status did not arrive upstream: %w", err)
	}
	d.say("   upstream, the towels request is now \"done\".")
	return nil
}

// cyclesUntil runs cycles, a moment apart for the mail server to deliver,
// until ok, for at most a minute.
func (d *Demo) cyclesUntil(ctx context.Context, ok func() bool) error {
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			return errors.New("not within a minute")
		}
		if _, err := d.cycle(ctx); err != nil {
			return err
		}
		if err := sleep(ctx, 300*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// shownMail is a mail as the demo shows it.
type shownMail struct {
	messageID, subject string
	lines              []string
}

// awaitMail waits, for at most a minute, until user's inbox holds a mail
// of the thread whose reply address is reply with text in it.
func (d *Demo) awaitMail(ctx context.Context, user, reply, text string) (shownMail, error) {
	tc, err := d.mail.tls()
	if err != nil {
		return shownMail{}, err
	}
	c, err := imapclient.DialStartTLS(d.mail.imap, &imapclient.Options{TLSConfig: tc})
	if err != nil {
		return shownMail{}, fmt.Errorf("demo: connect to the mailbox: %w", err)
	}
	defer c.Close()
	if err := c.Login(user, d.mail.passwords[user]).Wait(); err != nil {
		return shownMail{}, fmt.Errorf("demo: log in as %s: %w", user, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := c.Select("INBOX", &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
			return shownMail{}, fmt.Errorf("demo: %w", err)
		}
		found, err := c.UIDSearch(&imap.SearchCriteria{
			Header: []imap.SearchCriteriaHeaderField{{Key: "Reply-To", Value: reply}},
			Body:   []string{text},
		}, nil).Wait()
		if err != nil {
			return shownMail{}, fmt.Errorf("demo: search %s's inbox: %w", user, err)
		}
		if uids := found.AllUIDs(); len(uids) > 0 {
			msgs, err := c.Fetch(imap.UIDSetNum(uids[0]), &imap.FetchOptions{Envelope: true,
				BodySection: []*imap.FetchItemBodySection{{Specifier: imap.PartSpecifierHeader, HeaderFields: []string{"From", "To", "Reply-To", "Subject"}, Peek: true}},
			}).Collect()
			if err != nil || len(msgs) == 0 {
				return shownMail{}, fmt.Errorf("demo: read %s's mail: %v", user, err)
			}
			m := shownMail{messageID: msgs[0].Envelope.MessageID, subject: msgs[0].Envelope.Subject}
			for _, b := range msgs[0].BodySection {
				for _, l := range strings.Split(strings.TrimSpace(string(b.Bytes)), "\n") {
					m.lines = append(m.lines, strings.TrimRight(l, "\r"))
				}
			}
			return m, nil
		}
		if time.Now().After(deadline) {
			return shownMail{}, fmt.Errorf("demo: no mail with %q in %s's inbox within a minute", text, user)
		}
		if err := sleep(ctx, 300*time.Millisecond); err != nil {
			return shownMail{}, err
		}
	}
}

// agentMail sends body from the agent to the thread's reply address, as
// a mail client answering first does.
func (d *Demo) agentMail(ctx context.Context, reply string, first shownMail, body string) error {
	tc, err := d.mail.tls()
	if err != nil {
		return err
	}
	sc, err := smtpsend.ParseURL(envMailSMTP, "smtp://"+d.mail.smtp)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	sc.Username, sc.Password, sc.TLS = "agent", d.mail.passwords["agent"], tc
	from := "agent@" + d.mail.domain
	d.seq++
	raw := strings.Join([]string{
		fmt.Sprintf("From: %q <%s>", agent, from), "To: " + reply, "Subject: Re: " + first.subject,
		"Date: " + time.Now().Format(time.RFC1123Z),
		fmt.Sprintf("Message-ID: <demo.%d.%d@%s>", time.Now().UnixNano(), d.seq, d.mail.domain),
		"In-Reply-To: <" + first.messageID + ">", "References: <" + first.messageID + ">",
		"Content-Type: text/plain; charset=utf-8", "", strings.ReplaceAll(body, "\n", "\r\n"), "",
	}, "\r\n")
	if err := smtpsend.New(sc).Send(ctx, from, []string{reply}, []byte(raw)); err != nil {
		return fmt.Errorf("demo: the agent's mail: %w", err)
	}
	d.say("   %s mailed %s:", from, reply)
	for _, l := range strings.Split(body, "\n") {
		d.say("   | %s", l)
	}
	return nil
}

// guest writes body into request id as its guest.
func (d *Demo) guest(id, body string) error {
	if _, err := d.srv.AddMessage(id, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, AuthorName: "Anna Berg", Body: body}); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}

func upstreamHas(v refserver.InternalView, body string) bool {
	for _, m := range v.Messages {
		if m.Body == body {
			return true
		}
	}
	return false
}
