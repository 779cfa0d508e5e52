package rt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// client speaks RT's REST2 (RT 5.0, lib/RT/REST2.pm) through the daemon's
// shared HTTP client, which retries with the API client's backoff and
// keeps credentials out of errors. It builds every URL from the configured
// base: the _url links in RT's answers use RT's WebBaseURL, which need not
// be the address the bridge reaches RT on.
type client struct {
	base string // ends in /REST/2.0
	http *adapters.HTTPClient
}

// perPage is the largest page REST2 serves.
const perPage = 100

func newClient(base string, c Config, hc *adapters.HTTPClient) *client {
	token, user, pass := c.Token.Reveal(), c.User, c.Password.Reveal()
	hc.Authorize = func(r *http.Request) {
		if token != "" {
			r.Header.Set("Authorization", "token "+token)
		} else {
			r.SetBasicAuth(user, pass)
		}
	}
	for _, s := range []string{token, pass} {
		if s != "" {
			hc.Secrets = append(hc.Secrets, s)
		}
	}
	return &client{base: base + "/REST/2.0", http: hc}
}

// call sends one request and decodes a 2xx JSON answer into out. A nil in
// sends no body. accept lists further statuses returned as answers.
func (c *client) call(ctx context.Context, op, method, path string, q url.Values, in, out any, idempotent bool, accept ...int) (*adapters.HTTPResponse, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return c.http.JSON(ctx, adapters.HTTPRequest{
		Method: method, URL: u, Op: op, Idempotent: idempotent, Accept: accept,
	}, in, out)
}

// get sends a GET and decodes its answer into out.
func (c *client) get(ctx context.Context, op, path string, q url.Values, out any, accept ...int) (*adapters.HTTPResponse, error) {
	return c.call(ctx, op, http.MethodGet, path, q, nil, out, true, accept...)
}

// flexID reads an id REST2 writes as a number in one place and as a
// string in another.
type flexID int64

func (f *flexID) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*f = 0
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("read RT id %s: %w", b, err)
	}
	*f = flexID(n)
	return nil
}

// userRef is how REST2 refers to a user; with fields[Creator]=RealName,Name
// it carries those too. id is the user name.
type userRef struct {
	ID       string `json:"id"`
	Name     string `json:"Name"`
	RealName string `json:"RealName"`
}

// display is the name an agent is known by.
func (u userRef) display() string {
	if n := oneLine(u.RealName); n != "" {
		return n
	}
	if u.Name != "" {
		return u.Name
	}
	return u.ID
}

func (u userRef) name() string {
	if u.Name != "" {
		return u.Name
	}
	return u.ID
}

// cfValue is one ticket custom field with its values, as REST2 writes the
// CustomFields of a ticket.
type cfValue struct {
	ID     flexID   `json:"id"`
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

// rtTicket is the part of a REST2 ticket the adapter reads.
type rtTicket struct {
	ID           flexID    `json:"id"`
	Status       string    `json:"Status"`
	Created      string    `json:"Created"`
	LastUpdated  string    `json:"LastUpdated"`
	Queue        queueRef  `json:"Queue"`
	CustomFields []cfValue `json:"CustomFields"`
	// Read by Update only.
	Subject  string `json:"Subject"`
	Due      string `json:"Due"`
	Priority flexID `json:"Priority"` // a number, which REST2 writes as a string
}

type queueRef struct {
	ID   flexID `json:"id"`
	Name string `json:"Name"`
}

// values returns the values of custom field id.
func (t rtTicket) values(id int64) []string {
	for _, cf := range t.CustomFields {
		if int64(cf.ID) == id {
			return cf.Values
		}
	}
	return nil
}

// rtTransaction is the part of a REST2 transaction the adapter reads.
type rtTransaction struct {
	ID   flexID `json:"id"`
	Type string `json:"Type"`
	// Kind takes REST2's "type" ("transaction"), which encoding/json
	// would otherwise fold into Type, whichever of the two came last.
	Kind     string  `json:"type"`
	ObjectID flexID  `json:"ObjectId"`
	Creator  userRef `json:"Creator"`
	Created  string  `json:"Created"`
	OldValue string  `json:"OldValue"`
	NewValue string  `json:"NewValue"`
}

// rtAttachment is the part of a REST2 attachment the adapter reads. RT
// stores a text part quoted-printable or base64 as it sees fit; in a
// collection, Content is that part decoded, as UTF-8 text (RT converts
// text to UTF-8 when it stores it). Only GET /attachment/:id sends Content
// base64-encoded, and the adapter never reads attachments one by one.
type rtAttachment struct {
	ID            flexID  `json:"id"`
	TransactionID flexID  `json:"TransactionId"`
	ContentType   string  `json:"ContentType"`
	Filename      string  `json:"Filename"`
	Content       string  `json:"Content"`
	Creator       userRef `json:"Creator"`
}

// page is a REST2 collection answer.
type page[T any] struct {
	Count   int `json:"count"`
	Page    int `json:"page"`
	PerPage int `json:"per_page"`
	Items   []T `json:"items"`
	// Pages is null when RT filtered the collection by rights and cannot
	// tell the total.
	Pages *float64 `json:"pages"`
}

// more reports whether a further page may hold items.
func (p page[T]) more() bool {
	if p.Pages != nil {
		return float64(p.Page) < *p.Pages
	}
	return p.Count >= p.PerPage && p.PerPage > 0
}

// rtTime parses REST2's timestamps (UTC, second resolution).
func rtTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("read RT time %q: %w", s, err)
	}
	return t.UTC(), nil
}

// searchCond is one condition of a REST2 JSON search.
type searchCond struct {
	Field    string `json:"field"`
	Operator string `json:"operator,omitempty"`
	Value    any    `json:"value"`
}

// ticketSQLQuote quotes s for TicketSQL and TransactionSQL.
func ticketSQLQuote(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}

// messages reads the list of messages REST2 answers a PUT with.
func messages(resp *adapters.HTTPResponse) []string {
	if resp == nil {
		return nil
	}
	var out []string
	if err := json.Unmarshal(bytes.TrimSpace(resp.Body), &out); err != nil {
		return nil
	}
	return out
}

// isNotFound reports whether err is RT saying the object does not exist.
func isNotFound(err error) bool { return errors.Is(err, adapters.ErrNotFound) }
