package webhook

import (
	"strconv"

	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// Outbound event types: the "type" field of a delivery's body and its
// X-Ticketbridge-Event header. docs/webhook holds a JSON Schema and an
// example for each.
const (
	EventTicketCreated = "ticket.created" // a guest request is mirrored for the first time
	EventMessageAdded  = "message.added"  // a message of its thread (guest, staff, AI, system)
	EventStatusChanged = "status.changed" // its status changed upstream
	EventTicketUpdated = "ticket.updated" // its fields changed upstream; sent when TICKETBRIDGE_WEBHOOK_EVENTS asks for it
	EventPing          = "ping"           // sent by Check to prove the URL and the secret
)

// Inbound event types: the "type" field of what the receiver posts back to
// the daemon's inbound endpoint.
const (
	InboundReply  = "reply"  // agent reply, shown to the guest
	InboundNote   = "note"   // internal note, seen by staff only
	InboundStatus = "status" // status change; "status" holds a helpdesk status
)

// TicketCreated is the body of a ticket.created delivery.
type TicketCreated struct {
	ID       string     `json:"id"`   // the delivery id, as X-Ticketbridge-Delivery
	Type     string     `json:"type"` // "ticket.created"
	TicketID string     `json:"ticket_id"`
	Ticket   TicketInfo `json:"ticket"`
}

// TicketInfo is the guest request in a ticket.created delivery.
type TicketInfo struct {
	ID              string   `json:"id"` // the upstream ticket id, also the ticket_id of every later event
	Department      string   `json:"department"`
	Status          string   `json:"status"`          // the status mapped for the receiver (TICKETBRIDGE_STATUS_TO_HELPDESK)
	UpstreamStatus  string   `json:"upstream_status"` // the API's own status
	TaskDescription string   `json:"task_description"`
	Origin          string   `json:"origin"`
	Comments        *string  `json:"comments"`     // the console card's internal comment; null when none
	GuestRating     *float64 `json:"guest_rating"` // null while unrated
	CreatedAt       string   `json:"created_at"`
	UpdatedAt       string   `json:"updated_at"`
}

// MessageAdded is the body of a message.added delivery.
type MessageAdded struct {
	ID       string      `json:"id"`
	Type     string      `json:"type"` // "message.added"
	TicketID string      `json:"ticket_id"`
	Message  MessageInfo `json:"message"`
}

// MessageInfo is the message in a message.added delivery.
type MessageInfo struct {
	ID             string `json:"id"` // the upstream message id
	AuthorType     string `json:"author_type"`
	AuthorName     string `json:"author_name"`
	Body           string `json:"body"`
	VisibleToGuest bool   `json:"visible_to_guest"` // false: an internal note
	CreatedAt      string `json:"created_at"`
}

// StatusChanged is the body of a status.changed delivery.
type StatusChanged struct {
	ID             string `json:"id"`
	Type           string `json:"type"` // "status.changed"
	TicketID       string `json:"ticket_id"`
	Status         string `json:"status"`          // mapped for the receiver
	UpstreamStatus string `json:"upstream_status"` // the API's own status
}

// Ping is the body of the delivery Check sends.
type Ping struct {
	ID   string `json:"id"`
	Type string `json:"type"` // "ping"
}

// InboundEvent is what the receiver posts to the daemon's inbound endpoint
// (POST /events): an agent's reply or internal note, or a status change, on
// a ticket the daemon delivered.
type InboundEvent struct {
	// ID is the receiver's own id of the event, required. It makes the
	// event idempotent: posting it again is acknowledged and not stored
	// twice, and the upstream Idempotency-Key is derived from it.
	ID         string `json:"id"`
	Type       string `json:"type"`                  // reply, note or status
	TicketID   string `json:"ticket_id"`             // the ticket_id of the deliveries
	Body       string `json:"body,omitempty"`        // reply and note: the text, required
	AuthorName string `json:"author_name,omitempty"` // the agent's display name; optional
	Status     string `json:"status,omitempty"`      // status: a helpdesk status (TICKETBRIDGE_STATUS_FROM_HELPDESK), required
	CreatedAt  string `json:"created_at,omitempty"`  // RFC 3339; when it happened; optional, default the time of receipt
}

// deliveryNamespace scopes the UUIDv5 delivery ids of this adapter.
var deliveryNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://github.com/ticketbridge/ticketbridge/adapters/webhook"))

// deliveryID returns the stable delivery id of an event with this
// identity: the same event gets the same id on every retry, after a restart
// and after the webhook directory is lost.
func deliveryID(parts ...string) string {
	var b []byte
	for i, p := range parts {
		if i > 0 {
			b = append(b, 0)
		}
		b = append(b, p...)
	}
	return uuid.NewSHA1(deliveryNamespace, b).String()
}

func ticketCreatedID(ticketID string) string {
	return deliveryID(EventTicketCreated, ticketID)
}

func messageAddedID(ticketID, messageID string) string {
	return deliveryID(EventMessageAdded, ticketID, messageID)
}

// statusChangedID numbers the status changes of one ticket: the n-th
// change to status s. Including s keeps two different changes apart even
// when the count restarted (a lost webhook directory).
func statusChangedID(ticketID string, n int, status string) string {
	return deliveryID(EventStatusChanged, ticketID, strconv.Itoa(n), status)
}

func newTicketCreated(t adapters.Ticket, status string) TicketCreated {
	info := TicketInfo{
		ID:              t.UpstreamID,
		Department:      t.Department,
		Status:          status,
		UpstreamStatus:  string(t.Status),
		TaskDescription: t.TaskDescription,
		Origin:          string(t.Origin),
		GuestRating:     t.GuestRating,
		CreatedAt:       guestapi.FormatTime(t.CreatedAt),
		UpdatedAt:       guestapi.FormatTime(t.UpdatedAt),
	}
	if t.Comments != "" {
		c := t.Comments
		info.Comments = &c
	}
	return TicketCreated{ID: ticketCreatedID(t.UpstreamID), Type: EventTicketCreated, TicketID: t.UpstreamID, Ticket: info}
}

func newMessageAdded(ticketID string, m adapters.Message) MessageAdded {
	return MessageAdded{
		ID:       messageAddedID(ticketID, m.UpstreamID),
		Type:     EventMessageAdded,
		TicketID: ticketID,
		Message: MessageInfo{
			ID:             m.UpstreamID,
			AuthorType:     string(m.AuthorType),
			AuthorName:     m.AuthorName,
			Body:           m.Body,
			VisibleToGuest: m.Public,
			CreatedAt:      guestapi.FormatTime(m.CreatedAt),
		},
	}
}
