package email

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/emersion/go-message/mail"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// The headers the bridge sets on every mail it sends. The copies in the
// sent folder are found by them, so their names never change.
const (
	hTicket     = "X-Ticketbridge-Ticket"     // the upstream ticket id
	hKind       = "X-Ticketbridge-Kind"       // kindTicket, kindMessage, kindStatus, kindUnsent, kindFields
	hMessage    = "X-Ticketbridge-Message"    // the upstream message id (kindMessage)
	hStatus     = "X-Ticketbridge-Status"     // the helpdesk status set (kindTicket, kindStatus)
	hToken      = "X-Ticketbridge-Token"      // the reply token
	hVisibility = "X-Ticketbridge-Visibility" // "public" or "internal" (kindMessage, kindUnsent)
	hEvent      = "X-Ticketbridge-Event"      // a helpdesk event delivered upstream (kindSent)
	hUpstream   = "X-Ticketbridge-Upstream"   // the upstream message it became, "-" for none (kindSent)
	hFields     = "X-Ticketbridge-Fields"     // hashes of the field values carried (kindTicket, kindFields)
)

// Kinds of the bridge's mails.
const (
	kindTicket  = "ticket"
	kindMessage = "message"
	kindStatus  = "status"
	kindUnsent  = "unsent"
	kindFields  = "fields" // a follow-up naming the fields that changed
	// kindSent is no mail but a record the bridge keeps in its sent folder
	// (never sent): which event of the team was delivered upstream.
	kindSent = "sent"
)

// idSafe is what an upstream id may hold to stand in a Message-ID as it is.
var idSafe = regexp.MustCompile(`^[A-Za-z0-9-]{1,80}$`)

// idPart returns id as it stands in a Message-ID: itself when safe, else
// a hash of it.
func idPart(id string) string {
	if idSafe.MatchString(id) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "h" + hex.EncodeToString(sum[:16])
}

// ids derives every Message-ID of a ticket's thread from the upstream
// ids, so that a mail sent again after a crash has the same id.
type ids struct{ domain string }

func (d ids) root(ticket string) string { return "tb.ticket." + idPart(ticket) + "@" + d.domain }
func (d ids) message(ticket, msg string) string {
	return "tb.message." + idPart(msg) + "." + idPart(ticket) + "@" + d.domain
}
func (d ids) status(ticket string, n int) string {
	return fmt.Sprintf("tb.status.%d.%s@%s", n, idPart(ticket), d.domain)
}
func (d ids) delivered(ticket, eventID string) string {
	return "tb.sent." + idPart(eventID) + "." + idPart(ticket) + "@" + d.domain
}
func (d ids) unsent(ticket, eventID string) string {
	return "tb.unsent." + idPart(eventID) + "." + idPart(ticket) + "@" + d.domain
}

// b32 is the token alphabet: lower case, so that a server folding the
// local part's case changes nothing.
var b32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// token returns the reply token of ticket: 120 bits of an HMAC of its id
// under key. Only the bridge can make one, so a guessed address posts
// nothing to a guest.
func token(key []byte, ticket string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("ticketbridge reply address\x00" + ticket))
	return b32.EncodeToString(m.Sum(nil)[:15])
}

// validToken reports whether tok is ticket's token.
func validToken(key []byte, ticket, tok string) bool {
	return hmac.Equal([]byte(token(key, ticket)), []byte(strings.ToLower(tok)))
}

// outMail is a mail the bridge sends into a ticket's thread.
type outMail struct {
	kind       string
	ticket     string
	to         string
	subject    string
	id         string   // Message-ID, without brackets
	references []string // the thread's earlier ids, root first
	message    string   // upstream message id (kindMessage; kindSent: the one the event became)
	event      string   // kindSent: the event delivered
	status     string   // helpdesk status (kindTicket, kindStatus)
	public     bool     // kindMessage: visible to the guest
	fields     string   // kindTicket, kindFields: the hFields header (see fieldsHeader)
	date       time.Time
	body       string
}

// build renders m from the bridge at address with display name name and
// reply address replyTo, with CRLF line ends.
func build(m outMail, name, address, replyTo, tok string) ([]byte, error) {
	var h mail.Header
	h.SetAddressList("From", []*mail.Address{{Name: name, Address: address}})
	h.SetAddressList("To", []*mail.Address{{Address: m.to}})
	h.SetAddressList("Reply-To", []*mail.Address{{Name: name, Address: replyTo}})
	h.SetSubject(m.subject)
	h.SetDate(m.date)
	h.SetMessageID(m.id)
	if len(m.references) > 0 {
		h.SetMsgIDList("In-Reply-To", m.references[len(m.references)-1:])
		h.SetMsgIDList("References", m.references)
	}
	h.Set(hTicket, m.ticket)
	h.Set(hKind, m.kind)
	h.Set(hToken, tok)
	if m.kind == kindSent {
		up := m.message
		if up == "" {
			up = adapters.MarkerNoMessage
		}
		h.Set(hEvent, m.event)
		h.Set(hUpstream, up)
	} else if m.message != "" {
		h.Set(hMessage, m.message)
	}
	if m.status != "" {
		h.Set(hStatus, m.status)
	}
	if m.fields != "" {
		h.Set(hFields, m.fields)
	}
	if m.kind == kindMessage || m.kind == kindUnsent {
		vis := "internal"
		if m.public {
			vis = "public"
		}
		h.Set(hVisibility, vis)
	}
	// Exchange and Outlook send no out-of-office answer to it.
	h.Set("X-Auto-Response-Suppress", "All")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	var buf bytes.Buffer
	w, err := mail.CreateSingleInlineWriter(&buf, h)
	if err != nil {
		return nil, err
	}
	body := strings.ReplaceAll(strings.ReplaceAll(m.body, "\r\n", "\n"), "\n", "\r\n")
	if _, err := w.Write([]byte(body)); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// subjectOf is the thread's subject: the request's short id, then what
// adapters.Subject makes of it.
func subjectOf(t adapters.Ticket) string {
	short := t.UpstreamID
	if len(short) > 8 {
		short = short[:8]
	}
	return "[GR " + short + "] " + adapters.Subject(t)
}

// howToAnswer ends the first mail of a thread.
const howToAnswer = "Reply to this mail to answer the guest. Start the reply with a line\n" +
	"\"#note\" to leave an internal note instead, or with \"#status done\"\n" +
	"(or another status) to change the request's status."

func ticketBody(t adapters.Ticket) string {
	return strings.TrimSpace(t.TaskDescription) + "\n\n" + adapters.TicketFacts(t) + "\n" + howToAnswer + "\n"
}

func messageBody(m adapters.Message) string {
	vis := "visible to the guest"
	if !m.Public {
		vis = "not visible to the guest"
	}
	return adapters.AuthorLine(m) + " (" + vis + "):\n\n" + m.Body + "\n"
}

func statusBody(word string) string {
	return "The request's status is now: " + word + ".\n"
}
