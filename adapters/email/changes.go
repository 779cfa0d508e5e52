package email

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-message"
	"github.com/emersion/go-message/textproto"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// batch bounds the mails one Changes reads.
const batch = 50

// parseCursor reads "<uidvalidity>:<uid>"; the empty cursor is 0, 0.
func parseCursor(c adapters.Cursor) (validity, last uint32, err error) {
	if c == "" {
		return 0, 0, nil
	}
	v, l, ok := strings.Cut(string(c), ":")
	vn, err1 := strconv.ParseUint(v, 10, 32)
	ln, err2 := strconv.ParseUint(l, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("email cursor %q: %w: want <uidvalidity>:<uid>", c, adapters.ErrInvalid)
	}
	return uint32(vn), uint32(ln), nil
}

func formatCursor(validity, last uint32) adapters.Cursor {
	return adapters.Cursor(fmt.Sprintf("%d:%d", validity, last))
}

// Changes reads the inbox after cursor: the team's replies, notes and
// status changes, oldest first. It sets aside what it does not carry,
// and flags as carried the mails up to the cursor it was given (the
// engine stores a cursor only once every event before it is journaled),
// never deleting any. When the inbox's UIDVALIDITY is not the cursor's
// (the server rebuilt the folder), it reads the folder again from the
// start, leaving out the mails flagged carried; the events' ids, derived
// from the Message-IDs, are those the engine journaled before.
func (a *Adapter) Changes(ctx context.Context, cursor adapters.Cursor) ([]adapters.Event, adapters.Cursor, error) {
	return a.changes(ctx, cursor, false)
}

// PeekChanges is Changes without writing: nothing is flagged, moved or
// noted (see adapters.Peeker).
func (a *Adapter) PeekChanges(ctx context.Context, cursor adapters.Cursor) ([]adapters.Event, adapters.Cursor, error) {
	return a.changes(ctx, cursor, true)
}

func (a *Adapter) changes(ctx context.Context, cursor adapters.Cursor, peek bool) ([]adapters.Event, adapters.Cursor, error) {
	cv, cl, err := parseCursor(cursor)
	if err != nil {
		return nil, cursor, err
	}
	peek = peek || a.readOnly
	if !peek {
		if err := a.ensureFolders(ctx); err != nil {
			return nil, cursor, err
		}
	}
	var (
		mails    []fetched
		validity uint32
		rebuilt  bool
	)
	err = a.box.do(ctx, func(c *imapclient.Client) error {
		sel, err := selectFolder(c, a.cfg.Inbox, peek)
		if err != nil {
			return err
		}
		validity = sel.UIDValidity
		last := cl
		if cv != validity {
			rebuilt, last = cursor != "", 0
		} else if !peek {
			if err := a.flagCarried(c, validity, cl); err != nil {
				return err
			}
		}
		uids, err := searchUIDs(c, &imap.SearchCriteria{UID: []imap.UIDSet{{imap.UIDRange{Start: imap.UID(last + 1), Stop: 0}}}})
		if err != nil {
			return err
		}
		var after []imap.UID
		for _, u := range uids {
			if uint32(u) > last && len(after) < batch {
				after = append(after, u)
			}
		}
		if len(after) == 0 {
			cl = last
			return nil
		}
		mails, err = fetchRaw(c, after)
		return err
	})
	if err != nil {
		return nil, cursor, fmt.Errorf("read the inbox %q: %w", a.cfg.Inbox, err)
	}
	if len(mails) == 0 {
		if !peek {
			a.refreshHeld(ctx)
		}
		return nil, formatCursor(validity, cl), nil
	}
	var (
		evs      []adapters.Event
		files    = map[string][]string{}
		setAside = map[string][]imap.UID{}
		own      []imap.UID
	)
	for _, f := range mails {
		cl = uint32(f.UID)
		if rebuilt && hasFlag(f.Flags, flagCarried) {
			continue
		}
		m, err := a.parseInbound(f.Raw, f.Date, func(tok string) (string, error) { return a.resolve(ctx, tok) })
		if err != nil {
			return nil, cursor, fmt.Errorf("find the request of a reply: %w", err)
		}
		switch {
		case m.own:
			own = append(own, f.UID)
		case m.reason != "":
			setAside[m.reason] = append(setAside[m.reason], f.UID)
			a.log.LogAttrs(ctx, slog.LevelWarn, "mail set aside", slog.String("op", "changes"),
				slog.String("from", m.from), slog.String("reason", strings.TrimPrefix(m.reason, "$Ticketbridge")),
				slog.String("ticket", m.ticket), slog.String("detail", m.detail))
		default:
			for _, ev := range a.events(m) {
				if len(m.files) > 0 && ev.Kind != adapters.EventStatus {
					files[ev.ID] = m.files
				}
				evs = append(evs, ev)
			}
		}
	}
	var note func(context.Context, adapters.Event, []string) error
	if !peek {
		note = a.noteUnsent
	}
	evs, err = adapters.NoteUnsent(ctx, a.log, evs, files, note)
	if err != nil {
		return nil, cursor, err
	}
	if !peek {
		if err := a.putAside(ctx, setAside, own); err != nil {
			return nil, cursor, err
		}
		a.refreshHeld(ctx)
	}
	return evs, formatCursor(validity, cl), nil
}

func hasFlag(flags []imap.Flag, f imap.Flag) bool {
	for _, x := range flags {
		if strings.EqualFold(string(x), string(f)) {
			return true
		}
	}
	return false
}

// flagCarried flags the inbox's mails up to last as carried, once each.
func (a *Adapter) flagCarried(c *imapclient.Client, validity, last uint32) error {
	a.carriedMu.Lock()
	defer a.carriedMu.Unlock()
	from := uint32(1)
	if a.carriedValidity == validity {
		from = a.carriedTo + 1
	}
	if last < from {
		return nil
	}
	set := imap.UIDSet{imap.UIDRange{Start: imap.UID(from), Stop: imap.UID(last)}}
	err := c.Store(set, &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{flagCarried, imap.FlagSeen}}, nil).Close()
	if err != nil {
		return fmt.Errorf("flag the mails carried: %w", err)
	}
	a.carriedValidity, a.carriedTo = validity, last
	return nil
}

// putAside moves the mails set aside to the set-aside folder, each with
// its reason as a keyword, and flags the bridge's own mails as carried.
func (a *Adapter) putAside(ctx context.Context, byReason map[string][]imap.UID, own []imap.UID) error {
	if len(byReason) == 0 && len(own) == 0 {
		return nil
	}
	return a.box.do(ctx, func(c *imapclient.Client) error {
		if _, err := selectFolder(c, a.cfg.Inbox, false); err != nil {
			return err
		}
		if len(own) > 0 {
			if err := c.Store(imap.UIDSetNum(own...), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{flagCarried, imap.FlagSeen}}, nil).Close(); err != nil {
				return err
			}
		}
		for reason, uids := range byReason {
			set := imap.UIDSetNum(uids...)
			if err := c.Store(set, &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.Flag(reason)}}, nil).Close(); err != nil {
				return fmt.Errorf("mark the mails set aside: %w", err)
			}
			if _, err := c.Move(set, a.cfg.SetAsideFolder).Wait(); err != nil {
				return fmt.Errorf("move the mails set aside to %q: %w", a.cfg.SetAsideFolder, err)
			}
			a.held.count.Add(uint64(len(uids)))
		}
		return nil
	})
}

// resolve returns the ticket whose reply token tok is, "" when none: the
// sent folder is searched for the token, and the token checked against
// the key. An error says the folder could not be searched.
func (a *Adapter) resolve(ctx context.Context, tok string) (string, error) {
	tok = strings.ToLower(tok)
	a.tokensMu.Lock()
	t, ok := a.tokens[tok]
	a.tokensMu.Unlock()
	if ok {
		return t, nil
	}
	if len(tok) != len(token(a.key, "")) || strings.Trim(tok, "abcdefghijklmnopqrstuvwxyz234567") != "" {
		return "", nil
	}
	var heads []textproto.Header
	err := a.box.do(ctx, func(c *imapclient.Client) error {
		if _, err := selectFolder(c, a.cfg.SentFolder, true); err != nil {
			return err
		}
		uids, err := searchUIDs(c, &imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: hToken, Value: tok}}})
		if err != nil || len(uids) == 0 {
			return err
		}
		heads, err = fetchHeaders(c, uids[:1])
		return err
	})
	if isNoFolder(err) || (err == nil && len(heads) == 0) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	t = heads[0].Get(hTicket)
	if !validToken(a.key, t, tok) {
		return "", nil
	}
	a.tokensMu.Lock()
	a.tokens[tok] = t
	a.tokensMu.Unlock()
	return t, nil
}

// teamEvents lists the events of the mails in the inbox sent to ticket's
// reply address, as Changes reports them, oldest first.
func (a *Adapter) teamEvents(ctx context.Context, ticket string) ([]adapters.Event, error) {
	tok := token(a.key, ticket)
	var mails []fetched
	err := a.box.do(ctx, func(c *imapclient.Client) error {
		if _, err := selectFolder(c, a.cfg.Inbox, true); err != nil {
			return err
		}
		hdr := func(k string) imap.SearchCriteria {
			return imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: k, Value: tok}}}
		}
		uids, err := searchUIDs(c, &imap.SearchCriteria{Or: [][2]imap.SearchCriteria{
			{hdr("Delivered-To"), {Or: [][2]imap.SearchCriteria{{hdr("To"), hdr("Cc")}}}},
		}})
		if err != nil {
			return err
		}
		mails, err = fetchRaw(c, uids)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the replies of %s in %q: %w", ticket, a.cfg.Inbox, err)
	}
	var evs []adapters.Event
	files := map[string][]string{}
	for _, f := range mails {
		m, _ := a.parseInbound(f.Raw, f.Date, func(t string) (string, error) {
			if t == tok {
				return ticket, nil
			}
			return "", nil
		})
		if m.own || m.reason != "" || m.ticket != ticket {
			continue
		}
		for _, ev := range a.events(m) {
			if len(m.files) > 0 && ev.Kind != adapters.EventStatus {
				files[ev.ID] = m.files
			}
			evs = append(evs, ev)
		}
	}
	return adapters.NoteUnsent(ctx, nil, evs, files, nil)
}

// noteUnsent leaves the thread an internal note naming the files of ev
// the API cannot carry; its Message-ID, derived from the event, keeps it
// from being sent twice.
func (a *Adapter) noteUnsent(ctx context.Context, ev adapters.Event, names []string) error {
	th, err := a.mustThread(ctx, ev.Ref)
	if err != nil {
		return err
	}
	m := outMail{kind: kindUnsent, ticket: th.ticket, to: th.to, subject: "Re: " + th.subject,
		id: a.ids.unsent(th.ticket, ev.ID), date: time.Now(),
		body: adapters.UnsentNote(ev.Kind, names) + "\n\n" + adapters.Marker{Kind: adapters.MarkerUnsent, ID: ev.ID}.Line() + "\n"}
	return a.send(ctx, th, m)
}

func isNoFolder(err error) bool { return errors.Is(err, errNoFolder) }

// bounceOf reads the ticket and reason of a bounce kept whole in raw.
func (a *Adapter) bounceOf(raw []byte) (ticket, detail string) {
	e, err := message.Read(bytes.NewReader(raw))
	if err != nil && e == nil {
		return "", ""
	}
	ticket, detail, _ = a.bounce(e)
	return ticket, detail
}
