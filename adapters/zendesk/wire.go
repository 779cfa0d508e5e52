package zendesk

import (
	"encoding/json"
	"strconv"
	"time"
)

// The JSON forms of the Zendesk Support API v2 the adapter reads and
// writes. Only the fields it uses are declared; unknown fields are ignored.

type zdUser struct {
	ID    int64  `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email"`
	Role  string `json:"role"`
}

type zdVia struct {
	Source struct {
		Rel  *string `json:"rel"`
		From struct {
			TicketID int64 `json:"ticket_id"`
		} `json:"from"`
	} `json:"source"`
}

type zdTicket struct {
	ID         int64    `json:"id"`
	ExternalID *string  `json:"external_id"`
	Subject    string   `json:"subject"`
	Status     string   `json:"status"`
	GroupID    *int64   `json:"group_id"`
	Priority   *string  `json:"priority"`
	Tags       []string `json:"tags"`
	// CustomFields are the custom fields' values: a date field's is
	// "YYYY-MM-DD", a number field's a number or its text, none null.
	CustomFields []zdFieldValue `json:"custom_fields"`
	FollowupIDs  []int64        `json:"followup_ids"`
	Via          zdVia          `json:"via"`
	CreatedAt    time.Time      `json:"created_at"`
	UpdatedAt    time.Time      `json:"updated_at"`
}

func (t zdTicket) externalID() string {
	if t.ExternalID == nil {
		return ""
	}
	return *t.ExternalID
}

// field returns the value of custom field id as text; "" for none.
func (t zdTicket) field(id int64) string {
	for _, f := range t.CustomFields {
		if f.ID == id {
			return rawString(f.Value)
		}
	}
	return ""
}

// zdFieldValue is one custom field's value of a ticket, as read and
// written ("custom_fields": [{"id": 360001, "value": "2026-05-01"}]).
type zdFieldValue struct {
	ID    int64           `json:"id"`
	Value json.RawMessage `json:"value"`
}

// zdFieldsIn is the update that sets the platform's fields; only the
// fields set are sent. Tags replace the ticket's tags, so they go with
// safe_update and the updated_stamp of the ticket they were read from:
// Zendesk answers 409 if it changed meanwhile.
type zdFieldsIn struct {
	Subject      *string        `json:"subject,omitempty"`
	GroupID      *int64         `json:"group_id,omitempty"`
	Priority     *string        `json:"priority,omitempty"`
	Tags         *[]string      `json:"tags,omitempty"`
	CustomFields []zdFieldValue `json:"custom_fields,omitempty"`
	SafeUpdate   bool           `json:"safe_update,omitempty"`
	UpdatedStamp string         `json:"updated_stamp,omitempty"`
}

func (t zdTicket) followUp() bool {
	return t.Via.Source.Rel != nil && *t.Via.Source.Rel == "follow_up"
}

type zdComment struct {
	ID          int64          `json:"id"`
	Type        string         `json:"type"`
	AuthorID    int64          `json:"author_id"`
	Body        string         `json:"body"`
	Public      bool           `json:"public"`
	Attachments []zdAttachment `json:"attachments"`
	CreatedAt   time.Time      `json:"created_at"`
}

// zdAttachment is a file attached to a comment. An inline one is an image
// shown in the text; it does not travel with the text either.
type zdAttachment struct {
	ID       int64  `json:"id"`
	FileName string `json:"file_name"`
	Deleted  bool   `json:"deleted"`
}

// files returns the names of the comment's files that are not deleted.
func (c zdComment) files() []string {
	var out []string
	for _, at := range c.Attachments {
		if !at.Deleted {
			out = append(out, at.FileName)
		}
	}
	return out
}

// zdMeta is the cursor pagination block of a list answer.
type zdMeta struct {
	HasMore     bool   `json:"has_more"`
	AfterCursor string `json:"after_cursor"`
}

type zdCommentIn struct {
	Body   string `json:"body"`
	Public bool   `json:"public"`
}

type zdTicketIn struct {
	Subject             string       `json:"subject,omitempty"`
	Comment             *zdCommentIn `json:"comment,omitempty"`
	ExternalID          string       `json:"external_id,omitempty"`
	Status              string       `json:"status,omitempty"`
	GroupID             int64        `json:"group_id,omitempty"`
	Tags                []string     `json:"tags,omitempty"`
	ViaFollowupSourceID int64        `json:"via_followup_source_id,omitempty"`
}

// zdAuditEvent is one event of the audit a create or update answer
// carries.
type zdAuditEvent struct {
	ID   int64  `json:"id"`
	Type string `json:"type"`
}

type zdWriteAnswer struct {
	Ticket zdTicket `json:"ticket"`
	Audit  struct {
		ID     int64          `json:"id"`
		Events []zdAuditEvent `json:"events"`
	} `json:"audit"`
}

// commentID returns the id of the comment the write added.
func (a zdWriteAnswer) commentID() int64 {
	for _, e := range a.Audit.Events {
		if e.Type == "Comment" {
			return e.ID
		}
	}
	return 0
}

// zdTicketEvent is one entry of the incremental ticket event export: the
// audit of one ticket update and its child events.
type zdTicketEvent struct {
	ID          int64                        `json:"id"`
	TicketID    int64                        `json:"ticket_id"`
	Timestamp   int64                        `json:"timestamp"`
	CreatedAt   time.Time                    `json:"created_at"`
	UpdaterID   int64                        `json:"updater_id"`
	ChildEvents []map[string]json.RawMessage `json:"child_events"`
}

// zdAudit is one entry of List Audits for a Ticket: the same update the
// export shows as a ticket event, its child events named "events".
type zdAudit struct {
	ID        int64                        `json:"id"`
	TicketID  int64                        `json:"ticket_id"`
	AuthorID  int64                        `json:"author_id"`
	CreatedAt time.Time                    `json:"created_at"`
	Events    []map[string]json.RawMessage `json:"events"`
}

// ticketEvent is the audit in the form of the ticket event export.
func (au zdAudit) ticketEvent() zdTicketEvent {
	return zdTicketEvent{
		ID: au.ID, TicketID: au.TicketID, Timestamp: au.CreatedAt.Unix(), CreatedAt: au.CreatedAt,
		UpdaterID: au.AuthorID, ChildEvents: au.Events,
	}
}

type zdEventPage struct {
	TicketEvents []zdTicketEvent `json:"ticket_events"`
	EndTime      *int64          `json:"end_time"`
	EndOfStream  bool            `json:"end_of_stream"`
}

// child is a child event read from its raw fields: the export names a
// changed field as a key of the event ("status": "solved"), the audits API
// as field_name and value; both are understood.
type child struct {
	ID        int64
	EventType string
	Field     string
	Value     string
	Comment   *zdComment
}

func parseChild(raw map[string]json.RawMessage) child {
	var c child
	_ = json.Unmarshal(raw["id"], &c.ID)
	_ = json.Unmarshal(raw["event_type"], &c.EventType)
	if c.EventType == "" {
		_ = json.Unmarshal(raw["type"], &c.EventType)
	}
	switch c.EventType {
	case "Comment":
		if _, ok := raw["body"]; !ok {
			return c // comment_present only: the sideload was not given
		}
		var cm zdComment
		_ = json.Unmarshal(raw["author_id"], &cm.AuthorID)
		_ = json.Unmarshal(raw["body"], &cm.Body)
		_ = json.Unmarshal(raw["public"], &cm.Public)
		_ = json.Unmarshal(raw["created_at"], &cm.CreatedAt)
		_ = json.Unmarshal(raw["attachments"], &cm.Attachments)
		cm.ID = c.ID
		c.Comment = &cm
	case "Change", "Create":
		if f, ok := raw["field_name"]; ok {
			_ = json.Unmarshal(f, &c.Field)
			c.Value = rawString(raw["value"])
		} else if v, ok := raw["status"]; ok {
			c.Field = "status"
			c.Value = rawString(v)
		}
	}
	return c
}

// rawString reads a JSON string, or the text of a number.
func rawString(b json.RawMessage) string {
	var s string
	if json.Unmarshal(b, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(b, &n) == nil {
		return n.String()
	}
	return ""
}

func idString(id int64) string { return strconv.FormatInt(id, 10) }
