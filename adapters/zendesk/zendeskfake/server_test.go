package zendeskfake_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/zendesk/zendeskfake"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

type client struct {
	t   *testing.T
	url string
	hc  *http.Client
	fk  *zendeskfake.Server
}

// newClient serves a fake on loopback.
func newClient(t *testing.T, opts zendeskfake.Options) *client {
	t.Helper()
	fk := zendeskfake.New(opts)
	srv := httptest.NewServer(fk)
	t.Cleanup(srv.Close)
	return &client{t: t, url: srv.URL, hc: srv.Client(), fk: fk}
}

// newPipeClient serves a fake on in-memory connections, for a test in a
// testing/synctest bubble: time.Sleep passes the fake's time.
func newPipeClient(t *testing.T, opts zendeskfake.Options) *client {
	t.Helper()
	fk := zendeskfake.New(opts)
	return &client{t: t, url: testutil.PipeURL, hc: &http.Client{Transport: testutil.PipeServer(t, fk)}, fk: fk}
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (c *client) do(method, path string, body any, header map[string]string) answer {
	c.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.url+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	req.SetBasicAuth("agent@example.com/token", "fake-token")
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	a := answer{status: res.StatusCode, header: res.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &a.body)
	return a
}

func (c *client) create(body string) int64 {
	c.t.Helper()
	a := c.do("POST", "/api/v2/tickets.json", map[string]any{"ticket": map[string]any{"comment": map[string]any{"body": body}, "external_id": "x-1"}}, nil)
	if a.status != http.StatusCreated {
		c.t.Fatalf("create: %d %s", a.status, a.raw)
	}
	return int64(a.body["ticket"].(map[string]any)["id"].(float64))
}

func TestAuthentication(t *testing.T) {
	c := newClient(t, zendeskfake.Options{})
	for _, auth := range []struct{ user, pass string }{
		{"agent@example.com/token", "wrong"},
		{"agent@example.com", "fake-token"},
		{"other@example.com/token", "fake-token"},
	} {
		req, _ := http.NewRequest("GET", c.url+"/api/v2/users/me.json", nil)
		req.SetBasicAuth(auth.user, auth.pass)
		res, err := c.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), `"error":"Couldn't authenticate you"`) {
			t.Errorf("%s: %d %s, want 401 Couldn't authenticate you", auth.user, res.StatusCode, b)
		}
	}
	me := c.do("GET", "/api/v2/users/me.json", nil, nil)
	if me.status != 200 || me.body["user"].(map[string]any)["role"] != "admin" {
		t.Errorf("users/me: %d %s", me.status, me.raw)
	}
}

func TestCommentsCursorPaging(t *testing.T) {
	c := newClient(t, zendeskfake.Options{MaxPageSize: 2})
	id := c.create("first")
	agent := c.fk.AddAgent("Anna")
	for i := range 4 {
		if _, err := c.fk.Reply(id, agent, fmt.Sprintf("reply %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var bodies []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		q := url.Values{"page[size]": {"100"}}
		if after != "" {
			q.Set("page[after]", after)
		}
		a := c.do("GET", fmt.Sprintf("/api/v2/tickets/%d/comments.json?%s", id, q.Encode()), nil, nil)
		cs := a.body["comments"].([]any)
		if len(cs) > 2 {
			t.Fatalf("page of %d comments, want at most MaxPageSize 2", len(cs))
		}
		for _, x := range cs {
			bodies = append(bodies, x.(map[string]any)["body"].(string))
		}
		meta := a.body["meta"].(map[string]any)
		if meta["has_more"] != true {
			if a.body["links"].(map[string]any)["next"] != nil {
				t.Errorf("last page has links.next")
			}
			break
		}
		after = meta["after_cursor"].(string)
	}
	if got := strings.Join(bodies, "|"); got != "first|reply 0|reply 1|reply 2|reply 3" {
		t.Errorf("comments over the pages: %s", got)
	}
}

func TestOffsetPaging(t *testing.T) {
	c := newClient(t, zendeskfake.Options{MaxPageSize: 2})
	for i := range 3 {
		c.create(fmt.Sprintf("t%d", i))
	}
	a := c.do("GET", "/api/v2/tickets.json?external_id=x-1&per_page=2", nil, nil)
	if n := len(a.body["tickets"].([]any)); n != 2 || a.body["count"].(float64) != 3 || a.body["next_page"] == nil {
		t.Fatalf("first offset page: %s", a.raw)
	}
	b := c.do("GET", "/api/v2/tickets.json?external_id=x-1&per_page=2&page=2", nil, nil)
	if n := len(b.body["tickets"].([]any)); n != 1 || b.body["next_page"] != nil {
		t.Fatalf("second offset page: %s", b.raw)
	}
	none := c.do("GET", "/api/v2/tickets.json?external_id=nope", nil, nil)
	if n := len(none.body["tickets"].([]any)); n != 0 {
		t.Fatalf("external_id filter matched %d tickets of another id", n)
	}
}

func TestIdempotencyKeyOnCreate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newPipeClient(t, zendeskfake.Options{})
		body := map[string]any{"ticket": map[string]any{"comment": map[string]any{"body": "towels"}}}
		key := map[string]string{"Idempotency-Key": "k-1"}
		first := c.do("POST", "/api/v2/tickets.json", body, key)
		second := c.do("POST", "/api/v2/tickets.json", body, key)
		if first.status != 201 || second.status != 201 || first.raw != second.raw {
			t.Fatalf("repeat: %d %s / %d %s", first.status, first.raw, second.status, second.raw)
		}
		if first.header.Get("x-idempotency-lookup") != "miss" || second.header.Get("x-idempotency-lookup") != "hit" {
			t.Errorf("x-idempotency-lookup %q then %q, want miss then hit", first.header.Get("x-idempotency-lookup"), second.header.Get("x-idempotency-lookup"))
		}
		if n := len(c.fk.Tickets()); n != 1 {
			t.Fatalf("%d tickets after a repeated creation, want 1", n)
		}
		other := c.do("POST", "/api/v2/tickets.json", map[string]any{"ticket": map[string]any{"comment": map[string]any{"body": "soap"}}}, key)
		if other.status != http.StatusBadRequest {
			t.Errorf("same key, other payload: %d %s, want 400", other.status, other.raw)
		}
		time.Sleep(2*time.Hour + time.Second)
		late := c.do("POST", "/api/v2/tickets.json", body, key)
		if late.status != 201 || len(c.fk.Tickets()) != 2 {
			t.Errorf("after two hours the key is forgotten: %d, %d tickets", late.status, len(c.fk.Tickets()))
		}
	})
}

func TestClosedTicketRefusesUpdates(t *testing.T) {
	c := newClient(t, zendeskfake.Options{})
	id := c.create("lamp")
	if a := c.do("PUT", fmt.Sprintf("/api/v2/tickets/%d.json", id), map[string]any{"ticket": map[string]any{"status": "new"}}, nil); a.status != 200 {
		t.Fatalf("status new on a new ticket: %d %s", a.status, a.raw)
	}
	if a := c.do("PUT", fmt.Sprintf("/api/v2/tickets/%d.json", id), map[string]any{"ticket": map[string]any{"status": "solved"}}, nil); a.status != 200 {
		t.Fatalf("solve: %d %s", a.status, a.raw)
	}
	if a := c.do("PUT", fmt.Sprintf("/api/v2/tickets/%d.json", id), map[string]any{"ticket": map[string]any{"status": "new"}}, nil); a.status != 422 {
		t.Errorf("status new on a solved ticket: %d, want 422", a.status)
	}
	if err := c.fk.Close(id); err != nil {
		t.Fatal(err)
	}
	a := c.do("PUT", fmt.Sprintf("/api/v2/tickets/%d.json", id), map[string]any{"ticket": map[string]any{"comment": map[string]any{"body": "again"}}}, nil)
	if a.status != 422 || a.body["error"] != "RecordInvalid" || a.body["details"] == nil {
		t.Errorf("update of a closed ticket: %d %s, want 422 RecordInvalid with details", a.status, a.raw)
	}
	f := c.do("POST", "/api/v2/tickets.json", map[string]any{"ticket": map[string]any{"comment": map[string]any{"body": "again"}, "via_followup_source_id": id}}, nil)
	if f.status != 201 {
		t.Fatalf("follow-up: %d %s", f.status, f.raw)
	}
	src, _ := c.fk.Ticket(id)
	if len(src.FollowupIDs) != 1 {
		t.Errorf("closed ticket's followup_ids = %v", src.FollowupIDs)
	}
	if a := c.do("POST", "/api/v2/tickets.json", map[string]any{"ticket": map[string]any{"comment": map[string]any{"body": "x"}, "via_followup_source_id": src.FollowupIDs[0]}}, nil); a.status != 422 {
		t.Errorf("follow-up of an open ticket: %d, want 422", a.status)
	}
}

func TestTicketUpdateRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newPipeClient(t, zendeskfake.Options{TicketUpdates: zendeskfake.RateLimit{Requests: 2, Window: 10 * time.Minute}})
		id := c.create("noise")
		put := func() answer {
			return c.do("PUT", fmt.Sprintf("/api/v2/tickets/%d.json", id), map[string]any{"ticket": map[string]any{"comment": map[string]any{"body": "n", "public": false}}}, nil)
		}
		for range 2 {
			if a := put(); a.status != 200 {
				t.Fatalf("update: %d %s", a.status, a.raw)
			}
		}
		a := put()
		if a.status != 429 || a.header.Get("Retry-After") != "600" {
			t.Fatalf("third update: %d Retry-After %q, want 429 and 600", a.status, a.header.Get("Retry-After"))
		}
		time.Sleep(10 * time.Minute)
		if a := put(); a.status != 200 {
			t.Errorf("after the window: %d", a.status)
		}
	})
}

func TestTicketEventExport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newPipeClient(t, zendeskfake.Options{EventsPageSize: 1})
		id := c.create("kettle")
		agent := c.fk.AddAgent("Anna")
		time.Sleep(time.Second)
		if _, err := c.fk.Update(id, agent, zendeskfake.AgentUpdate{Body: "on my way", Public: true, Status: "pending"}); err != nil {
			t.Fatal(err)
		}
		export := func(start string, include bool) answer {
			q := "start_time=" + start
			if include {
				q += "&include=comment_events"
			}
			return c.do("GET", "/api/v2/incremental/ticket_events.json?"+q, nil, nil)
		}
		if a := export("0", true); len(a.body["ticket_events"].([]any)) != 0 {
			t.Fatalf("events younger than a minute were exported: %s", a.raw)
		}
		time.Sleep(time.Minute)
		first := export("0", true)
		evs := first.body["ticket_events"].([]any)
		if len(evs) != 1 || first.body["end_of_stream"] != false {
			t.Fatalf("first page of one: %s", first.raw)
		}
		next, err := url.Parse(first.body["next_page"].(string))
		if err != nil {
			t.Fatal(err)
		}
		// A page may end inside a second, as Zendesk's do: the next page
		// starts at end_time and brings that second's events again.
		again := export(next.Query().Get("start_time"), true)
		if evs := again.body["ticket_events"].([]any); len(evs) != 1 || again.body["end_time"] != first.body["end_time"] ||
			evs[0].(map[string]any)["id"] != first.body["ticket_events"].([]any)[0].(map[string]any)["id"] {
			t.Fatalf("page from end_time %v: %s, want the first page again", first.body["end_time"], again.raw)
		}
		after, _ := strconv.ParseInt(next.Query().Get("start_time"), 10, 64)
		second := export(strconv.FormatInt(after+1, 10), true)
		evs2 := second.body["ticket_events"].([]any)
		if second.body["end_of_stream"] != true || len(evs2) < 1 {
			t.Fatalf("second page: %s", second.raw)
		}
		last := evs2[len(evs2)-1].(map[string]any)
		if last["updater_id"].(float64) != float64(agent) {
			t.Fatalf("last event by %v, want the agent", last["updater_id"])
		}
		var sawComment, sawStatus bool
		for _, ch := range last["child_events"].([]any) {
			m := ch.(map[string]any)
			switch m["event_type"] {
			case "Comment":
				sawComment = m["body"] == "on my way" && m["public"] == true
			case "Change":
				sawStatus = m["status"] == "pending" && m["previous_value"] == "new"
			}
		}
		if !sawComment || !sawStatus {
			t.Errorf("agent audit lacks the comment or the status change: %v", last)
		}
		bare := export(strconv.FormatInt(after+1, 10), false)
		if strings.Contains(bare.raw, "on my way") || !strings.Contains(bare.raw, "comment_present") {
			t.Errorf("without the sideload the comment text was exported: %s", bare.raw)
		}
		agentOnly := newPipeClient(t, zendeskfake.Options{Role: "agent"})
		if a := agentOnly.do("GET", "/api/v2/incremental/ticket_events.json?start_time=0", nil, nil); a.status != 403 {
			t.Errorf("export as an agent: %d, want 403", a.status)
		}
	})
}

func TestExportRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newPipeClient(t, zendeskfake.Options{ExportRequests: zendeskfake.RateLimit{Requests: 1, Window: time.Minute}})
		c.do("GET", "/api/v2/incremental/ticket_events.json?start_time=0", nil, nil)
		a := c.do("GET", "/api/v2/incremental/ticket_events.json?start_time=0", nil, nil)
		if a.status != 429 || a.header.Get("Retry-After") != "60" {
			t.Fatalf("second export in a minute: %d Retry-After %q", a.status, a.header.Get("Retry-After"))
		}
	})
}

func TestFaultAfterApply(t *testing.T) {
	c := newClient(t, zendeskfake.Options{})
	id := c.create("pillow")
	c.fk.Inject(zendeskfake.Fault{Method: "PUT", Path: "/api/v2/tickets/", Status: 502, AfterApply: true})
	a := c.do("PUT", fmt.Sprintf("/api/v2/tickets/%d.json", id), map[string]any{"ticket": map[string]any{"comment": map[string]any{"body": "lost answer"}}}, nil)
	if a.status != 502 {
		t.Fatalf("faulted update: %d", a.status)
	}
	tk, _ := c.fk.Ticket(id)
	if len(tk.Comments) != 2 || tk.Comments[1].Body != "lost answer" {
		t.Errorf("the update was not applied before the fault: %+v", tk.Comments)
	}
	if a := c.do("GET", fmt.Sprintf("/api/v2/tickets/%d.json", id), nil, nil); a.status != 200 {
		t.Errorf("the fault hit more than once: %d", a.status)
	}
}

func TestBodyKeptVerbatim(t *testing.T) {
	c := newClient(t, zendeskfake.Options{})
	body := "line one\r\n\r\n<b>x</b> & y\n[ticketbridge message m-1]\n\n"
	id := c.create("desc")
	a := c.do("PUT", fmt.Sprintf("/api/v2/tickets/%d.json", id), map[string]any{"ticket": map[string]any{"comment": map[string]any{"body": body}}}, nil)
	if a.status != 200 {
		t.Fatal(a.raw)
	}
	tk, _ := c.fk.Ticket(id)
	got := tk.Comments[1]
	if got.Body != "line one\n\n<b>x</b> & y\n[ticketbridge message m-1]" {
		t.Errorf("body %q", got.Body)
	}
	if !strings.Contains(got.HTMLBody, "&lt;b&gt;x&lt;/b&gt; &amp; y") {
		t.Errorf("html_body %q does not escape the text", got.HTMLBody)
	}
}

// An API update sets the external_id of a ticket an agent made by hand:
// List Tickets filters by it at once, the Search API after its lag; the
// ticket's updated_at moves, and no audit event records it.
func TestExternalIDUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newPipeClient(t, zendeskfake.Options{SearchLag: time.Minute})
		id := c.fk.CreateTicket(c.fk.AddAgent("Anna"), "Towels", "The guest called.", "")
		made, _ := c.fk.Ticket(id)
		audits := func() int {
			a := c.do("GET", fmt.Sprintf("/api/v2/tickets/%d/audits.json", id), nil, nil)
			return len(a.body["audits"].([]any))
		}
		before := audits()
		time.Sleep(time.Hour) // past the search lag of the ticket's creation
		a := c.do("PUT", fmt.Sprintf("/api/v2/tickets/%d.json", id), map[string]any{"ticket": map[string]any{"external_id": "ticketbridge:r1"}}, nil)
		if a.status != 200 || a.body["ticket"].(map[string]any)["external_id"] != "ticketbridge:r1" {
			t.Fatalf("set external_id: %d %s", a.status, a.raw)
		}
		if got, _ := c.fk.Ticket(id); got.ExternalID != "ticketbridge:r1" || !got.UpdatedAt.After(made.UpdatedAt) {
			t.Errorf("ticket after the update: external_id %q, updated_at %v (was %v)", got.ExternalID, got.UpdatedAt, made.UpdatedAt)
		}
		if n := audits(); n != before {
			t.Errorf("%d audits after the update, %d before: want no new one", n, before)
		}
		list := c.do("GET", "/api/v2/tickets.json?external_id=ticketbridge:r1", nil, nil)
		if ts := list.body["tickets"].([]any); len(ts) != 1 {
			t.Errorf("List Tickets by the new external_id: %s", list.raw)
		}
		search := func() int {
			a := c.do("GET", "/api/v2/search.json?query="+url.QueryEscape(`type:ticket external_id:"ticketbridge:r1"`), nil, nil)
			return len(a.body["results"].([]any))
		}
		if n := search(); n != 0 {
			t.Errorf("the Search API found the new external_id at once (%d results), want after its lag", n)
		}
		time.Sleep(time.Minute)
		if n := search(); n != 1 {
			t.Errorf("the Search API found %d tickets by the new external_id after its lag, want 1", n)
		}
	})
}
