package email

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/smtpsend"
)

// mailbox is the bridge's IMAP mailbox: one connection, opened when
// first needed and again after an error, used by one operation at a
// time (the engine's goroutines on different tickets take turns).
type mailbox struct {
	srv      smtpsend.Server
	user     string
	password string
	tls      *tls.Config
	timeout  time.Duration
	// oneShot logs out after each operation (tests that open many
	// instances against a server limiting connections per user).
	oneShot bool

	mu sync.Mutex
	c  *imapclient.Client
}

// errNoFolder says that a folder the adapter needs is missing.
var errNoFolder = errors.New("no such folder")

// do runs f on an open, logged-in connection under the lock. An error
// other than a refusal of one command closes the connection, so that the
// next call starts afresh.
func (m *mailbox) do(ctx context.Context, f func(c *imapclient.Client) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.c == nil {
		c, err := m.dial(ctx)
		if err != nil {
			return err
		}
		m.c = c
	}
	c := m.c
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	err := f(c)
	stop()
	if ctx.Err() != nil && err != nil {
		err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	var ie *imap.Error
	switch {
	case err != nil && !errors.As(err, &ie):
		_ = c.Close()
		m.c = nil
	case m.oneShot:
		_ = c.Logout().Wait()
		_ = c.Close()
		m.c = nil
	}
	return err
}

func (m *mailbox) dial(ctx context.Context) (*imapclient.Client, error) {
	tc := m.tls.Clone()
	if tc.ServerName == "" {
		tc.ServerName = m.srv.Host
	}
	d := &net.Dialer{Timeout: m.timeout}
	conn, err := d.DialContext(ctx, "tcp", m.srv.Addr())
	if err != nil {
		return nil, fmt.Errorf("connect to the mailbox %s: %w", m.srv, err)
	}
	opts := &imapclient.Options{TLSConfig: tc}
	var c *imapclient.Client
	if m.srv.Implicit {
		tconn := tls.Client(conn, tc)
		if err := tconn.HandshakeContext(ctx); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("TLS with the mailbox %s: %w", m.srv, err)
		}
		c = imapclient.New(tconn, opts)
	} else {
		c = imapclient.New(conn, opts)
		if err := c.WaitGreeting(); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("greeting of the mailbox %s: %w", m.srv, err)
		}
		if c.Caps().Has(imap.CapStartTLS) {
			_ = c.Close() // the greeting was read; start over with STARTTLS
			conn, err = d.DialContext(ctx, "tcp", m.srv.Addr())
			if err != nil {
				return nil, fmt.Errorf("connect to the mailbox %s: %w", m.srv, err)
			}
			if c, err = imapclient.NewStartTLS(conn, opts); err != nil {
				return nil, fmt.Errorf("STARTTLS with the mailbox %s: %w", m.srv, err)
			}
		} else if !smtpsend.Loopback(m.srv.Host) {
			_ = c.Close()
			return nil, fmt.Errorf("the mailbox %s offers no STARTTLS and is not on loopback: the password would cross the network in clear; use imaps://", m.srv)
		}
	}
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	if err := c.Login(m.user, m.password).Wait(); err != nil {
		_ = c.Close()
		var ie *imap.Error
		if errors.As(err, &ie) && (ie.Code == imap.ResponseCodeAuthenticationFailed || ie.Type == imap.StatusResponseTypeNo) {
			return nil, fmt.Errorf("log in to the mailbox %s as %q: %w: %s", m.srv, m.user, adapters.ErrAuth, ie.Text)
		}
		return nil, fmt.Errorf("log in to the mailbox %s: %w", m.srv, err)
	}
	return c, nil
}

// close logs out.
func (m *mailbox) close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.c == nil {
		return nil
	}
	_ = m.c.Logout().Wait()
	err := m.c.Close()
	m.c = nil
	if err != nil && strings.Contains(err.Error(), "closed") {
		err = nil
	}
	return err
}

// selectFolder selects (readOnly: examines) folder afresh, so that what
// other connections appended is seen.
func selectFolder(c *imapclient.Client, folder string, readOnly bool) (*imap.SelectData, error) {
	if c.Mailbox() != nil {
		if err := c.Unselect().Wait(); err != nil {
			return nil, err
		}
	}
	d, err := c.Select(folder, &imap.SelectOptions{ReadOnly: readOnly}).Wait()
	if err != nil {
		var ie *imap.Error
		if errors.As(err, &ie) && (ie.Code == imap.ResponseCodeNonExistent || ie.Type == imap.StatusResponseTypeNo) {
			return nil, fmt.Errorf("folder %q: %w", folder, errNoFolder)
		}
		return nil, err
	}
	return d, nil
}

// searchUIDs returns the UIDs matching criteria in the selected folder,
// ascending.
func searchUIDs(c *imapclient.Client, criteria *imap.SearchCriteria) ([]imap.UID, error) {
	d, err := c.UIDSearch(criteria, nil).Wait()
	if err != nil {
		return nil, err
	}
	uids := d.AllUIDs()
	slices.Sort(uids)
	return uids, nil
}

// fetched is one message as fetched whole.
type fetched struct {
	UID   imap.UID
	Flags []imap.Flag
	Date  time.Time // INTERNALDATE
	Raw   []byte
}

// fetchRaw fetches the messages uids of the selected folder whole, without
// setting \Seen, in UID order.
func fetchRaw(c *imapclient.Client, uids []imap.UID) ([]fetched, error) {
	if len(uids) == 0 {
		return nil, nil
	}
	bufs, err := c.Fetch(imap.UIDSetNum(uids...), &imap.FetchOptions{
		UID: true, Flags: true, InternalDate: true,
		BodySection: []*imap.FetchItemBodySection{{Peek: true}},
	}).Collect()
	if err != nil {
		return nil, err
	}
	out := make([]fetched, 0, len(bufs))
	for _, b := range bufs {
		f := fetched{UID: b.UID, Flags: b.Flags, Date: b.InternalDate}
		if len(b.BodySection) > 0 {
			f.Raw = b.BodySection[0].Bytes
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b fetched) int { return int(int64(a.UID) - int64(b.UID)) })
	return out, nil
}

// appendMessage appends raw to folder with flags.
func appendMessage(c *imapclient.Client, folder string, raw []byte, flags []imap.Flag) error {
	cmd := c.Append(folder, int64(len(raw)), &imap.AppendOptions{Flags: flags})
	if _, err := cmd.Write(raw); err != nil {
		_ = cmd.Close()
		return err
	}
	if err := cmd.Close(); err != nil {
		return err
	}
	_, err := cmd.Wait()
	return err
}

// ensureFolders creates the folders that are missing.
func ensureFolders(c *imapclient.Client, folders ...string) error {
	have, err := listFolders(c)
	if err != nil {
		return err
	}
	for _, f := range folders {
		if have[f] {
			continue
		}
		if err := c.Create(f, nil).Wait(); err != nil {
			var ie *imap.Error
			if errors.As(err, &ie) && ie.Code == imap.ResponseCodeAlreadyExists {
				continue
			}
			return fmt.Errorf("create folder %q: %w", f, err)
		}
	}
	return nil
}

func listFolders(c *imapclient.Client) (map[string]bool, error) {
	list, err := c.List("", "*", nil).Collect()
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, l := range list {
		have[l.Mailbox] = true
	}
	have["INBOX"] = true
	return have, nil
}
