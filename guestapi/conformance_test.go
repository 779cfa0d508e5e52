package guestapi_test

// Conformance: the client against the reference server, through every row
// of the spec's error table, every cell of the rights matrix, the
// organisation boundary, idempotent repeats, the list limits and filters,
// the timestamp form on the wire, unknown fields, and the token exchange
// with its rate limit. The server runs on a fake clock; the client sleeps
// through the same clock, so nothing here waits for real.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
)

var confStart = time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC)

type confEnv struct {
	ts     *refservertest.TestServer
	clock  *refservertest.Clock
	ticket string // a ticket of Org
	other  string // a ticket of OtherOrg
}

func newConfEnv(t *testing.T, opts ...refservertest.Option) *confEnv {
	t.Helper()
	clock := refservertest.NewClock(confStart)
	ts := refservertest.New(t, append([]refservertest.Option{refservertest.WithClock(clock)}, opts...)...)
	mk := func(org, dept string) string {
		v, err := ts.Server.CreateTicket(org, refserver.NewTicket{Department: dept, TaskDescription: "Extra towels for room 12"})
		if err != nil {
			t.Fatalf("create ticket: %v", err)
		}
		return v.ID
	}
	return &confEnv{ts: ts, clock: clock, ticket: mk(ts.Org, "housekeeping"), other: mk(ts.OtherOrg, "housekeeping")}
}

// client returns a client of key that tries once unless attempts says
// otherwise, on the server's clock.
func (e *confEnv) client(t *testing.T, key string, attempts ...int) *guestapi.Client {
	t.Helper()
	max := 1
	if len(attempts) > 0 {
		max = attempts[0]
	}
	c, err := guestapi.New(guestapi.Config{
		BaseURL:     e.ts.URL,
		APIKey:      key,
		HTTPClient:  e.ts.Client(),
		MaxAttempts: max,
		Now:         e.clock.Now,
		Sleep:       e.clock.Sleep,
		Backoff:     httpretry.Backoff{Rand: func() float64 { return 0.5 }},
	})
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	return c
}

// raw sends a request without the client and returns status and body.
func (e *confEnv) raw(t *testing.T, method, path, key, body string) (int, guestapi.ErrorBody, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, e.ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var eb guestapi.ErrorBody
	_ = json.Unmarshal(b, &eb)
	return resp.StatusCode, eb, b
}

func (e *confEnv) messages(t *testing.T, id string) []refserver.InternalMessage {
	t.Helper()
	v, err := e.ts.Server.Ticket(id)
	if err != nil {
		t.Fatal(err)
	}
	return v.Messages
}

// wantAPIError checks that err is an *Error with the status, code and
// sentinel given.
func wantAPIError(t *testing.T, what string, err error, status int, code string, sentinel error) *guestapi.Error {
	t.Helper()
	var ae *guestapi.Error
	if !errors.As(err, &ae) {
		t.Errorf("%s: error %v, want HTTP %d %s", what, err, status, code)
		return &guestapi.Error{}
	}
	if ae.StatusCode != status || ae.Code != code || !errors.Is(err, sentinel) {
		t.Errorf("%s: got %v, want HTTP %d %s matching %v", what, err, status, code, sentinel)
	}
	return ae
}

func TestConformanceErrorTable(t *testing.T) {
	e := newConfEnv(t)
	ctx := t.Context()
	w := e.client(t, e.ts.Keys.TicketsWrite)

	t.Run("400 unsupported_version", func(t *testing.T) {
		code, eb, _ := e.raw(t, "GET", "/ops-public-api/v2/tickets", e.ts.Keys.TicketsWrite, "")
		if code != 400 || eb.Error != guestapi.CodeUnsupportedVersion {
			t.Errorf("raw v2: %d %q, want 400 unsupported_version", code, eb.Error)
		}
		// The client speaks v1 only; a hook moves its request to v2 to see
		// that it reads the answer right.
		e.ts.Server.SetHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
			r2 := r.Clone(r.Context())
			r2.URL.Path = strings.Replace(r.URL.Path, "/v1/", "/v2/", 1)
			r2.URL.RawPath = ""
			next.ServeHTTP(w, r2)
		})
		defer e.ts.Server.SetHook(nil)
		_, err := w.ListTickets(ctx, guestapi.ListOptions{})
		wantAPIError(t, "list on v2", err, 400, guestapi.CodeUnsupportedVersion, guestapi.ErrUnsupportedVersion)
	})
	t.Run("400 body_required", func(t *testing.T) {
		for _, body := range []string{"", "   "} {
			_, err := w.PostMessage(ctx, e.ticket, guestapi.NewMessage{Body: body}, "")
			wantAPIError(t, fmt.Sprintf("body %q", body), err, 400, guestapi.CodeBodyRequired, guestapi.ErrBodyRequired)
		}
		if n := len(e.messages(t, e.ticket)); n != 0 {
			t.Errorf("%d messages after refused posts, want 0", n)
		}
	})
	t.Run("400 invalid_status", func(t *testing.T) {
		want := make([]string, 0, 6)
		for _, s := range guestapi.SettableStatuses() {
			want = append(want, string(s))
		}
		for _, s := range []guestapi.Status{guestapi.StatusConfirmed, "escalated", ""} {
			_, err := w.SetStatus(ctx, e.ticket, s, "")
			ae := wantAPIError(t, fmt.Sprintf("status %q", s), err, 400, guestapi.CodeInvalidStatus, guestapi.ErrInvalidStatus)
			if !slices.Equal(ae.Allowed, want) {
				t.Errorf("status %q: allowed %q, want %q", s, ae.Allowed, want)
			}
		}
	})
	t.Run("401 unauthorized", func(t *testing.T) {
		for name, key := range map[string]string{
			"revoked":     e.ts.Keys.Revoked,
			"expired":     e.ts.Keys.Expired,
			"nonexistent": "rta_doesnotexist0000000000000000",
		} {
			_, err := e.client(t, key).ListTickets(ctx, guestapi.ListOptions{})
			wantAPIError(t, name, err, 401, guestapi.CodeUnauthorized, guestapi.ErrUnauthorized)
			if strings.Contains(err.Error(), key) {
				t.Errorf("%s: error %q holds the key", name, err)
			}
		}
		code, eb, _ := e.raw(t, "GET", "/ops-public-api/v1/tickets", "", "")
		if code != 401 || eb.Error != guestapi.CodeUnauthorized {
			t.Errorf("missing key: %d %q, want 401 unauthorized", code, eb.Error)
		}
	})
	t.Run("403 forbidden", func(t *testing.T) {
		_, err := e.client(t, e.ts.Keys.TicketsRead).PostMessage(ctx, e.ticket, guestapi.NewMessage{Body: "x"}, "")
		ae := wantAPIError(t, "read key posts", err, 403, guestapi.CodeForbidden, guestapi.ErrForbidden)
		if ae.Need != "tickets:write" {
			t.Errorf("need %q, want tickets:write", ae.Need)
		}
	})
	t.Run("404 not_found", func(t *testing.T) {
		_, err := w.GetTicket(ctx, "99999999-9999-4999-8999-999999999999")
		wantAPIError(t, "unknown ticket", err, 404, guestapi.CodeNotFound, guestapi.ErrNotFound)
	})
	t.Run("500 internal_error", func(t *testing.T) {
		if err := e.ts.Server.SetFaults(refserver.Faults{ErrorRate: 1}); err != nil {
			t.Fatal(err)
		}
		defer e.ts.Server.SetFaults(refserver.Faults{})
		before := len(e.ts.Server.Requests())
		_, err := e.client(t, e.ts.Keys.TicketsWrite, 3).GetTicket(ctx, e.ticket)
		wantAPIError(t, "injected error", err, 500, guestapi.CodeInternal, guestapi.ErrInternal)
		if n := len(e.ts.Server.Requests()) - before; n != 3 {
			t.Errorf("server saw %d requests, want 3 (500 may be repeated)", n)
		}
	})
	t.Run("429 token exchange", func(t *testing.T) {
		testTokenRateLimit(t, newConfEnv(t))
	})
	t.Run("html answer", func(t *testing.T) {
		e.ts.Server.SetHook(refserver.AnswerHTML(502, "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"))
		defer e.ts.Server.SetHook(nil)
		_, err := w.ListTickets(ctx, guestapi.ListOptions{})
		ae := wantAPIError(t, "proxy page", err, 502, "", guestapi.ErrInternal)
		if ae.Message != "502 Bad Gateway" {
			t.Errorf("message %q, want the page title", ae.Message)
		}
	})
}

// TestConformanceRightsMatrix checks every pair of platform and ticket
// rights on the four ticket endpoints, the exchange and verify.
func TestConformanceRightsMatrix(t *testing.T) {
	e := newConfEnv(t)
	ctx := t.Context()
	scopes := map[refserver.Platform][]string{
		refserver.PlatformRead:  {"read"},
		refserver.PlatformWrite: {"read", "write"},
		refserver.PlatformAdmin: {"read", "write"},
	}
	n := 0
	for _, p := range []refserver.Platform{refserver.PlatformNone, refserver.PlatformRead, refserver.PlatformWrite, refserver.PlatformAdmin} {
		for _, tr := range []refserver.TicketRight{refserver.TicketsNone, refserver.TicketsRead, refserver.TicketsWrite} {
			t.Run(fmt.Sprintf("platform %s tickets %s", p, tr), func(t *testing.T) {
				n++
				k, err := e.ts.Server.IssueKey(e.ts.Org, refserver.KeySpec{Name: fmt.Sprintf("matrix-%d", n), Platform: p, Tickets: tr})
				if err != nil {
					t.Fatal(err)
				}
				c := e.client(t, k.Value)
				canRead, canWrite := tr != refserver.TicketsNone, tr == refserver.TicketsWrite
				check := func(what string, err error, allowed bool, need string) {
					t.Helper()
					if allowed {
						if err != nil {
							t.Errorf("%s: %v, want success", what, err)
						}
						return
					}
					ae := wantAPIError(t, what, err, 403, guestapi.CodeForbidden, guestapi.ErrForbidden)
					if ae.Need != need {
						t.Errorf("%s: need %q, want %q", what, ae.Need, need)
					}
				}
				_, err = c.ListTickets(ctx, guestapi.ListOptions{})
				check("list", err, canRead, "tickets:read")
				_, err = c.GetTicket(ctx, e.ticket)
				check("get", err, canRead, "tickets:read")
				_, err = c.PostMessage(ctx, e.ticket, guestapi.NewMessage{Body: "matrix " + k.Name}, "matrix-msg-"+k.Name)
				check("post message", err, canWrite, "tickets:write")
				_, err = c.SetStatus(ctx, e.ticket, guestapi.StatusInProgress, "matrix-status-"+k.Name)
				check("set status", err, canWrite, "tickets:write")

				// Each exchange is its own client's; keep under the
				// exchange limit of 10 a minute.
				e.clock.Advance(10 * time.Second)
				tok, err := c.Token(ctx)
				check("token", err, p != refserver.PlatformNone, "read")
				if p == refserver.PlatformNone {
					_, err = c.Verify(ctx)
					check("verify", err, false, "read")
					return
				}
				if !slices.Equal(tok.Scopes, scopes[p]) {
					t.Errorf("token scopes %q, want %q", tok.Scopes, scopes[p])
				}
				v, err := c.Verify(ctx)
				check("verify", err, true, "")
				if v.Organization != e.ts.Org || !slices.Equal(v.Scopes, scopes[p]) {
					t.Errorf("verify = %+v, want organisation %s scopes %q", v, e.ts.Org, scopes[p])
				}
			})
		}
	}
	// Two writers posted one message each.
	if got := len(e.messages(t, e.ticket)); got != 4 {
		t.Errorf("%d messages, want 4 (one per key with tickets:write)", got)
	}
}

func TestConformanceOtherOrganisationIsInvisible(t *testing.T) {
	e := newConfEnv(t)
	ctx := t.Context()
	c := e.client(t, e.ts.Keys.TicketsWrite)
	before, err := e.ts.Server.Ticket(e.other)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetTicket(ctx, e.other)
	wantAPIError(t, "get", err, 404, guestapi.CodeNotFound, guestapi.ErrNotFound)
	_, err = c.PostMessage(ctx, e.other, guestapi.NewMessage{Body: "hello"}, "cross-1")
	wantAPIError(t, "post message", err, 404, guestapi.CodeNotFound, guestapi.ErrNotFound)
	_, err = c.SetStatus(ctx, e.other, guestapi.StatusDone, "cross-2")
	wantAPIError(t, "set status", err, 404, guestapi.CodeNotFound, guestapi.ErrNotFound)
	ts, err := c.ListTickets(ctx, guestapi.ListOptions{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 || ts[0].ID != e.ticket {
		t.Errorf("list = %+v, want only the own ticket %s", ts, e.ticket)
	}
	// The list filtered to the other ticket's department still hides it.
	ts, err = c.ListTickets(ctx, guestapi.ListOptions{Department: "housekeeping", Status: guestapi.StatusNew})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range ts {
		if tk.ID == e.other {
			t.Error("list shows another organisation's ticket")
		}
	}
	after, err := e.ts.Server.Ticket(e.other)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Messages) != len(before.Messages) || after.Ticket.Status != before.Ticket.Status {
		t.Errorf("another organisation's ticket changed: %+v", after)
	}
	// And the other organisation's key sees its own ticket only.
	oc := e.client(t, e.ts.Keys.OtherTicketsWrite)
	if _, err := oc.GetTicket(ctx, e.other); err != nil {
		t.Errorf("own ticket of the other organisation: %v", err)
	}
	_, err = oc.GetTicket(ctx, e.ticket)
	wantAPIError(t, "other organisation reads ours", err, 404, guestapi.CodeNotFound, guestapi.ErrNotFound)
}

func TestConformanceIdempotentRepeats(t *testing.T) {
	e := newConfEnv(t)
	ctx := t.Context()
	c := e.client(t, e.ts.Keys.TicketsWrite)
	m := guestapi.NewMessage{Body: "Towels are on their way", VisibleToGuest: true, AuthorName: "Front desk"}
	first, err := c.PostMessage(ctx, e.ticket, m, "reply-1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.PostMessage(ctx, e.ticket, m, "reply-1")
	if err != nil {
		t.Fatal(err)
	}
	if first != again {
		t.Errorf("repeat answered %+v, first %+v", again, first)
	}
	s1, err := c.SetStatus(ctx, e.ticket, guestapi.StatusDone, "close-1")
	if err != nil {
		t.Fatal(err)
	}
	s2, err := c.SetStatus(ctx, e.ticket, guestapi.StatusDone, "close-1")
	if err != nil || s1 != s2 || s1.Status != guestapi.StatusDone {
		t.Errorf("status repeat = %+v, %v; first %+v", s2, err, s1)
	}
	msgs := e.messages(t, e.ticket)
	if len(msgs) != 1 || msgs[0].ID != first.MessageID || !msgs[0].External {
		t.Fatalf("messages %+v, want exactly the one posted, marked external", msgs)
	}
	// The thread shows it as the spec describes.
	th, err := c.GetTicket(ctx, e.ticket)
	if err != nil {
		t.Fatal(err)
	}
	got := th.Messages[len(th.Messages)-1]
	if got.ID != first.MessageID || got.Body != m.Body || got.AuthorName != "Front desk" ||
		got.AuthorType != guestapi.AuthorStaff || !got.VisibleToGuest || th.Ticket.Status != guestapi.StatusDone {
		t.Errorf("thread shows %+v, status %s", got, th.Ticket.Status)
	}
}

// TestConformanceLostAnswerIsRetriedWithoutDuplicate: the server carries out
// a post and the answer is lost; the client repeats it with the same key
// and gets the first answer, and the ticket holds one message.
func TestConformanceLostAnswerIsRetriedWithoutDuplicate(t *testing.T) {
	e := newConfEnv(t)
	var posts atomic.Int32
	e.ts.Server.SetHook(refserver.Match(http.MethodPost, "/ops-public-api/v1/tickets/", func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if posts.Add(1) > 1 {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(discard{}, r) // carried out ...
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close() // ... and the answer lost
		}
	}))
	c := e.client(t, e.ts.Keys.TicketsWrite, 3)
	res, err := c.PostMessage(t.Context(), e.ticket, guestapi.NewMessage{Body: "On it"}, "lost-1")
	if err != nil {
		t.Fatalf("PostMessage: %v", err)
	}
	msgs := e.messages(t, e.ticket)
	if posts.Load() != 2 || len(msgs) != 1 || msgs[0].ID != res.MessageID {
		t.Errorf("%d posts, messages %+v; want 2 posts, one message %s", posts.Load(), msgs, res.MessageID)
	}
	// Without a key the client does not repeat: the caller learns of the
	// failure and the message exists once.
	posts.Store(0)
	if _, err := c.PostMessage(t.Context(), e.ticket, guestapi.NewMessage{Body: "Unkeyed"}, ""); err == nil {
		t.Error("a lost answer without a key reported success")
	}
	if posts.Load() != 1 || len(e.messages(t, e.ticket)) != 2 {
		t.Errorf("%d posts, %d messages; want 1, 2", posts.Load(), len(e.messages(t, e.ticket)))
	}
}

type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

func TestConformanceLimit(t *testing.T) {
	e := newConfEnv(t)
	ctx := t.Context()
	for i := range 204 { // 205 with the env's own
		if _, err := e.ts.Server.CreateTicket(e.ts.Org, refserver.NewTicket{Department: "fb", TaskDescription: fmt.Sprintf("request %d", i),
			CreatedAt: confStart.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	c := e.client(t, e.ts.Keys.TicketsRead)
	for _, tc := range []struct{ limit, want int }{{0, 50}, {1, 1}, {50, 50}, {200, 200}, {201, 200}} {
		ts, err := c.ListTickets(ctx, guestapi.ListOptions{Limit: tc.limit})
		if err != nil {
			t.Errorf("limit %d: %v", tc.limit, err)
			continue
		}
		if len(ts) != tc.want {
			t.Errorf("limit %d: %d tickets, want %d", tc.limit, len(ts), tc.want)
		}
		for i := 1; i < len(ts); i++ {
			if ts[i].CreatedAt.After(ts[i-1].CreatedAt) {
				t.Errorf("limit %d: not newest first at %d", tc.limit, i)
				break
			}
		}
	}
	if _, err := c.ListTickets(ctx, guestapi.ListOptions{Limit: -1}); err == nil || !strings.Contains(err.Error(), "limit -1") {
		t.Errorf("limit -1: %v, want a local error naming the limit", err)
	}
	for _, q := range []string{"0", "x", "-1", ""} {
		code, eb, _ := e.raw(t, "GET", "/ops-public-api/v1/tickets?limit="+q, e.ts.Keys.TicketsRead, "")
		if code != 400 || eb.Error != guestapi.CodeBadRequest || !strings.Contains(eb.Message, "limit") {
			t.Errorf("raw limit=%q: %d %+v, want 400 bad_request naming limit", q, code, eb)
		}
	}
}

func TestConformanceStatusFilter(t *testing.T) {
	e := newConfEnv(t)
	ctx := t.Context()
	for i, s := range guestapi.Statuses() {
		for j := 0; j <= i%2; j++ { // one or two of each
			if _, err := e.ts.Server.CreateTicket(e.ts.Org, refserver.NewTicket{Department: "dept-" + string(s), Status: s, TaskDescription: "t"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	c := e.client(t, e.ts.Keys.TicketsRead)
	for i, s := range guestapi.Statuses() {
		ts, err := c.ListTickets(ctx, guestapi.ListOptions{Status: s})
		if err != nil {
			t.Errorf("status %s: %v", s, err)
			continue
		}
		want := 1 + i%2
		if s == guestapi.StatusNew {
			want++ // the env's own ticket
		}
		if len(ts) != want {
			t.Errorf("status %s: %d tickets, want %d", s, len(ts), want)
		}
		for _, tk := range ts {
			if tk.Status != s {
				t.Errorf("status %s: listed a ticket in %s", s, tk.Status)
			}
		}
		ts, err = c.ListTickets(ctx, guestapi.ListOptions{Status: s, Department: "dept-" + string(s)})
		if err != nil || len(ts) != 1+i%2 {
			t.Errorf("status %s with department: %d tickets, %v", s, len(ts), err)
		}
	}
	_, err := c.ListTickets(ctx, guestapi.ListOptions{Status: "escalated"})
	ae := wantAPIError(t, "unknown filter", err, 400, guestapi.CodeInvalidStatus, guestapi.ErrInvalidStatus)
	if len(ae.Allowed) != 7 {
		t.Errorf("allowed %q, want the seven statuses", ae.Allowed)
	}
}

func TestConformanceTimestampsOnTheWire(t *testing.T) {
	e := newConfEnv(t)
	at := time.Date(2026, 3, 31, 22, 15, 30, 123456789, time.FixedZone("X", 2*3600))
	due := at.Add(48 * time.Hour)
	v, err := e.ts.Server.CreateTicket(e.ts.Org, refserver.NewTicket{Department: "spa", TaskDescription: "t", CreatedAt: at, TargetDueAt: &due})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ts.Server.AddMessage(v.ID, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, Body: "hi", CreatedAt: at}); err != nil {
		t.Fatal(err)
	}
	form := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$`)
	stamp := regexp.MustCompile(`"(created_at|updated_at|target_due_at)":"([^"]*)"`)
	for _, path := range []string{"/ops-public-api/v1/tickets", "/ops-public-api/v1/tickets/" + v.ID} {
		code, _, body := e.raw(t, "GET", path, e.ts.Keys.TicketsRead, "")
		if code != 200 {
			t.Fatalf("GET %s: %d", path, code)
		}
		found := stamp.FindAllStringSubmatch(string(body), -1)
		if len(found) == 0 {
			t.Fatalf("GET %s: no timestamps in %s", path, body)
		}
		for _, m := range found {
			if !form.MatchString(m[2]) {
				t.Errorf("GET %s: %s %q is not in the spec's form", path, m[1], m[2])
			}
		}
	}
	c := e.client(t, e.ts.Keys.TicketsRead)
	want := at.Truncate(time.Microsecond)
	th, err := c.GetTicket(t.Context(), v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !th.Ticket.CreatedAt.Equal(want) || !th.Messages[0].CreatedAt.Equal(want) || th.Ticket.CreatedAt.Location() != time.UTC {
		t.Errorf("created_at %s / %s, want %s in UTC", th.Ticket.CreatedAt, th.Messages[0].CreatedAt, want)
	}
	ts, err := c.ListTickets(t.Context(), guestapi.ListOptions{Department: "spa"})
	if err != nil || len(ts) != 1 || ts[0].TargetDueAt == nil || !ts[0].TargetDueAt.Equal(due.Truncate(time.Microsecond)) {
		t.Errorf("list = %+v, %v; want target_due_at %s", ts, err, due)
	}
}

func TestConformanceToleratesAnUnknownField(t *testing.T) {
	e := newConfEnv(t)
	ctx := t.Context()
	e.ts.Server.SetHook(refserver.AddField("x_added_later", map[string]any{"nested": []int{1, 2}, "s": "v"}))
	// The hook really adds the field.
	if _, _, body := e.raw(t, "GET", "/ops-public-api/v1/tickets/"+e.ticket, e.ts.Keys.TicketsRead, ""); !strings.Contains(string(body), "x_added_later") {
		t.Fatalf("hook did not add the field: %s", body)
	}
	c := e.client(t, e.ts.Keys.AdminTicketsWrite)
	if ts, err := c.ListTickets(ctx, guestapi.ListOptions{}); err != nil || len(ts) != 1 || ts[0].ID != e.ticket {
		t.Errorf("list = %+v, %v", ts, err)
	}
	if th, err := c.GetTicket(ctx, e.ticket); err != nil || th.Ticket.ID != e.ticket {
		t.Errorf("get = %+v, %v", th, err)
	}
	if r, err := c.PostMessage(ctx, e.ticket, guestapi.NewMessage{Body: "x"}, "unknown-1"); err != nil || r.MessageID == "" {
		t.Errorf("post = %+v, %v", r, err)
	}
	if r, err := c.SetStatus(ctx, e.ticket, guestapi.StatusAssigned, "unknown-2"); err != nil || r.Status != guestapi.StatusAssigned {
		t.Errorf("status = %+v, %v", r, err)
	}
	if tok, err := c.Token(ctx); err != nil || tok.AccessToken == "" {
		t.Errorf("token = %v, %v", tok, err)
	}
	if v, err := c.Verify(ctx); err != nil || v.Organization != e.ts.Org {
		t.Errorf("verify = %+v, %v", v, err)
	}
	// Error answers carry it too and still decode.
	_, err := c.GetTicket(ctx, "99999999-9999-4999-8999-999999999999")
	wantAPIError(t, "404 with extra field", err, 404, guestapi.CodeNotFound, guestapi.ErrNotFound)
}

func TestConformanceTokenAndVerify(t *testing.T) {
	e := newConfEnv(t)
	ctx := t.Context()
	c := e.client(t, e.ts.Keys.PlatformWrite)
	exchanges := func() int {
		n := 0
		for _, r := range e.ts.Server.Requests() {
			if r.Path == refserver.TokenPath {
				n++
			}
		}
		return n
	}
	tok, err := c.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tok.TokenType != "Bearer" || tok.ExpiresIn != 3600 || tok.ProductType != "hotel" || !slices.Equal(tok.Scopes, []string{"read", "write"}) {
		t.Errorf("token %v", tok)
	}
	if strings.Contains(fmt.Sprint(tok), tok.AccessToken) {
		t.Errorf("token prints its value: %v", tok)
	}
	for range 3 {
		v, err := c.Verify(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v.Organization != e.ts.Org || v.ProductType != "hotel" || !v.ExpiresAt.Equal(confStart.Add(time.Hour)) {
			t.Errorf("verify = %+v", v)
		}
	}
	if n := exchanges(); n != 1 {
		t.Errorf("%d exchanges for one token and three verifies, want 1", n)
	}
	e.clock.Advance(59*time.Minute + time.Second)
	if _, err := c.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	if n := exchanges(); n != 2 {
		t.Errorf("%d exchanges after 59 minutes, want 2", n)
	}
	// The ticket API refuses the access token: it wants the key itself.
	code, eb, _ := e.raw(t, "GET", "/ops-public-api/v1/tickets", tok.AccessToken, "")
	if code != 401 || eb.Error != guestapi.CodeUnauthorized {
		t.Errorf("ticket list with an access token: %d %q, want 401", code, eb.Error)
	}
	// A revoked key's tokens stop working; Verify renews once, then reports.
	if err := e.ts.Server.RevokeKey(e.ts.Org, "platform-write"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Verify(ctx)
	wantAPIError(t, "verify after revocation", err, 401, guestapi.CodeUnauthorized, guestapi.ErrUnauthorized)
}

func TestConformanceTokenRateLimit(t *testing.T) {
	testTokenRateLimit(t, newConfEnv(t))
}

// testTokenRateLimit makes ten exchanges, sees the eleventh answered 429
// with a Retry-After, then lets a client wait it out on the fake clock.
func testTokenRateLimit(t *testing.T, e *confEnv) {
	ctx := t.Context()
	for i := range 10 {
		if _, err := e.client(t, e.ts.Keys.PlatformRead).Token(ctx); err != nil {
			t.Fatalf("exchange %d: %v", i+1, err)
		}
	}
	_, err := e.client(t, e.ts.Keys.PlatformRead).Token(ctx)
	ae := wantAPIError(t, "11th exchange", err, 429, guestapi.CodeRateLimited, guestapi.ErrRateLimited)
	if ae.RetryAfter <= 0 || ae.RetryAfter > time.Minute {
		t.Errorf("RetryAfter %s, want within a minute", ae.RetryAfter)
	}
	// A client allowed two attempts waits the Retry-After (on the fake
	// clock the server reads) and gets its token.
	start := e.clock.Now()
	tok, err := e.client(t, e.ts.Keys.PlatformRead, 2).Token(ctx)
	if err != nil || tok.AccessToken == "" {
		t.Fatalf("exchange after waiting: %v, %v", tok, err)
	}
	if waited := e.clock.Now().Sub(start); waited < ae.RetryAfter-time.Second {
		t.Errorf("waited %s, want about %s", waited, ae.RetryAfter)
	}
	// A context whose deadline comes before the Retry-After ends at once.
	for range 9 {
		if _, err := e.client(t, e.ts.Keys.PlatformRead).Token(ctx); err != nil {
			t.Fatalf("refill: %v", err)
		}
	}
	// The deadline falls halfway through the wait the server asks for now
	// (read from one exchange past the limit), not a second away: the
	// request itself has the other half, as long as a busy machine needs.
	_, err = e.client(t, e.ts.Keys.PlatformRead).Token(ctx)
	ae = wantAPIError(t, "exchange past the limit", err, 429, guestapi.CodeRateLimited, guestapi.ErrRateLimited)
	if ae.RetryAfter < 2*time.Second {
		t.Fatalf("RetryAfter %s past the limit, want at least 2s to set a deadline before it", ae.RetryAfter)
	}
	short, cancel := context.WithTimeout(ctx, ae.RetryAfter/2)
	defer cancel()
	_, err = e.client(t, e.ts.Keys.PlatformRead, 3).Token(short)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, guestapi.ErrRateLimited) {
		t.Errorf("error %v, want DeadlineExceeded and ErrRateLimited", err)
	}
}
