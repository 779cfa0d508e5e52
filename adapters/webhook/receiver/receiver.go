// Package receiver is a reference receiver of the webhook adapter's
// deliveries: it verifies each delivery's signature and timestamp, refuses
// bad signatures and replays with 401, acknowledges a repeated delivery id
// without processing it twice, records what it accepted, and answers a
// guest's message with a signed reply posted to the daemon's inbound
// endpoint.
//
// It exists to test the adapter end to end and to try the loop locally
// (cmd/webhook-receiver runs it); it is also a short worked example for
// anyone writing a receiver. It is not a helpdesk: it keeps a view of each
// ticket in memory (status and messages, rebuilt from the record file at
// start) so that tests can read back what was delivered, its automatic
// replies are one fixed text, and it has no user interface.
package receiver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
)

// Defaults of [Options].
const (
	DefaultReplyText   = "Thank you for your message. We have received it and are taking care of it."
	DefaultReplyAuthor = "Front desk"
	// MaxBodyBytes limits a delivery's body.
	MaxBodyBytes = 1 << 20
)

// Options configure a [Receiver].
type Options struct {
	// Secret is the secret shared with the daemon; required.
	Secret string
	// Tolerance is how far a delivery's timestamp may be from the time
	// it arrives; zero means [webhook.DefaultTolerance].
	Tolerance time.Duration
	// Logger receives a line per delivery; nil discards them.
	Logger *slog.Logger
	// ReplyURL is the daemon's inbound endpoint (http://host:port/events),
	// where Send posts events; empty: Send fails.
	ReplyURL string
	// AutoReply answers every guest message delivered with a reply posted
	// to ReplyURL before the delivery is acknowledged.
	AutoReply bool
	// ReplySince, when set, limits AutoReply to guest messages created at
	// or after it (the receiver's start): the first sync delivers the
	// whole past of every request, which must not be answered again.
	ReplySince time.Time
	// ReplyText and ReplyAuthor make the reply; empty means the defaults.
	ReplyText   string
	ReplyAuthor string
	// RecordPath, when set, is a file of JSON lines, one per accepted
	// delivery, appended and synced before the delivery is acknowledged and
	// read back at start, so that a restart still recognises repeats.
	RecordPath string
	// HTTP, Sleep and Backoff are used to post replies and events; nil
	// and zero values are the daemon's defaults.
	HTTP    *http.Client
	Sleep   func(ctx context.Context, d time.Duration) error
	Backoff httpretry.Backoff
}

// Delivery is one accepted delivery.
type Delivery struct {
	ID        string          `json:"id"`    // X-Ticketbridge-Delivery
	Event     string          `json:"event"` // X-Ticketbridge-Event
	TicketID  string          `json:"ticket_id,omitempty"`
	Timestamp int64           `json:"timestamp"`       // X-Ticketbridge-Timestamp of the accepted attempt
	Reply     string          `json:"reply,omitempty"` // the id of the reply posted for it
	Body      json.RawMessage `json:"body"`
}

// Stats counts what the receiver answered.
type Stats struct {
	Accepted   int // new deliveries, processed and recorded
	Duplicates int // repeats of an accepted delivery id: acknowledged, not processed
	Rejected   int // refused with 401: bad or missing signature, stale timestamp
	Invalid    int // refused with 400: not a delivery
}

// Ticket is the receiver's view of one ticket: what its deliveries said,
// and what the receiver itself posted back.
type Ticket struct {
	ID       string
	Status   string // the last status delivered or sent back
	Messages []Message
	// Fields are the request's fields as the last ticket.updated said
	// (nil before one), and Updates how many were accepted.
	Fields  *webhook.FieldsInfo
	Updates []webhook.TicketUpdated
}

// Message is one message of a [Ticket].
type Message struct {
	ID         string // the upstream message id, or the receiver's event id for its own
	AuthorType string // as delivered; "staff" for the receiver's own
	AuthorName string
	Body       string
	Public     bool
	CreatedAt  string
	Own        bool // posted by the receiver (a reply or note), not delivered
}

// Receiver is an http.Handler that takes deliveries on any path.
type Receiver struct {
	opts   Options
	log    *slog.Logger
	client *adapters.HTTPClient

	mu         sync.Mutex
	seen       map[string]bool
	inFlight   map[string]bool
	deliveries []Delivery
	stats      Stats
	record     *os.File
	tickets    map[string]*Ticket
}

// New returns a receiver, reading the record file when there is one.
func New(opts Options) (*Receiver, error) {
	if len(opts.Secret) < webhook.MinSecretLen {
		return nil, fmt.Errorf("start receiver: Options.Secret is %d bytes long; want at least %d", len(opts.Secret), webhook.MinSecretLen)
	}
	if opts.ReplyText == "" {
		opts.ReplyText = DefaultReplyText
	}
	if opts.ReplyAuthor == "" {
		opts.ReplyAuthor = DefaultReplyAuthor
	}
	r := &Receiver{opts: opts, log: opts.Logger, seen: map[string]bool{}, inFlight: map[string]bool{}, tickets: map[string]*Ticket{}}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.client = &adapters.HTTPClient{
		HTTP:    opts.HTTP,
		Backoff: opts.Backoff,
		Sleep:   opts.Sleep,
		Logger:  r.log,
		Secrets: []string{opts.Secret},
		Header:  http.Header{"User-Agent": {"ticketbridge-webhook-receiver"}},
		Authorize: func(req *http.Request) {
			if err := webhook.SignRequest(req, opts.Secret, time.Now()); err != nil {
				r.log.LogAttrs(req.Context(), slog.LevelError, "cannot sign event", slog.Any("error", err))
			}
		},
	}
	if opts.RecordPath != "" {
		if err := r.load(opts.RecordPath); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(opts.RecordPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("open delivery record: %w", err)
		}
		r.record = f
	}
	return r, nil
}

func (r *Receiver) load(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read delivery record: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 2*MaxBodyBytes)
	for n := 1; sc.Scan(); n++ {
		var d Delivery
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			// A crash may leave half a last line: the delivery it held was
			// never acknowledged and will come again.
			r.log.Warn("skipping unreadable line of the delivery record", slog.Int("line", n))
			continue
		}
		r.seen[d.ID] = true
		r.deliveries = append(r.deliveries, d)
		r.apply(d)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read delivery record: %w", err)
	}
	return nil
}

// Close closes the record file.
func (r *Receiver) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.record == nil {
		return nil
	}
	err := r.record.Close()
	r.record = nil
	if err != nil {
		return fmt.Errorf("close delivery record: %w", err)
	}
	return nil
}

// Deliveries returns the accepted deliveries, oldest first.
func (r *Receiver) Deliveries() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.deliveries...)
}

// Stats returns the counters.
func (r *Receiver) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

type ack struct {
	OK        bool   `json:"ok"`
	Duplicate bool   `json:"duplicate,omitempty"`
	Error     string `json:"error,omitempty"`
}

func (r *Receiver) count(f func(*Stats)) {
	r.mu.Lock()
	f(&r.stats)
	r.mu.Unlock()
}

// ServeHTTP takes one delivery.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reply(w, http.StatusMethodNotAllowed, ack{Error: "use POST"})
		return
	}
	ctx := req.Context()
	body, err := webhook.ReadVerified(req, r.opts.Secret, time.Now(), r.opts.Tolerance, MaxBodyBytes)
	switch {
	case errors.Is(err, webhook.ErrStale), errors.Is(err, webhook.ErrBadSignature):
		r.count(func(s *Stats) { s.Rejected++ })
		r.log.LogAttrs(ctx, slog.LevelWarn, "delivery refused", slog.Any("error", err))
		reply(w, http.StatusUnauthorized, ack{Error: err.Error()})
		return
	case err != nil:
		r.count(func(s *Stats) { s.Invalid++ })
		reply(w, http.StatusBadRequest, ack{Error: err.Error()})
		return
	}
	var head struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		TicketID string `json:"ticket_id"`
		Message  struct {
			AuthorType string `json:"author_type"`
			CreatedAt  string `json:"created_at"`
		} `json:"message"`
	}
	id, event := req.Header.Get(webhook.HeaderDelivery), req.Header.Get(webhook.HeaderEvent)
	if err := json.Unmarshal(body, &head); err != nil || id == "" || head.ID != id || head.Type != event {
		r.count(func(s *Stats) { s.Invalid++ })
		reply(w, http.StatusBadRequest, ack{Error: "want a JSON event whose id and type match the delivery and event headers"})
		return
	}

	r.mu.Lock()
	switch {
	case r.seen[id]:
		r.stats.Duplicates++
		r.mu.Unlock()
		r.log.LogAttrs(ctx, slog.LevelInfo, "repeated delivery acknowledged", slog.String("delivery", id), slog.String("event", event))
		reply(w, http.StatusOK, ack{OK: true, Duplicate: true})
		return
	case r.inFlight[id]:
		r.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		reply(w, http.StatusServiceUnavailable, ack{Error: "this delivery is being processed; repeat it"})
		return
	}
	r.inFlight[id] = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.inFlight, id)
		r.mu.Unlock()
	}()

	d := Delivery{ID: id, Event: event, TicketID: head.TicketID, Timestamp: time.Now().Unix(), Body: json.RawMessage(body)}
	if ts := req.Header.Get(webhook.HeaderTimestamp); ts != "" {
		_, _ = fmt.Sscan(ts, &d.Timestamp)
	}
	if event == webhook.EventMessageAdded && head.Message.AuthorType == string(guestapi.AuthorGuest) && r.opts.AutoReply && r.isNew(head.Message.CreatedAt) {
		ev := webhook.InboundEvent{ID: "reply-" + id, Type: webhook.InboundReply, TicketID: head.TicketID, Body: r.opts.ReplyText, AuthorName: r.opts.ReplyAuthor}
		if _, err := r.send(ctx, ev); err != nil {
			// Not acknowledged: the daemon delivers again, and the reply,
			// whose id is derived from the delivery's, goes out again.
			r.log.LogAttrs(ctx, slog.LevelError, "cannot post reply", slog.String("delivery", id), slog.Any("error", err))
			reply(w, http.StatusBadGateway, ack{Error: "the reply could not be posted; deliver again"})
			return
		}
		d.Reply = ev.ID
	}
	if err := r.keep(d); err != nil {
		r.log.LogAttrs(ctx, slog.LevelError, "cannot record delivery", slog.String("delivery", id), slog.Any("error", err))
		reply(w, http.StatusInternalServerError, ack{Error: "the delivery could not be recorded; deliver again"})
		return
	}
	if d.Reply != "" {
		// After the message it answers, in the ticket's view.
		r.applySent(webhook.InboundEvent{ID: d.Reply, Type: webhook.InboundReply, TicketID: d.TicketID, Body: r.opts.ReplyText, AuthorName: r.opts.ReplyAuthor})
	}
	r.log.LogAttrs(ctx, slog.LevelInfo, "delivery accepted", slog.String("delivery", id), slog.String("event", event), slog.String("ticket", head.TicketID))
	reply(w, http.StatusOK, ack{OK: true})
}

// isNew reports whether a message created at createdAt is to be answered:
// not before Options.ReplySince. A time that does not parse is not new.
func (r *Receiver) isNew(createdAt string) bool {
	if r.opts.ReplySince.IsZero() {
		return true
	}
	t, err := time.Parse(time.RFC3339Nano, createdAt)
	return err == nil && !t.Before(r.opts.ReplySince)
}

// keep records d, durably first when there is a record file.
func (r *Receiver) keep(d Delivery) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.record != nil {
		line, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("encode delivery: %w", err)
		}
		if _, err := r.record.Write(append(line, '\n')); err != nil {
			return fmt.Errorf("write delivery record: %w", err)
		}
		if err := r.record.Sync(); err != nil {
			return fmt.Errorf("sync delivery record: %w", err)
		}
	}
	r.seen[d.ID] = true
	r.deliveries = append(r.deliveries, d)
	r.apply(d)
	r.stats.Accepted++
	return nil
}

// apply updates the ticket view with an accepted delivery. The caller
// holds mu.
func (r *Receiver) apply(d Delivery) {
	switch d.Event {
	case webhook.EventTicketCreated:
		var ev webhook.TicketCreated
		if json.Unmarshal(d.Body, &ev) == nil {
			t := r.ticket(ev.TicketID)
			t.Status = ev.Ticket.Status
		}
	case webhook.EventMessageAdded:
		var ev webhook.MessageAdded
		if json.Unmarshal(d.Body, &ev) == nil {
			t := r.ticket(ev.TicketID)
			m := ev.Message
			t.Messages = append(t.Messages, Message{ID: m.ID, AuthorType: m.AuthorType, AuthorName: m.AuthorName, Body: m.Body, Public: m.VisibleToGuest, CreatedAt: m.CreatedAt})
		}
	case webhook.EventStatusChanged:
		var ev webhook.StatusChanged
		if json.Unmarshal(d.Body, &ev) == nil {
			r.ticket(ev.TicketID).Status = ev.Status
		}
	case webhook.EventTicketUpdated:
		var ev webhook.TicketUpdated
		if json.Unmarshal(d.Body, &ev) == nil {
			t := r.ticket(ev.TicketID)
			f := ev.Ticket
			t.Fields = &f
			t.Updates = append(t.Updates, ev)
		}
	}
}

// applySent updates the ticket view with an event the daemon accepted.
func (r *Receiver) applySent(ev webhook.InboundEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.ticket(ev.TicketID)
	switch ev.Type {
	case webhook.InboundReply, webhook.InboundNote:
		created := ev.CreatedAt
		if created == "" {
			created = time.Now().UTC().Format(time.RFC3339Nano)
		}
		t.Messages = append(t.Messages, Message{ID: ev.ID, AuthorType: string(guestapi.AuthorStaff), AuthorName: ev.AuthorName, Body: ev.Body,
			Public: ev.Type == webhook.InboundReply, CreatedAt: created, Own: true})
	case webhook.InboundStatus:
		t.Status = ev.Status
	}
}

func (r *Receiver) ticket(id string) *Ticket {
	t, ok := r.tickets[id]
	if !ok {
		t = &Ticket{ID: id}
		r.tickets[id] = t
	}
	return t
}

// Ticket returns the view of one ticket; ok is false when no delivery or
// sent event named it.
func (r *Receiver) Ticket(id string) (t Ticket, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.tickets[id]
	if !ok {
		return Ticket{}, false
	}
	t = *p
	t.Messages = append([]Message(nil), p.Messages...)
	t.Updates = append([]webhook.TicketUpdated(nil), p.Updates...)
	if p.Fields != nil {
		f := *p.Fields
		t.Fields = &f
	}
	return t, true
}

// Send posts ev, signed, to the daemon's inbound endpoint (ReplyURL) and
// returns its answer. An answer other than 2xx is an error; the answer is
// returned with it when it could be read.
func (r *Receiver) Send(ctx context.Context, ev webhook.InboundEvent) (webhook.InboundAnswer, error) {
	ans, err := r.send(ctx, ev)
	if err == nil && !ans.Duplicate {
		r.applySent(ev)
	}
	return ans, err
}

func (r *Receiver) send(ctx context.Context, ev webhook.InboundEvent) (webhook.InboundAnswer, error) {
	var ans webhook.InboundAnswer
	if r.opts.ReplyURL == "" {
		return ans, errors.New("send event: no inbound URL of the daemon configured")
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return ans, fmt.Errorf("encode event: %w", err)
	}
	resp, err := r.client.Do(ctx, adapters.HTTPRequest{
		Method:     http.MethodPost,
		URL:        r.opts.ReplyURL,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       body,
		Idempotent: true, // the event id makes a repeat harmless
		Op:         "send " + ev.Type,
	})
	if err != nil {
		var he *adapters.HTTPError
		if errors.As(err, &he) && he.Body != "" {
			_ = json.Unmarshal([]byte(he.Body), &ans)
		}
		return ans, fmt.Errorf("send %s %s: %w", ev.Type, ev.ID, err)
	}
	if err := json.Unmarshal(resp.Body, &ans); err != nil {
		return ans, fmt.Errorf("send %s %s: read answer: %w", ev.Type, ev.ID, err)
	}
	return ans, nil
}

func reply(w http.ResponseWriter, status int, a ack) {
	b, _ := json.Marshal(a)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
