package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/internal/httpserve"
	"github.com/ticketbridge/ticketbridge/internal/redact"
)

// Name is the adapter's registry name.
const Name = "webhook"

// DefaultChangesLimit is how many inbound events one Changes call returns
// at most.
const DefaultChangesLimit = 100

// Options are the parts of the adapter tests replace; the zero value is
// what the daemon uses.
type Options struct {
	// Logger receives the adapter's log lines; nil discards them.
	Logger *slog.Logger
	// Status maps statuses both ways; the zero value means
	// [adapters.APIStatusMap].
	Status adapters.StatusMap
	// Sleep waits between delivery attempts; nil means a real timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Backoff is the wait between attempts; the zero value is the daemon's
	// default.
	Backoff httpretry.Backoff
	// MaxAttempts caps the attempts of one delivery within one call; 0
	// means [adapters.DefaultHTTPAttempts].
	MaxAttempts int
	// HTTP sends the deliveries; nil means a client whose timeout is the
	// configured Timeout. The daemon's is made with adapters.Deps.HTTP.
	HTTP *http.Client
	// Guard, when set, is asked before each record of the webhook
	// directory is written (see adapters.Deps.Guard): while it refuses,
	// nothing is stored and its error is returned.
	Guard func() error
	// ChangesLimit caps the events of one Changes call; 0 means
	// DefaultChangesLimit.
	ChangesLimit int
	// ReadOnly opens the adapter for a dry run: a webhook directory that
	// does not exist yet is not made (Lookup finds nothing, Changes reports
	// nothing), and Start is refused.
	ReadOnly bool
	// Listener, when set, serves the inbound endpoint from Start instead
	// of a new listener on the configured address (a socket handed over by
	// the service manager, or a test's port chosen before the adapter is
	// made). The adapter owns it: Close, or a failing New or Start, closes
	// it.
	Listener net.Listener
}

// Adapter is the webhook helpdesk adapter. It is safe for concurrent use.
type Adapter struct {
	cfg    Config // Secret cleared: the secret lives in key only
	key    *key
	log    *slog.Logger
	status adapters.StatusMap
	limit  int
	client *adapters.HTTPClient
	guard  func() error // nil: none

	mu       sync.Mutex // guards st, ln, srv, started and closed
	st       *store     // nil until the directory is first used
	ln       net.Listener
	srv      *http.Server
	serveErr chan error
	started  bool
	closed   bool
	readOnly bool

	closeOnce sync.Once
	closeErr  error
}

// key holds the secret behind a pointer, so that printing an Adapter, even
// field by field, shows an address rather than the secret.
type key struct{ secret string }

var (
	_ adapters.Helpdesk = (*Adapter)(nil)
	_ adapters.Checker  = (*Adapter)(nil)
	_ adapters.Starter  = (*Adapter)(nil)
)

// New returns the adapter for cfg, checked as [Config.Validate] does. It
// does no I/O: the webhook directory is opened when first used, and the
// inbound endpoint is served from [Adapter.Start], which only the daemon
// calls, so that `ticketbridge check` or `once` beside a running daemon
// do not contend for its port. Close stops what Start started.
func New(ctx context.Context, cfg Config, opts Options) (*Adapter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("open webhook adapter: %w", err)
	}
	a := &Adapter{cfg: cfg, key: &key{cfg.Secret.Reveal()}, log: opts.Logger, status: opts.Status, limit: opts.ChangesLimit, guard: opts.Guard}
	a.cfg.Secret = ""
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.status.ToHelpdesk == nil && a.status.FromHelpdesk == nil {
		a.status = adapters.APIStatusMap()
	}
	if a.limit <= 0 {
		a.limit = DefaultChangesLimit
	}
	hc := opts.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: cfg.Timeout}
	}
	a.client = &adapters.HTTPClient{
		HTTP:        hc,
		Backoff:     opts.Backoff,
		MaxAttempts: opts.MaxAttempts,
		Header:      http.Header{"User-Agent": {"ticketbridge-webhook"}},
		Authorize: func(r *http.Request) {
			// Each attempt is signed anew, so that a retry is not refused as
			// stale however long the backoff was.
			if err := SignRequest(r, a.key.secret, time.Now()); err != nil {
				a.log.LogAttrs(r.Context(), slog.LevelError, "cannot sign delivery", slog.Any("error", err))
			}
		},
		Secrets: []string{a.key.secret},
		Sleep:   opts.Sleep,
		Logger:  a.log,
	}
	a.ln = opts.Listener
	a.readOnly = opts.ReadOnly
	return a, nil
}

// errNoDirectory is returned by store for a read-only adapter whose
// webhook directory does not exist yet: there is nothing to read.
var errNoDirectory = errors.New("the webhook directory does not exist yet")

// store opens the webhook directory on first use.
func (a *Adapter) store() (*store, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.st != nil {
		return a.st, nil
	}
	if a.readOnly {
		if _, err := os.Stat(filepath.Join(a.cfg.Dir, metaFile)); err != nil {
			return nil, errNoDirectory
		}
	}
	st, err := openStore(a.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("open webhook directory %s: %w", a.cfg.Dir, err)
	}
	a.st = st
	return st, nil
}

// Start opens the webhook directory and, unless TICKETBRIDGE_WEBHOOK_LISTEN
// is "off", starts serving the inbound endpoint; Close stops it. It may be
// called once.
func (a *Adapter) Start(ctx context.Context) error {
	if a.readOnly {
		return errors.New("start webhook adapter: opened read-only (dry run)")
	}
	if _, err := a.store(); err != nil {
		return fmt.Errorf("start webhook adapter: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.started || a.closed {
		return errors.New("start webhook adapter: started before, or closed")
	}
	a.started = true
	ln := a.ln
	if ln == nil && a.cfg.Listen != ListenOff {
		var lc net.ListenConfig
		var err error
		if ln, err = lc.Listen(ctx, "tcp", a.cfg.Listen); err != nil {
			return fmt.Errorf("start webhook adapter: listen on TICKETBRIDGE_WEBHOOK_LISTEN %s: %w", a.cfg.Listen, err)
		}
	}
	if ln != nil {
		a.ln = ln
		a.srv = &http.Server{
			Handler:           a,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			WriteTimeout:      30 * time.Second,
			IdleTimeout:       2 * time.Minute,
			ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
		}
		httpserve.CloseUnusedOnShutdown(a.srv)
		a.serveErr = make(chan error, 1)
		srv := a.srv
		go func() { a.serveErr <- srv.Serve(ln) }()
		a.log.LogAttrs(ctx, slog.LevelInfo, "serving webhook inbound endpoint", slog.String("url", a.inboundURL()))
	}
	return nil
}

// Name returns "webhook".
func (a *Adapter) Name() string { return Name }

// Location returns where the deliveries go (see adapters.Locator).
func (a *Adapter) Location() string { return redact.Place(a.cfg.URL) }

// InboundURL returns the URL of the inbound endpoint as served, "" when
// there is none (before Start, or with TICKETBRIDGE_WEBHOOK_LISTEN=off).
func (a *Adapter) InboundURL() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.srv == nil {
		return ""
	}
	return a.inboundURL()
}

func (a *Adapter) inboundURL() string {
	if a.ln == nil {
		return ""
	}
	return "http://" + a.ln.Addr().String() + InboundPath
}

// String describes the adapter without its secret.
func (a *Adapter) String() string {
	return fmt.Sprintf("webhook(url=%s, listen=%s, dir=%s)", redact.URL(a.cfg.URL), a.cfg.Listen, a.cfg.Dir)
}

// GoString describes the adapter without its secret, for %#v.
func (a *Adapter) GoString() string { return a.String() }

// Close stops the inbound endpoint, waiting up to five seconds for requests
// in flight. It returns the first error.
func (a *Adapter) Close() error {
	a.closeOnce.Do(func() {
		a.mu.Lock()
		a.closed = true
		a.mu.Unlock()
		if a.srv == nil {
			if a.ln != nil { // handed over, never served
				_ = a.ln.Close()
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := a.srv.Shutdown(ctx); err != nil {
			a.closeErr = fmt.Errorf("stop webhook inbound endpoint: %w", err)
			_ = a.srv.Close()
		}
		if err := <-a.serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) && a.closeErr == nil {
			a.closeErr = fmt.Errorf("serve webhook inbound endpoint: %w", err)
		}
	})
	return a.closeErr
}

// Check proves the configuration: the directory takes a file, and the
// receiver answers a signed ping with 2xx (one attempt).
func (a *Adapter) Check(ctx context.Context) error {
	if a.readOnly {
		// Opened read-only (ticketbridge check): judge the directory
		// without making or writing it.
		if err := adapters.CanMakeDir(a.cfg.Dir); err != nil {
			return fmt.Errorf("check webhook directory: %w", err)
		}
	} else {
		st, err := a.store()
		if err != nil {
			return fmt.Errorf("check webhook directory %s: %w", a.cfg.Dir, err)
		}
		if err := st.probe(); err != nil {
			return fmt.Errorf("check webhook directory %s: %w", a.cfg.Dir, err)
		}
	}
	c := *a.client
	c.MaxAttempts = 1
	id := uuid.NewString()
	if err := a.deliverWith(ctx, &c, EventPing, id, Ping{ID: id, Type: EventPing}); err != nil {
		if errors.Is(err, adapters.ErrAuth) {
			return fmt.Errorf("check webhook receiver: it refused the signed ping; make the secret the same on both sides: %w", err)
		}
		return fmt.Errorf("check webhook receiver: %w", err)
	}
	return nil
}

// DeliveryError is a delivery the receiver did not acknowledge with 2xx
// within one call. It is always temporary: the engine repeats the call and
// the delivery goes out again with the same delivery id. It matches
// [adapters.ErrAuth] when the receiver answered 401 or 403 and a context
// error when the caller gave up, never [adapters.ErrInvalid] or
// [adapters.ErrNotFound] (a receiver's 400 or 404 says nothing about the
// ticket).
type DeliveryError struct {
	Event    string // the event type
	Delivery string // the delivery id
	Status   int    // the receiver's last answer, 0 when none arrived
	Attempts int
	err      error // the helper's error, already free of the secret
}

func (e *DeliveryError) Error() string {
	if e.Event == EventPing {
		// A ping (check) is not repeated; the next check sends a new one.
		return fmt.Sprintf("deliver %s %s: %v", e.Event, e.Delivery, e.err)
	}
	return fmt.Sprintf("deliver %s %s: %v; it will be sent again with the same delivery id", e.Event, e.Delivery, e.err)
}

// Unwrap exposes only the causes that hold for the adapter as a whole.
func (e *DeliveryError) Unwrap() error {
	switch {
	case errors.Is(e.err, adapters.ErrAuth):
		return adapters.ErrAuth
	case errors.Is(e.err, context.Canceled):
		return context.Canceled
	case errors.Is(e.err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	}
	return nil
}

func (a *Adapter) deliver(ctx context.Context, typ, id string, payload any) error {
	return a.deliverWith(ctx, a.client, typ, id, payload)
}

func (a *Adapter) deliverWith(ctx context.Context, c *adapters.HTTPClient, typ, id string, payload any) error {
	body, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", typ, id, err)
	}
	_, err = c.Do(ctx, adapters.HTTPRequest{
		Method: http.MethodPost,
		URL:    a.cfg.URL,
		Header: http.Header{
			"Content-Type": {"application/json"},
			HeaderDelivery: {id},
			HeaderEvent:    {typ},
		},
		Body:       body,
		Idempotent: true, // the delivery id lets the receiver drop a repeat
		Op:         "deliver " + typ,
	})
	if err != nil {
		de := &DeliveryError{Event: typ, Delivery: id, err: err}
		var he *adapters.HTTPError
		if errors.As(err, &he) {
			de.Status, de.Attempts = he.StatusCode, he.Attempts
		}
		return de
	}
	return nil
}

// SignRequest signs r, a request whose body can be read again (GetBody,
// as http.NewRequest sets for a bytes.Reader), for sending at now.
func SignRequest(r *http.Request, secret string, now time.Time) error {
	var body []byte
	if r.GetBody != nil {
		rc, err := r.GetBody()
		if err != nil {
			return fmt.Errorf("sign request: %w", err)
		}
		body, err = io.ReadAll(rc)
		_ = rc.Close()
		if err != nil {
			return fmt.Errorf("sign request: %w", err)
		}
	} else if r.Body != nil && r.Body != http.NoBody {
		return errors.New("sign request: the body cannot be read twice; build the request from bytes")
	}
	SetSignature(r.Header, secret, now, body)
	return nil
}

func checkTicketID(id string) error {
	if strings.TrimSpace(id) == "" {
		return fmt.Errorf("ticket id is empty: %w", adapters.ErrInvalid)
	}
	return nil
}

// EnsureTicket delivers ticket.created once per upstream ticket; the ref is
// the upstream id.
func (a *Adapter) EnsureTicket(ctx context.Context, t adapters.Ticket) (adapters.Ref, error) {
	if err := checkTicketID(t.UpstreamID); err != nil {
		return "", fmt.Errorf("ensure ticket: %w", err)
	}
	ref := adapters.Ref(t.UpstreamID)
	st, err := a.store()
	if err != nil {
		return "", fmt.Errorf("ensure ticket: %w", err)
	}
	if rec, ok, err := st.ticket(t.UpstreamID); err != nil {
		return "", fmt.Errorf("ensure ticket: %w", err)
	} else if ok && !rec.Pending {
		return ref, nil
	}
	status := a.status.Down(t.Status)
	ev := newTicketCreated(t, status)
	// Recorded as pending before the delivery, so that a receiver that
	// answers the delivery at once (a note, a status) finds the ticket.
	done, err := a.modify(ctx, ref, true, func(rec *ticketRecord, exists bool) bool {
		if exists && !rec.Pending {
			return false
		}
		*rec = ticketRecord{UpstreamID: t.UpstreamID, Delivery: ev.ID, Status: status, Pending: true, Messages: rec.Messages, Sent: rec.Sent}
		return true
	})
	if err != nil {
		return "", fmt.Errorf("record ticket to deliver: %w", err)
	}
	if done {
		return ref, nil
	}
	if err := a.deliver(ctx, EventTicketCreated, ev.ID, ev); err != nil {
		return "", err
	}
	if _, err := a.modify(ctx, ref, true, func(rec *ticketRecord, exists bool) bool {
		if !exists || !rec.Pending {
			return false
		}
		rec.Pending, rec.CreatedAt = false, time.Now().UTC()
		return true
	}); err != nil {
		return "", fmt.Errorf("record delivered ticket: %w", err)
	}
	a.log.LogAttrs(ctx, slog.LevelInfo, "ticket delivered", slog.String("ticket", t.UpstreamID), slog.String("delivery", ev.ID))
	return ref, nil
}

// modify applies f to the record of ref under the ticket's lock, storing
// it when f returns true and the adapter's guard lets it (see
// [Options.Guard]). A pending record is given to f only with
// pending; exists says whether there was a record. It returns whether ref
// had a delivered record that f left alone, for EnsureTicket.
func (a *Adapter) modify(ctx context.Context, ref adapters.Ref, pending bool, f func(rec *ticketRecord, exists bool) bool) (delivered bool, err error) {
	st, err := a.store()
	if err != nil {
		return false, err
	}
	unlock := st.lock(string(ref))
	defer unlock()
	rec, ok, err := st.ticket(string(ref))
	if err != nil {
		return false, err
	}
	if ok && rec.Pending && !pending {
		ok = false
	}
	if rec.Messages == nil {
		rec.Messages = map[string]string{}
	}
	if rec.Sent == nil {
		rec.Sent = map[string]string{}
	}
	if !f(&rec, ok) {
		return ok && !rec.Pending, nil
	}
	if a.guard != nil {
		if err := a.guard(); err != nil {
			return false, err
		}
	}
	return false, st.putTicket(rec)
}

// record reads the delivered record behind ref; a ref never delivered (or
// still pending) gives adapters.ErrNotFound.
func (a *Adapter) record(ref adapters.Ref) (ticketRecord, error) {
	st, err := a.store()
	if err != nil {
		return ticketRecord{}, err
	}
	rec, ok, err := st.ticket(string(ref))
	if err != nil {
		return rec, err
	}
	if !ok || rec.Pending {
		return rec, fmt.Errorf("ticket %q was never delivered: %w", string(ref), adapters.ErrNotFound)
	}
	return rec, nil
}

// update applies f to the delivered record of ref under the ticket's lock
// and stores it; a ticket not delivered gives adapters.ErrNotFound.
func (a *Adapter) update(ctx context.Context, ref adapters.Ref, f func(*ticketRecord)) error {
	var missing bool
	if _, err := a.modify(ctx, ref, false, func(rec *ticketRecord, exists bool) bool {
		if !exists {
			missing = true
			return false
		}
		f(rec)
		return true
	}); err != nil {
		return err
	}
	if missing {
		return fmt.Errorf("ticket %q was never delivered: %w", string(ref), adapters.ErrNotFound)
	}
	return nil
}

// Append delivers message.added for each message the receiver has not
// acknowledged yet, in order. A message the bridge itself posted upstream
// from an inbound event (recorded by MarkSent) is not delivered back: it is
// reported as existing, with the inbound event id as its helpdesk id.
func (a *Adapter) Append(ctx context.Context, ref adapters.Ref, msgs []adapters.Message) ([]adapters.Appended, error) {
	rec, err := a.record(ref)
	if err != nil {
		return nil, fmt.Errorf("append messages: %w", err)
	}
	own := map[string]string{}
	for evID, msgID := range rec.Sent {
		if msgID != "" {
			own[msgID] = evID
		}
	}
	// Refuse the whole batch before delivering any of it.
	for i, m := range msgs {
		if strings.TrimSpace(m.UpstreamID) == "" {
			return nil, fmt.Errorf("append messages: message %d has no upstream id: %w", i+1, adapters.ErrInvalid)
		}
		if strings.TrimSpace(m.Body) == "" {
			return nil, fmt.Errorf("append messages: message %s has an empty body: %w", m.UpstreamID, adapters.ErrInvalid)
		}
	}
	out := make([]adapters.Appended, 0, len(msgs))
	for _, m := range msgs {
		if hid, ok := rec.Messages[m.UpstreamID]; ok {
			out = append(out, adapters.Appended{UpstreamID: m.UpstreamID, HelpdeskID: hid, Existed: true})
			continue
		}
		if evID, ok := own[m.UpstreamID]; ok {
			out = append(out, adapters.Appended{UpstreamID: m.UpstreamID, HelpdeskID: evID, Existed: true})
			continue
		}
		ev := newMessageAdded(string(ref), m)
		if err := a.deliver(ctx, EventMessageAdded, ev.ID, ev); err != nil {
			return nil, err
		}
		if err := a.update(ctx, ref, func(r *ticketRecord) { r.Messages[m.UpstreamID] = ev.ID }); err != nil {
			return nil, fmt.Errorf("record delivered message: %w", err)
		}
		rec.Messages[m.UpstreamID] = ev.ID
		a.log.LogAttrs(ctx, slog.LevelDebug, "message delivered", slog.String("ticket", string(ref)), slog.String("message", m.UpstreamID), slog.String("delivery", ev.ID))
		out = append(out, adapters.Appended{UpstreamID: m.UpstreamID, HelpdeskID: ev.ID})
	}
	return out, nil
}

// SetStatus delivers status.changed when the mapped status differs from
// the one the receiver last had (delivered by the bridge or set by the
// receiver itself through an inbound status event).
func (a *Adapter) SetStatus(ctx context.Context, ref adapters.Ref, s guestapi.Status) error {
	if !s.Known() {
		return fmt.Errorf("set status: unknown status %q: %w", string(s), adapters.ErrInvalid)
	}
	rec, err := a.record(ref)
	if err != nil {
		return fmt.Errorf("set status: %w", err)
	}
	h := a.status.Down(s)
	if rec.Status == h {
		return nil
	}
	n := rec.StatusSeq + 1
	ev := StatusChanged{ID: statusChangedID(string(ref), n, h), Type: EventStatusChanged, TicketID: string(ref), Status: h, UpstreamStatus: string(s)}
	if err := a.deliver(ctx, EventStatusChanged, ev.ID, ev); err != nil {
		return err
	}
	if err := a.update(ctx, ref, func(r *ticketRecord) {
		r.Status = h
		r.StatusSeq = max(r.StatusSeq, n)
	}); err != nil {
		return fmt.Errorf("record delivered status: %w", err)
	}
	a.log.LogAttrs(ctx, slog.LevelInfo, "status delivered", slog.String("ticket", string(ref)), slog.String("status", h), slog.String("delivery", ev.ID))
	return nil
}

// Lookup reads the record of an upstream ticket.
func (a *Adapter) Lookup(ctx context.Context, upstreamID string) (adapters.Found, bool, error) {
	if err := ctx.Err(); err != nil {
		return adapters.Found{}, false, fmt.Errorf("look up ticket: %w", err)
	}
	st, err := a.store()
	if errors.Is(err, errNoDirectory) {
		return adapters.Found{}, false, nil
	}
	if err != nil {
		return adapters.Found{}, false, fmt.Errorf("look up ticket: %w", err)
	}
	rec, ok, err := st.ticket(upstreamID)
	if err != nil {
		return adapters.Found{}, false, fmt.Errorf("look up ticket: %w", err)
	}
	if !ok || rec.Pending {
		return adapters.Found{}, false, nil
	}
	// A one-way receiver keeps no status the bridge could read back.
	return adapters.Found{Ref: adapters.Ref(rec.UpstreamID), Messages: maps.Clone(rec.Messages), Sent: maps.Clone(rec.Sent),
		Status: adapters.NoStatus()}, true, nil
}

// MarkSent records that inbound event eventID became upstreamMessageID.
func (a *Adapter) MarkSent(ctx context.Context, ref adapters.Ref, eventID, upstreamMessageID string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mark sent: %w", err)
	}
	if err := a.update(ctx, ref, func(r *ticketRecord) { r.Sent[eventID] = upstreamMessageID }); err != nil {
		return fmt.Errorf("mark sent: %w", err)
	}
	return nil
}

// cursor is "<epoch>:<seq>": the inbound log's epoch and the last sequence
// number reported.
func (a *Adapter) parseCursor(st *store, c adapters.Cursor) (uint64, error) {
	if c == "" {
		return 0, nil
	}
	epoch, seqText, ok := strings.Cut(string(c), ":")
	seq, err := strconv.ParseUint(seqText, 10, 64)
	if !ok || err != nil || epoch == "" {
		return 0, fmt.Errorf("read cursor %q: want <epoch>:<sequence>: %w", string(c), adapters.ErrInvalid)
	}
	if epoch != st.epoch {
		// The webhook directory is a new one: its events all come after.
		return 0, nil
	}
	return seq, nil
}

func (a *Adapter) makeCursor(st *store, seq uint64) adapters.Cursor {
	return adapters.Cursor(st.epoch + ":" + strconv.FormatUint(seq, 10))
}

// Changes reports the stored inbound events after cursor, oldest first.
func (a *Adapter) Changes(ctx context.Context, cursor adapters.Cursor) ([]adapters.Event, adapters.Cursor, error) {
	st, err := a.store()
	if errors.Is(err, errNoDirectory) {
		return nil, cursor, nil
	}
	if err != nil {
		return nil, cursor, fmt.Errorf("read changes: %w", err)
	}
	after, err := a.parseCursor(st, cursor)
	if err != nil {
		return nil, cursor, fmt.Errorf("read changes: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, cursor, fmt.Errorf("read changes: %w", err)
	}
	stored, err := st.inboundAfter(after, a.limit)
	if err != nil {
		return nil, cursor, fmt.Errorf("read changes: %w", err)
	}
	out := make([]adapters.Event, 0, len(stored))
	last := after
	for _, se := range stored {
		last = se.Seq
		ev := se.Event
		e := adapters.Event{ID: ev.ID, Ref: adapters.Ref(ev.TicketID), UpstreamTicketID: ev.TicketID, Body: ev.Body, AuthorName: ev.AuthorName, At: se.ReceivedAt}
		if t, err := time.Parse(time.RFC3339Nano, ev.CreatedAt); err == nil {
			e.At = t.UTC()
		}
		switch ev.Type {
		case InboundReply:
			e.Kind = adapters.EventReply
		case InboundNote:
			e.Kind = adapters.EventNote
		case InboundStatus:
			s, ok := a.status.Up(ev.Status)
			if !ok {
				// Accepted under an older mapping; nothing upstream can take it.
				a.log.LogAttrs(ctx, slog.LevelWarn, "inbound status no longer mapped, skipped",
					slog.String("ticket", ev.TicketID), slog.String("event", ev.ID), slog.String("status", ev.Status))
				continue
			}
			e.Kind, e.Status, e.Body = adapters.EventStatus, s, ""
		default:
			continue
		}
		out = append(out, e)
	}
	return out, a.makeCursor(st, last), nil
}
