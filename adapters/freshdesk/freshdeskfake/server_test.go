package freshdeskfake_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/freshdesk/freshdeskfake"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

const key = "test-key"

type fixture struct {
	t    *testing.T
	fake *freshdeskfake.Server
	url  string
	hc   *http.Client
}

// newFixture serves a fake on loopback.
func newFixture(t *testing.T, opts freshdeskfake.Options) *fixture {
	opts.APIKey = key
	fake := freshdeskfake.New(opts)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return &fixture{t: t, fake: fake, url: srv.URL, hc: srv.Client()}
}

// newPipeFixture serves a fake on in-memory connections, for a test in a
// testing/synctest bubble: time.Sleep passes the fake's time.
func newPipeFixture(t *testing.T, opts freshdeskfake.Options) *fixture {
	opts.APIKey = key
	fake := freshdeskfake.New(opts)
	return &fixture{t: t, fake: fake, url: testutil.PipeURL, hc: &http.Client{Transport: testutil.PipeServer(t, fake)}}
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("decode %s: %v", a.body, err)
	}
}

// errors returns the codes of a validation error by field.
func (a answer) errors(t *testing.T) map[string]string {
	t.Helper()
	var e struct {
		Description string `json:"description"`
		Errors      []struct {
			Field, Message, Code string
		} `json:"errors"`
	}
	a.decode(t, &e)
	if e.Description != "Validation failed" {
		t.Fatalf("error body %s: want description \"Validation failed\"", a.body)
	}
	out := map[string]string{}
	for _, x := range e.Errors {
		if x.Message == "" {
			t.Errorf("error entry without message: %s", a.body)
		}
		out[x.Field] = x.Code
	}
	return out
}

func (f *fixture) do(method, path string, body any) answer {
	f.t.Helper()
	return f.doAs(key, "application/json", method, path, body)
}

func (f *fixture) doAs(user, contentType, method, path string, body any) answer {
	f.t.Helper()
	var r io.Reader
	if body != nil {
		b, ok := body.(string)
		if !ok {
			j, err := json.Marshal(body)
			if err != nil {
				f.t.Fatal(err)
			}
			b = string(j)
		}
		r = strings.NewReader(b)
	}
	req, err := http.NewRequest(method, f.url+path, r)
	if err != nil {
		f.t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, "X")
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := f.hc.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, b}
}

type ticket struct {
	ID              int64          `json:"id"`
	Subject         string         `json:"subject"`
	Description     string         `json:"description"`
	DescriptionText string         `json:"description_text"`
	Status          int            `json:"status"`
	GroupID         *int64         `json:"group_id"`
	CustomFields    map[string]any `json:"custom_fields"`
	Deleted         bool           `json:"deleted"`
	UpdatedAt       time.Time      `json:"updated_at"`
}

func (f *fixture) create(subject string, custom map[string]any) ticket {
	f.t.Helper()
	in := map[string]any{"subject": subject, "description": "<div>" + subject + "</div>", "email": "guest@hotel.invalid", "status": 2, "priority": 1}
	if custom != nil {
		in["custom_fields"] = custom
	}
	a := f.do("POST", "/api/v2/tickets", in)
	if a.status != http.StatusCreated {
		f.t.Fatalf("create: %d %s", a.status, a.body)
	}
	var t ticket
	a.decode(f.t, &t)
	return t
}

func TestAuthentication(t *testing.T) {
	f := newFixture(t, freshdeskfake.Options{})
	for _, user := range []string{"", "wrong-key"} {
		a := f.doAs(user, "", "GET", "/api/v2/agents/me", nil)
		var e struct{ Code, Message string }
		a.decode(t, &e)
		if a.status != http.StatusUnauthorized || e.Code != "invalid_credentials" || e.Message == "" {
			t.Errorf("user %q: %d %s, want 401 invalid_credentials", user, a.status, a.body)
		}
	}
	a := f.do("GET", "/api/v2/agents/me", nil)
	var me struct {
		ID          int64 `json:"id"`
		TicketScope int   `json:"ticket_scope"`
		Contact     struct{ Name, Email string }
	}
	a.decode(t, &me)
	if a.status != http.StatusOK || me.ID != f.fake.APIAgentID() || me.TicketScope != freshdeskfake.ScopeGlobal || me.Contact.Name == "" {
		t.Errorf("agents/me: %d %s", a.status, a.body)
	}
	if a := f.do("GET", fmt.Sprintf("/api/v2/agents/%d", me.ID+1000), nil); a.status != http.StatusNotFound || len(a.body) != 0 {
		t.Errorf("unknown agent: %d %q, want 404 with an empty body", a.status, a.body)
	}
}

func TestCreateValidation(t *testing.T) {
	f := newFixture(t, freshdeskfake.Options{})
	a := f.do("POST", "/api/v2/tickets", map[string]any{"priority": 1})
	errs := a.errors(t)
	if a.status != http.StatusBadRequest || errs["subject"] != "missing_field" || errs["description"] != "missing_field" || errs["requester_id"] != "missing_field" {
		t.Errorf("empty create: %d %v", a.status, errs)
	}
	a = f.do("POST", "/api/v2/tickets", map[string]any{
		"subject": "s", "description": "d", "email": "g@hotel.invalid", "status": 9, "colour": "red",
		"custom_fields": map[string]any{"cf_nope": "x", "cf_guest_request_id": 7},
	})
	errs = a.errors(t)
	want := map[string]string{"status": "invalid_value", "colour": "invalid_field", "cf_nope": "invalid_field", "cf_guest_request_id": "datatype_mismatch"}
	for k, v := range want {
		if errs[k] != v {
			t.Errorf("field %s: code %q, want %q (%s)", k, errs[k], v, a.body)
		}
	}
	if a := f.doAs(key, "text/plain", "POST", "/api/v2/tickets", `{"subject":"s"}`); a.status != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain body: %d, want 415", a.status)
	}
	if a := f.do("POST", "/api/v2/tickets", `{"subject":`); a.status != http.StatusBadRequest || a.errors(t)[""] != "invalid_json" {
		t.Errorf("broken JSON: %d %s", a.status, a.body)
	}
	if a := f.do("DELETE", "/api/v2/tickets", nil); a.status != http.StatusMethodNotAllowed {
		t.Errorf("DELETE /tickets: %d, want 405", a.status)
	}
	if len(f.fake.Tickets()) != 0 {
		t.Errorf("refused creations made tickets: %+v", f.fake.Tickets())
	}
}

func TestCreateViewUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newPipeFixture(t, freshdeskfake.Options{})
		g := f.fake.AddGroup("Housekeeping")
		a := f.do("POST", "/api/v2/tickets", map[string]any{
			"subject": "Towels", "description": "<div style=\"x\">Two <b>towels</b><script>x()</script></div>", "email": "Guest@Hotel.invalid",
			"status": 3, "group_id": g, "tags": []string{"tb"}, "custom_fields": map[string]any{"cf_guest_request_id": "u-1"},
		})
		if a.status != http.StatusCreated || !strings.HasPrefix(a.header.Get("Location"), "/api/v2/tickets/") {
			t.Fatalf("create: %d %s", a.status, a.body)
		}
		var tk ticket
		a.decode(t, &tk)
		if tk.Status != 3 || tk.GroupID == nil || *tk.GroupID != g || tk.CustomFields["cf_guest_request_id"] != "u-1" {
			t.Errorf("created ticket: %+v", tk)
		}
		if v, ok := tk.CustomFields["cf_guest_request_status"]; !ok || v != nil {
			t.Errorf("an unset custom field should read null, got %v (present %v)", v, ok)
		}
		if tk.Description != "<div>Two <b>towels</b></div>" || tk.DescriptionText != "Two towels" {
			t.Errorf("description re-rendered as %q, text %q", tk.Description, tk.DescriptionText)
		}
		time.Sleep(5 * time.Second)
		a = f.do("PUT", fmt.Sprintf("/api/v2/tickets/%d", tk.ID), map[string]any{"status": 4, "custom_fields": map[string]any{"cf_guest_request_status": "4/2"}})
		var up ticket
		a.decode(t, &up)
		if a.status != http.StatusOK || up.Status != 4 || up.CustomFields["cf_guest_request_status"] != "4/2" || up.CustomFields["cf_guest_request_id"] != "u-1" {
			t.Errorf("update: %d %s", a.status, a.body)
		}
		if !up.UpdatedAt.After(tk.UpdatedAt) {
			t.Errorf("update left updated_at at %s", up.UpdatedAt)
		}
		if a := f.do("PUT", fmt.Sprintf("/api/v2/tickets/%d", tk.ID), map[string]any{"email": "x@y.invalid"}); a.status != http.StatusBadRequest || a.errors(t)["email"] != "invalid_field" {
			t.Errorf("update with email: %d %s", a.status, a.body)
		}
		if a := f.do("GET", "/api/v2/tickets/99999", nil); a.status != http.StatusNotFound {
			t.Errorf("unknown ticket: %d", a.status)
		}
		if err := f.fake.Delete(tk.ID); err != nil {
			t.Fatal(err)
		}
		a = f.do("GET", fmt.Sprintf("/api/v2/tickets/%d", tk.ID), nil)
		var del ticket
		a.decode(t, &del)
		if a.status != http.StatusOK || !del.Deleted {
			t.Errorf("deleted ticket view: %d %s", a.status, a.body)
		}
		if a := f.do("PUT", fmt.Sprintf("/api/v2/tickets/%d", tk.ID), map[string]any{"status": 2}); a.status != http.StatusNotFound {
			t.Errorf("update of a deleted ticket: %d, want 404", a.status)
		}
	})
}

func ids(t *testing.T, a answer) []int64 {
	t.Helper()
	var list []ticket
	a.decode(t, &list)
	out := []int64{}
	for _, x := range list {
		out = append(out, x.ID)
	}
	return out
}

func TestListTickets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newPipeFixture(t, freshdeskfake.Options{MaxPerPage: 2, MaxPages: 2})
		old := f.create("old", nil)
		time.Sleep(31 * 24 * time.Hour)
		var recent []int64
		for i := range 3 {
			time.Sleep(time.Second)
			recent = append(recent, f.create(fmt.Sprintf("t%d", i), nil).ID)
		}

		a := f.do("GET", "/api/v2/tickets", nil)
		if got := ids(t, a); fmt.Sprint(got) != fmt.Sprint([]int64{recent[2], recent[1]}) || !strings.Contains(a.header.Get("Link"), `rel="next"`) {
			t.Errorf("default list: %v, Link %q; want the two newest of the last 30 days and a next page", got, a.header.Get("Link"))
		}
		next := a.header.Get("Link")
		if !strings.Contains(next, "page=2") {
			t.Errorf("Link %q does not name page 2", next)
		}
		a = f.do("GET", "/api/v2/tickets?page=2", nil)
		if got := ids(t, a); fmt.Sprint(got) != fmt.Sprint([]int64{recent[0]}) || a.header.Get("Link") != "" {
			t.Errorf("page 2: %v, Link %q; the ticket older than 30 days must be left out", got, a.header.Get("Link"))
		}

		since := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)
		a = f.do("GET", "/api/v2/tickets?updated_since="+since+"&order_by=updated_at&order_type=asc&per_page=2", nil)
		if got := ids(t, a); fmt.Sprint(got) != fmt.Sprint([]int64{old.ID, recent[0]}) {
			t.Errorf("updated_since list: %v, want the old ticket first", got)
		}
		// updated_since includes its own second.
		tk, _ := f.fake.Ticket(recent[1])
		a = f.do("GET", "/api/v2/tickets?order_by=updated_at&order_type=asc&updated_since="+tk.UpdatedAt.Format(time.RFC3339), nil)
		if got := ids(t, a); fmt.Sprint(got) != fmt.Sprint([]int64{recent[1], recent[2]}) {
			t.Errorf("updated_since %s: %v", tk.UpdatedAt, got)
		}

		for _, q := range []string{"page=3", "per_page=3", "page=0", "order_by=colour", "order_type=up", "updated_since=yesterday", "filter=spam", "colour=red"} {
			if a := f.do("GET", "/api/v2/tickets?"+q, nil); a.status != http.StatusBadRequest {
				t.Errorf("?%s: %d %s, want 400", q, a.status, a.body)
			} else if len(a.errors(t)) != 1 {
				t.Errorf("?%s: %s, want one error", q, a.body)
			}
		}
		if a := f.do("GET", "/api/v2/tickets?page=3", nil); !strings.Contains(string(a.body), "beyond the 2th page") {
			t.Errorf("page beyond the last: %s", a.body)
		}
		if err := f.fake.Delete(recent[2]); err != nil {
			t.Fatal(err)
		}
		if got := ids(t, f.do("GET", "/api/v2/tickets?per_page=2", nil)); fmt.Sprint(got) != fmt.Sprint([]int64{recent[1], recent[0]}) {
			t.Errorf("list after a deletion: %v", got)
		}
	})
}

type conversation struct {
	ID       int64  `json:"id"`
	Body     string `json:"body"`
	BodyText string `json:"body_text"`
	Private  bool   `json:"private"`
	Incoming bool   `json:"incoming"`
	Source   int    `json:"source"`
	UserID   int64  `json:"user_id"`
	TicketID int64  `json:"ticket_id"`
}

func TestConversations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newPipeFixture(t, freshdeskfake.Options{MaxPerPage: 2})
		tk := f.create("Kettle", nil)
		path := fmt.Sprintf("/api/v2/tickets/%d", tk.ID)
		time.Sleep(time.Minute)

		a := f.do("POST", path+"/notes", map[string]any{"body": "<div>private by default</div>"})
		var n1 conversation
		a.decode(t, &n1)
		if a.status != http.StatusCreated || !n1.Private || n1.Source != freshdeskfake.SourceNote || n1.UserID != f.fake.APIAgentID() || n1.TicketID != tk.ID {
			t.Errorf("note: %d %s", a.status, a.body)
		}
		a = f.do("POST", path+"/notes", map[string]any{"body": "<div>a&nbsp; b<br><br>&lt;c&gt;</div>", "private": false})
		var n2 conversation
		a.decode(t, &n2)
		if n2.Private || n2.BodyText != "a  b\n\n<c>" {
			t.Errorf("public note: private %v, body_text %q", n2.Private, n2.BodyText)
		}
		maria := f.fake.AddAgent("Maria")
		a = f.do("POST", path+"/reply", map[string]any{"body": "<p>On its way</p>", "user_id": maria})
		var r conversation
		a.decode(t, &r)
		if a.status != http.StatusCreated || r.Source != freshdeskfake.SourceReply || r.Private || r.UserID != maria {
			t.Errorf("reply: %d %s", a.status, a.body)
		}
		for _, body := range []any{map[string]any{}, map[string]any{"body": "<div> </div>"}, map[string]any{"body": "x", "private": "yes"}, map[string]any{"body": "x", "user_id": 1}} {
			if a := f.do("POST", path+"/notes", body); a.status != http.StatusBadRequest {
				t.Errorf("note %v: %d, want 400", body, a.status)
			}
		}
		if a := f.do("POST", "/api/v2/tickets/999/notes", map[string]any{"body": "x"}); a.status != http.StatusNotFound {
			t.Errorf("note on an unknown ticket: %d", a.status)
		}

		a = f.do("GET", path+"/conversations", nil)
		var page1, page2 []conversation
		a.decode(t, &page1)
		if len(page1) != 2 || page1[0].ID != n1.ID || !strings.Contains(a.header.Get("Link"), `rel="next"`) {
			t.Fatalf("conversations page 1: %s Link %q", a.body, a.header.Get("Link"))
		}
		a = f.do("GET", path+"/conversations?page=2", nil)
		a.decode(t, &page2)
		if len(page2) != 1 || page2[0].ID != r.ID || a.header.Get("Link") != "" {
			t.Errorf("conversations page 2: %s Link %q", a.body, a.header.Get("Link"))
		}
		got, _ := f.fake.Ticket(tk.ID)
		if !got.UpdatedAt.After(tk.UpdatedAt) {
			t.Errorf("a note did not move updated_at")
		}
	})
}

func TestRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newPipeFixture(t, freshdeskfake.Options{RateLimit: 2})
		for i, want := range []string{"1", "0"} {
			a := f.do("GET", "/api/v2/agents/me", nil)
			if a.status != http.StatusOK || a.header.Get("X-RateLimit-Total") != "2" || a.header.Get("X-RateLimit-Remaining") != want || a.header.Get("X-RateLimit-Used-CurrentRequest") != "1" {
				t.Errorf("request %d: %d, headers %v", i+1, a.status, a.header)
			}
		}
		time.Sleep(20 * time.Second)
		a := f.do("GET", "/api/v2/agents/me", nil)
		if a.status != http.StatusTooManyRequests || a.header.Get("Retry-After") != "40" || a.header.Get("X-RateLimit-Remaining") != "0" {
			t.Errorf("over budget: %d, headers %v, body %s", a.status, a.header, a.body)
		}
		time.Sleep(40 * time.Second)
		if a := f.do("GET", "/api/v2/agents/me", nil); a.status != http.StatusOK || a.header.Get("X-RateLimit-Remaining") != "1" {
			t.Errorf("next minute: %d, headers %v", a.status, a.header)
		}
		g := newPipeFixture(t, freshdeskfake.Options{})
		if a := g.do("GET", "/api/v2/agents/me", nil); a.header.Get("X-RateLimit-Total") != "" {
			t.Errorf("no budget configured, but the answer carries %v", a.header)
		}
	})
}

func TestFaults(t *testing.T) {
	f := newFixture(t, freshdeskfake.Options{})
	f.fake.Inject(freshdeskfake.Fault{Method: "POST", Path: "/api/v2/tickets", Status: 503, Times: 1})
	if a := f.do("POST", "/api/v2/tickets", map[string]any{"subject": "s", "description": "d", "email": "g@h.invalid"}); a.status != 503 {
		t.Errorf("fault: %d", a.status)
	}
	if len(f.fake.Tickets()) != 0 {
		t.Errorf("a fault before applying made a ticket")
	}
	f.fake.Inject(freshdeskfake.Fault{Path: "/api/v2/tickets", Status: 502, AfterApply: true})
	if a := f.do("POST", "/api/v2/tickets", map[string]any{"subject": "s", "description": "d", "email": "g@h.invalid"}); a.status != 502 {
		t.Errorf("fault after applying: %d", a.status)
	}
	if len(f.fake.Tickets()) != 1 {
		t.Errorf("a fault after applying made %d tickets, want 1", len(f.fake.Tickets()))
	}
	if a := f.do("GET", "/api/v2/agents/me", nil); a.status != http.StatusOK {
		t.Errorf("spent faults still answer: %d", a.status)
	}
	reqs := f.fake.Requests()
	if len(reqs) != 3 || reqs[0].Auth != key || !bytes.Contains(reqs[0].Body, []byte(`"subject"`)) {
		t.Errorf("request log: %+v", reqs)
	}
}

func TestAgentSide(t *testing.T) {
	f := newFixture(t, freshdeskfake.Options{Fields: []freshdeskfake.Field{}})
	tk := f.create("x", nil)
	anna := f.fake.AddAgent("Anna Smith")
	if a, ok := f.fake.Agent(anna); !ok || a.Email != "anna.smith@example.com" {
		t.Errorf("agent: %+v", a)
	}
	text := "  two spaces\n\tand a tab <b>\nlast "
	id, err := f.fake.Reply(tk.ID, anna, text)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := f.fake.Ticket(tk.ID)
	c := got.Conversations[0]
	if c.ID != id || c.BodyText != text || c.Private || c.Source != freshdeskfake.SourceReply {
		t.Errorf("reply stored as %+v, body_text %q, want %q", c, c.BodyText, text)
	}
	if _, err := f.fake.Note(tk.ID, 12345, "x", true); err == nil {
		t.Errorf("a note by an unknown agent was taken")
	}
	if err := f.fake.SetStatus(tk.ID, anna, 9); err == nil {
		t.Errorf("status 9 was taken")
	}
	if err := f.fake.SetField(tk.ID, "cf_guest_request_id", "x"); err == nil {
		t.Errorf("a field the helpdesk lacks was set")
	}
	a := f.do("GET", "/api/v2/ticket_fields", nil)
	var fields []struct{ Name, Type string }
	a.decode(t, &fields)
	for _, fl := range fields {
		if strings.HasPrefix(fl.Name, "cf_") {
			t.Errorf("helpdesk without custom fields lists %s", fl.Name)
		}
	}
	if len(fields) == 0 {
		t.Errorf("no default fields")
	}
}

// Due times follow Freshdesk's rules: computed from the priority until
// set, refused before the creation, before fr_due_by, in a status that
// stops the SLA clock, or null; a bad priority is refused too; every
// refusal is a 400 whose errors name the field.
func TestDueTimes(t *testing.T) {
	f := newFixture(t, freshdeskfake.Options{})
	tk := f.create("Kettle", nil)
	got, _ := f.fake.Ticket(tk.ID)
	if !got.FrDueBy.Equal(got.CreatedAt.Add(24*time.Hour)) || !got.DueBy.Equal(got.CreatedAt.Add(72*time.Hour)) || got.DueSet {
		t.Fatalf("a low-priority ticket's due times: fr %v due %v set %v (created %v)", got.FrDueBy, got.DueBy, got.DueSet, got.CreatedAt)
	}
	path := fmt.Sprintf("/api/v2/tickets/%d", tk.ID)
	if a := f.do("PUT", path, map[string]any{"priority": 4}); a.status != http.StatusOK {
		t.Fatalf("priority 4: %d %s", a.status, a.body)
	}
	got, _ = f.fake.Ticket(tk.ID)
	if !got.DueBy.Equal(got.CreatedAt.Add(4 * time.Hour)) {
		t.Errorf("after priority 4 the SLA's due_by is %v, want 4 hours after creation", got.DueBy)
	}
	created := got.CreatedAt
	for _, tc := range []struct {
		name string
		body map[string]any
		want map[string]string
	}{
		{"before creation", map[string]any{"due_by": fdTime(created.Add(-time.Hour))}, map[string]string{"due_by": "invalid_value"}},
		{"before fr_due_by", map[string]any{"due_by": fdTime(created.Add(30 * time.Minute))}, map[string]string{"due_by": "invalid_value"}},
		{"fr_due_by after due_by", map[string]any{"fr_due_by": fdTime(created.Add(5 * time.Hour))}, map[string]string{"fr_due_by": "invalid_value"}},
		{"null", map[string]any{"due_by": nil}, map[string]string{"due_by": "datatype_mismatch"}},
		{"no date", map[string]any{"due_by": "soon"}, map[string]string{"due_by": "invalid_value"}},
		{"pending", map[string]any{"status": 3, "due_by": fdTime(created.Add(48 * time.Hour))}, map[string]string{"due_by": "incompatible_field"}},
		{"bad priority", map[string]any{"priority": 5}, map[string]string{"priority": "invalid_value"}},
	} {
		a := f.do("PUT", path, tc.body)
		if a.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", tc.name, a.status, a.body)
			continue
		}
		if got := a.errors(t); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: errors %v, want %v", tc.name, got, tc.want)
		}
	}

	// A past due time after the creation is taken, and kept when the
	// priority changes; fr_due_by moves with it in the same update.
	due := created.Add(30 * time.Minute)
	if a := f.do("PUT", path, map[string]any{"due_by": fdTime(due), "fr_due_by": fdTime(due)}); a.status != http.StatusOK {
		t.Fatalf("due_by and fr_due_by: %d %s", a.status, a.body)
	}
	if a := f.do("PUT", path, map[string]any{"priority": 2}); a.status != http.StatusOK {
		t.Fatalf("priority 2: %d %s", a.status, a.body)
	}
	var shown map[string]any
	f.do("GET", path, nil).decode(t, &shown)
	if shown["due_by"] != fdTime(due) || shown["fr_due_by"] != fdTime(due) {
		t.Errorf("due_by %v fr_due_by %v after a priority change, want both %s kept", shown["due_by"], shown["fr_due_by"], fdTime(due))
	}
}

func fdTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// An agent makes a ticket by hand: requested by the agent, a phone
// ticket, open, in no group, no custom field set; the API shows it, and
// an update sets its custom fields.
func TestAgentCreatesTicket(t *testing.T) {
	f := newFixture(t, freshdeskfake.Options{})
	anna := f.fake.AddAgent("Anna Smith")
	id, err := f.fake.CreateTicket(anna, "Towels", "The guest called.\nRoom 12.")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := f.fake.Ticket(id)
	if got.RequesterID != anna || got.Source != freshdeskfake.TicketSourcePhone || got.Status != freshdeskfake.StatusOpen ||
		got.GroupID != 0 || len(got.CustomFields) != 0 || got.DescriptionText != "The guest called.\nRoom 12." || len(got.Conversations) != 0 {
		t.Errorf("ticket made by hand: %+v", got)
	}
	var shown ticket
	f.do("GET", fmt.Sprintf("/api/v2/tickets/%d", id), nil).decode(t, &shown)
	if shown.ID != id || shown.Subject != "Towels" || shown.GroupID != nil || shown.CustomFields["cf_guest_request_id"] != nil {
		t.Errorf("the API shows %+v", shown)
	}
	a := f.do("PUT", fmt.Sprintf("/api/v2/tickets/%d", id), map[string]any{"custom_fields": map[string]any{"cf_guest_request_id": "r1"}})
	if got, _ := f.fake.Ticket(id); a.status != http.StatusOK || got.CustomFields["cf_guest_request_id"] != "r1" {
		t.Errorf("set the id field: %d %s", a.status, a.body)
	}
	if _, err := f.fake.CreateTicket(12345, "x", "y"); err == nil {
		t.Errorf("a ticket by an unknown agent was made")
	}
}
