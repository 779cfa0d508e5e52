package freshdesk

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// The JSON forms of the Freshdesk API v2 the adapter reads and writes. Only
// the fields it uses are declared; unknown fields are ignored.

// Freshdesk's ticket statuses.
const (
	statusOpen     = 2
	statusPending  = 3
	statusResolved = 4
	statusClosed   = 5
)

// Conversation sources.
const (
	sourceReply = 0
	sourceNote  = 2
)

// scopeGlobal is the ticket scope of an agent who sees every ticket.
const scopeGlobal = 1

type fdAgent struct {
	ID          int64 `json:"id"`
	TicketScope int   `json:"ticket_scope"`
	Contact     struct {
		Name  string `json:"name"`
		Email string `json:"email"`
	} `json:"contact"`
}

type fdTicket struct {
	ID           int64                      `json:"id"`
	Subject      string                     `json:"subject"`
	Status       int                        `json:"status"`
	GroupID      *int64                     `json:"group_id"`
	Priority     int                        `json:"priority"`
	Tags         []string                   `json:"tags"`
	DueBy        *time.Time                 `json:"due_by"`
	FrDueBy      *time.Time                 `json:"fr_due_by"`
	CustomFields map[string]json.RawMessage `json:"custom_fields"`
	Deleted      bool                       `json:"deleted"`
	Spam         bool                       `json:"spam"`
	Archived     bool                       `json:"archived"` // read from /tickets/archived/{id}
	Description  string                     `json:"description_text"`
	CreatedAt    time.Time                  `json:"created_at"`
	UpdatedAt    time.Time                  `json:"updated_at"`
}

// field returns the value of a text custom field, "" when it is unset or
// not text.
func (t fdTicket) field(name string) string {
	var s string
	if json.Unmarshal(t.CustomFields[name], &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

type fdConversation struct {
	ID        int64     `json:"id"`
	UserID    int64     `json:"user_id"`
	Body      string    `json:"body"`
	BodyText  string    `json:"body_text"`
	Private   bool      `json:"private"`
	Incoming  bool      `json:"incoming"`
	Source    int       `json:"source"`
	CreatedAt time.Time `json:"created_at"`
	// Attachments are the files attached to the conversation.
	Attachments []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	} `json:"attachments"`
}

// files returns the names of the conversation's files.
func (c fdConversation) files() []string {
	var out []string
	for _, at := range c.Attachments {
		out = append(out, at.Name)
	}
	return out
}

// text is what a reader sees of the conversation: body_text, or the HTML
// body turned into text when Freshdesk gave none.
func (c fdConversation) text() string {
	if strings.TrimSpace(c.BodyText) != "" {
		return c.BodyText
	}
	return adapters.HTMLText(c.Body)
}

// marker reads the bridge's marker of the conversation from the text of
// its HTML body, where <br> keeps the marker on a line of its own, and
// from body_text only when the HTML holds none: Freshdesk documents
// body_text as the content "in plain text" without saying that it keeps
// line breaks, and a body_text with its lines run together has no last
// line to hold a marker.
func (c fdConversation) marker() (adapters.Marker, bool) {
	if mk, ok := adapters.ParseMarker(adapters.HTMLText(c.Body)); ok {
		return mk, true
	}
	return adapters.ParseMarker(c.BodyText)
}

type fdField struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Label   string `json:"label"`
	Type    string `json:"type"`
	Default bool   `json:"default"`
}

type fdTicketIn struct {
	Subject      string            `json:"subject,omitempty"`
	Description  string            `json:"description,omitempty"`
	Email        string            `json:"email,omitempty"`
	Name         string            `json:"name,omitempty"`
	Status       int               `json:"status,omitempty"`
	Priority     int               `json:"priority,omitempty"`
	GroupID      int64             `json:"group_id,omitempty"`
	Tags         []string          `json:"tags,omitempty"`
	CustomFields map[string]string `json:"custom_fields,omitempty"`
}

// fdFieldsIn is the update that sets the platform's fields; only the
// fields set are sent. Tags replace the ticket's tags (see
// [vendor.SetFields]).
type fdFieldsIn struct {
	Subject  *string   `json:"subject,omitempty"`
	GroupID  *int64    `json:"group_id,omitempty"`
	Priority *int      `json:"priority,omitempty"`
	DueBy    *string   `json:"due_by,omitempty"`
	FrDueBy  *string   `json:"fr_due_by,omitempty"`
	Tags     *[]string `json:"tags,omitempty"`
}

type fdNoteIn struct {
	Body    string `json:"body"`
	Private bool   `json:"private"`
}

// hasNext reports whether the Link header of a list answer names a next
// page. The adapter asks for that page on its own address rather than
// following the link, so the API key goes to the configured host only.
func hasNext(h http.Header) bool {
	for _, v := range h.Values("Link") {
		for _, part := range strings.Split(v, ",") {
			for _, param := range strings.Split(part, ";")[1:] {
				k, val, _ := strings.Cut(strings.TrimSpace(param), "=")
				if strings.EqualFold(k, "rel") && strings.EqualFold(strings.Trim(val, `"`), "next") {
					return true
				}
			}
		}
	}
	return false
}

func idString(id int64) string { return strconv.FormatInt(id, 10) }
