package email

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-message/textproto"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// thread is what the sent folder holds of a ticket's thread.
type thread struct {
	ticket  string
	to      string
	subject string
	root    string          // the first mail's Message-ID
	order   []string        // the ids sent, in the folder's order
	sent    map[string]bool // every Message-ID sent
	// messages maps upstream message ids to the Message-IDs mirroring them.
	messages map[string]string
	// delivered maps the team's events recorded by MarkSent to the
	// upstream messages they became ("" for a status change).
	delivered map[string]string
	// statusCount counts the status mails; lastStatus is the newest status
	// the bridge set (the first mail's included) and lastAt its time.
	statusCount int
	lastStatus  string
	lastAt      time.Time
	// held maps each field to the hash of the newest value a mail of the
	// thread carried; noted holds every value of the noted fields a mail
	// carried; fieldsCount counts the follow-ups of fields.
	held        map[adapters.Field]string
	noted       map[adapters.Field]map[string]bool
	fieldsCount int
	// tos maps each Message-ID sent to the address it went to.
	tos map[string]string
}

func (th *thread) references() []string {
	if th.root == "" {
		return nil
	}
	refs := []string{th.root}
	if n := len(th.order); n > 1 && th.order[n-1] != th.root {
		refs = append(refs, th.order[n-1])
	}
	return refs
}

func (th *thread) add(m outMail) {
	th.sent[m.id] = true
	if th.messages == nil {
		th.messages = map[string]string{}
	}
	if th.delivered == nil {
		th.delivered = map[string]string{}
	}
	if m.kind == kindSent {
		th.delivered[m.event] = m.message
		return // a record, not part of the thread
	}
	th.order = append(th.order, m.id)
	if th.tos == nil {
		th.tos = map[string]string{}
	}
	th.tos[m.id] = m.to
	th.addFields(m)
	switch m.kind {
	case kindFields:
		th.fieldsCount++
		if m.to != "" {
			th.to = m.to // a department move: the thread goes on there
		}
	case kindMessage:
		th.messages[m.message] = m.id
	case kindStatus:
		th.statusCount++
		th.lastStatus, th.lastAt = m.status, m.date
	case kindTicket:
		th.lastStatus, th.lastAt = m.status, m.date
	}
}

// headerFields are the header fields of the sent copies the adapter reads.
var headerFields = []string{"Message-ID", "To", "Subject", "Date", hTicket, hKind, hMessage, hStatus, hToken, hEvent, hUpstream, hFields}

// addFields records the field values m carried.
func (th *thread) addFields(m outMail) {
	if m.fields == "" {
		return
	}
	if th.held == nil {
		th.held, th.noted = map[adapters.Field]string{}, map[adapters.Field]map[string]bool{}
	}
	for f, id := range parseFieldsHeader(m.fields) {
		th.held[f] = id
		if noted.Has(f) {
			if th.noted[f] == nil {
				th.noted[f] = map[string]bool{}
			}
			th.noted[f][id] = true
		}
	}
}

// loadThread reads ticket's thread from the sent folder; ok is false when
// the folder holds no first mail of it.
func (a *Adapter) loadThread(ctx context.Context, ticket string) (th *thread, ok bool, err error) {
	if strings.TrimSpace(ticket) == "" || strings.ContainsAny(ticket, "\r\n\"") {
		return nil, false, nil
	}
	var heads []textproto.Header
	err = a.box.do(ctx, func(c *imapclient.Client) error {
		if _, err := selectFolder(c, a.cfg.SentFolder, true); err != nil {
			return err
		}
		uids, err := searchUIDs(c, &imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: hTicket, Value: ticket}}})
		if err != nil || len(uids) == 0 {
			return err
		}
		heads, err = fetchHeaders(c, uids)
		return err
	})
	if isNoFolder(err) {
		return nil, false, nil // nothing was ever sent
	}
	if err != nil {
		return nil, false, fmt.Errorf("read the thread of %s in %q: %w", ticket, a.cfg.SentFolder, err)
	}
	th = &thread{ticket: ticket, sent: map[string]bool{}, messages: map[string]string{}}
	for _, h := range heads {
		if h.Get(hTicket) != ticket {
			continue // a longer id holding this one
		}
		mh := mail.Header{Header: message.Header{Header: h}}
		id, _ := mh.MessageID()
		date, _ := mh.Date()
		m := outMail{kind: h.Get(hKind), id: id, message: h.Get(hMessage), status: h.Get(hStatus), fields: h.Get(hFields), date: date}
		if to, err := mh.AddressList("To"); err == nil && len(to) > 0 {
			m.to = to[0].Address
		}
		if m.kind == kindSent {
			m.event, m.message = h.Get(hEvent), h.Get(hUpstream)
			if m.message == adapters.MarkerNoMessage {
				m.message = ""
			}
		}
		if m.kind == kindTicket {
			th.root, th.to = id, m.to
			th.subject, _ = mh.Subject()
		}
		th.add(m)
	}
	if th.root == "" {
		return nil, false, nil
	}
	return th, true, nil
}

func fetchHeaders(c *imapclient.Client, uids []imap.UID) ([]textproto.Header, error) {
	bufs, err := c.Fetch(imap.UIDSetNum(uids...), &imap.FetchOptions{
		UID:         true,
		BodySection: []*imap.FetchItemBodySection{{Specifier: imap.PartSpecifierHeader, HeaderFields: headerFields, Peek: true}},
	}).Collect()
	if err != nil {
		return nil, err
	}
	byUID := map[imap.UID][]byte{}
	for _, b := range bufs {
		if len(b.BodySection) > 0 {
			byUID[b.UID] = b.BodySection[0].Bytes
		}
	}
	var out []textproto.Header
	for _, u := range uids {
		raw, ok := byUID[u]
		if !ok {
			continue
		}
		h, err := textproto.ReadHeader(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			continue
		}
		out = append(out, h)
	}
	return out, nil
}

// keepCopy appends raw to the sent folder, seen.
func (a *Adapter) keepCopy(ctx context.Context, raw []byte) error {
	return a.box.do(ctx, func(c *imapclient.Client) error {
		return appendMessage(c, a.cfg.SentFolder, raw, []imap.Flag{imap.FlagSeen})
	})
}

// ensureFolders makes the sent and set-aside folders once.
func (a *Adapter) ensureFolders(ctx context.Context) error {
	a.foldersOnce.Lock()
	defer a.foldersOnce.Unlock()
	if a.folders {
		return nil
	}
	err := a.box.do(ctx, func(c *imapclient.Client) error {
		return ensureFolders(c, a.cfg.SentFolder, a.cfg.SetAsideFolder)
	})
	if err != nil {
		return fmt.Errorf("make the folders of the bridge's mailbox: %w", err)
	}
	a.folders = true
	return nil
}

// currentStatus is the thread's status and its time (see statusOf).
func (a *Adapter) currentStatus(ctx context.Context, th *thread) (string, time.Time, error) {
	evs, err := a.teamEvents(ctx, th.ticket)
	if err != nil {
		return "", time.Time{}, err
	}
	word, at := a.statusOf(th, evs)
	return word, at, nil
}

// statusOf is the newer of the bridge's last status and the team's last
// "#status" reply among evs (the team's when both have the same time, as
// a reply follows what it answers), with its time.
func (a *Adapter) statusOf(th *thread, evs []adapters.Event) (string, time.Time) {
	word, at := th.lastStatus, th.lastAt
	for _, ev := range evs {
		if ev.Kind == adapters.EventStatus && !ev.At.Before(at) {
			word, at = a.status.Down(ev.Status), ev.At
		}
	}
	return word, at
}

// Lookup finds the thread of upstreamID by the bridge's headers, with the
// upstream messages it holds, its status and the team's replies. While a
// bounce of the thread waits in the set-aside folder it returns that
// bounce as an *adapters.HeldError (see bounced).
func (a *Adapter) Lookup(ctx context.Context, upstreamID string) (adapters.Found, bool, error) {
	th, ok, err := a.loadThread(ctx, upstreamID)
	if err != nil || !ok {
		return adapters.Found{}, false, err
	}
	if err := a.bounced(ctx, th.ticket, "look up"); err != nil {
		return adapters.Found{}, false, err
	}
	evs, err := a.teamEvents(ctx, th.ticket)
	if err != nil {
		return adapters.Found{}, false, err
	}
	word, at := a.statusOf(th, evs)
	f := adapters.Found{
		Ref:      adapters.Ref(th.ticket),
		Messages: map[string]string{},
		Sent:     map[string]string{},
		Status:   a.status.Current(word, at),
		Events:   evs,
	}
	for up, id := range th.messages {
		f.Messages[up] = id
	}
	for ev, up := range th.delivered {
		f.Sent[ev] = up
	}
	if f.Events == nil {
		f.Events = []adapters.Event{}
	}
	return f, true, nil
}
