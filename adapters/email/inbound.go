package email

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"mime"
	"strings"
	"time"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // the charsets mail clients write
	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-message/textproto"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// Reasons a mail is set aside, kept as an IMAP keyword on it in the
// set-aside folder. The keywords are stored in mailboxes: they never
// change.
const (
	reasonNotAllowed = "$TicketbridgeNotAllowed"
	reasonDMARC      = "$TicketbridgeDMARC"
	reasonAuto       = "$TicketbridgeAutomatic"
	reasonBounce     = "$TicketbridgeBounce"
	reasonNoToken    = "$TicketbridgeNoRequest"
	reasonNoText     = "$TicketbridgeNoText"
	reasonBadStatus  = "$TicketbridgeBadStatus"
	reasonUnreadable = "$TicketbridgeUnreadable"
	flagCarried      = "$TicketbridgeCarried"
)

// reasonText says in words why a mail waits in the set-aside folder.
var reasonText = map[string]string{
	reasonNotAllowed: "its sender is not on " + EnvPrefix + "ALLOW; add the address or domain there and move the mail back to the inbox, or delete it",
	reasonDMARC:      "it failed DMARC by the trusted Authentication-Results: its sender may be forged; delete it",
	reasonAuto:       "it is an automatic reply or bulk mail (Auto-Submitted, Precedence, a vacation notice); nothing of it goes to a guest",
	reasonBounce:     "a mail of the bridge came back undelivered; check the address the request's department routes to",
	reasonNoToken:    "it was not sent to the reply address of a request the bridge mailed (bridge+<token>@); answer from the request's thread",
	reasonNoText:     "it holds no text the bridge can send",
	reasonBadStatus:  "its first line names no status the bridge knows; write e.g. \"#status done\" and send it again",
	reasonUnreadable: "the bridge cannot read it as a mail",
}

// inMail is what the bridge makes of one mail in its inbox.
type inMail struct {
	id     string // Message-ID, or a hash of the mail
	from   string // bare address
	name   string // display name, or the address
	date   time.Time
	own    bool   // the bridge's own mail
	reason string // set aside, with this keyword; "" when carried
	// ticket is the upstream ticket the mail concerns, "" when unknown;
	// for a bounce, the ticket of the mail that came back.
	ticket string
	detail string // a bounce's diagnostic
	token  string
	kind   adapters.EventKind
	status guestapi.Status
	body   string
	files  []string
}

// eventID is the stable id of the mail's event.
func eventID(msgID string) string {
	sum := sha256.Sum256([]byte(msgID))
	return "mail-" + hex.EncodeToString(sum[:12])
}

// parseInbound reads raw as far as judging it needs; resolve returns the
// ticket of a reply token ("" when none). An error of resolve (the
// mailbox could not be searched) is returned: the mail is judged again
// at the next call, never set aside for it.
func (a *Adapter) parseInbound(raw []byte, internal time.Time, resolve func(tok string) (string, error)) (inMail, error) {
	m := inMail{date: internal}
	e, err := message.Read(bytes.NewReader(raw))
	if err != nil && !message.IsUnknownCharset(err) && !message.IsUnknownEncoding(err) {
		sum := sha256.Sum256(raw)
		m.id, m.reason = "unreadable-"+hex.EncodeToString(sum[:12]), reasonUnreadable
		return m, nil
	}
	h := mail.Header{Header: e.Header}
	m.id, _ = h.MessageID()
	if m.id == "" {
		sum := sha256.Sum256(raw)
		m.id = "no-message-id-" + hex.EncodeToString(sum[:12])
	}
	if d, err := h.Date(); err == nil {
		m.date = d
	}
	if from, err := h.AddressList("From"); err == nil && len(from) > 0 {
		m.from, m.name = strings.ToLower(from[0].Address), strings.TrimSpace(from[0].Name)
		if m.name == "" {
			m.name = from[0].Address
		}
	}
	if m.from == string(a.cfg.Address) && h.Get(hKind) != "" {
		m.own = true
		return m, nil
	}
	if t, detail, ok := a.bounce(e); ok {
		m.reason, m.ticket, m.detail = reasonBounce, t, detail
		return m, nil
	}
	if automatic(h) {
		m.reason = reasonAuto
		return m, nil
	}
	if a.cfg.AuthservID != "" && dmarcFails(e.Header, a.cfg.AuthservID) {
		m.reason = reasonDMARC
		return m, nil
	}
	if !a.allow.allows(m.from) {
		m.reason = reasonNotAllowed
		return m, nil
	}
	m.token = a.findToken(e.Header)
	if m.token != "" {
		t, err := resolve(m.token)
		if err != nil {
			return m, err
		}
		m.ticket = t
		if t == "" {
			m.ticket = a.ticketOfThread(h, m.token)
		}
	}
	if m.ticket == "" {
		m.reason = reasonNoToken
		return m, nil
	}
	b := bodyOf(e)
	m.files = b.files
	files := b.files
	text := strings.ReplaceAll(replyText(b.text, b.isHTML, b.flowed, b.delSp), "\r\n", "\n")
	m.kind, m.body = adapters.EventReply, text
	first, rest, _ := strings.Cut(strings.TrimLeft(text, " \t\r\n"), "\n")
	first = strings.TrimSpace(first)
	switch lower := strings.ToLower(first); {
	case lower == "#note" || strings.HasPrefix(lower, "#note "):
		m.kind = adapters.EventNote
		m.body = strings.TrimSpace(strings.TrimSpace(first[len("#note"):]) + "\n" + rest)
	case strings.HasPrefix(lower, "#status"):
		word := strings.TrimSpace(first[len("#status"):])
		st, ok := a.parseStatusWord(word)
		if !ok {
			m.reason = reasonBadStatus
			return m, nil
		}
		m.kind, m.status, m.body = adapters.EventStatus, st, strings.TrimSpace(rest)
	}
	m.body = strings.TrimSpace(m.body)
	if m.body == "" && m.kind != adapters.EventStatus && len(files) == 0 {
		m.reason = reasonNoText
	}
	return m, nil
}

// parseStatusWord maps the word after "#status" to an upstream status:
// a helpdesk status of the mapping, with spaces or dashes for "_".
func (a *Adapter) parseStatusWord(w string) (guestapi.Status, bool) {
	w = strings.ToLower(strings.Join(strings.Fields(w), "_"))
	w = strings.ReplaceAll(w, "-", "_")
	st, ok := a.status.Up(w)
	return st, ok
}

// events turns a carried mail into its events: a reply, a note, or a
// status change followed by the rest of its text as a note.
func (a *Adapter) events(m inMail) []adapters.Event {
	ev := adapters.Event{ID: eventID(m.id), Ref: adapters.Ref(m.ticket), UpstreamTicketID: m.ticket,
		Kind: m.kind, Body: m.body, AuthorName: m.name, At: m.date.UTC()}
	if m.kind != adapters.EventStatus {
		return []adapters.Event{ev}
	}
	ev.Body, ev.Status = "", m.status
	out := []adapters.Event{ev}
	if m.body != "" {
		note := ev
		note.ID, note.Kind, note.Status, note.Body = ev.ID+"-note", adapters.EventNote, "", m.body
		out = append(out, note)
	}
	return out
}

// automatic reports mail no person wrote to the thread (RFC 3834's
// Auto-Submitted, Precedence, the vacation and out-of-office markers
// mail programs set), which is never carried.
func automatic(h mail.Header) bool {
	if v := strings.ToLower(strings.TrimSpace(h.Get("Auto-Submitted"))); v != "" && !strings.HasPrefix(v, "no") {
		return true
	}
	switch strings.ToLower(strings.TrimSpace(h.Get("Precedence"))) {
	case "bulk", "junk", "auto_reply", "list":
		return true
	}
	// Exchange marks what its inbox rules send (forwards, automatic
	// replies) with X-MS-Exchange-Inbox-Rules-Loop.
	for _, k := range []string{"X-Autoreply", "X-Autorespond", "X-MS-Exchange-Inbox-Rules-Loop", "List-Id", "List-Unsubscribe"} {
		if h.Get(k) != "" {
			return true
		}
	}
	subj, _ := h.Subject()
	subj = strings.ToLower(subj)
	for _, p := range []string{"auto:", "automatic reply", "autoreply", "out of office", "vacation:", "abwesenheitsnotiz"} {
		if strings.HasPrefix(subj, p) {
			return true
		}
	}
	return h.Get("Return-Path") == "<>"
}

// dmarcFails reports whether the topmost Authentication-Results field is
// by authserv and says dmarc=fail. Fields below it are not read: anybody
// can write one into the mail they send.
func dmarcFails(h message.Header, authserv string) bool {
	top := h.Get("Authentication-Results") // the first field is the topmost
	if top == "" {
		return false
	}
	id, results, _ := strings.Cut(top, ";")
	if f := strings.Fields(id); len(f) == 0 || !strings.EqualFold(f[0], authserv) {
		return false
	}
	for _, r := range strings.Split(results, ";") {
		r = strings.ToLower(strings.TrimSpace(r))
		if strings.HasPrefix(r, "dmarc=") {
			v := strings.Fields(strings.TrimPrefix(r, "dmarc="))
			return len(v) > 0 && v[0] != "pass" && v[0] != "none" && v[0] != "bestguesspass"
		}
	}
	return false
}

// findToken returns the reply token of the first recipient that is a
// sub-address of the bridge's, "" when none.
func (a *Adapter) findToken(h message.Header) string {
	local, domain := localPart(string(a.cfg.Address)), a.domain
	for _, k := range []string{"Delivered-To", "X-Original-To", "To", "Cc"} {
		for _, v := range h.Values(k) {
			addrs, err := mail.ParseAddressList(v)
			if err != nil {
				addrs = []*mail.Address{{Address: strings.Trim(strings.TrimSpace(v), "<>")}}
			}
			for _, ad := range addrs {
				l, d, ok := strings.Cut(strings.ToLower(ad.Address), "@")
				if !ok || d != domain {
					continue
				}
				if tok, ok := strings.CutPrefix(l, local+"+"); ok && tok != "" {
					return tok
				}
			}
		}
	}
	return ""
}

// ticketOfThread returns the request of the bridge's thread a reply
// refers to (In-Reply-To, References) when tok is that request's token,
// "" otherwise. It finds the request of a reply to a mail whose copy the
// sent folder does not hold: the bridge was stopped between the server's
// 250 and the copy, and the agent answered before the bridge sent the
// mail again. The token, which only the key makes, is what vouches for
// the request; the ids, which anybody can write, only name it.
func (a *Adapter) ticketOfThread(h mail.Header, tok string) string {
	var refs []string
	for _, k := range []string{"In-Reply-To", "References"} {
		l, _ := h.MsgIDList(k)
		refs = append(refs, l...)
	}
	for _, id := range refs {
		left, domain, ok := strings.Cut(id, "@")
		if !ok || !strings.EqualFold(domain, a.domain) || !strings.HasPrefix(left, "tb.") {
			continue
		}
		ticket := left[strings.LastIndexByte(left, '.')+1:]
		if idSafe.MatchString(ticket) && validToken(a.key, ticket, tok) {
			return ticket
		}
	}
	return ""
}

// bounce reports whether e is a delivery status notification of a mail of
// the bridge, with the ticket of that mail and the reason given.
func (a *Adapter) bounce(e *message.Entity) (ticket, detail string, ok bool) {
	mt, params, _ := e.Header.ContentType()
	if mt != "multipart/report" || !strings.EqualFold(params["report-type"], "delivery-status") {
		return "", "", false
	}
	mr := e.MultipartReader()
	if mr == nil {
		return "", "", false
	}
	for {
		p, err := mr.NextPart()
		if err != nil {
			break
		}
		pt, _, _ := p.Header.ContentType()
		switch pt {
		case "message/delivery-status":
			b, _ := io.ReadAll(io.LimitReader(p.Body, 64<<10))
			detail = dsnDetail(b)
		case "message/rfc822", "text/rfc822-headers", "message/rfc822-headers":
			h, err := textproto.ReadHeader(bufio.NewReader(io.LimitReader(p.Body, 256<<10)))
			if err == nil && h.Get(hTicket) != "" {
				ticket = h.Get(hTicket)
			}
		}
	}
	return ticket, detail, true
}

// dsnDetail picks the status and diagnostic of a delivery-status part.
func dsnDetail(b []byte) string {
	var parts []string
	for _, line := range strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "final-recipient", "status", "diagnostic-code":
			parts = append(parts, strings.TrimSpace(k)+": "+strings.TrimSpace(v))
		}
	}
	return strings.Join(parts, "; ")
}

// body is what a mail says: its text/plain part (flowed says it is
// format=flowed, delSp with delsp=yes), else its HTML part (isHTML), and
// the names of its attachments.
type body struct {
	text          string
	isHTML        bool
	flowed, delSp bool
	files         []string
}

// bodyOf reads the body of e.
func bodyOf(e *message.Entity) body {
	var plain, html string
	var files []string
	var plainParams map[string]string
	var walk func(e *message.Entity, depth int)
	walk = func(e *message.Entity, depth int) {
		if depth > 8 {
			return
		}
		mt, ctParams, _ := e.Header.ContentType()
		disp, dparams, _ := e.Header.ContentDisposition()
		if mr := e.MultipartReader(); mr != nil {
			for {
				p, err := mr.NextPart()
				if err != nil {
					return
				}
				walk(p, depth+1)
			}
		}
		name := dparams["filename"]
		if name == "" {
			_, cparams, _ := e.Header.ContentType()
			name = cparams["name"]
		}
		if disp == "attachment" || (name != "" && !strings.HasPrefix(mt, "text/")) || (name != "" && disp != "" && disp != "inline") {
			if dec, err := new(mime.WordDecoder).DecodeHeader(name); err == nil {
				name = dec
			}
			if name == "" {
				name = "unnamed " + mt
			}
			files = append(files, name)
			return
		}
		b, err := io.ReadAll(io.LimitReader(e.Body, 4<<20))
		if err != nil && !errors.Is(err, io.EOF) {
			return
		}
		switch mt {
		case "text/plain", "":
			if plain == "" {
				plain, plainParams = string(b), ctParams
			}
		case "text/html":
			if html == "" {
				html = string(b)
			}
		}
	}
	walk(e, 0)
	if strings.TrimSpace(plain) == "" && html != "" {
		return body{text: html, isHTML: true, files: files}
	}
	return body{text: strings.ReplaceAll(plain, "\r\n", "\n"), files: files,
		flowed: strings.EqualFold(plainParams["format"], "flowed"), delSp: strings.EqualFold(plainParams["delsp"], "yes")}
}
