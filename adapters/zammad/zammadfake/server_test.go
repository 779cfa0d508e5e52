package zammadfake_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/zammad/zammadfake"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

const token = "fake-token-0123456789"

type client struct {
	t    *testing.T
	url  string
	hc   *http.Client
	fake *zammadfake.Server
}

// start serves a fake on loopback.
func start(t *testing.T, opts zammadfake.Options) *client {
	t.Helper()
	fake := newFake(opts)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return &client{t: t, url: srv.URL, hc: srv.Client(), fake: fake}
}

// startPipe serves a fake on in-memory connections, for a test in a
// testing/synctest bubble: time.Sleep passes the fake's time.
func startPipe(t *testing.T, opts zammadfake.Options) *client {
	t.Helper()
	fake := newFake(opts)
	return &client{t: t, url: testutil.PipeURL, hc: &http.Client{Transport: testutil.PipeServer(t, fake)}, fake: fake}
}

func newFake(opts zammadfake.Options) *zammadfake.Server {
	if opts.Token == "" {
		opts.Token = token
	}
	if opts.Attributes == nil {
		opts.Attributes = []zammadfake.Attribute{{Name: "guest_request_id"}}
	}
	return zammadfake.New(opts)
}

// do sends a request with the token and decodes the JSON answer.
func (c *client) do(method, path string, body any) (int, http.Header, any) {
	c.t.Helper()
	return c.doAuth(method, path, body, "Token token="+token)
}

func (c *client) doAuth(method, path string, body any, auth string) (int, http.Header, any) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.url+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	var out any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			c.t.Fatalf("%s %s: answer is not JSON: %q", method, path, raw)
		}
	}
	return resp.StatusCode, resp.Header, out
}

func obj(t *testing.T, v any) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("answer %v is not an object", v)
	}
	return m
}

func list(t *testing.T, v any) []any {
	t.Helper()
	l, ok := v.([]any)
	if !ok {
		t.Fatalf("answer %v is not a list", v)
	}
	return l
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

func (c *client) create(title, upstream string) map[string]any {
	c.t.Helper()
	status, _, out := c.do("POST", "/api/v1/tickets?expand=true", map[string]any{
		"title": title, "group": "Users", "customer_id": "guess:guests@hotel.example", "guest_request_id": upstream,
		"article": map[string]any{"body": "first\n  line two", "type": "note", "internal": false},
	})
	if status != http.StatusCreated {
		c.t.Fatalf("create ticket: %d %v", status, out)
	}
	return obj(c.t, out)
}

func TestAuthentication(t *testing.T) {
	c := start(t, zammadfake.Options{})
	for _, tc := range []struct {
		auth   string
		status int
	}{
		{"", http.StatusUnauthorized},
		{"Token token=wrong", http.StatusUnauthorized},
		{"Bearer " + token, http.StatusUnauthorized},
		{"Token token=" + token, http.StatusOK},
		{`Token token="` + token + `"`, http.StatusOK},
		{"Token " + token, http.StatusOK},
	} {
		status, h, out := c.doAuth("GET", "/api/v1/users/me", nil, tc.auth)
		if status != tc.status {
			t.Errorf("Authorization %q: %d, want %d", tc.auth, status, tc.status)
			continue
		}
		if status == http.StatusUnauthorized {
			m := obj(t, out)
			if m["error"] == "" || m["error_human"] == nil || h.Get("X-Failure") == "" {
				t.Errorf("401 answer %v, X-Failure %q: want Zammad's error form", m, h.Get("X-Failure"))
			}
		}
	}
}

// TestAgentToken: an agent's own token acts as the agent: a ticket it
// creates through the API is the agent's, its article's sender Agent;
// it has ticket.agent and not admin.object.
func TestAgentToken(t *testing.T) {
	c := start(t, zammadfake.Options{})
	anna := c.fake.AddAgent("Anna Lopez")
	tok, err := c.fake.Token(anna)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := c.fake.Token(anna); again != tok {
		t.Errorf("a second Token for the agent is %q, want the first, %q", again, tok)
	}
	if _, err := c.fake.Token(c.fake.APIUserID() + 100); err == nil {
		t.Error("Token for no such user: no error")
	}
	auth := "Token token=" + tok
	status, _, out := c.doAuth("GET", "/api/v1/users/me", nil, auth)
	if status != http.StatusOK || obj(t, out)["id"] != float64(anna) {
		t.Fatalf("users/me with the agent's token: %d %v, want agent %d", status, out, anna)
	}
	status, _, out = c.doAuth("POST", "/api/v1/tickets", map[string]any{
		"title": "Towels", "group": "Users", "customer_id": "guess:caller@guest.example",
		"article": map[string]any{"body": "The guest called for towels.", "type": "phone", "internal": false},
	}, auth)
	if status != http.StatusCreated {
		t.Fatalf("create a ticket with the agent's token: %d %v", status, out)
	}
	tk, _ := c.fake.Ticket(int64(obj(t, out)["id"].(float64)))
	if tk.CreatedByID != anna || len(tk.Articles) != 1 || tk.Articles[0].CreatedByID != anna || tk.Articles[0].Sender != zammadfake.SenderAgent {
		t.Errorf("the agent's ticket: %+v; want it and its article by the agent %d, sender Agent", tk, anna)
	}
	if status, _, _ := c.doAuth("GET", "/api/v1/object_manager_attributes", nil, auth); status != http.StatusForbidden {
		t.Errorf("the object manager with an agent's token: %d, want 403", status)
	}
}

func TestPermissions(t *testing.T) {
	c := start(t, zammadfake.Options{Permissions: []string{}})
	if status, _, _ := c.do("GET", "/api/v1/users/me", nil); status != http.StatusOK {
		t.Errorf("users/me needs only a valid token, got %d", status)
	}
	for _, p := range []string{"/api/v1/tickets", "/api/v1/object_manager_attributes", "/api/v1/ticket_states"} {
		if status, _, out := c.do("GET", p, nil); status != http.StatusForbidden || obj(t, out)["error"] != "Not authorized" {
			t.Errorf("%s without permissions: %d %v, want 403 Not authorized", p, status, out)
		}
	}
	c = start(t, zammadfake.Options{Permissions: []string{zammadfake.PermTicketAgent}})
	if status, _, _ := c.do("GET", "/api/v1/object_manager_attributes", nil); status != http.StatusForbidden {
		t.Errorf("object manager without admin.object: %d, want 403", status)
	}
	if status, _, _ := c.do("GET", "/api/v1/ticket_states", nil); status != http.StatusOK {
		t.Errorf("ticket states with ticket.agent: %d, want 200", status)
	}
}

func TestCreateTicket(t *testing.T) {
	c := start(t, zammadfake.Options{Attributes: []zammadfake.Attribute{{Name: "guest_request_id"}, {Name: "room", Pending: true}}})
	status, _, out := c.do("POST", "/api/v1/tickets?expand=true", map[string]any{
		"title": "Towels", "group": "Users", "customer_id": "guess:Guests@Hotel.example", "state": "open",
		"guest_request_id": "u-1", "room": "214", "unknown_field": "x",
		"article": map[string]any{"body": "Two towels\r\n  please ", "internal": true},
	})
	if status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, out)
	}
	tk := obj(t, out)
	if tk["state"] != "open" || tk["group"] != "Users" || tk["guest_request_id"] != "u-1" || tk["number"] == "" {
		t.Errorf("created ticket %v", tk)
	}
	if _, ok := tk["room"]; ok {
		t.Errorf("an attribute not yet applied was stored: %v", tk["room"])
	}
	if _, ok := tk["unknown_field"]; ok {
		t.Errorf("an unknown field was stored")
	}
	if ids := list(t, tk["article_ids"]); len(ids) != 1 {
		t.Errorf("article_ids %v, want one", ids)
	}
	cust, ok := c.fake.FindUser("guests@hotel.example")
	if !ok || num(tk["customer_id"]) != cust.ID {
		t.Errorf("customer %v (found %v), ticket's customer_id %v", cust, ok, tk["customer_id"])
	}
	_, _, out = c.do("GET", "/api/v1/ticket_articles/by_ticket/"+jsonID(tk["id"]), nil)
	arts := list(t, out)
	a := obj(t, arts[0])
	if a["body"] != "Two towels\r\n  please " || a["content_type"] != "text/plain" || a["type"] != "note" ||
		a["internal"] != true || a["sender"] != "Agent" || num(a["created_by_id"]) != c.fake.APIUserID() {
		t.Errorf("first article %v", a)
	}

	for _, tc := range []struct {
		name string
		body map[string]any
	}{
		{"unknown group", map[string]any{"title": "x", "group": "Nope", "customer_id": "guess:a@b.example"}},
		{"no title", map[string]any{"group": "Users", "customer_id": "guess:a@b.example"}},
		{"bad email", map[string]any{"title": "x", "group": "Users", "customer_id": "guess:not an email"}},
		{"unknown customer", map[string]any{"title": "x", "group": "Users", "customer": "nobody"}},
		{"no customer", map[string]any{"title": "x", "group": "Users"}},
		{"unknown state", map[string]any{"title": "x", "group": "Users", "customer_id": "guess:a@b.example", "state": "archived"}},
		{"pending without time", map[string]any{"title": "x", "group": "Users", "customer_id": "guess:a@b.example", "state": "pending reminder"}},
		{"blank article", map[string]any{"title": "x", "group": "Users", "customer_id": "guess:a@b.example", "article": map[string]any{"body": " "}}},
		{"too long attribute", map[string]any{"title": "x", "group": "Users", "customer_id": "guess:a@b.example", "guest_request_id": strings.Repeat("x", 256)}},
	} {
		status, _, out := c.do("POST", "/api/v1/tickets", tc.body)
		if status != http.StatusUnprocessableEntity || obj(t, out)["error"] == "" {
			t.Errorf("%s: %d %v, want 422 with an error", tc.name, status, out)
		}
	}
	if n := len(c.fake.Tickets()); n != 1 {
		t.Errorf("%d tickets after refused creations, want 1", n)
	}
}

func jsonID(v any) string { return strings.TrimSuffix(strings.TrimSuffix(jsonString(v), ".0"), "\n") }

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestUpdateStatesAndHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startPipe(t, zammadfake.Options{})
		tk := c.create("Noise", "u-1")
		path := "/api/v1/tickets/" + jsonID(tk["id"])
		if status, _, out := c.do("PUT", path+"?expand=true", map[string]any{"state": "open"}); status != http.StatusOK || obj(t, out)["state"] != "open" {
			t.Fatalf("open: %d %v", status, out)
		}
		if status, _, _ := c.do("PUT", path, map[string]any{"state": "new"}); status != http.StatusUnprocessableEntity {
			t.Errorf("back to new: %d, want 422 (the edit screen does not offer it)", status)
		}
		if status, _, _ := c.do("PUT", path, map[string]any{"state": "pending close"}); status != http.StatusUnprocessableEntity {
			t.Errorf("pending close without pending_time: %d, want 422", status)
		}
		tomorrow := time.Now().UTC().Add(24 * time.Hour).Format("2006-01-02T15:04:05.000Z")
		status, _, out := c.do("PUT", path+"?expand=true", map[string]any{"state": "pending close", "pending_time": tomorrow,
			"article": map[string]any{"body": "We will close this tomorrow.", "internal": false}})
		if status != http.StatusOK || obj(t, out)["state"] != "pending close" || obj(t, out)["pending_time"] != tomorrow {
			t.Fatalf("pending close: %d %v", status, out)
		}
		time.Sleep(25 * time.Hour)
		if n := c.fake.AutoClose(); n != 1 {
			t.Errorf("AutoClose closed %d tickets, want 1", n)
		}
		_, _, out = c.do("GET", "/api/v1/ticket_history/"+jsonID(tk["id"]), nil)
		var states []string
		var creators []int64
		for _, h := range list(t, obj(t, out)["history"]) {
			e := obj(t, h)
			if e["attribute"] == "state" {
				states = append(states, e["value_from"].(string)+">"+e["value_to"].(string))
				creators = append(creators, num(e["created_by_id"]))
			}
		}
		want := []string{"new>open", "open>pending close", "pending close>closed"}
		if strings.Join(states, " ") != strings.Join(want, " ") {
			t.Errorf("state history %v, want %v", states, want)
		}
		if len(creators) == 3 && (creators[0] != c.fake.APIUserID() || creators[2] != 1) {
			t.Errorf("state changes made by %v; want the API user, then the system user (1) for the automatic close", creators)
		}
	})
}

func TestSearch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startPipe(t, zammadfake.Options{SearchLag: time.Minute, MaxPerPage: 2})
		for _, id := range []string{"u-1", "u-2", "u-3"} {
			c.create("Request "+id, id)
		}
		byCond := func(attr, op, value string, extra string) (int, any) {
			q := url.Values{}
			q.Set("condition[ticket."+attr+"][operator]", op)
			q.Set("condition[ticket."+attr+"][value]", value)
			status, _, out := c.do("GET", "/api/v1/tickets/search?"+q.Encode()+extra, nil)
			return status, out
		}
		status, out := byCond("guest_request_id", "is", "u-2", "&expand=true")
		if l := list(t, out); status != http.StatusOK || len(l) != 1 || obj(t, l[0])["guest_request_id"] != "u-2" {
			t.Fatalf("condition search: %d %v", status, out)
		}
		_, _, out = c.do("GET", "/api/v1/tickets/search?query=guest_request_id:u-2", nil)
		if ids := list(t, obj(t, out)["tickets"]); len(ids) != 0 {
			t.Errorf("full-text search found a ticket written a moment ago: %v", ids)
		}
		time.Sleep(time.Minute + time.Second) // the writes' stamps are a few milliseconds apart
		_, _, out = c.do("GET", "/api/v1/tickets/search?query=guest_request_id:u-2", nil)
		if m := obj(t, out); len(list(t, m["tickets"])) != 1 || num(m["tickets_count"]) != 1 || m["assets"] == nil {
			t.Errorf("full-text search after the lag: %v", m)
		}
		if status, _ := byCond("no_such_attribute", "is", "x", ""); status != http.StatusUnprocessableEntity {
			t.Errorf("condition on an unknown attribute: %d, want 422", status)
		}
		// Paging: at most two a page, sorted as asked.
		var got []string
		for page := 1; page <= 3; page++ {
			_, out := byCond("updated_at", "after (absolute)", "1999-01-01T00:00:00.000Z", "&expand=true&sort_by=updated_at&order_by=asc&per_page=50&page="+string(rune('0'+page)))
			for _, tk := range list(t, out) {
				got = append(got, obj(t, tk)["guest_request_id"].(string))
			}
		}
		if strings.Join(got, ",") != "u-1,u-2,u-3" {
			t.Errorf("paged search gave %v, want u-1,u-2,u-3 two at a time", got)
		}
		_, out = byCond("updated_at", "after (absolute)", "1999-01-01T00:00:00.000Z", "&expand=true&sort_by=updated_at&order_by=desc&per_page=1")
		if l := list(t, out); len(l) != 1 || obj(t, l[0])["guest_request_id"] != "u-3" {
			t.Errorf("newest first, one a page: %v", l)
		}
	})
}

func TestArticlesAndEditor(t *testing.T) {
	c := start(t, zammadfake.Options{})
	tk := c.create("Taxi", "u-1")
	id := num(tk["id"])
	agent := c.fake.AddAgent("Anna Lopez")
	if _, err := c.fake.Reply(id, agent, "Booked for 7:15.\n\n    <b>driver</b> & \"co\""); err != nil {
		t.Fatal(err)
	}
	status, _, out := c.do("POST", "/api/v1/ticket_articles", map[string]any{"ticket_id": id, "body": "plain\n[marker]", "internal": true})
	if status != http.StatusCreated || obj(t, out)["body"] != "plain\n[marker]" {
		t.Fatalf("create article: %d %v", status, out)
	}
	if status, _, _ := c.do("POST", "/api/v1/ticket_articles", map[string]any{"ticket_id": 999, "body": "x"}); status != http.StatusNotFound {
		t.Errorf("article on an unknown ticket: %d, want 404", status)
	}
	_, _, out = c.do("GET", "/api/v1/ticket_articles/by_ticket/"+jsonID(tk["id"]), nil)
	arts := list(t, out)
	if len(arts) != 3 {
		t.Fatalf("%d articles, want 3", len(arts))
	}
	reply := obj(t, arts[1])
	wantHTML := "<div>Booked for 7:15.</div><div><br></div><div>&nbsp;&nbsp;&nbsp;&nbsp;&lt;b&gt;driver&lt;/b&gt; &amp; &#34;co&#34;</div>"
	if reply["content_type"] != "text/html" || reply["body"] != wantHTML || reply["from"] != "Anna Lopez" || num(reply["created_by_id"]) != agent {
		t.Errorf("agent reply %v", reply)
	}
	var last time.Time
	for _, a := range arts {
		at, err := time.Parse(time.RFC3339Nano, obj(t, a)["created_at"].(string))
		if err != nil || !at.After(last) {
			t.Errorf("article times not strictly increasing: %v after %v", at, last)
		}
		last = at
	}
	if status, _, _ := c.do("GET", "/api/v1/ticket_articles/by_ticket/999", nil); status != http.StatusNotFound {
		t.Errorf("articles of an unknown ticket: %d, want 404", status)
	}
}

func TestFaultsAndDate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startPipe(t, zammadfake.Options{})
		c.fake.Inject(zammadfake.Fault{Method: "GET", Path: "/api/v1/users/me", Status: http.StatusTooManyRequests, RetryAfter: 1500 * time.Millisecond})
		status, h, _ := c.do("GET", "/api/v1/users/me", nil)
		if status != http.StatusTooManyRequests || h.Get("Retry-After") != "2" {
			t.Errorf("429 fault: %d, Retry-After %q", status, h.Get("Retry-After"))
		}
		if status, h, _ := c.do("GET", "/api/v1/users/me", nil); status != http.StatusOK || h.Get("Date") != time.Now().UTC().Format(http.TimeFormat) {
			t.Errorf("after the fault: %d, Date %q (want the bubble's clock)", status, h.Get("Date"))
		}
		c.fake.Inject(zammadfake.Fault{Method: "POST", Path: "/api/v1/tickets", Status: http.StatusBadGateway, AfterApply: true})
		status, _, _ = c.do("POST", "/api/v1/tickets", map[string]any{"title": "x", "group": "Users", "customer_id": "guess:a@b.example"})
		if status != http.StatusBadGateway || len(c.fake.Tickets()) != 1 {
			t.Errorf("lost answer: %d with %d tickets, want 502 and the ticket made", status, len(c.fake.Tickets()))
		}
		reqs := c.fake.Requests()
		if len(reqs) != 3 || reqs[2].Status != http.StatusBadGateway {
			t.Errorf("request log %+v", reqs)
		}
	})
}

// TestArticlesUnpaged: by_ticket answers every article at once and takes
// no page or per_page, as Zammad's index_by_ticket does.
func TestArticlesUnpaged(t *testing.T) {
	c := start(t, zammadfake.Options{MaxPerPage: 1})
	tk := c.create("Taxi", "u-1")
	for i := range 4 {
		if status, _, out := c.do("POST", "/api/v1/ticket_articles", map[string]any{"ticket_id": num(tk["id"]), "body": fmt.Sprint("note ", i), "internal": true}); status != http.StatusCreated {
			t.Fatalf("create article: %d %v", status, out)
		}
	}
	_, _, out := c.do("GET", "/api/v1/ticket_articles/by_ticket/"+jsonID(tk["id"])+"?page=2&per_page=1", nil)
	if arts := list(t, out); len(arts) != 5 {
		t.Errorf("by_ticket with page=2&per_page=1: %d articles, want all 5", len(arts))
	}
}
