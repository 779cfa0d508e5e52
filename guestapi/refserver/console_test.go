package refserver_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
)

func console(t *testing.T, f *fixture, method, path, body string) answer {
	t.Helper()
	return do(t, f.ts, req{method: method, path: "/console/v1" + path, key: f.ts.ConsoleToken, body: body})
}

func TestConsoleAuth(t *testing.T) {
	f := newFixture(t)
	for name, h := range map[string]map[string]string{
		"missing":  {},
		"wrong":    {"Authorization": "Bearer nope"},
		"api key":  {"Authorization": "Bearer " + f.ts.Keys.AdminTicketsWrite},
		"prefix":   {"Authorization": "Bearer " + f.ts.ConsoleToken[:len(f.ts.ConsoleToken)-1]},
		"not bear": {"Authorization": f.ts.ConsoleToken},
	} {
		for _, p := range []string{"/stats", "/tickets/" + f.ticket, "/keys?organization=" + f.ts.Org} {
			a := do(t, f.ts, req{method: "GET", path: "/console/v1" + p, header: h})
			if a.status != 401 || a.errorCode(t) != "unauthorized" {
				t.Errorf("%s on %s: got %d %s", name, p, a.status, a.body)
			}
		}
	}
}

func TestConsoleTicketLifecycle(t *testing.T) {
	f := newFixture(t)
	a := console(t, f, "POST", "/tickets", `{"organization":"`+f.ts.Org+`","department":"maintenance","task_description":"Broken lamp in 305",
		"target_due_at":"2026-03-04T12:00:00+00:00","comments":"spare in store B"}`)
	if a.status != 201 {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	m := a.json(t)
	id, _ := m["id"].(string)
	if !isUUID(id) || m["status"] != "new" || m["origin"] != "guest" || m["target_due_at"] != "2026-03-04T12:00:00.000000+00:00" ||
		m["comments"] != "spare in store B" || m["organization"] != f.ts.Org {
		t.Fatalf("created %s", a.body)
	}
	for _, c := range []struct{ author, body string }{{"guest", "It flickers"}, {"staff", "On it"}, {"ai", "Passed on"}, {"system", "Assigned"}} {
		f.clock.Advance(time.Minute)
		a := console(t, f, "POST", "/tickets/"+id+"/messages", `{"author_type":"`+c.author+`","body":"`+c.body+`"}`)
		if a.status != 201 || a.json(t)["author_type"] != c.author || a.json(t)["visible_to_guest"] != true {
			t.Fatalf("message as %s: %d %s", c.author, a.status, a.body)
		}
	}
	a = console(t, f, "POST", "/tickets/"+id+"/messages", `{"author_type":"staff","author_name":"Jonas","body":"note","visible_to_guest":false}`)
	if a.status != 201 || a.json(t)["author_name"] != "Jonas" {
		t.Fatalf("named note: %d %s", a.status, a.body)
	}
	for _, st := range guestapi.Statuses() {
		a := console(t, f, "POST", "/tickets/"+id+"/status", `{"status":"`+string(st)+`"}`)
		if a.status != 200 || a.json(t)["status"] != string(st) {
			t.Fatalf("status %s: %d %s", st, a.status, a.body)
		}
	}
	a = console(t, f, "POST", "/tickets/"+id+"/rating", `{"guest_rating":4.5}`)
	if a.status != 200 || a.json(t)["guest_rating"] != 4.5 {
		t.Fatalf("rating: %d %s", a.status, a.body)
	}
	// The API sees what the console did.
	api := do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets/" + id, key: f.ts.Keys.TicketsRead})
	var th guestapi.Thread
	if err := json.Unmarshal(api.body, &th); err != nil {
		t.Fatal(err)
	}
	if th.Ticket.Status != guestapi.StatusCancelled || *th.Ticket.GuestRating != 4.5 || len(th.Messages) != 5 {
		t.Errorf("API view %s", api.body)
	}
	do(t, f.ts, req{method: "POST", path: "/ops-public-api/v1/tickets/" + id + "/messages", key: f.ts.Keys.TicketsWrite, body: `{"body":"from the bridge"}`})
	a = console(t, f, "GET", "/tickets/"+id, "")
	var view struct {
		Ticket   map[string]any `json:"ticket"`
		Messages []struct {
			Source   string `json:"source"`
			External bool   `json:"external"`
			Body     string `json:"body"`
		} `json:"messages"`
		Operations []struct {
			Op, From, To, Source string
			External             bool
		} `json:"operations"`
		GuestView struct {
			Status   string             `json:"status"`
			Messages []guestapi.Message `json:"messages"`
		} `json:"guest_view"`
	}
	if err := json.Unmarshal(a.body, &view); err != nil || a.status != 200 {
		t.Fatalf("internal view: %d %s", a.status, a.body)
	}
	if len(view.Messages) != 6 || view.Messages[0].Source != "console" || view.Messages[5].Source != "api" || !view.Messages[5].External {
		t.Errorf("messages %+v", view.Messages)
	}
	if len(view.Operations) != 8 || view.Operations[7].Op != "rating" || view.Operations[0].Source != "console" || view.Operations[0].External {
		t.Errorf("operations %+v", view.Operations)
	}
	if len(view.GuestView.Messages) != 4 || view.GuestView.Status != "cancelled" {
		t.Errorf("guest view %+v", view.GuestView)
	}
	if _, ok := view.Ticket["target_due_at"]; !ok {
		t.Errorf("the internal view lacks target_due_at")
	}
	a = console(t, f, "GET", "/tickets?organization="+f.ts.Org, "")
	if a.status != 200 || strings.Count(string(a.body), `"organization"`) != 2 {
		t.Errorf("list: %d %s", a.status, a.body)
	}
}

func TestConsoleErrors(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		method, path, body string
		status             int
		mention            string
	}{
		{"POST", "/tickets", `{"organization":"nope","department":"d","task_description":"x"}`, 404, "nope"},
		{"POST", "/tickets", `{"department":"d","task_description":"x"}`, 400, "organization"},
		{"POST", "/tickets", `{"organization":"` + f.ts.Org + `","task_description":"x"}`, 400, "department"},
		{"POST", "/tickets", `{"organization":"` + f.ts.Org + `","department":"d","task_description":"x","status":"open"}`, 400, "status"},
		{"POST", "/tickets", `{"organization":"` + f.ts.Org + `","department":"d","task_description":"x","origin":"robot"}`, 400, "origin"},
		{"POST", "/tickets", `{"organization":"` + f.ts.Org + `","department":"d","task_description":"x","created_at":"yesterday"}`, 400, "created_at"},
		{"POST", "/tickets", `{"organization":"` + f.ts.Org + `","department":"d","task_description":"x","colour":"red"}`, 400, "colour"},
		{"POST", "/tickets", `{"organization":"` + f.ts.Org + `","id":"` + f.ticket + `","department":"d","task_description":"x"}`, 409, "exists"},
		{"POST", "/tickets/" + f.ticket + "/messages", `{"author_type":"bot","body":"x"}`, 400, "author_type"},
		{"POST", "/tickets/" + f.ticket + "/messages", `{"author_type":"guest","body":" "}`, 400, "body"},
		{"POST", "/tickets/nope/messages", `{"author_type":"guest","body":"x"}`, 404, "nope"},
		{"POST", "/tickets/" + f.ticket + "/status", `{"status":"open"}`, 400, "status"},
		{"POST", "/tickets/" + f.ticket + "/rating", `{"guest_rating":11}`, 400, "guest_rating"},
		{"POST", "/tickets/" + f.ticket + "/fields", `{}`, 400, "no field"},
		{"POST", "/tickets/" + f.ticket + "/fields", `{"department":" "}`, 400, "department"},
		{"POST", "/tickets/" + f.ticket + "/fields", `{"task_description":""}`, 400, "task_description"},
		{"POST", "/tickets/" + f.ticket + "/fields", `{"target_due_at":"tomorrow"}`, 400, "target_due_at"},
		{"POST", "/tickets/" + f.ticket + "/fields", `{"comments":4}`, 400, "comments"},
		{"POST", "/tickets/" + f.ticket + "/fields", `{"priority":"high"}`, 400, "priority"},
		{"POST", "/tickets/nope/fields", `{"department":"d"}`, 404, "nope"},
		{"POST", "/keys", `{"organization":"` + f.ts.Org + `","name":"tickets-write"}`, 409, "tickets-write"},
		{"POST", "/keys", `{"organization":"` + f.ts.Org + `","name":"x","platform":"root"}`, 400, "platform"},
		{"DELETE", "/keys/nope?organization=" + f.ts.Org, "", 404, "nope"},
		{"DELETE", "/keys/tickets-write", "", 400, "organization"},
		{"GET", "/tickets/nope", "", 404, "nope"},
		{"GET", "/nothing", "", 404, "console"},
		{"PUT", "/stats", "", 405, "GET"},
		{"POST", "/tickets", ``, 400, "empty"},
	} {
		a := console(t, f, c.method, c.path, c.body)
		if a.status != c.status || !strings.Contains(string(a.body), c.mention) {
			t.Errorf("%s %s %s: got %d %s, want %d mentioning %q", c.method, c.path, c.body, a.status, a.body, c.status, c.mention)
		}
	}
}

// The console sets a request's department, description, due date and
// comment, each logged, and each moving updated_at to the time of the
// change; a field not given is left, null clears.
func TestConsoleFields(t *testing.T) {
	f := newFixture(t)
	path := "/tickets/" + f.ticket + "/fields"
	before := console(t, f, "GET", "/tickets/"+f.ticket, "").json(t)["ticket"].(map[string]any)
	f.clock.Advance(time.Minute)
	a := console(t, f, "POST", path, `{"department":"maintenance","task_description":"Lamp and kettle","target_due_at":"2026-03-04T12:00:00Z","comments":"spare in store B"}`)
	m := a.json(t)
	if a.status != 200 || m["department"] != "maintenance" || m["task_description"] != "Lamp and kettle" ||
		m["target_due_at"] != "2026-03-04T12:00:00.000000+00:00" || m["comments"] != "spare in store B" || m["updated_at"] == before["updated_at"] {
		t.Fatalf("set fields: %d %s (updated_at before %v)", a.status, a.body, before["updated_at"])
	}
	f.clock.Advance(time.Minute)
	a = console(t, f, "POST", path, `{"target_due_at":null,"comments":null}`)
	m = a.json(t)
	if a.status != 200 || m["target_due_at"] != nil || m["comments"] != nil || m["department"] != "maintenance" {
		t.Fatalf("clear fields: %d %s", a.status, a.body)
	}
	view, err := f.ts.Server.Ticket(f.ticket)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, o := range view.Operations {
		ops = append(ops, o.Op)
	}
	if want := "department task_description target_due_at comments target_due_at comments"; !strings.HasSuffix(strings.Join(ops, " "), want) {
		t.Errorf("operations %v, want them to end with %s", ops, want)
	}
}

func TestConsoleKeys(t *testing.T) {
	f := newFixture(t)
	a := console(t, f, "POST", "/keys", `{"organization":"`+f.ts.Org+`","name":"crm","platform":"read","tickets":"write","validity_days":90}`)
	if a.status != 201 {
		t.Fatalf("issue: %d %s", a.status, a.body)
	}
	value, _ := a.json(t)["value"].(string)
	if !strings.HasPrefix(value, "rta_") || a.json(t)["expires_at"] != "2026-06-02T10:00:00.123456+00:00" {
		t.Fatalf("issued %s", a.body)
	}
	if got := do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets", key: value}).status; got != 200 {
		t.Fatalf("new key: %d", got)
	}
	a = console(t, f, "GET", "/keys?organization="+f.ts.Org, "")
	if a.status != 200 || strings.Contains(string(a.body), value) || !strings.Contains(string(a.body), value[:8]) || !strings.Contains(string(a.body), `"last_used_at":"2026-03-04T10:00:00.123456+00:00"`) {
		t.Errorf("key table: %s", a.body)
	}
	if a := console(t, f, "DELETE", "/keys/crm?organization="+f.ts.Org, ""); a.status != 200 {
		t.Fatalf("revoke: %d %s", a.status, a.body)
	}
	if got := do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets", key: value}).status; got != 401 {
		t.Fatalf("revoked key: %d", got)
	}
	if s := (refserver.IssuedKey{Value: value}).String(); strings.Contains(s, value) {
		t.Errorf("String shows the value: %s", s)
	}
}

func TestConsoleStats(t *testing.T) {
	f := newFixture(t)
	do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets", key: f.ts.Keys.TicketsRead})
	do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets", key: f.ts.Keys.TicketsRead})
	do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets/" + f.otherTicket, key: f.ts.Keys.TicketsRead})
	do(t, f.ts, req{method: "POST", path: "/ops-public-api/v1/tickets/" + f.ticket + "/messages", key: f.ts.Keys.TicketsWrite, body: `{"body":"x"}`,
		header: map[string]string{"Idempotency-Key": "abc"}})
	a := console(t, f, "GET", "/stats", "")
	var st refserver.Stats
	if err := json.Unmarshal(a.body, &st); err != nil {
		t.Fatal(err)
	}
	if st.Requests["GET /ops-public-api/v1/tickets"][200] != 2 || st.Requests["GET /ops-public-api/v1/tickets/{id}"][404] != 1 ||
		st.Requests["POST /ops-public-api/v1/tickets/{id}/messages"][200] != 1 {
		t.Errorf("stats %s", a.body)
	}
	var found bool
	for _, r := range f.ts.Server.Requests() {
		if r.IdempotencyKey == "abc" && r.Route == "POST /ops-public-api/v1/tickets/{id}/messages" && r.Status == 200 {
			found = true
		}
		if strings.Contains(r.Path, "rta_") {
			t.Errorf("request log holds a key: %+v", r)
		}
	}
	if !found {
		t.Errorf("request log lacks the post: %+v", f.ts.Server.Requests())
	}
}

func TestConsoleFaults(t *testing.T) {
	f := newFixture(t)
	a := console(t, f, "PUT", "/faults", `{"seed":3,"error_rate":1,"latency":"250ms","latency_rate":0}`)
	if a.status != 200 || a.json(t)["error_rate"] != 1.0 || a.json(t)["latency"] != "250ms" {
		t.Fatalf("put faults: %d %s", a.status, a.body)
	}
	if got := do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets", key: f.ts.Keys.TicketsRead}).status; got != 500 {
		t.Errorf("after error_rate 1: %d", got)
	}
	if a := console(t, f, "GET", "/faults", ""); a.status != 200 || a.json(t)["seed"] != 3.0 {
		t.Errorf("get faults: %d %s", a.status, a.body)
	}
	for _, body := range []string{`{"error_rate":2}`, `{"latency":"soon"}`, `{"error_rate":0.7,"drop_rate":0.7}`, `{"hook":1}`} {
		if a := console(t, f, "PUT", "/faults", body); a.status != 400 {
			t.Errorf("%s: %d %s", body, a.status, a.body)
		}
	}
	if a := console(t, f, "PUT", "/faults", `{}`); a.status != 200 {
		t.Fatalf("clear faults: %d", a.status)
	}
	if got := do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets", key: f.ts.Keys.TicketsRead}).status; got != 200 {
		t.Errorf("after clearing: %d", got)
	}
}

// TestConsoleDeleteTicket: a ticket deleted on the platform answers 404
// not_found on every endpoint, is in no list, and the console says so.
func TestConsoleDeleteTicket(t *testing.T) {
	f := newFixture(t)
	if a := console(t, f, "PUT", "/tickets/"+f.ticket, ""); a.status != 405 {
		t.Fatalf("PUT: %d %s", a.status, a.body)
	}
	if a := console(t, f, "DELETE", "/tickets/"+f.ticket, ""); a.status != 200 || a.json(t)["deleted"] != true {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	for _, ep := range []struct{ method, path, body string }{
		{"GET", "/ops-public-api/v1/tickets/" + f.ticket, ""},
		{"POST", "/ops-public-api/v1/tickets/" + f.ticket + "/messages", `{"body":"hello"}`},
		{"POST", "/ops-public-api/v1/tickets/" + f.ticket + "/status", `{"status":"done"}`},
	} {
		a := do(t, f.ts, req{method: ep.method, path: ep.path, key: f.ts.Keys.TicketsWrite, body: ep.body})
		if a.status != 404 || a.errorCode(t) != "not_found" {
			t.Errorf("%s %s after the delete: %d %s", ep.method, ep.path, a.status, a.body)
		}
	}
	a := do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets", key: f.ts.Keys.TicketsRead})
	if a.status != 200 || strings.Contains(string(a.body), f.ticket) {
		t.Errorf("list after the delete: %d %s", a.status, a.body)
	}
	if a := console(t, f, "GET", "/tickets/"+f.ticket, ""); a.status != 404 {
		t.Errorf("console read after the delete: %d %s", a.status, a.body)
	}
	if a := console(t, f, "DELETE", "/tickets/"+f.ticket, ""); a.status != 404 {
		t.Errorf("second delete: %d %s", a.status, a.body)
	}
}
