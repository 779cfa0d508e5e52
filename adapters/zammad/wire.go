package zammad

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// The JSON forms of the Zammad REST API the adapter reads and writes. Only
// the fields it uses are declared; unknown fields are ignored.

type zmUser struct {
	ID        int64  `json:"id"`
	Login     string `json:"login"`
	Email     string `json:"email"`
	Firstname string `json:"firstname"`
	Lastname  string `json:"lastname"`
	// Groups (with expand=true) maps group names to the user's access.
	Groups map[string][]string `json:"groups"`
}

// name is the user's display name; Zammad's system user (login "-", who
// runs the scheduler and triggers) is "Zammad".
func (u zmUser) name() string {
	if u.Login == "-" {
		return "Zammad"
	}
	n := strings.TrimSpace(u.Firstname + " " + u.Lastname)
	if n == "" {
		n = u.Login
	}
	return n
}

// zmTicket is a ticket as GET /tickets/{id}?expand=true and the expanded
// search answer it. Custom attributes are read from attrs.
type zmTicket struct {
	ID      int64  `json:"id"`
	Number  string `json:"number"`
	Title   string `json:"title"`
	StateID int64  `json:"state_id"`
	State   string `json:"state"` // with expand=true
	Group   string `json:"group"` // with expand=true
	// PriorityID is the ticket's priority: 1 low, 2 normal, 3 high in a
	// Zammad's seeded priorities.
	PriorityID int64     `json:"priority_id"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`

	attrs map[string]json.RawMessage
}

func (t *zmTicket) UnmarshalJSON(b []byte) error {
	type plain zmTicket
	if err := json.Unmarshal(b, (*plain)(t)); err != nil {
		return err
	}
	return json.Unmarshal(b, &t.attrs)
}

// attr returns the value of a custom attribute: "" when unset or null;
// present is false when the answer lacks the attribute altogether (it
// does not exist in this Zammad).
func (t zmTicket) attr(name string) (v string, present bool) {
	raw, ok := t.attrs[name]
	if !ok {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String(), true
	}
	return "", true
}

type zmArticle struct {
	ID          int64     `json:"id"`
	TicketID    int64     `json:"ticket_id"`
	From        string    `json:"from"`
	Body        string    `json:"body"`
	ContentType string    `json:"content_type"`
	Type        string    `json:"type"`
	Internal    bool      `json:"internal"`
	Sender      string    `json:"sender"`
	SenderID    int64     `json:"sender_id"`
	CreatedByID int64     `json:"created_by_id"`
	CreatedAt   time.Time `json:"created_at"`
	// Attachments are the files attached to the article.
	Attachments []struct {
		ID       int64  `json:"id"`
		Filename string `json:"filename"`
	} `json:"attachments"`
}

// files returns the names of the article's files.
func (a zmArticle) files() []string {
	var out []string
	for _, at := range a.Attachments {
		out = append(out, at.Filename)
	}
	return out
}

// fromAgent reports whether the article's sender is an agent (not the
// customer, not the system). The sender's name comes with the article;
// Zammad's default sender ids stand in when it does not.
func (a zmArticle) fromAgent() bool {
	if a.Sender != "" {
		return a.Sender == "Agent"
	}
	return a.SenderID == 1
}

// zmHistory is one entry of GET /ticket_history/{id}.
type zmHistory struct {
	ID          int64     `json:"id"`
	Type        string    `json:"type"`
	Object      string    `json:"object"`
	Attribute   string    `json:"attribute"`
	ValueFrom   string    `json:"value_from"`
	ValueTo     string    `json:"value_to"`
	CreatedByID int64     `json:"created_by_id"`
	CreatedAt   time.Time `json:"created_at"`
}

type zmAttribute struct {
	ID         int64          `json:"id"`
	Name       string         `json:"name"`
	Object     string         `json:"object"`
	DataType   string         `json:"data_type"`
	Active     bool           `json:"active"`
	ToCreate   bool           `json:"to_create"`
	DataOption map[string]any `json:"data_option"`
}

// allows reports whether a date attribute's option opt ("past",
// "future") is on; Zammad's default for both is on.
func (a zmAttribute) allows(opt string) bool {
	v, ok := a.DataOption[opt].(bool)
	return !ok || v
}

func (a zmAttribute) maxLength() int {
	switch v := a.DataOption["maxlength"].(type) {
	case float64:
		return int(v)
	case string:
		n, _ := strconv.Atoi(v)
		return n
	}
	return 0
}

// articleIn is the body of POST /ticket_articles and the "article" of a
// ticket creation.
type articleIn struct {
	TicketID    int64  `json:"ticket_id,omitempty"`
	Subject     string `json:"subject,omitempty"`
	Body        string `json:"body"`
	ContentType string `json:"content_type"`
	Type        string `json:"type"`
	Internal    bool   `json:"internal"`
}

// tagIn is the body of POST /tags/add and DELETE /tags/remove.
type tagIn struct {
	Item   string `json:"item"`
	Object string `json:"object"`
	OID    int64  `json:"o_id"`
}

func idString(id int64) string { return strconv.FormatInt(id, 10) }
