package refserver_test

import (
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
	ts := refservertest.New(t, append([]refservertest.Option{refservertest.WithClock(clock)}, opts...)...)
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
