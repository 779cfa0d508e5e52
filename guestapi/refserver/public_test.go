package refserver_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
)

var start = time.Date(2026, 3, 4, 10, 0, 0, 123456000, time.UTC)

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("answer is not a JSON object: %v: %s", err, a.body)
	}
	return m
}

func (a answer) errorCode(t *testing.T) string {
	t.Helper()
	code, _ := a.json(t)["error"].(string)
	return code
}

type req struct {
	method, path, key, body string
	header                  map[string]string
}

func do(t *testing.T, ts *refservertest.TestServer, r req) answer {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequestWithContext(t.Context(), r.method, ts.URL+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.key != "" {
		hr.Header.Set("Authorization", "Bearer "+r.key)
	}
	if r.body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	resp, err := ts.Client().Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q, want application/json", r.method, r.path, ct)
	}
	return answer{resp.StatusCode, resp.Header, b}
}

// fixture is a test server on a fake clock with one ticket per
// organisation.
type fixture struct {
	ts          *refservertest.TestServer
	clock       *refservertest.Clock
	ticket      string // in Org
	otherTicket string // in OtherOrg
}

func newFixture(t *testing.T, opts ...refservertest.Option) *fixture {
	t.Helper()
	clock := refservertest.NewClock(start)
	ts := refservertest.New(t, append(opts, func(o *refserver.Options) {
		o.Now = clock.Now
		if o.Sleep == nil {
			o.Sleep = clock.Sleep
		}
	})...)
	f := &fixture{ts: ts, clock: clock}
	tv, err := ts.Server.CreateTicket(ts.Org, refserver.NewTicket{Department: "housekeeping", TaskDescription: "Towels to 214"})
	if err != nil {
		t.Fatal(err)
	}
	f.ticket = tv.ID
	if _, err := ts.Server.AddMessage(tv.ID, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, AuthorName: "Anna", Body: "Two towels please"}); err != nil {
		t.Fatal(err)
	}
	ov, err := ts.Server.CreateTicket(ts.OtherOrg, refserver.NewTicket{Department: "front_desk", TaskDescription: "Other org's request"})
	if err != nil {
		t.Fatal(err)
	}
	f.otherTicket = ov.ID
	return f
}

var tsRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$`)

func TestListWireForm(t *testing.T) {
	f := newFixture(t)
	a := do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets", key: f.ts.Keys.TicketsRead})
	if a.status != 200 {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	var raw struct {
		Tickets []map[string]any `json:"tickets"`
	}
	if err := json.Unmarshal(a.body, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Tickets) != 1 {
		t.Fatalf("got %d tickets, want 1 (the other organisation's must not show): %s", len(raw.Tickets), a.body)
	}
	it := raw.Tickets[0]
	for _, f := range []string{"id", "department", "status", "task_description", "origin", "guest_rating", "target_due_at", "created_at", "updated_at"} {
		if _, ok := it[f]; !ok {
			t.Errorf("list item lacks %s: %s", f, a.body)
		}
	}
	if _, ok := it["comments"]; ok {
		t.Errorf("list item has comments: %s", a.body)
	}
	for _, f := range []string{"created_at", "updated_at"} {
		if s, _ := it[f].(string); !tsRE.MatchString(s) {
			t.Errorf("%s = %q, want microseconds and +00:00", f, s)
		}
	}
}

func TestSingleTicketWireForm(t *testing.T) {
	f := newFixture(t)
	comment := "Spare towels in the basement"
	tv, err := f.ts.Server.CreateTicket(f.ts.Org, refserver.NewTicket{Department: "housekeeping", TaskDescription: "Quiet", Comments: &comment,
		TargetDueAt: ptrTime(start.Add(time.Hour))})
	if err != nil {
		t.Fatal(err)
	}
	a := do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets/" + tv.ID, key: f.ts.Keys.TicketsRead})
	if a.status != 200 {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	var raw struct {
		Ticket   map[string]any   `json:"ticket"`
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(a.body, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw.Ticket["target_due_at"]; ok {
		t.Errorf("single ticket has target_due_at: %s", a.body)
	}
	if raw.Ticket["comments"] != comment {
		t.Errorf("comments = %v, want %q", raw.Ticket["comments"], comment)
	}
	if raw.Messages == nil || len(raw.Messages) != 0 || !strings.Contains(string(a.body), `"messages":[]`) {
		t.Errorf("a ticket without thread must have an empty messages array: %s", a.body)
	}

	// A ticket with a thread: oldest first, every timestamp in the spec's form.
	f.clock.Advance(time.Minute)
	if _, err := f.ts.Server.AddMessage(f.ticket, refserver.ConsoleMessage{AuthorType: guestapi.AuthorStaff, Body: "On the way", VisibleToGuest: ptrBool(false)}); err != nil {
		t.Fatal(err)
	}
	a = do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets/" + f.ticket, key: f.ts.Keys.TicketsWrite})
	var th guestapi.Thread
	if err := json.Unmarshal(a.body, &th); err != nil {
		t.Fatal(err)
	}
	if len(th.Messages) != 2 || th.Messages[0].Body != "Two towels please" || th.Messages[1].Body != "On the way" {
		t.Fatalf("thread not oldest first: %s", a.body)
	}
	if th.Messages[1].VisibleToGuest || th.Messages[1].AuthorType != guestapi.AuthorStaff {
		t.Errorf("internal note came back as %+v", th.Messages[1])
	}
	if raw := regexp.MustCompile(`"(created_at|updated_at)":"([^"]*)"`).FindAllStringSubmatch(string(a.body), -1); len(raw) != 4 {
		t.Errorf("want 4 timestamps, got %d: %s", len(raw), a.body)
	} else {
		for _, m := range raw {
			if !tsRE.MatchString(m[2]) {
				t.Errorf("%s = %q, not the spec's form", m[1], m[2])
			}
		}
	}
	if _, ok := raw.Ticket["comments"]; !ok {
		t.Errorf("single ticket lacks comments")
	}
}

func ptrTime(t time.Time) *time.Time { return &t }
func ptrBool(b bool) *bool           { return &b }

func TestListOrderLimitAndFilters(t *testing.T) {
	f := newFixture(t)
	srv := f.ts.Server
	for i := range 210 {
		dept, st := "housekeeping", guestapi.StatusNew
		if i%3 == 0 {
			dept, st = "maintenance", guestapi.StatusDone
		}
		if _, err := srv.CreateTicket(f.ts.Org, refserver.NewTicket{Department: dept, Status: st, TaskDescription: "r",
			CreatedAt: start.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	list := func(query string) []guestapi.Ticket {
		t.Helper()
		a := do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets" + query, key: f.ts.Keys.TicketsRead})
		if a.status != 200 {
			t.Fatalf("%s: %d %s", query, a.status, a.body)
		}
		var l guestapi.TicketList
		if err := json.Unmarshal(a.body, &l); err != nil {
			t.Fatal(err)
		}
		return l.Tickets
	}
	if got := list(""); len(got) != 50 {
		t.Errorf("default limit: got %d, want 50", len(got))
	}
	all := list("?limit=1000")
	if len(all) != 200 {
		t.Errorf("limit 1000: got %d, want at most 200", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].CreatedAt.After(all[i-1].CreatedAt) {
			t.Fatalf("not newest first at %d: %v after %v", i, all[i].CreatedAt, all[i-1].CreatedAt)
		}
	}
	if got := list("?limit=7"); len(got) != 7 {
		t.Errorf("limit 7: got %d", len(got))
	}
	for _, tk := range list("?status=done&limit=200") {
		if tk.Status != guestapi.StatusDone || tk.Department != "maintenance" {
			t.Fatalf("status filter let through %+v", tk)
		}
	}
	if got := list("?status=done&limit=200"); len(got) != 70 {
		t.Errorf("status=done: got %d, want 70", len(got))
	}
	if got := list("?department=maintenance&status=new"); len(got) != 0 {
		t.Errorf("department and status combine: got %d, want 0", len(got))
	}
	if got := list("?status=confirmed"); len(got) != 0 {
		t.Errorf("confirmed is a valid filter with no match: got %d", len(got))
	}
	for _, q := range []string{"?limit=0", "?limit=-1", "?limit=abc", "?limit=", "?limit=1.5"} {
		a := do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets" + q, key: f.ts.Keys.TicketsRead})
		if a.status != 400 || !strings.Contains(a.json(t)["message"].(string), "limit") {
			t.Errorf("%s: got %d %s, want 400 naming limit", q, a.status, a.body)
		}
	}
	for _, q := range []string{"?status=open", "?status=", "?status=NEW"} {
		a := do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets" + q, key: f.ts.Keys.TicketsRead})
		var eb guestapi.ErrorBody
		_ = json.Unmarshal(a.body, &eb)
		if a.status != 400 || eb.Error != "invalid_status" || len(eb.Allowed) != 7 {
			t.Errorf("%s: got %d %s, want 400 invalid_status with the seven statuses", q, a.status, a.body)
		}
	}
}

var ticketEndpoints = []struct{ method, suffix, body string }{
	{"GET", "", ""},
	{"GET", "/{id}", ""},
	{"POST", "/{id}/messages", `{"body":"hello"}`},
	{"POST", "/{id}/status", `{"status":"done"}`},
}

func ticketPath(suffix, id string) string {
	return "/ops-public-api/v1/tickets" + strings.ReplaceAll(suffix, "{id}", id)
}

func TestUnauthorized(t *testing.T) {
	f := newFixture(t)
	tok := exchange(t, f.ts, f.ts.Keys.AdminTicketsWrite)
	cases := map[string]map[string]string{
		"missing":         {},
		"not bearer":      {"Authorization": "Basic " + f.ts.Keys.TicketsWrite},
		"bearer no value": {"Authorization": "Bearer "},
		"no prefix":       {"Authorization": "Bearer abc"},
		"unknown":         {"Authorization": "Bearer rta_doesnotexist"},
		"revoked":         {"Authorization": "Bearer " + f.ts.Keys.Revoked},
		"expired":         {"Authorization": "Bearer " + f.ts.Keys.Expired},
		"access token":    {"Authorization": "Bearer " + tok},
	}
	for name, h := range cases {
		for _, ep := range ticketEndpoints {
			a := do(t, f.ts, req{method: ep.method, path: ticketPath(ep.suffix, f.ticket), body: ep.body, header: h})
			if a.status != 401 || a.errorCode(t) != "unauthorized" {
				t.Errorf("%s, %s %s: got %d %s, want 401 unauthorized", name, ep.method, ep.suffix, a.status, a.body)
			}
		}
	}
}

func TestRightsAreIndependent(t *testing.T) {
	f := newFixture(t)
	k := f.ts.Keys
	cases := []struct {
		name, key string
		want      [4]int // per ticketEndpoints
		need      string
	}{
		{"tickets write", k.TicketsWrite, [4]int{200, 200, 200, 200}, ""},
		{"admin and tickets write", k.AdminTicketsWrite, [4]int{200, 200, 200, 200}, ""},
		{"tickets read", k.TicketsRead, [4]int{200, 200, 403, 403}, "tickets:write"},
		{"platform admin, tickets none", k.TicketsNoneAdmin, [4]int{403, 403, 403, 403}, ""},
		{"platform write, tickets none", k.PlatformWrite, [4]int{403, 403, 403, 403}, ""},
		{"platform read, tickets none", k.PlatformRead, [4]int{403, 403, 403, 403}, ""},
		{"nothing", k.TicketsNone, [4]int{403, 403, 403, 403}, ""},
	}
	for _, c := range cases {
		for i, ep := range ticketEndpoints {
			a := do(t, f.ts, req{method: ep.method, path: ticketPath(ep.suffix, f.ticket), key: c.key, body: ep.body})
			if a.status != c.want[i] {
				t.Errorf("%s, %s %s: got %d %s, want %d", c.name, ep.method, ep.suffix, a.status, a.body, c.want[i])
				continue
			}
			if a.status == 403 {
				need := "tickets:read"
				if ep.method == "POST" {
					need = "tickets:write"
				}
				m := a.json(t)
				if m["error"] != "forbidden" || m["need"] != need {
					t.Errorf("%s, %s %s: got %s, want forbidden with need %s", c.name, ep.method, ep.suffix, a.body, need)
				}
			}
		}
	}
}

func TestForeignAndUnknownTicketsAre404(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{f.otherTicket, "00000000-0000-4000-8000-000000000000", "not-a-uuid"} {
		for _, ep := range ticketEndpoints[1:] {
			a := do(t, f.ts, req{method: ep.method, path: ticketPath(ep.suffix, id), key: f.ts.Keys.TicketsWrite, body: ep.body})
			if a.status != 404 || a.errorCode(t) != "not_found" {
				t.Errorf("%s %s on %s: got %d %s, want 404 not_found", ep.method, ep.suffix, id, a.status, a.body)
			}
		}
	}
	v, err := f.ts.Server.Ticket(f.otherTicket)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Messages) != 0 || v.Ticket.Status != guestapi.StatusNew {
		t.Errorf("another organisation's ticket was changed: %+v", v)
	}
	// And the owner sees it.
	a := do(t, f.ts, req{method: "GET", path: ticketPath("/{id}", f.otherTicket), key: f.ts.Keys.OtherTicketsWrite})
	if a.status != 200 {
		t.Errorf("owner: got %d", a.status)
	}
}

func TestUnsupportedVersion(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{"/ops-public-api/v2/tickets", "/ops-public-api/v0/tickets/" + f.ticket, "/ops-public-api/V1/tickets",
		"/ops-public-api/tickets", "/ops-public-api/v2/tickets/" + f.ticket + "/messages"} {
		for _, key := range []string{f.ts.Keys.TicketsWrite, ""} {
			a := do(t, f.ts, req{method: "GET", path: p, key: key})
			if a.status != 400 || a.errorCode(t) != "unsupported_version" {
				t.Errorf("%s: got %d %s, want 400 unsupported_version", p, a.status, a.body)
			}
		}
	}
}

func TestWrongMethodAndUnknownPath(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ method, path, allow string }{
		{"POST", "/ops-public-api/v1/tickets", "GET"},
		{"DELETE", "/ops-public-api/v1/tickets/" + f.ticket, "GET"},
		{"GET", "/ops-public-api/v1/tickets/" + f.ticket + "/messages", "POST"},
		{"PUT", "/ops-public-api/v1/tickets/" + f.ticket + "/status", "POST"},
		{"GET", "/api-auth/token", "POST"},
		{"GET", "/api-auth/verify", "POST"},
	} {
		a := do(t, f.ts, req{method: c.method, path: c.path, key: f.ts.Keys.TicketsWrite})
		if a.status != 405 || a.header.Get("Allow") != c.allow {
			t.Errorf("%s %s: got %d Allow %q, want 405 Allow %s", c.method, c.path, a.status, a.header.Get("Allow"), c.allow)
		}
		a.errorCode(t) // a JSON error body
	}
	for _, p := range []string{"/", "/ops-public-api/v1/rooms", "/ops-public-api/v1/tickets/" + f.ticket + "/close", "/ops-public-api/v1/tickets//status", "/api-auth"} {
		a := do(t, f.ts, req{method: "GET", path: p, key: f.ts.Keys.TicketsWrite})
		if a.status != 404 || a.errorCode(t) != "not_found" {
			t.Errorf("%s: got %d %s, want 404 not_found", p, a.status, a.body)
		}
	}
}

func TestPostMessage(t *testing.T) {
	f := newFixture(t)
	before, _ := f.ts.Server.Ticket(f.ticket)
	f.clock.Advance(time.Minute)
	a := do(t, f.ts, req{method: "POST", path: ticketPath("/{id}/messages", f.ticket), key: f.ts.Keys.TicketsWrite,
		body: `{"body":"Towels are on the way","visible_to_guest":true}`})
	var res guestapi.PostMessageResult
	if err := json.Unmarshal(a.body, &res); err != nil || a.status != 200 || !res.Success || !isUUID(res.MessageID) {
		t.Fatalf("got %d %s", a.status, a.body)
	}
	a = do(t, f.ts, req{method: "POST", path: ticketPath("/{id}/messages", f.ticket), key: f.ts.Keys.TicketsWrite,
		body: `{"body":"internal","author_name":"Bridge","unknown_field":1}`})
	if a.status != 200 {
		t.Fatalf("got %d %s", a.status, a.body)
	}
	v, _ := f.ts.Server.Ticket(f.ticket)
	if len(v.Messages) != 3 {
		t.Fatalf("got %d messages", len(v.Messages))
	}
	m := v.Messages[1]
	if m.ID != res.MessageID || m.AuthorType != guestapi.AuthorStaff || m.AuthorName != "API" || !m.VisibleToGuest || m.Source != "api" || !m.External {
		t.Errorf("posted message is %+v", m)
	}
	if n := v.Messages[2]; n.AuthorName != "Bridge" || n.VisibleToGuest {
		t.Errorf("named internal note is %+v", n)
	}
	if v.Messages[0].Source != "console" || v.Messages[0].External {
		t.Errorf("console message is %+v", v.Messages[0])
	}
	if !v.Ticket.UpdatedAt.After(before.Ticket.UpdatedAt) || !v.Ticket.UpdatedAt.Equal(m.CreatedAt) {
		t.Errorf("updated_at %v did not move to the message's time %v", v.Ticket.UpdatedAt, m.CreatedAt)
	}
	if len(v.GuestView.Messages) != 2 {
		t.Errorf("guest sees %d messages, want 2 (the internal note hidden)", len(v.GuestView.Messages))
	}
}

func TestPostMessageBadBodies(t *testing.T) {
	f := newFixture(t, refservertest.WithOptions(refserver.Options{ConsoleToken: "c", MaxMessageBytes: 100, MaxRequestBytes: 1000}))
	big := strings.Repeat("x", 101)
	cases := []struct{ body, code, mention string }{
		{``, "body_required", "body"},
		{`   `, "body_required", "body"},
		{`null`, "body_required", "body"},
		{`{}`, "body_required", "body"},
		{`{"body":null}`, "body_required", "body"},
		{`{"body":""}`, "body_required", "body"},
		{`{"body":" \n\t "}`, "body_required", "body"},
		{`{"visible_to_guest":true}`, "body_required", "body"},
		{`{"body":`, "bad_request", "JSON"},
		{`{"body":"a"} x`, "bad_request", "JSON"},
		{`[1]`, "bad_request", "JSON object"},
		{`"text"`, "bad_request", "JSON object"},
		{`{"body":42}`, "bad_request", "body must be a string"},
		{`{"body":"a","visible_to_guest":"yes"}`, "bad_request", "visible_to_guest"},
		{`{"body":"a","author_name":7}`, "bad_request", "author_name"},
		{`{"body":"` + big + `"}`, "bad_request", "limit is 100 bytes"},
		{`{"body":"a","pad":"` + strings.Repeat("y", 1000) + `"}`, "bad_request", "larger than the limit of 1000 bytes"},
	}
	for _, c := range cases {
		a := do(t, f.ts, req{method: "POST", path: ticketPath("/{id}/messages", f.ticket), key: f.ts.Keys.TicketsWrite, body: c.body,
			header: map[string]string{"Content-Type": "application/json"}})
		m := a.json(t)
		if a.status != 400 || m["error"] != c.code || !strings.Contains(m["message"].(string), c.mention) {
			t.Errorf("body %.40q: got %d %s, want 400 %s mentioning %q", c.body, a.status, a.body, c.code, c.mention)
		}
	}
	a := do(t, f.ts, req{method: "POST", path: ticketPath("/{id}/messages", f.ticket), key: f.ts.Keys.TicketsWrite, body: `{"body":"a"}`,
		header: map[string]string{"Content-Type": "text/plain"}})
	if a.status != 400 || !strings.Contains(a.json(t)["message"].(string), "Content-Type") {
		t.Errorf("text/plain: got %d %s", a.status, a.body)
	}
	v, _ := f.ts.Server.Ticket(f.ticket)
	if len(v.Messages) != 1 {
		t.Errorf("a refused request added a message: %d messages", len(v.Messages))
	}
}

func TestPostStatus(t *testing.T) {
	f := newFixture(t)
	for _, st := range guestapi.SettableStatuses() {
		f.clock.Advance(time.Second)
		a := do(t, f.ts, req{method: "POST", path: ticketPath("/{id}/status", f.ticket), key: f.ts.Keys.TicketsWrite, body: `{"status":"` + string(st) + `"}`})
		var res guestapi.SetStatusResult
		if err := json.Unmarshal(a.body, &res); err != nil || a.status != 200 || !res.Success || res.Status != st {
			t.Fatalf("%s: got %d %s", st, a.status, a.body)
		}
	}
	// Any settable status may follow any, the same one included.
	a := do(t, f.ts, req{method: "POST", path: ticketPath("/{id}/status", f.ticket), key: f.ts.Keys.TicketsWrite, body: `{"status":"cancelled"}`})
	if a.status != 200 {
		t.Fatalf("same status again: %d %s", a.status, a.body)
	}
	for _, body := range []string{`{"status":"confirmed"}`, `{"status":"closed"}`, `{"status":""}`, `{}`, ``, `{"status":3}`, `{"status":null}`} {
		a := do(t, f.ts, req{method: "POST", path: ticketPath("/{id}/status", f.ticket), key: f.ts.Keys.TicketsWrite, body: body})
		var eb guestapi.ErrorBody
		_ = json.Unmarshal(a.body, &eb)
		if a.status != 400 || eb.Error != "invalid_status" || strings.Join(eb.Allowed, ",") != "new,assigned,in_progress,done,completed,cancelled" {
			t.Errorf("%s: got %d %s, want invalid_status with the six settable values", body, a.status, a.body)
		}
	}
	v, _ := f.ts.Server.Ticket(f.ticket)
	if v.Ticket.Status != guestapi.StatusCancelled || len(v.Operations) != 7 {
		t.Fatalf("status %s with %d operations", v.Ticket.Status, len(v.Operations))
	}
	op := v.Operations[0]
	if op.Op != "status" || op.From != "new" || op.To != "new" || op.Source != "api" || !op.External {
		t.Errorf("first operation is %+v", op)
	}
	if v.Operations[1].From != "new" || v.Operations[1].To != "assigned" {
		t.Errorf("second operation is %+v", v.Operations[1])
	}
}

func TestIdempotentRepeat(t *testing.T) {
	f := newFixture(t)
	post := func(id, key, body string) answer {
		return do(t, f.ts, req{method: "POST", path: ticketPath("/{id}/messages", id), key: key, body: body,
			header: map[string]string{"Idempotency-Key": "op-1"}})
	}
	first := post(f.ticket, f.ts.Keys.TicketsWrite, `{"body":"once"}`)
	f.clock.Advance(23 * time.Hour)
	again := post(f.ticket, f.ts.Keys.AdminTicketsWrite, `{"body":"once"}`)
	if first.status != 200 || again.status != first.status || !bytes.Equal(first.body, again.body) {
		t.Fatalf("repeat differs:\n%d %s\n%d %s", first.status, first.body, again.status, again.body)
	}
	// Another body, another ticket, another endpoint: the stored first answer.
	tv, _ := f.ts.Server.CreateTicket(f.ts.Org, refserver.NewTicket{Department: "x", TaskDescription: "y"})
	other := post(tv.ID, f.ts.Keys.TicketsWrite, `{"body":"something else"}`)
	status := do(t, f.ts, req{method: "POST", path: ticketPath("/{id}/status", f.ticket), key: f.ts.Keys.TicketsWrite, body: `{"status":"done"}`,
		header: map[string]string{"Idempotency-Key": "op-1"}})
	if !bytes.Equal(other.body, first.body) || !bytes.Equal(status.body, first.body) {
		t.Errorf("reuse of the key did not replay the first answer: %s / %s", other.body, status.body)
	}
	v, _ := f.ts.Server.Ticket(f.ticket)
	w, _ := f.ts.Server.Ticket(tv.ID)
	if len(v.Messages) != 2 || len(w.Messages) != 0 || v.Ticket.Status != guestapi.StatusNew {
		t.Errorf("repeats changed something: %d messages, %d on the other ticket, status %s", len(v.Messages), len(w.Messages), v.Ticket.Status)
	}
	// A replay never answers success on another organisation's ticket.
	if foreign := post(f.otherTicket, f.ts.Keys.TicketsWrite, `{"body":"once"}`); foreign.status != 404 {
		t.Errorf("replay on a foreign ticket: %d %s, want 404", foreign.status, foreign.body)
	}
	// The other organisation has its own keys.
	o := post(f.otherTicket, f.ts.Keys.OtherTicketsWrite, `{"body":"theirs"}`)
	if o.status != 200 || bytes.Equal(o.body, first.body) {
		t.Errorf("the other organisation got %d %s", o.status, o.body)
	}
	// After the retention, the key is new again.
	f.clock.Advance(time.Hour)
	late := post(f.ticket, f.ts.Keys.TicketsWrite, `{"body":"once"}`)
	if late.status != 200 || bytes.Equal(late.body, first.body) {
		t.Errorf("after 24 h: got %d %s, want a new message", late.status, late.body)
	}
	if v, _ := f.ts.Server.Ticket(f.ticket); len(v.Messages) != 3 {
		t.Errorf("after 24 h: %d messages, want 3", len(v.Messages))
	}
}

func TestIdempotencyKeepsOnlySuccess(t *testing.T) {
	f := newFixture(t, refservertest.WithOptions(refserver.Options{ConsoleToken: "c", IdempotencyTTL: time.Minute}))
	h := map[string]string{"Idempotency-Key": "k"}
	a := do(t, f.ts, req{method: "POST", path: ticketPath("/{id}/messages", f.ticket), key: f.ts.Keys.TicketsWrite, body: `{"body":""}`, header: h})
	if a.status != 400 {
		t.Fatalf("got %d", a.status)
	}
	a = do(t, f.ts, req{method: "POST", path: ticketPath("/{id}/messages", f.ticket), key: f.ts.Keys.TicketsWrite, body: `{"body":"fixed"}`, header: h})
	if a.status != 200 {
		t.Fatalf("corrected request with the same key: %d %s", a.status, a.body)
	}
	long := map[string]string{"Idempotency-Key": strings.Repeat("k", 256)}
	a = do(t, f.ts, req{method: "POST", path: ticketPath("/{id}/messages", f.ticket), key: f.ts.Keys.TicketsWrite, body: `{"body":"x"}`, header: long})
	if a.status != 400 || !strings.Contains(string(a.body), "Idempotency-Key") {
		t.Errorf("256-character key: got %d %s", a.status, a.body)
	}
}

func TestIdempotencyUnderConcurrency(t *testing.T) {
	f := newFixture(t)
	const n = 16
	bodies := make(chan string, n)
	for range n {
		go func() {
			hr, _ := http.NewRequest("POST", f.ts.BaseURL+"/tickets/"+f.ticket+"/messages", strings.NewReader(`{"body":"race"}`))
			hr.Header.Set("Authorization", "Bearer "+f.ts.Keys.TicketsWrite)
			hr.Header.Set("Idempotency-Key", "same")
			resp, err := f.ts.Client().Do(hr)
			if err != nil {
				bodies <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			bodies <- string(b)
		}()
	}
	first := <-bodies
	for range n - 1 {
		if b := <-bodies; b != first {
			t.Errorf("answers differ: %s vs %s", b, first)
		}
	}
	if v, _ := f.ts.Server.Ticket(f.ticket); len(v.Messages) != 2 {
		t.Errorf("%d messages, want 2", len(v.Messages))
	}
}

func TestKeyExpiryRevocationAndLastUse(t *testing.T) {
	f := newFixture(t)
	k, err := f.ts.Server.IssueKey(f.ts.Org, refserver.KeySpec{Name: "month", Tickets: refserver.TicketsRead, ValidityDays: 30})
	if err != nil {
		t.Fatal(err)
	}
	get := func() int {
		return do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets", key: k.Value}).status
	}
	if got := get(); got != 200 {
		t.Fatalf("fresh key: %d", got)
	}
	keys, _ := f.ts.Server.Keys(f.ts.Org)
	for _, ki := range keys {
		if ki.Name == "month" {
			if ki.LastUsedAt == nil || !ki.LastUsedAt.Equal(start.Truncate(time.Microsecond)) || ki.Prefix != k.Value[:8] {
				t.Errorf("key table row %+v", ki)
			}
			if ki.ExpiresAt == nil || !ki.ExpiresAt.Equal(start.Truncate(time.Microsecond).Add(30*24*time.Hour)) {
				t.Errorf("expiry %v", ki.ExpiresAt)
			}
		}
	}
	f.clock.Advance(30*24*time.Hour - time.Microsecond)
	if got := get(); got != 200 {
		t.Fatalf("just before expiry: %d", got)
	}
	f.clock.Advance(time.Microsecond)
	if got := get(); got != 401 {
		t.Fatalf("at expiry: %d, want 401", got)
	}
	if got := do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets", key: f.ts.Keys.TicketsRead}).status; got != 200 {
		t.Fatalf("unlimited key: %d", got)
	}
	if err := f.ts.Server.RevokeKey(f.ts.Org, "tickets-read"); err != nil {
		t.Fatal(err)
	}
	if got := do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets", key: f.ts.Keys.TicketsRead}).status; got != 401 {
		t.Fatalf("revoked key, next request: %d, want 401", got)
	}
	for _, days := range []int{1, 31, -30, 366} {
		if _, err := f.ts.Server.IssueKey(f.ts.Org, refserver.KeySpec{Name: "bad", ValidityDays: days}); err == nil || !strings.Contains(err.Error(), "validity_days") {
			t.Errorf("validity %d: got %v", days, err)
		}
	}
}

func TestTicketRateLimit(t *testing.T) {
	f := newFixture(t, refservertest.WithOptions(refserver.Options{ConsoleToken: "c", TicketRateLimit: refserver.RateLimit{Requests: 3, Window: 10 * time.Second}}))
	get := func(key string) answer {
		return do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets", key: key})
	}
	for range 3 {
		if a := get(f.ts.Keys.TicketsRead); a.status != 200 {
			t.Fatalf("within the limit: %d", a.status)
		}
	}
	a := get(f.ts.Keys.TicketsRead)
	if a.status != 429 || a.header.Get("Retry-After") != "10" || a.errorCode(t) != "rate_limited" {
		t.Fatalf("over the limit: %d Retry-After %q %s", a.status, a.header.Get("Retry-After"), a.body)
	}
	if a := get(f.ts.Keys.TicketsWrite); a.status != 200 {
		t.Errorf("another key is limited on its own: %d", a.status)
	}
	f.clock.Advance(10 * time.Second)
	if a := get(f.ts.Keys.TicketsRead); a.status != 200 {
		t.Errorf("after the window: %d", a.status)
	}
}

func isUUID(s string) bool {
	return regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(s)
}
