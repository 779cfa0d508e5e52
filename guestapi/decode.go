package guestapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// decodeObject decodes a JSON object into v, tolerating unknown fields.
func decodeObject(body []byte, v any) error {
	b := bytes.TrimSpace(body)
	if len(b) == 0 {
		return errors.New("empty body")
	}
	if b[0] != '{' {
		return fmt.Errorf("want a JSON object, got %s", clean(string(b), 40))
	}
	if !utf8.Valid(b) {
		// encoding/json would turn the bad bytes into U+FFFD silently.
		return errors.New("the answer is not valid UTF-8")
	}
	return json.Unmarshal(b, v)
}

// listedTickets is the list of GET /tickets as decodeList reads it when
// the list decodes empty or fails: it records whether the key was there
// (null reads as an empty list) and words a list's error. Each occurrence
// of the key starts a fresh list, as a single decode of the value would.
type listedTickets struct {
	items   []listedWire
	present bool
}

func (l *listedTickets) UnmarshalJSON(b []byte) error {
	items := l.items[:0] // a buffer of listItems, or nil
	if err := json.Unmarshal(b, &items); err != nil {
		return fmt.Errorf("tickets: %w", err)
	}
	*l = listedTickets{items: items, present: true}
	return nil
}

// keepListItems is the largest list buffer kept for reuse: twice the
// spec's largest list (200), as growing a buffer to hold that rounds its
// capacity up. One grown past it, by a server that answers more, is not
// kept.
const keepListItems = 400

// listItems holds the slices lists are decoded into before their items
// are copied out, so that a list does not grow a new one each time.
var listItems = sync.Pool{New: func() any { return new([]listedWire) }}

// decodeList decodes the answer of GET /tickets.
func decodeList(body []byte) ([]Ticket, error) {
	buf := listItems.Get().(*[]listedWire)
	defer func() {
		// Cleared to its capacity: encoding/json fills a reused element
		// field by field, and a field a later list leaves out must not
		// keep this one's value.
		clear((*buf)[:cap(*buf)])
		if cap(*buf) <= keepListItems {
			listItems.Put(buf)
		}
	}()
	// The list is decoded straight into the buffer, in the one pass that
	// also validates the answer. A list that decodes empty, or not at all,
	// is decoded again by listedTickets, which tells an empty list and
	// null from a missing key and words the error; a second validation of
	// every list was a tenth of a quiet cycle.
	items := (*buf)[:0]
	fast := struct {
		Tickets *[]listedWire `json:"tickets"`
	}{&items}
	err := decodeObject(body, &fast)
	if cap(items) > cap(*buf) {
		*buf = items[:0]
	}
	if err != nil || len(items) == 0 {
		var w struct {
			Tickets listedTickets `json:"tickets"`
		}
		if err := decodeObject(body, &w); err != nil {
			return nil, err
		}
		if !w.Tickets.present {
			return nil, errors.New("tickets is missing")
		}
		items = w.Tickets.items
	}
	ts := make([]Ticket, len(items)) // null: a server's empty list
	for i := range items {
		ts[i] = items[i].ticket()
	}
	seen := listSeen.Get().(map[string]int)
	defer func() {
		clear(seen)
		listSeen.Put(seen)
	}()
	for i, t := range ts {
		if t.ID == "" {
			return nil, fmt.Errorf("tickets[%d]: id is missing", i)
		}
		if j, dup := seen[t.ID]; dup {
			return nil, fmt.Errorf("tickets[%d]: id %q repeats tickets[%d]", i, clean(t.ID, 80), j)
		}
		seen[t.ID] = i
	}
	return ts, nil
}

// listSeen holds the maps a list's ids are checked for repeats in, kept
// empty between lists: a map grown for one list serves the next.
var listSeen = sync.Pool{New: func() any { return map[string]int{} }}

// threadWire is the answer of GET /tickets/{id} as decodeThread reads it.
type threadWire struct {
	Ticket   *TicketDetail
	Messages []Message
}

// decodeThreadWire decodes the answer of GET /tickets/{id} in the one pass
// that also validates it: the ticket and the messages go straight into
// their wire forms, where TicketDetail's and Message's UnmarshalJSON
// would each validate their bytes again. An answer that fails is decoded
// again through those, which word the error.
func decodeThreadWire(body []byte) (threadWire, error) {
	var fast struct {
		Ticket   *ticketDetailWire `json:"ticket"`
		Messages []messageWire     `json:"messages"`
	}
	if err := decodeObject(body, &fast); err != nil {
		var w struct {
			Ticket   *TicketDetail `json:"ticket"`
			Messages []Message     `json:"messages"`
		}
		if err := decodeObject(body, &w); err != nil {
			return threadWire{}, err
		}
		return threadWire(w), nil
	}
	var w threadWire
	if t := fast.Ticket; t != nil {
		w.Ticket = &TicketDetail{t.ID, t.Department, t.Status, t.TaskDescription, t.Origin, t.GuestRating, t.Comments,
			time.Time(t.CreatedAt), time.Time(t.UpdatedAt)}
	}
	if fast.Messages != nil {
		w.Messages = make([]Message, len(fast.Messages))
		for i, m := range fast.Messages {
			w.Messages[i] = Message{m.ID, m.AuthorType, m.AuthorName, m.Body, m.VisibleToGuest, time.Time(m.CreatedAt)}
		}
	}
	return w, nil
}

// decodeThread decodes the answer of GET /tickets/{id}.
func decodeThread(body []byte) (*Thread, error) {
	w, err := decodeThreadWire(body)
	if err != nil {
		return nil, err
	}
	if w.Ticket == nil {
		return nil, errors.New("ticket is missing")
	}
	if w.Ticket.ID == "" {
		return nil, errors.New("ticket: id is missing")
	}
	seen := make(map[string]int, len(w.Messages))
	for i, m := range w.Messages {
		if m.ID == "" {
			return nil, fmt.Errorf("messages[%d]: id is missing", i)
		}
		if j, dup := seen[m.ID]; dup {
			return nil, fmt.Errorf("messages[%d]: id %q repeats messages[%d]", i, clean(m.ID, 80), j)
		}
		seen[m.ID] = i
	}
	th := &Thread{Ticket: *w.Ticket, Messages: w.Messages}
	if th.Messages == nil {
		th.Messages = []Message{}
	}
	return th, nil
}

// decodeError turns a non-2xx answer into an *Error. A JSON body fills the
// code and the extra fields, each read on its own so that one odd field does
// not lose the others; any other body leaves a short sanitized snippet (an
// HTML page's title, else its first printable characters) in Message.
func decodeError(status int, body []byte) *Error {
	e := &Error{StatusCode: status}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) == nil && fields != nil {
		var s string
		if json.Unmarshal(fields["error"], &s) == nil {
			e.Code = clean(s, 64)
		}
		if json.Unmarshal(fields["need"], &s) == nil {
			e.Need = clean(s, 64)
		}
		var msg string
		if json.Unmarshal(fields["message"], &msg) == nil {
			e.Message = clean(msg, 300)
		}
		var allowed []json.RawMessage
		if json.Unmarshal(fields["allowed"], &allowed) == nil {
			for _, a := range allowed {
				if json.Unmarshal(a, &s) == nil && len(e.Allowed) < 32 {
					e.Allowed = append(e.Allowed, clean(s, 64))
				}
			}
		}
		if e.Code != "" || e.Message != "" {
			return e
		}
	}
	e.Message = snippet(body)
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	return e
}

// snippet returns a short printable excerpt of a non-JSON body: the HTML
// title when there is one, else the start of the text.
func snippet(body []byte) string {
	s := string(body)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "")
	}
	lower := strings.ToLower(s)
	if i := strings.Index(lower, "<title>"); i >= 0 {
		rest := s[i+len("<title>"):]
		if j := strings.Index(strings.ToLower(rest), "</title>"); j >= 0 {
			if t := clean(rest[:j], 120); t != "" {
				return t
			}
		}
	}
	return clean(s, 120)
}

// clean collapses whitespace, drops control and other unprintable
// characters and cuts s to at most n runes (marking a cut with "...").
func clean(s string, n int) string {
	var b strings.Builder
	count := 0
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if !unicode.IsPrint(r) {
			continue
		}
		if count >= n {
			b.WriteString("...")
			return b.String()
		}
		if space {
			b.WriteByte(' ')
			count++
			space = false
		}
		b.WriteRune(r)
		count++
	}
	return b.String()
}
