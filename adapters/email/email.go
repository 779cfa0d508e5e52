// Package email is the email helpdesk: each guest request becomes a mail
// thread sent to the address its department routes to, and the team's
// replies come back by mail to the bridge's own mailbox, read over IMAP.
//
// What the bridge remembers it keeps in the mailbox itself: a copy of
// every mail it sent, in a folder of its own (SentFolder), marked with
// X-Ticketbridge-* headers. Every Message-ID is derived from the upstream
// ids, and the sent copies are searched for it before a mail goes out,
// so a repeat after a crash sends nothing twice (a crash between the
// server's 250 and the copy sends that one mail once more, with the same
// Message-ID). Lookup finds a thread by the same headers.
//
// Replies are addressed to bridge+<token>@domain (the Reply-To of every
// mail), the token an HMAC of the upstream id under a key only the bridge
// holds. A reply to a mail whose copy a crash kept out of the sent folder
// is known by its token checked against the ids it refers to (upstream
// ids of letters, digits and dashes only). A reply's first line may say
// "#note" (an internal note) or "#status done" (a status change); quoted
// text and signatures are cut off. Mail from senders not on the allow-list, mail failing DMARC by
// the trusted Authentication-Results header, automatic replies, bulk
// mail and bounces are never carried: they are moved to SetAsideFolder
// with their reason, and listed where set-aside changes are shown
// (adapters.Holder). The cursor is the inbox's UIDVALIDITY and the last
// UID read.
//
// The platform's fields (department, description, deadline, rating,
// console comment) have no place in a mail: a change of them is carried
// as a short follow-up in the thread naming what changed (see
// Adapter.Update).
package email

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/smtpsend"
)

// Name is the adapter's registry name.
const Name = "email"

// Adapter is the email helpdesk.
type Adapter struct {
	cfg      Config
	log      *slog.Logger
	status   adapters.StatusMap
	depts    Routes
	allow    AllowList
	key      []byte
	domain   string
	ids      ids
	readOnly bool

	smtp *smtpsend.Sender
	box  *mailbox

	// folders is set once the folders were made (or found).
	foldersOnce sync.Mutex
	folders     bool

	tokensMu sync.Mutex
	tokens   map[string]string // reply token -> upstream ticket id

	held heldCache
	// carriedTo is the highest UID of the inbox flagged as carried, at
	// UIDVALIDITY carriedValidity.
	carriedMu       sync.Mutex
	carriedTo       uint32
	carriedValidity uint32
}

var (
	_ adapters.Helpdesk        = (*Adapter)(nil)
	_ adapters.Checker         = (*Adapter)(nil)
	_ adapters.Peeker          = (*Adapter)(nil)
	_ adapters.SetAsideCounter = (*Adapter)(nil)
	_ adapters.Updater         = (*Adapter)(nil)
)

// Factory builds the adapter from its TICKETBRIDGE_EMAIL_* variables.
func Factory(ctx context.Context, deps adapters.Deps) (adapters.Helpdesk, error) {
	cfg, err := LoadConfig(ctx, deps.Env)
	if err != nil {
		return nil, err
	}
	return New(cfg, deps)
}

// New builds the adapter from cfg. It connects to nothing.
func New(cfg Config, deps adapters.Deps) (*Adapter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tc, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	sc := cfg.SMTPURL.Config()
	sc.Username, sc.Password, sc.TLS, sc.Timeout = cfg.user(), cfg.Password.Reveal(), tc, cfg.Timeout
	domain := cfg.Address.Domain()
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Adapter{
		cfg: cfg, log: log, status: adapters.APIStatusMap().Override(deps),
		depts: cfg.Departments, allow: cfg.Allow, key: []byte(cfg.TokenKey.Reveal()), domain: domain, ids: ids{domain: domain},
		readOnly: deps.ReadOnly,
		smtp:     smtpsend.New(sc),
		box:      &mailbox{srv: cfg.IMAPURL.Server, user: cfg.user(), password: cfg.Password.Reveal(), tls: tc, timeout: cfg.Timeout},
		tokens:   map[string]string{},
	}
	return a, nil
}

// Name returns "email".
func (a *Adapter) Name() string { return Name }

// Location returns the bridge's mailbox: its address, and the IMAP
// server, user and folder it is read from (see adapters.Locator).
func (a *Adapter) Location() string {
	return fmt.Sprintf("%s imap %s user %s folder %s", a.cfg.Address, strings.ToLower(a.cfg.IMAPURL.Addr()), a.cfg.User, a.cfg.Inbox)
}

// Status returns the adapter's status mapping.
func (a *Adapter) Status() adapters.StatusMap { return a.status }

// Close logs out of the mailbox.
func (a *Adapter) Close() error { return a.box.close() }

// MarkSent records that event eventID of ref was delivered upstream as
// upstreamMessageID: a record appended to the sent folder, never sent,
// which Lookup reports in Found.Sent, so that a lost state file (and the
// API's forgotten Idempotency-Keys) posts no reply twice.
func (a *Adapter) MarkSent(ctx context.Context, ref adapters.Ref, eventID, upstreamMessageID string) error {
	if !adapters.MarkerToken(eventID) {
		return fmt.Errorf("mark sent: %w: event id %q", adapters.ErrInvalid, eventID)
	}
	th, err := a.mustThread(ctx, ref)
	if err != nil {
		return err
	}
	if _, ok := th.delivered[eventID]; ok {
		return nil
	}
	if a.readOnly {
		return errors.New("the email helpdesk was opened read-only")
	}
	tok := token(a.key, th.ticket)
	m := outMail{kind: kindSent, ticket: th.ticket, to: string(a.cfg.Address), subject: "Delivered upstream: " + eventID,
		id: a.ids.delivered(th.ticket, eventID), event: eventID, message: upstreamMessageID, date: time.Now(),
		body: adapters.SentNote(eventID, upstreamMessageID) + "\n"}
	raw, err := build(m, a.cfg.FromName, string(a.cfg.Address), a.replyTo(tok), tok)
	if err != nil {
		return fmt.Errorf("%w: build the record: %v", adapters.ErrInvalid, err)
	}
	if err := a.keepCopy(ctx, raw); err != nil {
		return fmt.Errorf("record event %s as delivered in %q: %w", eventID, a.cfg.SentFolder, err)
	}
	th.add(m)
	return nil
}

// addressOf returns the address a department's requests go to.
func (a *Adapter) addressOf(dept string) string {
	if to, ok := a.depts[dept]; ok {
		return to
	}
	return string(a.cfg.To)
}

// ReplyAddress is the address replies to the thread of the request
// upstreamID go to: the bridge's address with the request's token.
func (a *Adapter) ReplyAddress(upstreamID string) string { return a.replyTo(token(a.key, upstreamID)) }

// replyTo is the reply address of a ticket.
func (a *Adapter) replyTo(tok string) string {
	return localPart(string(a.cfg.Address)) + "+" + tok + "@" + a.domain
}

// EnsureTicket mails the request to its department unless its thread
// exists; the Ref is the upstream id.
func (a *Adapter) EnsureTicket(ctx context.Context, t adapters.Ticket) (adapters.Ref, error) {
	if strings.TrimSpace(t.UpstreamID) == "" || strings.ContainsAny(t.UpstreamID, "\r\n\"") {
		return "", fmt.Errorf("ensure ticket: %w: empty upstream id, or one with a line break or quote", adapters.ErrInvalid)
	}
	_, ok, err := a.loadThread(ctx, t.UpstreamID)
	if err != nil {
		return "", err
	}
	if ok {
		return adapters.Ref(t.UpstreamID), nil
	}
	th := &thread{ticket: t.UpstreamID, to: a.addressOf(t.Department), subject: subjectOf(t), root: a.ids.root(t.UpstreamID), sent: map[string]bool{}}
	m := outMail{kind: kindTicket, ticket: t.UpstreamID, to: th.to, subject: th.subject, id: th.root,
		status: a.status.Down(t.Status), fields: createdFields(t), date: time.Now(), body: ticketBody(t)}
	if err := a.send(ctx, th, m); err != nil {
		return "", err
	}
	return adapters.Ref(t.UpstreamID), nil
}

// Append mails each message not yet in the thread as a reply in it.
func (a *Adapter) Append(ctx context.Context, ref adapters.Ref, msgs []adapters.Message) ([]adapters.Appended, error) {
	for _, m := range msgs {
		if strings.TrimSpace(m.UpstreamID) == "" {
			return nil, fmt.Errorf("append: %w: a message without upstream id", adapters.ErrInvalid)
		}
		if strings.TrimSpace(m.Body) == "" {
			return nil, fmt.Errorf("append message %s: %w: empty body", m.UpstreamID, adapters.ErrInvalid)
		}
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	th, err := a.mustThread(ctx, ref)
	if err != nil {
		return nil, err
	}
	out := make([]adapters.Appended, 0, len(msgs))
	for _, msg := range msgs {
		id := a.ids.message(th.ticket, msg.UpstreamID)
		if th.sent[id] {
			out = append(out, adapters.Appended{UpstreamID: msg.UpstreamID, HelpdeskID: id, Existed: true})
			continue
		}
		m := outMail{kind: kindMessage, ticket: th.ticket, to: th.to, subject: "Re: " + th.subject, id: id,
			message: msg.UpstreamID, public: msg.Public, date: time.Now(), body: messageBody(msg)}
		if err := a.send(ctx, th, m); err != nil {
			return nil, err
		}
		out = append(out, adapters.Appended{UpstreamID: msg.UpstreamID, HelpdeskID: id})
	}
	return out, nil
}

// SetStatus mails the thread the new status unless it has it already.
func (a *Adapter) SetStatus(ctx context.Context, ref adapters.Ref, s guestapi.Status) error {
	if _, err := guestapi.ParseStatus(string(s)); err != nil {
		return fmt.Errorf("set status: %w: %v", adapters.ErrInvalid, err)
	}
	th, err := a.mustThread(ctx, ref)
	if err != nil {
		return err
	}
	word := a.status.Down(s)
	cur, _, err := a.currentStatus(ctx, th)
	if err != nil {
		return err
	}
	if cur == word {
		return nil
	}
	m := outMail{kind: kindStatus, ticket: th.ticket, to: th.to, subject: "Re: " + th.subject,
		id: a.ids.status(th.ticket, th.statusCount), status: word, date: time.Now(), body: statusBody(word)}
	return a.send(ctx, th, m)
}

func (a *Adapter) mustThread(ctx context.Context, ref adapters.Ref) (*thread, error) {
	th, ok, err := a.loadThread(ctx, string(ref))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("ticket %s: %w", ref, adapters.ErrNotFound)
	}
	return th, nil
}

// send submits m unless the sent folder holds its Message-ID, then keeps
// a copy there. A crash between the two sends it again, with the same id.
func (a *Adapter) send(ctx context.Context, th *thread, m outMail) error {
	if th.sent[m.id] {
		return nil
	}
	if a.readOnly {
		return errors.New("the email helpdesk was opened read-only")
	}
	if err := a.bounced(ctx, th.ticket, "mail <"+m.id+">"); err != nil {
		return err
	}
	if err := a.ensureFolders(ctx); err != nil {
		return err
	}
	tok := token(a.key, th.ticket)
	m.references = th.references()
	if m.kind == kindTicket {
		m.references = nil
	}
	raw, err := build(m, a.cfg.FromName, string(a.cfg.Address), a.replyTo(tok), tok)
	if err != nil {
		return fmt.Errorf("%w: build the mail: %v", adapters.ErrInvalid, err)
	}
	if err := a.smtp.Send(ctx, string(a.cfg.Address), []string{m.to}, raw); err != nil {
		switch {
		case errors.Is(err, smtpsend.ErrAuth):
			return fmt.Errorf("%w: %v", adapters.ErrAuth, err)
		case smtpsend.Permanent(err):
			return fmt.Errorf("%w: %v", adapters.ErrInvalid, err)
		}
		return err
	}
	if err := a.keepCopy(ctx, raw); err != nil {
		return fmt.Errorf("mail %s was sent; keep its copy in %q: %w", m.id, a.cfg.SentFolder, err)
	}
	th.add(m)
	return nil
}
