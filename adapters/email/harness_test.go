package email

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-smtp"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/adaptertest"
	"github.com/ticketbridge/ticketbridge/adapters/email/internal/memmail"
)

const testKey = "a test key of at least sixteen bytes"

// backend is a mail system the tests run against: where to submit, where
// the mailboxes are, each user's password, and how to reach it.
type backend struct {
	domain   string
	smtpURL  string // for the bridge
	imapURL  string
	caFile   string
	password func(user string) string
	// agentSMTP submits mail as a person's mail client does.
	agentSMTP func(t testing.TB, from string, to []string, raw []byte)
	// imapDial logs in as user.
	imapDial func(t testing.TB, user string) *imapclient.Client
}

// memBackend starts an in-process mail system.
func memBackend(t testing.TB) (*backend, *memmail.System) {
	sys := memmail.Start(t, "hotel.test", "bridge", "frontdesk", "housekeeping", "maintenance", "agent", "guest")
	b := &backend{
		domain:   "hotel.test",
		smtpURL:  "smtp://" + sys.SMTPAddr,
		imapURL:  "imap://" + sys.IMAPAddr,
		password: func(string) string { return memmail.Password },
		agentSMTP: func(t testing.TB, from string, to []string, raw []byte) {
			t.Helper()
			c, err := smtp.Dial(sys.SMTPAddr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.SendMail(from, to, bytes.NewReader(raw)); err != nil {
				t.Fatalf("agent mail: %v", err)
			}
		},
		imapDial: func(t testing.TB, user string) *imapclient.Client {
			t.Helper()
			c, err := imapclient.DialInsecure(sys.IMAPAddr, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Login(user, memmail.Password).Wait(); err != nil {
				t.Fatal(err)
			}
			return c
		},
	}
	return b, sys
}

func (b *backend) config() Config {
	return Config{
		Address: "bridge@" + b.domain, FromName: "Guest Requests",
		To:          "frontdesk@" + b.domain,
		Departments: "housekeeping=housekeeping@" + b.domain + ",maintenance=maintenance@" + b.domain,
		SMTPURL:     b.smtpURL, IMAPURL: b.imapURL, User: "bridge", Password: b.password("bridge"),
		CAFile: b.caFile, TokenKey: testKey, Allow: b.domain,
		Inbox: DefaultInbox, SentFolder: DefaultSentFolder, SetAsideFolder: DefaultSetAsideFolder,
		CondStore: true, Timeout: 30 * time.Second,
	}
}

func (b *backend) open(t testing.TB, mod func(*Config)) *Adapter {
	t.Helper()
	cfg := b.config()
	if mod != nil {
		mod(&cfg)
	}
	a, err := New(cfg, adapters.Deps{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// agent is a member of the team working from their mail client: they
// read the department's mailbox and reply to the bridge's mails.
type agent struct {
	b    *backend
	t    testing.TB
	addr string
}

var _ adaptertest.Attacher = (*agent)(nil)

// root returns the first mail of ref's thread as the department received
// it: its Message-ID, subject, Reply-To and the department's address.
func (g *agent) root(ref adapters.Ref) (id, subject, replyTo, dept string) {
	for _, d := range []string{"frontdesk", "housekeeping", "maintenance"} {
		for _, m := range g.mails(d) {
			h := mail.Header{Header: m.Header}
			if m.Header.Get(hTicket) == string(ref) && m.Header.Get(hKind) == kindTicket {
				id, _ = h.MessageID()
				subject, _ = h.Subject()
				rt, _ := h.AddressList("Reply-To")
				return id, subject, rt[0].Address, d + "@" + g.b.domain
			}
		}
	}
	return "", "", "", ""
}

type readMail struct {
	Header message.Header
	Body   string
}

// mails reads user's inbox, oldest first.
func (g *agent) mails(user string) []readMail {
	g.t.Helper()
	c := g.b.imapDial(g.t, user)
	defer c.Close()
	if _, err := c.Select("INBOX", &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
		g.t.Fatal(err)
	}
	uids, err := searchUIDs(c, &imap.SearchCriteria{})
	if err != nil {
		g.t.Fatal(err)
	}
	fs, err := fetchRaw(c, uids)
	if err != nil {
		g.t.Fatal(err)
	}
	var out []readMail
	for _, f := range fs {
		e, err := message.Read(bytes.NewReader(f.Raw))
		if err != nil {
			g.t.Fatal(err)
		}
		text, _ := bodyOf(e)
		out = append(out, readMail{Header: e.Header, Body: text})
	}
	return out
}

// write sends a reply to ref's thread from the agent, to the reply
// address and the department (reply-all), with files attached.
func (g *agent) write(ref adapters.Ref, author, body string, files []string) error {
	id, subject, replyTo, dept := g.root(ref)
	if id == "" {
		return fmt.Errorf("no thread of %s in the departments' mailboxes", ref)
	}
	var buf bytes.Buffer
	var h mail.Header
	h.SetAddressList("From", []*mail.Address{{Name: author, Address: g.addr}})
	h.SetAddressList("To", []*mail.Address{{Address: replyTo}})
	h.SetAddressList("Cc", []*mail.Address{{Address: dept}})
	h.SetSubject("Re: " + subject)
	h.SetDate(time.Now())
	if err := h.GenerateMessageID(); err != nil {
		return err
	}
	h.SetMsgIDList("In-Reply-To", []string{id})
	h.SetMsgIDList("References", []string{id})
	if len(files) == 0 {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w, err := mail.CreateSingleInlineWriter(&buf, h)
		if err != nil {
			return err
		}
		_, _ = io.WriteString(w, strings.ReplaceAll(body, "\n", "\r\n"))
		_ = w.Close()
	} else {
		w, err := mail.CreateWriter(&buf, h)
		if err != nil {
			return err
		}
		var th mail.InlineHeader
		th.Set("Content-Type", "text/plain; charset=utf-8")
		tw, err := w.CreateSingleInline(th)
		if err != nil {
			return err
		}
		_, _ = io.WriteString(tw, strings.ReplaceAll(body, "\n", "\r\n"))
		_ = tw.Close()
		for _, f := range files {
			var ah mail.AttachmentHeader
			ah.Set("Content-Type", "application/octet-stream")
			ah.SetFilename(f)
			aw, err := w.CreateAttachment(ah)
			if err != nil {
				return err
			}
			_, _ = aw.Write([]byte("content of " + f))
			_ = aw.Close()
		}
		_ = w.Close()
	}
	g.b.agentSMTP(g.t, g.addr, []string{replyTo, dept}, buf.Bytes())
	return nil
}

func (g *agent) Reply(_ context.Context, ref adapters.Ref, author, body string) error {
	return g.write(ref, author, body, nil)
}

func (g *agent) Note(_ context.Context, ref adapters.Ref, author, body string) error {
	return g.write(ref, author, "#note\n"+body, nil)
}

func (g *agent) SetStatus(_ context.Context, ref adapters.Ref, author, status string) error {
	return g.write(ref, author, "#status "+status, nil)
}

func (g *agent) Attach(_ context.Context, ref adapters.Ref, author, body string, public bool, files []string) error {
	if !public {
		body = "#note\n" + body
	}
	return g.write(ref, author, body, files)
}

// Read shows the thread as the department's mailbox holds it: every mail
// after the first, and the status the last status line set.
func (g *agent) Read(_ context.Context, ref adapters.Ref) (adaptertest.Snapshot, error) {
	_, _, _, dept := g.root(ref)
	if dept == "" {
		return adaptertest.Snapshot{}, fmt.Errorf("no thread of %s", ref)
	}
	user, _, _ := strings.Cut(dept, "@")
	var snap adaptertest.Snapshot
	rootID := ""
	for _, m := range g.mails(user) {
		h := mail.Header{Header: m.Header}
		id, _ := h.MessageID()
		refs, _ := h.MsgIDList("References")
		mine := m.Header.Get(hTicket) == string(ref)
		if !mine && (rootID == "" || !containsStr(refs, rootID)) {
			continue
		}
		if m.Header.Get(hKind) == kindTicket {
			rootID = id
			snap.Status = m.Header.Get(hStatus)
			continue
		}
		if s := m.Header.Get(hStatus); mine && s != "" {
			snap.Status = s
		}
		first, _, _ := strings.Cut(strings.TrimSpace(m.Body), "\n")
		if !mine && strings.HasPrefix(first, "#status ") {
			snap.Status = strings.TrimSpace(strings.TrimPrefix(first, "#status "))
		}
		public := m.Header.Get(hVisibility) == "public" || (!mine && !strings.HasPrefix(first, "#"))
		snap.Messages = append(snap.Messages, adaptertest.SnapshotMessage{Text: m.Body, Public: public})
	}
	return snap, nil
}

func containsStr(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func harness(t *testing.T, b *backend, mod func(*Config)) adaptertest.Harness {
	return adaptertest.Harness{
		New:     func(t testing.TB) adapters.Helpdesk { return b.open(t, mod) },
		Agent:   &agent{b: b, t: t, addr: "agent@" + b.domain},
		Status:  adapters.APIStatusMap(),
		Caps:    adaptertest.Caps{AuthorName: true, Events: true},
		Secrets: []string{b.password("bridge"), testKey},
	}
}

func TestConformanceInProcess(t *testing.T) {
	b, _ := memBackend(t)
	adaptertest.Run(t, harness(t, b, nil))
}

