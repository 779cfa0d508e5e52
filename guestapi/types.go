package guestapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Status is a ticket status. Values the client does not know are kept as they
// came (see [Status.Known]); the API may add values without notice.
type Status string

// The seven statuses of part 3 of the spec.
const (
	StatusNew        Status = "new"
	StatusAssigned   Status = "assigned"
	StatusInProgress Status = "in_progress"
	StatusDone       Status = "done"
	StatusCompleted  Status = "completed"
	StatusConfirmed  Status = "confirmed" // historical: readable, never settable
	StatusCancelled  Status = "cancelled"
)

// Statuses returns the seven known statuses, in the spec's order. The list
// filter of GET /tickets accepts each of them.
func Statuses() []Status {
	return []Status{StatusNew, StatusAssigned, StatusInProgress, StatusDone, StatusCompleted, StatusConfirmed, StatusCancelled}
}

// SettableStatuses returns the six statuses POST /tickets/{id}/status accepts.
func SettableStatuses() []Status {
	return []Status{StatusNew, StatusAssigned, StatusInProgress, StatusDone, StatusCompleted, StatusCancelled}
}

// Known reports whether s is one of the seven statuses of the spec.
func (s Status) Known() bool {
	for _, k := range Statuses() {
		if s == k {
			return true
		}
	}
	return false
}

// Settable reports whether s may be set through POST /tickets/{id}/status.
func (s Status) Settable() bool { return s.Known() && s != StatusConfirmed }

// Closed reports whether s ends a request's life: done, completed, confirmed
// or cancelled.
func (s Status) Closed() bool {
	switch s {
	case StatusDone, StatusCompleted, StatusConfirmed, StatusCancelled:
		return true
	}
	return false
}

// ParseStatus returns s as a Status when it is one of the seven known values,
// and an error naming the value otherwise.
func ParseStatus(s string) (Status, error) {
	st := Status(strings.TrimSpace(s))
	if !st.Known() {
		return "", fmt.Errorf("unknown status %q (want one of %s)", s, joinStatuses(Statuses()))
	}
	return st, nil
}

func joinStatuses(ss []Status) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	return strings.Join(parts, ", ")
}

// Origin says who created a ticket: guest, staff or internal.
type Origin string

// Known origins.
const (
	OriginGuest    Origin = "guest"
	OriginStaff    Origin = "staff"
	OriginInternal Origin = "internal"
)

// AuthorType says who wrote a message.
type AuthorType string

// Known author types. Staff covers employees and external systems, the bridge
// included.
const (
	AuthorGuest  AuthorType = "guest"
	AuthorStaff  AuthorType = "staff"
	AuthorAI     AuthorType = "ai"
	AuthorSystem AuthorType = "system"
)

// Known reports whether a is one of the four author types of the spec.
func (a AuthorType) Known() bool {
	switch a {
	case AuthorGuest, AuthorStaff, AuthorAI, AuthorSystem:
		return true
	}
	return false
}

// TimeLayout is the spec's timestamp form: UTC, microseconds, explicit +00:00.
const TimeLayout = "2006-01-02T15:04:05.000000+00:00"

// FormatTime renders t in the spec's form ([TimeLayout]), converted to UTC.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// ParseTime parses a timestamp as the spec says a client must: as a date, not
// a string. RFC 3339 in any precision and offset is accepted, and so are the
// two near-misses servers are known to send (a space for the T, no offset,
// meaning UTC).
func ParseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("bad timestamp %q: want ISO 8601 such as 2026-01-02T03:04:05.000000+00:00", s)
}

// timestamp is a time.Time that reads any form [ParseTime] accepts and
// writes the spec's form. It exists only for JSON; the exported types carry
// plain time.Time fields.
type timestamp time.Time

func (t timestamp) MarshalJSON() ([]byte, error) {
	return []byte(`"` + FormatTime(time.Time(t)) + `"`), nil
}

func (t *timestamp) UnmarshalJSON(b []byte) error {
	s, ok := plainString(b)
	if !ok {
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("bad timestamp %s: want a string", b)
		}
	}
	v, err := ParseTime(s)
	if err != nil {
		return err
	}
	*t = timestamp(v)
	return nil
}

// plainString returns the text of b when b is a JSON string without
// escapes, which every timestamp is: it spares a second scan of the value
// the decoder already checked.
func plainString(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	inner := b[1 : len(b)-1]
	for _, c := range inner {
		if c == '\\' || c == '"' || c < 0x20 {
			return "", false
		}
	}
	return string(inner), true
}

// optionalTime reads an optional timestamp in place: null leaves it unset.
type optionalTime struct {
	t   time.Time
	set bool
}

func (o *optionalTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*o = optionalTime{}
		return nil
	}
	var ts timestamp
	if err := ts.UnmarshalJSON(b); err != nil {
		return err
	}
	*o = optionalTime{t: time.Time(ts), set: true}
	return nil
}

// nullableTime is the wire form of an optional timestamp.
type nullableTime struct{ t **time.Time }

func (n nullableTime) MarshalJSON() ([]byte, error) {
	if *n.t == nil {
		return []byte("null"), nil
	}
	return timestamp(**n.t).MarshalJSON()
}

func (n nullableTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n.t = nil
		return nil
	}
	var ts timestamp
	if err := ts.UnmarshalJSON(b); err != nil {
		return err
	}
	v := time.Time(ts)
	*n.t = &v
	return nil
}

// Ticket is a guest request as GET /tickets lists it: with TargetDueAt,
// without Comments.
type Ticket struct {
	ID              string
	Department      string
	Status          Status
	TaskDescription string
	Origin          Origin
	GuestRating     *float64   // nil while unrated
	TargetDueAt     *time.Time // nil when no deadline is set
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

type ticketWire struct {
	ID              string       `json:"id"`
	Department      string       `json:"department"`
	Status          Status       `json:"status"`
	TaskDescription string       `json:"task_description"`
	Origin          Origin       `json:"origin"`
	GuestRating     *float64     `json:"guest_rating"`
	TargetDueAt     nullableTime `json:"target_due_at"`
	CreatedAt       timestamp    `json:"created_at"`
	UpdatedAt       timestamp    `json:"updated_at"`
}

// listedWire is a list item as decodeList reads it: every field in place,
// so that a list is decoded in one pass (Ticket.UnmarshalJSON would scan
// each item again).
type listedWire struct {
	ID              string       `json:"id"`
	Department      string       `json:"department"`
	Status          Status       `json:"status"`
	TaskDescription string       `json:"task_description"`
	Origin          Origin       `json:"origin"`
	GuestRating     *float64     `json:"guest_rating"`
	TargetDueAt     optionalTime `json:"target_due_at"`
	CreatedAt       timestamp    `json:"created_at"`
	UpdatedAt       timestamp    `json:"updated_at"`
}

func (w *listedWire) ticket() Ticket {
	var due *time.Time
	if w.TargetDueAt.set {
		v := w.TargetDueAt.t
		due = &v
	}
	return Ticket{w.ID, w.Department, w.Status, w.TaskDescription, w.Origin, w.GuestRating, due,
		time.Time(w.CreatedAt), time.Time(w.UpdatedAt)}
}

// MarshalJSON writes the list item of the spec, timestamps in [TimeLayout].
func (t Ticket) MarshalJSON() ([]byte, error) {
	due := t.TargetDueAt
	return json.Marshal(ticketWire{t.ID, t.Department, t.Status, t.TaskDescription, t.Origin, t.GuestRating,
		nullableTime{&due}, timestamp(t.CreatedAt), timestamp(t.UpdatedAt)})
}

// UnmarshalJSON reads a list item, tolerating unknown fields.
func (t *Ticket) UnmarshalJSON(b []byte) error {
	var due *time.Time
	w := ticketWire{TargetDueAt: nullableTime{&due}}
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("decode ticket: %w", err)
	}
	*t = Ticket{w.ID, w.Department, w.Status, w.TaskDescription, w.Origin, w.GuestRating, due,
		time.Time(w.CreatedAt), time.Time(w.UpdatedAt)}
	return nil
}

// TicketDetail is a guest request as GET /tickets/{id} returns it: with
// Comments, without TargetDueAt.
type TicketDetail struct {
	ID              string
	Department      string
	Status          Status
	TaskDescription string
	Origin          Origin
	GuestRating     *float64 // nil while unrated
	Comments        *string  // the console card's internal comment; nil when none
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

type ticketDetailWire struct {
	ID              string    `json:"id"`
	Department      string    `json:"department"`
	Status          Status    `json:"status"`
	TaskDescription string    `json:"task_description"`
	Origin          Origin    `json:"origin"`
	GuestRating     *float64  `json:"guest_rating"`
	Comments        *string   `json:"comments"`
	CreatedAt       timestamp `json:"created_at"`
	UpdatedAt       timestamp `json:"updated_at"`
}

// MarshalJSON writes the single ticket of the spec, timestamps in [TimeLayout].
func (t TicketDetail) MarshalJSON() ([]byte, error) {
	return json.Marshal(ticketDetailWire{t.ID, t.Department, t.Status, t.TaskDescription, t.Origin, t.GuestRating,
		t.Comments, timestamp(t.CreatedAt), timestamp(t.UpdatedAt)})
}

// UnmarshalJSON reads a single ticket, tolerating unknown fields.
func (t *TicketDetail) UnmarshalJSON(b []byte) error {
	var w ticketDetailWire
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("decode ticket: %w", err)
	}
	*t = TicketDetail{w.ID, w.Department, w.Status, w.TaskDescription, w.Origin, w.GuestRating, w.Comments,
		time.Time(w.CreatedAt), time.Time(w.UpdatedAt)}
	return nil
}

// Message is one entry of a ticket's thread.
type Message struct {
	ID             string
	AuthorType     AuthorType
	AuthorName     string
	Body           string
	VisibleToGuest bool
	CreatedAt      time.Time
}

type messageWire struct {
	ID             string     `json:"id"`
	AuthorType     AuthorType `json:"author_type"`
	AuthorName     string     `json:"author_name"`
	Body           string     `json:"body"`
	VisibleToGuest bool       `json:"visible_to_guest"`
	CreatedAt      timestamp  `json:"created_at"`
}

// MarshalJSON writes the message of the spec, its timestamp in [TimeLayout].
func (m Message) MarshalJSON() ([]byte, error) {
	return json.Marshal(messageWire{m.ID, m.AuthorType, m.AuthorName, m.Body, m.VisibleToGuest, timestamp(m.CreatedAt)})
}

// UnmarshalJSON reads a message, tolerating unknown fields.
func (m *Message) UnmarshalJSON(b []byte) error {
	var w messageWire
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("decode message: %w", err)
	}
	*m = Message{w.ID, w.AuthorType, w.AuthorName, w.Body, w.VisibleToGuest, time.Time(w.CreatedAt)}
	return nil
}

// Thread is the answer of GET /tickets/{id}: the ticket and its messages,
// oldest first.
type Thread struct {
	Ticket   TicketDetail `json:"ticket"`
	Messages []Message    `json:"messages"`
}

// TicketList is the answer of GET /tickets.
type TicketList struct {
	Tickets []Ticket `json:"tickets"`
}

// NewMessage is the body of POST /tickets/{id}/messages.
type NewMessage struct {
	Body           string `json:"body"`
	VisibleToGuest bool   `json:"visible_to_guest"`
	AuthorName     string `json:"author_name,omitempty"` // empty: the server's default, "API"
}

// PostMessageResult is the answer of POST /tickets/{id}/messages.
type PostMessageResult struct {
	Success   bool   `json:"success"`
	MessageID string `json:"message_id"`
}

// SetStatusRequest is the body of POST /tickets/{id}/status.
type SetStatusRequest struct {
	Status Status `json:"status"`
}

// SetStatusResult is the answer of POST /tickets/{id}/status.
type SetStatusResult struct {
	Success bool   `json:"success"`
	Status  Status `json:"status"`
}

// TokenRequest is the body of POST /api-auth/token.
type TokenRequest struct {
	APIKey string `json:"api_key"`
}

// AccessToken is the answer of POST /api-auth/token. Its String and LogValue
// hide the token itself.
type AccessToken struct {
	AccessToken string   `json:"access_token"`
	TokenType   string   `json:"token_type"`
	ExpiresIn   int      `json:"expires_in"` // seconds
	Scopes      []string `json:"scopes"`
	ProductType string   `json:"product_type"`
}

// String describes the token without its value.
func (t AccessToken) String() string {
	return fmt.Sprintf("AccessToken{type=%s expires_in=%d scopes=%v product_type=%s token=[redacted]}", t.TokenType, t.ExpiresIn, t.Scopes, t.ProductType)
}

// GoString hides the token from %#v as well.
func (t AccessToken) GoString() string { return t.String() }

// Verification is the answer of POST /api-auth/verify. The spec does not
// name its fields; these are the reference server's (see package refserver).
type Verification struct {
	Organization string    `json:"organization"`
	Scopes       []string  `json:"scopes"`
	ProductType  string    `json:"product_type"`
	ExpiresAt    time.Time `json:"-"`
}

type verificationWire struct {
	Organization string    `json:"organization"`
	Scopes       []string  `json:"scopes"`
	ProductType  string    `json:"product_type"`
	ExpiresAt    timestamp `json:"expires_at"`
}

// MarshalJSON writes the verification with its expiry in [TimeLayout].
func (v Verification) MarshalJSON() ([]byte, error) {
	return json.Marshal(verificationWire{v.Organization, v.Scopes, v.ProductType, timestamp(v.ExpiresAt)})
}

// UnmarshalJSON reads a verification, tolerating unknown fields.
func (v *Verification) UnmarshalJSON(b []byte) error {
	var w verificationWire
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("decode verification: %w", err)
	}
	*v = Verification{w.Organization, w.Scopes, w.ProductType, time.Time(w.ExpiresAt)}
	return nil
}
