package email

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-smtp"
	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/adaptertest"
	"github.com/ticketbridge/ticketbridge/adapters/email/internal/memmail"
	"github.com/ticketbridge/ticketbridge/internal/mailtest"
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
	// await waits until user's inbox holds the mail messageID; nil when
	// the server delivers before it answers 250 (the in-process one).
	await func(t testing.TB, user, messageID string)
	// oneShot has each adapter log out after each operation: the suite
	// keeps many instances open, more than the server lets one user have.
	oneShot bool
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

// env is the bridge's TICKETBRIDGE_EMAIL_* variables on the backend.
func (b *backend) env() map[string]string {
	return map[string]string{
		EnvPrefix + "ADDRESS": "bridge@" + b.domain, EnvPrefix + "FROM_NAME": "Guest Requests",
		EnvPrefix + "TO":          "frontdesk@" + b.domain,
		EnvPrefix + "DEPARTMENTS": "housekeeping=housekeeping@" + b.domain + ",maintenance=maintenance@" + b.domain,
		EnvPrefix + "SMTP_URL":    b.smtpURL, EnvPrefix + "IMAP_URL": b.imapURL, EnvPrefix + "USER": "bridge",
		EnvPrefix + "PASSWORD": b.password("bridge"), EnvPrefix + "CA_FILE": b.caFile,
		EnvPrefix + "TOKEN_KEY": testKey, EnvPrefix + "ALLOW": b.domain, EnvPrefix + "TIMEOUT": "30s",
	}
}

// config is the configuration env gives, read as the daemon reads it.
func (b *backend) config() Config {
	cfg, err := LoadConfig(context.Background(), envconfig.MapLookuper(b.env()))
	if err != nil {
		panic(fmt.Sprintf("the tests' email configuration: %v", err))
	}
	return cfg
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
	a.box.oneShot = b.oneShot
	return a
}

// agent is a member of the team working from their mail client: they
// read the department's mailbox and reply to the bridge's mails.
type agent struct {
	b    *backend
	t    testing.TB
	addr string

	mu      sync.Mutex
	pending []pendingMail // mails sent and not yet seen delivered
}

type pendingMail struct{ user, id string }

// settle waits until every mail the agent sent is delivered.
func (g *agent) settle(t testing.TB) {
	if g.b.await == nil {
		return
	}
	g.mu.Lock()
	p := g.pending
	g.pending = nil
	g.mu.Unlock()
	for _, m := range p {
		g.b.await(t, m.user, m.id)
	}
}

// delivered waits until the department's mailbox holds every mail the
// bridge sent into ref's thread.
func (g *agent) delivered(ref adapters.Ref) {
	if g.b.await == nil {
		return
	}
	for _, d := range g.sentOrder(ref) {
		g.b.await(g.t, d.user, d.id)
	}
}

// sentOrder lists the bridge's mails of ref's thread in the order it sent
// them, with the user they went to.
func (g *agent) sentOrder(ref adapters.Ref) []pendingMail {
	a := g.b.open(g.t, nil)
	defer a.Close()
	th, ok, err := a.loadThread(g.t.Context(), string(ref))
	if err != nil || !ok {
		return nil
	}
	var out []pendingMail
	for _, id := range th.order {
		user, _, _ := strings.Cut(th.tos[id], "@")
		out = append(out, pendingMail{user, id})
	}
	return out
}

var _ adaptertest.Attacher = (*agent)(nil)

// root returns the first mail of ref's thread as the department received
// it: its Message-ID, subject, Reply-To and the department's address.
func (g *agent) root(ref adapters.Ref) (id, subject, replyTo, dept string) {
	g.delivered(ref)
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
		b := bodyOf(e)
		if b.isHTML {
			b.text = adapters.HTMLText(b.text)
		}
		out = append(out, readMail{Header: e.Header, Body: b.text})
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
	if err := h.GenerateMessageIDWithHostname(g.b.domain); err != nil {
		return err
	}
	mid, _ := h.MessageID()
	g.mu.Lock()
	g.pending = append(g.pending, pendingMail{"bridge", mid}, pendingMail{strings.Split(dept, "@")[0], mid})
	g.mu.Unlock()
	h.SetMsgIDList("In-Reply-To", []string{id})
	h.SetMsgIDList("References", []string{id})
	body = stuff(body)
	if len(files) == 0 {
		h.Set("Content-Type", "text/plain; charset=utf-8; format=flowed")
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
		th.Set("Content-Type", "text/plain; charset=utf-8; format=flowed")
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

// Read shows the thread as the departments' mailboxes hold it (more than
// one after a department move): the bridge's mails after the first in the
// order it sent them (a server may deliver two mails sent a moment apart
// the other way round), then the team's; and the status the newest status
// line set.
func (g *agent) Read(_ context.Context, ref adapters.Ref) (adaptertest.Snapshot, error) {
	rootID, _, _, dept := g.root(ref)
	if dept == "" {
		return adaptertest.Snapshot{}, fmt.Errorf("no thread of %s", ref)
	}
	g.settle(g.t)
	user, _, _ := strings.Cut(dept, "@")
	users := []string{user}
	order := map[string]int{}
	for i, d := range g.sentOrder(ref) {
		order[d.id] = i
		if !slices.Contains(users, d.user) {
			users = append(users, d.user)
		}
	}
	var inbox []readMail
	for _, u := range users {
		inbox = append(inbox, g.mails(u)...)
	}
	type shown struct {
		msg adaptertest.SnapshotMessage
		seq int // the bridge's order; team mails after
	}
	var all []shown
	var snap adaptertest.Snapshot
	bridgeSeq, bridgeAt := -2, time.Time{}
	teamAt := time.Time{}
	teamStatus := ""
	for i, m := range inbox {
		h := mail.Header{Header: m.Header}
		id, _ := h.MessageID()
		refs, _ := h.MsgIDList("References")
		date, _ := h.Date()
		mine := m.Header.Get(hTicket) == string(ref)
		if !mine && !containsStr(refs, rootID) {
			continue
		}
		seq := 1<<20 + i
		if mine {
			seq = order[id]
			if s := m.Header.Get(hStatus); s != "" && seq > bridgeSeq {
				bridgeSeq, bridgeAt, snap.Status = seq, date, s
			}
			if m.Header.Get(hKind) == kindTicket {
				continue
			}
		}
		first, _, _ := strings.Cut(strings.TrimSpace(m.Body), "\n")
		if !mine && strings.HasPrefix(first, "#status ") {
			teamStatus, teamAt = strings.TrimSpace(strings.TrimPrefix(first, "#status ")), date
		}
		public := m.Header.Get(hVisibility) == "public" || (!mine && !strings.HasPrefix(first, "#"))
		all = append(all, shown{adaptertest.SnapshotMessage{Text: m.Body, Public: public}, seq})
	}
	if teamStatus != "" && !teamAt.Before(bridgeAt) {
		snap.Status = teamStatus
	}
	slices.SortStableFunc(all, func(x, y shown) int { return x.seq - y.seq })
	for _, s := range all {
		snap.Messages = append(snap.Messages, s.msg)
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
		Caps:    adaptertest.Caps{AuthorName: true, Events: true, MarkSent: true},
		Secrets: []string{b.password("bridge"), testKey},
		// The fields travel as a follow-up in the thread naming what
		// changed: mail has no fields.
		Fields: adaptertest.FieldsHarness{AsNote: true},
	}
}

func TestConformanceInProcess(t *testing.T) {
	b, _ := memBackend(t)
	adaptertest.Run(t, harness(t, b, nil))
}

// realBackend is the Postfix and Dovecot of deploy/dev/mail.sh; the test
// skips without them.
func realBackend(t *testing.T) *backend {
	s := mailtest.FromEnv(t)
	return &backend{
		domain:   s.Domain,
		smtpURL:  "smtp://" + s.SMTP,
		imapURL:  "imap://" + s.IMAP,
		caFile:   os.Getenv(mailtest.EnvCA),
		password: func(u string) string { return s.Passwords[u] },
		agentSMTP: func(t testing.TB, from string, to []string, raw []byte) {
			user, _, _ := strings.Cut(from, "@")
			s.Submit(t, user, from, to, raw)
		},
		imapDial: func(t testing.TB, user string) *imapclient.Client { return s.IMAPClient(t, user, nil) },
		await:    newAwaiter(t, s).await,
		oneShot:  true,
	}
}

func TestConformanceRealServers(t *testing.T) {
	b := realBackend(t)
	adaptertest.Run(t, harness(t, b, nil))
}

// awaiter waits for mails over one IMAP connection per user, kept for the
// whole test (the servers limit connections per user).
type awaiter struct {
	s     *mailtest.Servers
	top   testing.TB
	mu    sync.Mutex
	conns map[string]*awaitConn
}

type awaitConn struct {
	c    *imapclient.Client
	grew chan struct{}
}

func newAwaiter(t testing.TB, s *mailtest.Servers) *awaiter {
	return &awaiter{s: s, top: t, conns: map[string]*awaitConn{}}
}

func (w *awaiter) await(t testing.TB, user, id string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	ac := w.conns[user]
	if ac == nil {
		ac = &awaitConn{grew: make(chan struct{}, 1)}
		ac.c = w.s.IMAPClient(w.top, user, &imapclient.Options{UnilateralDataHandler: &imapclient.UnilateralDataHandler{
			Mailbox: func(d *imapclient.UnilateralDataMailbox) {
				if d.NumMessages != nil {
					select {
					case ac.grew <- struct{}{}:
					default:
					}
				}
			},
		}})
		if _, err := ac.c.Select("INBOX", &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
			t.Fatal(err)
		}
		w.conns[user] = ac
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		uids, err := searchUIDs(ac.c, &imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "Message-ID", Value: id}}})
		if err != nil {
			t.Fatalf("search %s's inbox: %v", user, err)
		}
		if len(uids) > 0 {
			return
		}
		idle, err := ac.c.Idle()
		if err != nil {
			t.Fatalf("IDLE as %s: %v", user, err)
		}
		select {
		case <-ac.grew:
		case <-ctx.Done():
			_ = idle.Close()
			t.Fatalf("no mail <%s> in %s's inbox: %v", id, user, ctx.Err())
		}
		if err := idle.Close(); err != nil {
			t.Fatal(err)
		}
		if err := idle.Wait(); err != nil {
			t.Fatal(err)
		}
	}
}

// stuff writes text as format=flowed (RFC 3676) with no soft breaks, as
// Thunderbird sends what its user typed: a line that starts with ">", a
// space or "From " gets a space before it, so that it is not a quote.
func stuff(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		l = strings.TrimRight(l, " ")
		if strings.HasPrefix(l, ">") || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "From ") {
			l = " " + l
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}
