package email

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/smtpsend"
)

// maxHeldListed bounds how many mails set aside Held lists.
const maxHeldListed = 200

// heldCache is the set-aside folder as last read.
type heldCache struct {
	mu     sync.Mutex
	loaded bool
	state  string // the folder's STATUS when read: nothing changed while it is the same
	list   []adapters.HeldError
	count  atomic.Uint64
}

// SetAside counts the mails this adapter set aside since it was made.
func (a *Adapter) SetAside() uint64 { return a.held.count.Load() }

// Held lists the mails waiting in the set-aside folder, oldest first,
// each with its reason (see adapters.Holder): a mail leaves the list when
// the team moves it back to the inbox or deletes it. A bounce names the
// request whose mail came back. The list is read again at each Changes,
// and only when the folder changed.
func (a *Adapter) Held(ctx context.Context) []adapters.HeldError {
	a.held.mu.Lock()
	loaded := a.held.loaded
	a.held.mu.Unlock()
	if !loaded {
		a.refreshHeld(ctx)
	}
	a.held.mu.Lock()
	defer a.held.mu.Unlock()
	return slices.Clone(a.held.list)
}

// refreshHeld reads the set-aside folder again when its STATUS changed
// (its HIGHESTMODSEQ where the server keeps one, so that a flag changed
// counts too). An error is logged and leaves the list as it was.
func (a *Adapter) refreshHeld(ctx context.Context) {
	folder := a.cfg.SetAsideFolder
	var (
		list  []adapters.HeldError
		state string
		same  bool
	)
	err := a.box.do(ctx, func(c *imapclient.Client) error {
		opts := &imap.StatusOptions{NumMessages: true, UIDNext: true, UIDValidity: true}
		condStore := a.cfg.CondStore && c.Caps().Has(imap.CapCondStore)
		opts.HighestModSeq = condStore
		st, err := c.Status(folder, opts).Wait()
		if err != nil {
			return err
		}
		n := uint32(0)
		if st.NumMessages != nil {
			n = *st.NumMessages
		}
		state = fmt.Sprintf("%d/%d/%d/%d", st.UIDValidity, st.UIDNext, n, st.HighestModSeq)
		a.held.mu.Lock()
		same = a.held.loaded && a.held.state == state
		a.held.mu.Unlock()
		if same || n == 0 {
			return nil
		}
		if _, err := selectFolder(c, folder, true); err != nil {
			return err
		}
		uids, err := searchUIDs(c, &imap.SearchCriteria{})
		if err != nil {
			return err
		}
		if len(uids) > maxHeldListed {
			uids = uids[len(uids)-maxHeldListed:]
		}
		bufs, err := c.Fetch(imap.UIDSetNum(uids...), &imap.FetchOptions{UID: true, Flags: true, Envelope: true, InternalDate: true}).Collect()
		if err != nil {
			return err
		}
		slices.SortFunc(bufs, func(x, y *imapclient.FetchMessageBuffer) int { return int(int64(x.UID) - int64(y.UID)) })
		for _, b := range bufs {
			h := adapters.HeldError{
				Op:    "mail " + describe(b.Envelope),
				File:  fmt.Sprintf("%s/%d", folder, b.UID),
				Since: b.InternalDate,
				Need:  "set aside",
				Mail:  true,
			}
			for _, f := range b.Flags {
				for k, why := range reasonText {
					if strings.EqualFold(string(f), k) {
						h.Need = why
						if k == reasonBounce {
							raw, err := fetchRaw(c, []imap.UID{b.UID})
							if err == nil && len(raw) == 1 {
								t, detail := a.bounceOf(raw[0].Raw)
								h.Ref = adapters.Ref(t)
								if detail != "" {
									h.Need += " (" + detail + ")"
								}
							}
						}
					}
				}
			}
			list = append(list, h)
		}
		return nil
	})
	if isNoFolder(err) {
		err, list, state = nil, nil, "none"
	}
	if err != nil {
		a.log.LogAttrs(ctx, slog.LevelWarn, "cannot list the mail set aside", slog.String("op", "held"),
			slog.String("folder", folder), slog.Any("error", err))
		return
	}
	if same {
		return
	}
	a.held.mu.Lock()
	a.held.loaded, a.held.state, a.held.list = true, state, list
	a.held.mu.Unlock()
}

// bounced returns an *adapters.HeldError for op on ticket while a bounce
// of one of its thread's mails waits in the set-aside folder, nil when
// none does. The engine records it as the request's error, with the
// server's reason, and tries again at its steady pace for held changes:
// the thread's mail is held, not sent again to an address that bounces
// at every retry, until the team deletes the bounce.
func (a *Adapter) bounced(ctx context.Context, ticket, op string) error {
	for _, h := range a.Held(ctx) {
		if h.Ref == adapters.Ref(ticket) {
			return &adapters.HeldError{Ref: h.Ref, Op: op, Since: h.Since,
				Need: fmt.Sprintf("%s; once fixed, delete the bounce (%s) and the thread's mail goes out", h.Need, h.File)}
		}
	}
	return nil
}

// describe names a mail by its sender and subject.
func describe(env *imap.Envelope) string {
	if env == nil {
		return "(no envelope)"
	}
	from := "an unknown sender"
	if len(env.From) > 0 {
		from = env.From[0].Addr()
	}
	subj := strings.TrimSpace(env.Subject)
	if len([]rune(subj)) > 80 {
		subj = string([]rune(subj)[:79]) + "…"
	}
	return fmt.Sprintf("from %s %q", from, subj)
}

// Check logs in to both servers and finds the folders, saying what is
// missing and how to fix it. Opened read-only it creates nothing.
func (a *Adapter) Check(ctx context.Context) error {
	if err := a.smtp.Check(ctx); err != nil {
		if errors.Is(err, smtpsend.ErrAuth) {
			err = fmt.Errorf("%w: %w", adapters.ErrAuth, err)
		}
		return checkFix(err, "SMTP_URL")
	}
	var missing []string
	err := a.box.do(ctx, func(c *imapclient.Client) error {
		have, err := listFolders(c)
		if err != nil {
			return err
		}
		for _, f := range []string{a.cfg.Inbox, a.cfg.SentFolder, a.cfg.SetAsideFolder} {
			if !have[f] {
				missing = append(missing, f)
			}
		}
		if !have[a.cfg.Inbox] {
			return nil
		}
		_, err = selectFolder(c, a.cfg.Inbox, true)
		return err
	})
	if err != nil {
		return checkFix(err, "IMAP_URL")
	}
	if slices.Contains(missing, a.cfg.Inbox) {
		return fmt.Errorf("the mailbox has no folder %q: set %sINBOX to the folder replies arrive in", a.cfg.Inbox, EnvPrefix)
	}
	if len(missing) > 0 {
		if a.readOnly {
			return fmt.Errorf("the mailbox has no folder %q yet: the bridge makes it at its first cycle, or create it in the mailbox", strings.Join(missing, `", "`))
		}
		if err := a.ensureFolders(ctx); err != nil {
			return err
		}
	}
	return nil
}

// checkFix adds to err, an error of reaching the server urlVar names, the
// fix of its kind: the credentials for a refused login, the CA for a
// certificate not trusted, the address otherwise.
func checkFix(err error, urlVar string) error {
	var cert *tls.CertificateVerificationError
	switch {
	case errors.Is(err, adapters.ErrAuth):
		return fmt.Errorf("%w (check %sUSER and %sPASSWORD or %sPASSWORD_FILE)", err, EnvPrefix, EnvPrefix, EnvPrefix)
	case errors.As(err, &cert):
		return fmt.Errorf("%w (check %sCA_FILE: give the CA that signed the server's certificate, or none for the system's)", err, EnvPrefix)
	}
	return fmt.Errorf("%w (check %s%s, and that the server runs and accepts connections from this host)", err, EnvPrefix, urlVar)
}
