package guestapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/internal/httpx"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

const testKey = "rta_t3stK3y-DoNotLeak-0123456789abcdef"

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// answer is one scripted response.
type answer struct {
	status int
	body   string
	header map[string]string
	hangup bool // close the connection without answering
}

// seen is one request as the server received it.
type seen struct {
	Method, Path, RawPath, Query string
	Header                       http.Header
	Body                         string
}

// harness is a scripted httptest server and a client with a fake clock, a
// recording Sleep and a captured debug log.
type harness struct {
	t      *testing.T
	srv    *httptest.Server
	c      *guestapi.Client
	mu     sync.Mutex
	script map[string][]answer // by path; the last answer repeats
	seen   []seen
	waits  []time.Duration
	now    time.Time
	logs   testutil.Buffer
}

func newHarness(t *testing.T, mod ...func(*guestapi.Config)) *harness {
	t.Helper()
	h := &harness{t: t, script: map[string][]answer{}, now: t0}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	cfg := guestapi.Config{
		BaseURL:     h.srv.URL,
		APIKey:      testKey,
		Logger:      slog.New(slog.NewJSONHandler(&h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Backoff:     httpretry.Backoff{Base: 100 * time.Millisecond, Max: time.Second, Rand: func() float64 { return 0.5 }},
		MaxAttempts: 4,
		Now:         h.clock,
		Sleep:       h.sleep,
	}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := guestapi.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.c = c
	return h
}

func (h *harness) clock() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

func (h *harness) advance(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = h.now.Add(d)
}

func (h *harness) sleep(ctx context.Context, d time.Duration) error {
	h.mu.Lock()
	h.waits = append(h.waits, d)
	h.mu.Unlock()
	return ctx.Err()
}

func (h *harness) on(path string, as ...answer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.script[path] = as
}

func (h *harness) requests() []seen {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.seen)
}

func (h *harness) recordedWaits() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.waits)
}

func (h *harness) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.seen = append(h.seen, seen{r.Method, r.URL.Path, r.URL.RawPath, r.URL.RawQuery, r.Header.Clone(), string(body)})
	as := h.script[r.URL.Path]
	var a answer
	switch len(as) {
	case 0:
		a = answer{status: 599, body: `{"error":"unscripted"}`}
	case 1:
		a = as[0]
	default:
		a, h.script[r.URL.Path] = as[0], as[1:]
	}
	h.mu.Unlock()
	if a.hangup {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(a.status)
	io.WriteString(w, a.body)
}

const (
	listPath   = "/ops-public-api/v1/tickets"
	ticketID   = "0b7f3c2e-5d1a-4c8e-9f00-3a2b1c0d9e8f"
	ticketPath = listPath + "/" + ticketID
	msgPath    = ticketPath + "/messages"
	statusPath = ticketPath + "/status"
)

const ticketJSON = `{"id":"` + ticketID + `","department":"housekeeping","status":"new","task_description":"Extra towels","origin":"guest","guest_rating":null,"target_due_at":null,"created_at":"2026-03-01T10:00:00.123456+00:00","updated_at":"2026-03-01T10:05:00.000000+00:00"}`

const threadJSON = `{"ticket":{"id":"` + ticketID + `","department":"housekeeping","status":"in_progress","task_description":"Extra towels","origin":"guest","guest_rating":4.5,"comments":"room 12","created_at":"2026-03-01T10:00:00.123456+00:00","updated_at":"2026-03-01T10:05:00.000000+00:00"},"messages":[{"id":"m1","author_type":"guest","author_name":"Ana","body":"Two please","visible_to_guest":true,"created_at":"2026-03-01T10:00:00.123456+00:00"}]}`

const tokenJSON = `{"access_token":"tok-SECRET-abc","token_type":"Bearer","expires_in":3600,"scopes":["read"],"product_type":"hotel"}`

func TestNewValidatesConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  guestapi.Config
		want string
	}{
		{"empty base", guestapi.Config{APIKey: testKey}, "BaseURL is empty"},
		{"ftp scheme", guestapi.Config{BaseURL: "ftp://h", APIKey: testKey}, `BaseURL scheme "ftp"`},
		{"no scheme", guestapi.Config{BaseURL: "127.0.0.1:8089", APIKey: testKey}, "BaseURL"},
		{"no host", guestapi.Config{BaseURL: "http://", APIKey: testKey}, "BaseURL has no host"},
		{"userinfo", guestapi.Config{BaseURL: "http://u:pw-SECRET@h", APIKey: testKey}, "BaseURL contains user information"},
		{"query", guestapi.Config{BaseURL: "http://h/?t=SECRET", APIKey: testKey}, "BaseURL has a query"},
		{"bad url", guestapi.Config{BaseURL: "http://h/%zzSECRET", APIKey: testKey}, "BaseURL does not parse"},
		{"empty key", guestapi.Config{BaseURL: "http://h"}, "APIKey is empty"},
		{"blank key", guestapi.Config{BaseURL: "http://h", APIKey: "  \n"}, "APIKey is empty"},
		{"wrong prefix", guestapi.Config{BaseURL: "http://h", APIKey: "sk_SECRET"}, `APIKey does not start with "rta_"`},
		{"prefix only", guestapi.Config{BaseURL: "http://h", APIKey: "rta_"}, "only the prefix"},
		{"inner space", guestapi.Config{BaseURL: "http://h", APIKey: "rta_SEC RET"}, "APIKey contains spaces"},
		{"negative attempts", guestapi.Config{BaseURL: "http://h", APIKey: testKey, MaxAttempts: -1}, "MaxAttempts -1 is negative"},
		{"negative backoff", guestapi.Config{BaseURL: "http://h", APIKey: testKey, Backoff: httpretry.Backoff{Base: -1}}, "must not be negative"},
		{"user agent newline", guestapi.Config{BaseURL: "http://h", APIKey: testKey, UserAgent: "a\r\nX-Evil: 1"}, "UserAgent contains a line break"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := guestapi.New(tc.cfg)
			if err == nil {
				t.Fatalf("New succeeded (%v), want error containing %q", c, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), testKey) {
				t.Errorf("error %q echoes a secret", err)
			}
		})
	}
	// A key read from a file with its newline is accepted.
	if _, err := guestapi.New(guestapi.Config{BaseURL: "https://h/functions/v1/", APIKey: testKey + "\n"}); err != nil {
		t.Errorf("New with trailing newline: %v", err)
	}
}

func TestRequestShape(t *testing.T) {
	h := newHarness(t, func(c *guestapi.Config) {
		c.UserAgent = "ticketbridge/test"
	})
	h.on(listPath, answer{status: 200, body: `{"tickets":[]}`})
	h.on("/ops-public-api/v1/tickets/a/b c", answer{status: 200, body: threadJSON})
	h.on(msgPath, answer{status: 200, body: `{"success":true,"message_id":"m9"}`})
	h.on(statusPath, answer{status: 200, body: `{"success":true,"status":"done"}`})
	ctx := context.Background()

	if _, err := h.c.ListTickets(ctx, guestapi.ListOptions{Status: guestapi.StatusNew, Department: "house keeping", Limit: 200}); err != nil {
		t.Fatalf("ListTickets: %v", err)
	}
	if _, err := h.c.ListTickets(ctx, guestapi.ListOptions{}); err != nil {
		t.Fatalf("ListTickets: %v", err)
	}
	if _, err := h.c.GetTicket(ctx, "a/b c"); err != nil {
		t.Fatalf("GetTicket: %v", err)
	}
	res, err := h.c.PostMessage(ctx, ticketID, guestapi.NewMessage{Body: "On the way", VisibleToGuest: true}, "idem-1")
	if err != nil || res.MessageID != "m9" || !res.Success {
		t.Fatalf("PostMessage = %+v, %v", res, err)
	}
	st, err := h.c.SetStatus(ctx, ticketID, guestapi.StatusDone, "")
	if err != nil || st.Status != guestapi.StatusDone {
		t.Fatalf("SetStatus = %+v, %v", st, err)
	}

	reqs := h.requests()
	if len(reqs) != 5 {
		t.Fatalf("server saw %d requests, want 5", len(reqs))
	}
	for _, r := range reqs {
		if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
			t.Errorf("%s %s: Authorization %q, want the key as bearer", r.Method, r.Path, got)
		}
		if got := r.Header.Get("User-Agent"); got != "ticketbridge/test" {
			t.Errorf("%s %s: User-Agent %q", r.Method, r.Path, got)
		}
		if got := r.Header.Get("Accept"); got != "application/json" {
			t.Errorf("%s %s: Accept %q", r.Method, r.Path, got)
		}
		wantCT := ""
		if r.Method == http.MethodPost {
			wantCT = "application/json"
		}
		if got := r.Header.Get("Content-Type"); got != wantCT {
			t.Errorf("%s %s: Content-Type %q, want %q", r.Method, r.Path, got, wantCT)
		}
	}
	if got, want := reqs[0].Query, "department=house+keeping&limit=200&status=new"; got != want {
		t.Errorf("list query %q, want %q", got, want)
	}
	if reqs[1].Query != "" {
		t.Errorf("list with zero options sent query %q, want none", reqs[1].Query)
	}
	if got, want := reqs[2].RawPath, "/ops-public-api/v1/tickets/a%2Fb%20c"; got != want {
		t.Errorf("escaped path %q, want %q", got, want)
	}
	if got, want := reqs[3].Body, `{"body":"On the way","visible_to_guest":true}`; got != want {
		t.Errorf("message body %s, want %s", got, want)
	}
	if got := reqs[3].Header.Get("Idempotency-Key"); got != "idem-1" {
		t.Errorf("Idempotency-Key %q, want idem-1", got)
	}
	if got, want := reqs[4].Body, `{"status":"done"}`; got != want {
		t.Errorf("status body %s, want %s", got, want)
	}
	if _, ok := reqs[4].Header["Idempotency-Key"]; ok {
		t.Error("SetStatus without a key sent an Idempotency-Key header")
	}
}

func TestBaseURLPathPrefix(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.Path)
		if strings.HasSuffix(r.URL.Path, "/api-auth/token") {
			io.WriteString(w, tokenJSON)
			return
		}
		io.WriteString(w, `{"tickets":[]}`)
	}))
	defer srv.Close()
	c, err := guestapi.New(guestapi.Config{BaseURL: srv.URL + "/functions/v1/", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTickets(context.Background(), guestapi.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Token(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"/functions/v1/ops-public-api/v1/tickets", "/functions/v1/api-auth/token"}
	if !slices.Equal(got, want) {
		t.Errorf("paths %q, want %q", got, want)
	}
}

func TestBadArgumentsAreRefusedLocally(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"negative limit", func() error { _, err := h.c.ListTickets(ctx, guestapi.ListOptions{Limit: -1}); return err }, "limit -1 is negative"},
		{"empty id get", func() error { _, err := h.c.GetTicket(ctx, ""); return err }, "ticket id is empty"},
		{"dot-dot id", func() error { _, err := h.c.GetTicket(ctx, ".."); return err }, `ticket id ".." is not an identifier`},
		{"empty id post", func() error { _, err := h.c.PostMessage(ctx, "", guestapi.NewMessage{Body: "x"}, "k"); return err }, "ticket id is empty"},
		{"empty id status", func() error { _, err := h.c.SetStatus(ctx, "", guestapi.StatusDone, "k"); return err }, "ticket id is empty"},
		{"bad idempotency key", func() error {
			_, err := h.c.PostMessage(ctx, ticketID, guestapi.NewMessage{Body: "x"}, "a\nb")
			return err
		}, "idempotency key"},
		{"long idempotency key", func() error {
			_, err := h.c.SetStatus(ctx, ticketID, guestapi.StatusDone, strings.Repeat("k", 256))
			return err
		}, "idempotency key is 256 bytes long"},
	} {
		if err := tc.call(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if n := len(h.requests()); n != 0 {
		t.Errorf("server saw %d requests, want none", n)
	}
}

func TestErrorAnswers(t *testing.T) {
	for _, tc := range []struct {
		status   int
		body     string
		sentinel error
		code     string
		need     string
		allowed  []string
	}{
		{400, `{"error":"unsupported_version"}`, guestapi.ErrUnsupportedVersion, "unsupported_version", "", nil},
		{400, `{"error":"body_required"}`, guestapi.ErrBodyRequired, "body_required", "", nil},
		{400, `{"error":"invalid_status","allowed":["new","assigned","in_progress","done","completed","cancelled"]}`, guestapi.ErrInvalidStatus, "invalid_status", "",
			[]string{"new", "assigned", "in_progress", "done", "completed", "cancelled"}},
		{401, `{"error":"unauthorized"}`, guestapi.ErrUnauthorized, "unauthorized", "", nil},
		{403, `{"error":"forbidden","need":"tickets:write"}`, guestapi.ErrForbidden, "forbidden", "tickets:write", nil},
		{404, `{"error":"not_found"}`, guestapi.ErrNotFound, "not_found", "", nil},
		{500, `{"error":"internal_error"}`, guestapi.ErrInternal, "internal_error", "", nil},
		{429, `{"error":"rate_limited"}`, guestapi.ErrRateLimited, "rate_limited", "", nil},
		// Codes the client does not know fall back to the HTTP status.
		{404, `{"error":"gone_fishing","extra":{"a":1}}`, guestapi.ErrNotFound, "gone_fishing", "", nil},
		{503, `{"error":"maintenance","message":"back at 3"}`, guestapi.ErrInternal, "maintenance", "", nil},
	} {
		t.Run(fmt.Sprintf("%d %s", tc.status, tc.code), func(t *testing.T) {
			h := newHarness(t, func(c *guestapi.Config) { c.MaxAttempts = 1 })
			h.on(msgPath, answer{status: tc.status, body: tc.body})
			_, err := h.c.PostMessage(context.Background(), ticketID, guestapi.NewMessage{Body: "x"}, "k1")
			if !errors.Is(err, tc.sentinel) {
				t.Fatalf("error %v does not match %v", err, tc.sentinel)
			}
			var ae *guestapi.Error
			if !errors.As(err, &ae) {
				t.Fatalf("error %v is no *guestapi.Error", err)
			}
			if ae.StatusCode != tc.status || ae.Code != tc.code || ae.Need != tc.need || !slices.Equal(ae.Allowed, tc.allowed) {
				t.Errorf("got %+v, want status %d code %q need %q allowed %q", ae, tc.status, tc.code, tc.need, tc.allowed)
			}
			if ae.Method != http.MethodPost || ae.Path != msgPath {
				t.Errorf("Method %q Path %q, want POST %s", ae.Method, ae.Path, msgPath)
			}
			if !strings.HasPrefix(err.Error(), "post message: POST "+msgPath+": HTTP ") {
				t.Errorf("error reads %q", err)
			}
		})
	}
}

func TestNonJSONErrorBodies(t *testing.T) {
	long := strings.Repeat("upstream trouble ", 50)
	for _, tc := range []struct {
		name, body, ctype, want string
	}{
		{"html 502", "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>", "text/html", "502 Bad Gateway"},
		{"title with spaces", "<HTML><TITLE>\n  Service\tUnavailable \n</TITLE>", "text/html", "Service Unavailable"},
		{"plain text", "upstream connect error or disconnect/reset before headers", "text/plain", "upstream connect error or disconnect/reset before headers"},
		{"long text", long, "text/plain", strings.TrimSpace(long)[:120] + "..."},
		{"control bytes", "bad\x00\x01\x1b[31mgateway\xff", "text/plain", "bad[31mgateway"},
		{"empty", "", "text/plain", "Bad Gateway"},
		{"json without code", `{"detail":"nope"}`, "application/json", `{"detail":"nope"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *guestapi.Config) { c.MaxAttempts = 1 })
			h.on(listPath, answer{status: 502, body: tc.body, header: map[string]string{"Content-Type": tc.ctype}})
			_, err := h.c.ListTickets(context.Background(), guestapi.ListOptions{})
			var ae *guestapi.Error
			if !errors.As(err, &ae) {
				t.Fatalf("error %v is no *guestapi.Error", err)
			}
			if ae.StatusCode != 502 || ae.Code != "" || ae.Message != tc.want {
				t.Errorf("got status %d code %q message %q, want 502, no code, message %q", ae.StatusCode, ae.Code, ae.Message, tc.want)
			}
			if !errors.Is(err, guestapi.ErrInternal) {
				t.Errorf("error %v does not match ErrInternal", err)
			}
		})
	}
}

func TestErrorBodyReadIsBounded(t *testing.T) {
	h := newHarness(t, func(c *guestapi.Config) { c.MaxAttempts = 1 })
	h.on(listPath, answer{status: 400, body: `{"error":"bad_request","message":"` + strings.Repeat("x", 1<<20) + `"}`})
	_, err := h.c.ListTickets(context.Background(), guestapi.ListOptions{})
	var ae *guestapi.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v is no *guestapi.Error", err)
	}
	if len(err.Error()) > 1000 {
		t.Errorf("error is %d bytes long, want a short one", len(err.Error()))
	}
}

func TestUnusableSuccessAnswers(t *testing.T) {
	for _, tc := range []struct {
		name, path, body, want string
		call                   func(*guestapi.Client) error
	}{
		{"html list", listPath, "<html>ok</html>", "want a JSON object", listCall},
		{"array list", listPath, `[]`, "want a JSON object", listCall},
		{"empty list body", listPath, ``, "empty body", listCall},
		{"missing tickets", listPath, `{"items":[]}`, "tickets is missing", listCall},
		{"tickets not array", listPath, `{"tickets":"x"}`, "cannot unmarshal", listCall},
		{"ticket without id", listPath, `{"tickets":[{"status":"new"}]}`, "tickets[0]: id is missing", listCall},
		{"bad timestamp", listPath, `{"tickets":[{"id":"a","created_at":"yesterday"}]}`, `bad timestamp "yesterday"`, listCall},
		{"truncated thread", ticketPath, threadJSON[:40], "unexpected end of JSON", getCall},
		{"thread without ticket", ticketPath, `{"messages":[]}`, "ticket is missing", getCall},
		{"message without id", ticketPath, `{"ticket":{"id":"a"},"messages":[{"body":"x"}]}`, "messages[0]: id is missing", getCall},
		{"post without message id", msgPath, `{"success":true}`, "message_id is missing", postCall},
		{"status without status", statusPath, `{"success":true}`, "status is missing", statusCall},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.on(tc.path, answer{status: 200, body: tc.body})
			err := tc.call(h.c)
			if !errors.Is(err, guestapi.ErrBadResponse) {
				t.Fatalf("error %v does not match ErrBadResponse", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("error %q should name the endpoint %s and contain %q", err, tc.path, tc.want)
			}
			if n := len(h.requests()); n != 1 {
				t.Errorf("server saw %d requests, want 1 (an unusable answer is not retried)", n)
			}
		})
	}
}

func listCall(c *guestapi.Client) error {
	_, err := c.ListTickets(context.Background(), guestapi.ListOptions{})
	return err
}

func getCall(c *guestapi.Client) error {
	_, err := c.GetTicket(context.Background(), ticketID)
	return err
}

func postCall(c *guestapi.Client) error {
	_, err := c.PostMessage(context.Background(), ticketID, guestapi.NewMessage{Body: "x"}, "key-1")
	return err
}

func postNoKeyCall(c *guestapi.Client) error {
	_, err := c.PostMessage(context.Background(), ticketID, guestapi.NewMessage{Body: "x"}, "")
	return err
}

func statusCall(c *guestapi.Client) error {
	_, err := c.SetStatus(context.Background(), ticketID, guestapi.StatusDone, "key-2")
	return err
}

func statusNoKeyCall(c *guestapi.Client) error {
	_, err := c.SetStatus(context.Background(), ticketID, guestapi.StatusDone, "")
	return err
}

func tokenCall(c *guestapi.Client) error {
	_, err := c.Token(context.Background())
	return err
}

func TestDecodeToleratesUnknownFieldsAndStatuses(t *testing.T) {
	h := newHarness(t)
	h.on(listPath, answer{status: 200, body: `{"tickets":[` +
		`{"id":"a","status":"escalated","origin":"robot","priority":{"level":3},"guest_rating":5,"target_due_at":"2026-03-02T00:00:00.000000+00:00","created_at":"2026-03-01T10:00:00.000001+00:00","updated_at":"2026-03-01T10:00:00.000001+00:00"},` +
		ticketJSON + `],"next_cursor":null,"total":2}`})
	h.on(ticketPath, answer{status: 200, body: `{"ticket":{"id":"` + ticketID + `","status":"confirmed","language":"pt","created_at":"2026-03-01T10:00:00+00:00","updated_at":"2026-03-01T10:00:00+00:00"},"messages":[{"id":"m1","author_type":"bot","created_at":"2026-03-01T10:00:00Z","attachments":[1,2]}],"sla":{}}`})
	ts, err := h.c.ListTickets(context.Background(), guestapi.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 {
		t.Fatalf("got %d tickets, want 2", len(ts))
	}
	if ts[0].Status != "escalated" || ts[0].Status.Known() || ts[0].Origin != "robot" {
		t.Errorf("unknown values not kept as they came: %+v", ts[0])
	}
	if ts[0].GuestRating == nil || *ts[0].GuestRating != 5 || ts[0].TargetDueAt == nil {
		t.Errorf("ticket 0 lost fields: %+v", ts[0])
	}
	if ts[1].GuestRating != nil || ts[1].TargetDueAt != nil || ts[1].Department != "housekeeping" {
		t.Errorf("ticket 1 decoded wrong: %+v", ts[1])
	}
	th, err := h.c.GetTicket(context.Background(), ticketID)
	if err != nil {
		t.Fatal(err)
	}
	if th.Ticket.Status != guestapi.StatusConfirmed || len(th.Messages) != 1 || th.Messages[0].AuthorType != "bot" {
		t.Errorf("thread decoded wrong: %+v", th)
	}
}

func TestEmptyThreadAndList(t *testing.T) {
	h := newHarness(t)
	h.on(listPath, answer{status: 200, body: `{"tickets":null}`})
	h.on(ticketPath, answer{status: 200, body: `{"ticket":{"id":"x"}}`})
	ts, err := h.c.ListTickets(context.Background(), guestapi.ListOptions{})
	if err != nil || ts == nil || len(ts) != 0 {
		t.Errorf("ListTickets = %#v, %v; want an empty, non-nil slice", ts, err)
	}
	th, err := h.c.GetTicket(context.Background(), ticketID)
	if err != nil || th.Messages == nil || len(th.Messages) != 0 {
		t.Errorf("GetTicket = %+v, %v; want an empty, non-nil message list", th, err)
	}
}

func TestTimestampForms(t *testing.T) {
	want := time.Date(2026, 3, 1, 10, 0, 0, 123456000, time.UTC)
	for _, form := range []string{
		"2026-03-01T10:00:00.123456+00:00",
		"2026-03-01T10:00:00.123456Z",
		"2026-03-01T11:00:00.123456+01:00",
		"2026-03-01T05:30:00.123456-04:30",
		"2026-03-01 10:00:00.123456+00:00",
		"2026-03-01T10:00:00.123456",
		"2026-03-01T10:00:00.123456000Z",
	} {
		h := newHarness(t)
		h.on(listPath, answer{status: 200, body: `{"tickets":[{"id":"a","created_at":"` + form + `","updated_at":"` + form + `","target_due_at":"` + form + `"}]}`})
		ts, err := h.c.ListTickets(context.Background(), guestapi.ListOptions{})
		if err != nil {
			t.Errorf("%s: %v", form, err)
			continue
		}
		if !ts[0].CreatedAt.Equal(want) || !ts[0].UpdatedAt.Equal(want) || !ts[0].TargetDueAt.Equal(want) {
			t.Errorf("%s: parsed %s, want %s", form, ts[0].CreatedAt, want)
		}
		if ts[0].CreatedAt.Location() != time.UTC {
			t.Errorf("%s: location %s, want UTC", form, ts[0].CreatedAt.Location())
		}
	}
}

func TestRetryCounts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		path     string
		call     func(*guestapi.Client) error
		attempts int
	}{
		{"GET list", listPath, listCall, 4},
		{"GET ticket", ticketPath, getCall, 4},
		{"POST message with key", msgPath, postCall, 4},
		{"POST message without key", msgPath, postNoKeyCall, 1},
		{"POST status with key", statusPath, statusCall, 4},
		{"POST status without key", statusPath, statusNoKeyCall, 1},
		{"POST token exchange", "/api-auth/token", tokenCall, 4},
	} {
		for _, status := range []int{500, 502, 503, 504} {
			t.Run(fmt.Sprintf("%s %d", tc.name, status), func(t *testing.T) {
				h := newHarness(t)
				h.on(tc.path, answer{status: status, body: `{"error":"internal_error"}`})
				err := tc.call(h.c)
				if !errors.Is(err, guestapi.ErrInternal) {
					t.Fatalf("error %v does not match ErrInternal", err)
				}
				if n := len(h.requests()); n != tc.attempts {
					t.Errorf("server saw %d requests, want %d", n, tc.attempts)
				}
				// Rand 0.5 of the ceilings 100ms, 200ms, 400ms.
				want := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}[:tc.attempts-1]
				if got := h.recordedWaits(); !slices.Equal(got, want) {
					t.Errorf("waits %v, want %v", got, want)
				}
				if tc.attempts > 1 && !strings.Contains(err.Error(), "(4 attempts)") {
					t.Errorf("error %q does not say how often it tried", err)
				}
			})
		}
	}
}

func TestRetryRecovers(t *testing.T) {
	h := newHarness(t)
	h.on(msgPath,
		answer{status: 503, body: "<title>busy</title>"},
		answer{hangup: true},
		answer{status: 200, body: `{"success":true,"message_id":"m1"}`})
	res, err := h.c.PostMessage(context.Background(), ticketID, guestapi.NewMessage{Body: "hi"}, "same-key")
	if err != nil || res.MessageID != "m1" {
		t.Fatalf("PostMessage = %+v, %v", res, err)
	}
	reqs := h.requests()
	if len(reqs) != 3 {
		t.Fatalf("server saw %d requests, want 3", len(reqs))
	}
	for i, r := range reqs {
		if r.Header.Get("Idempotency-Key") != "same-key" || r.Body != `{"body":"hi","visible_to_guest":false}` {
			t.Errorf("attempt %d: key %q body %s, want the same key and body each time", i+1, r.Header.Get("Idempotency-Key"), r.Body)
		}
	}
}

func TestNoRetryOnPermanentErrors(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 409, 422} {
		h := newHarness(t)
		h.on(listPath, answer{status: status, body: `{"error":"x"}`})
		if err := listCall(h.c); err == nil {
			t.Fatalf("%d: no error", status)
		}
		if n := len(h.requests()); n != 1 {
			t.Errorf("%d: server saw %d requests, want 1", status, n)
		}
	}
}

func TestConnectionErrorsRetryOnlyWhenSafe(t *testing.T) {
	for _, tc := range []struct {
		name     string
		path     string
		call     func(*guestapi.Client) error
		attempts int
	}{
		{"GET", listPath, listCall, 3},
		{"POST with key", msgPath, postCall, 3},
		{"POST without key", msgPath, postNoKeyCall, 1},
		{"POST status without key", statusPath, statusNoKeyCall, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *guestapi.Config) { c.MaxAttempts = 3 })
			h.on(tc.path, answer{hangup: true})
			err := tc.call(h.c)
			if err == nil {
				t.Fatal("no error")
			}
			var ae *guestapi.Error
			if errors.As(err, &ae) {
				t.Errorf("a hang-up became an API error: %v", err)
			}
			if n := len(h.requests()); n != tc.attempts {
				t.Errorf("server saw %d requests, want %d", n, tc.attempts)
			}
		})
	}
}

// TestGuardRefusalIsNotRepeated: a request the client's own transport
// refuses (the lease guard of package internal/httpx) never reaches the
// API, is not repeated, and its error wraps the guard's.
func TestGuardRefusalIsNotRepeated(t *testing.T) {
	errEnded := errors.New("the lease ended")
	h := newHarness(t, func(c *guestapi.Config) {
		c.HTTPClient = httpx.Chain{Guard: func() error { return errEnded }}.Client(&http.Client{})
	})
	h.on(listPath, answer{status: 200, body: `{"data":[]}`})
	err := listCall(h.c)
	if !errors.Is(err, errEnded) || !errors.Is(err, httpretry.ErrRefused) {
		t.Errorf("a refused call: %v, want the guard's error", err)
	}
	if n, w := len(h.requests()), len(h.recordedWaits()); n != 0 || w != 0 {
		t.Errorf("the server saw %d requests after %d waits, want none and none", n, w)
	}
}

func TestConnectionRefusedIsRetried(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	var sleeps atomic.Int32
	c, err := guestapi.New(guestapi.Config{BaseURL: url, APIKey: testKey, MaxAttempts: 3,
		Sleep: func(ctx context.Context, d time.Duration) error { sleeps.Add(1); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	err = listCall(c)
	if err == nil || !strings.Contains(err.Error(), "(3 attempts)") {
		t.Errorf("error %v, want a refused connection after 3 attempts", err)
	}
	if sleeps.Load() != 2 {
		t.Errorf("slept %d times, want 2", sleeps.Load())
	}
}

// TestAttemptTimeoutIsRetried: an attempt the client's timeout ends is
// retried. In a bubble, on in-memory connections: the timeout ends the
// held attempt on the bubble's clock, and the answer to the next one
// takes none of it, however busy the machine.
func TestAttemptTimeoutIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		tr := testutil.PipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				<-r.Context().Done() // hold the first attempt until the client gave up on it
				return
			}
			io.WriteString(w, `{"tickets":[]}`)
		}))
		c, err := guestapi.New(guestapi.Config{BaseURL: testutil.PipeURL, APIKey: testKey,
			HTTPClient: &http.Client{Timeout: 50 * time.Millisecond, Transport: tr},
			Sleep:      func(ctx context.Context, d time.Duration) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ListTickets(context.Background(), guestapi.ListOptions{}); err != nil {
			t.Fatalf("ListTickets after a timed-out attempt: %v", err)
		}
		if calls.Load() != 2 {
			t.Errorf("server saw %d requests, want 2", calls.Load())
		}
	})
}

func TestRateLimitWaits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"date", map[string]string{"Retry-After": t0.Add(42 * time.Second).Format(http.TimeFormat)}, 42 * time.Second},
		{"absent", nil, time.Minute},
		{"garbage", map[string]string{"Retry-After": "later"}, time.Minute},
		{"zero: retry at once", map[string]string{"Retry-After": "0"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.on(listPath, answer{status: 429, header: tc.header, body: `{"error":"rate_limited"}`}, answer{status: 200, body: `{"tickets":[]}`})
			if err := listCall(h.c); err != nil {
				t.Fatal(err)
			}
			if got := h.recordedWaits(); !slices.Equal(got, []time.Duration{tc.want}) {
				t.Errorf("waits %v, want [%s]", got, tc.want)
			}
		})
	}
	// A POST without an idempotency key is repeated after a 429, which
	// certainly did not take effect, but not after a 503, which might have.
	h := newHarness(t)
	h.on(msgPath, answer{status: 429, header: map[string]string{"Retry-After": "30"}, body: `{"error":"rate_limited"}`},
		answer{status: 200, body: `{"success":true,"message_id":"m1"}`})
	if err := postNoKeyCall(h.c); err != nil {
		t.Fatalf("POST without key after a 429: %v", err)
	}
	if got := h.recordedWaits(); len(h.requests()) != 2 || !slices.Equal(got, []time.Duration{30 * time.Second}) {
		t.Errorf("server saw %d requests after waits %v, want 2 after [30s]", len(h.requests()), got)
	}
	h = newHarness(t)
	h.on(msgPath, answer{status: 503, header: map[string]string{"Retry-After": "30"}, body: `{"error":"internal_error"}`})
	err := postNoKeyCall(h.c)
	var ae *guestapi.Error
	if !errors.As(err, &ae) || ae.RetryAfter != 30*time.Second || !errors.Is(err, guestapi.ErrInternal) {
		t.Errorf("error %v, want a 503 *Error with RetryAfter 30s", err)
	}
	if n := len(h.requests()); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

func TestContextDeadlineBoundsLongRetryAfter(t *testing.T) {
	h := newHarness(t)
	h.on(listPath, answer{status: 429, header: map[string]string{"Retry-After": "240"}, body: `{"error":"rate_limited"}`})
	// With a deadline shorter than the wait, the call gives up before sleeping.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := h.c.ListTickets(ctx, guestapi.ListOptions{})
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, guestapi.ErrRateLimited) {
		t.Fatalf("error %v, want one matching both DeadlineExceeded and ErrRateLimited", err)
	}
	var ae *guestapi.Error
	if !errors.As(err, &ae) || ae.RetryAfter != 4*time.Minute {
		t.Errorf("error %v does not carry the 429 with its Retry-After", err)
	}
	if got := h.recordedWaits(); len(got) != 0 {
		t.Errorf("waits %v, want none", got)
	}
	if n := len(h.requests()); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
	// Without a deadline a wait within MaxWait is waited for, as often as allowed.
	if err := listCall(h.c); !errors.Is(err, guestapi.ErrRateLimited) {
		t.Fatalf("error %v, want ErrRateLimited", err)
	}
	if got := h.recordedWaits(); !slices.Equal(got, []time.Duration{4 * time.Minute, 4 * time.Minute, 4 * time.Minute}) {
		t.Errorf("waits %v, want three of four minutes", got)
	}
}

// TestLongRetryAfterPutsOff: a proxy's 503 with Retry-After: 3600 is not
// sat out inside the call (which would park the daemon for an hour): the
// call ends at once with an error that says until when to stay away.
func TestLongRetryAfterPutsOff(t *testing.T) {
	for _, tc := range []struct {
		name    string
		maxWait time.Duration
		ctxMax  time.Duration // httpretry.WithMaxWait on the call's context
		want    time.Duration // the longest wait allowed
	}{
		{"default", 0, 0, httpretry.DefaultMaxWait},
		{"configured", 2 * time.Minute, 0, 2 * time.Minute},
		{"the cycle's interval", 0, time.Minute, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *guestapi.Config) { c.MaxWait = tc.maxWait })
			h.on(listPath, answer{status: 503, header: map[string]string{"Retry-After": "3600"}, body: `<html>busy</html>`})
			ctx := t.Context()
			if tc.ctxMax > 0 {
				ctx = httpretry.WithMaxWait(ctx, tc.ctxMax)
			}
			_, err := h.c.ListTickets(ctx, guestapi.ListOptions{})
			var we *httpretry.WaitError
			if !errors.As(err, &we) || !errors.Is(err, httpretry.ErrWaitTooLong) {
				t.Fatalf("error %v, want a *httpretry.WaitError", err)
			}
			if we.Wait != time.Hour || !we.Until.Equal(t0.Add(time.Hour)) || we.Max != tc.want {
				t.Errorf("WaitError %+v, want an hour's wait until %s over the %s allowed", we, t0.Add(time.Hour), tc.want)
			}
			if got := h.recordedWaits(); len(got) != 0 {
				t.Errorf("waits %v, want none", got)
			}
			if n := len(h.requests()); n != 1 {
				t.Errorf("server saw %d requests, want 1", n)
			}
		})
	}
}

func TestCancelDuringWait(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := newHarness(t, func(c *guestapi.Config) {
		c.Sleep = func(ctx context.Context, d time.Duration) error {
			cancel()
			<-ctx.Done()
			return ctx.Err()
		}
	})
	h.on(ticketPath, answer{status: 503, body: `{"error":"internal_error"}`})
	_, err := h.c.GetTicket(ctx, ticketID)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, guestapi.ErrInternal) {
		t.Errorf("error %v, want one matching both Canceled and ErrInternal", err)
	}
	if n := len(h.requests()); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
	// An already cancelled context makes no request at all.
	before := len(h.requests())
	if _, err := h.c.GetTicket(ctx, ticketID); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if len(h.requests()) != before {
		t.Error("a request was made with a cancelled context")
	}
}

func TestTokenIsCachedUntilShortlyBeforeExpiry(t *testing.T) {
	h := newHarness(t)
	h.on("/api-auth/token", answer{status: 200, body: tokenJSON})
	h.on("/api-auth/verify", answer{status: 200, body: `{"organization":"org-1","scopes":["read"],"product_type":"hotel","expires_at":"2026-03-01T13:00:00.000000+00:00"}`})
	ctx := context.Background()
	for range 5 {
		tok, err := h.c.Token(ctx)
		if err != nil || tok.AccessToken != "tok-SECRET-abc" || tok.ExpiresIn != 3600 {
			t.Fatalf("Token = %v, %v", tok, err)
		}
	}
	v, err := h.c.Verify(ctx)
	if err != nil || v.Organization != "org-1" || !v.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("Verify = %+v, %v", v, err)
	}
	h.advance(58*time.Minute + 59*time.Second)
	if _, err := h.c.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	count := func() (exchanges, verifies int) {
		for _, r := range h.requests() {
			switch r.Path {
			case "/api-auth/token":
				exchanges++
				if r.Body != `{"api_key":"`+testKey+`"}` || r.Header.Get("Authorization") != "" {
					t.Errorf("exchange sent body %s, Authorization %q", r.Body, r.Header.Get("Authorization"))
				}
			case "/api-auth/verify":
				verifies++
				if got := r.Header.Get("Authorization"); got != "Bearer tok-SECRET-abc" {
					t.Errorf("verify sent Authorization %q, want the access token", got)
				}
			}
		}
		return
	}
	if e, v := count(); e != 1 || v != 2 {
		t.Errorf("%d exchanges, %d verifies; want 1, 2", e, v)
	}
	h.advance(time.Second) // 59 minutes: within a minute of expiry
	if _, err := h.c.Token(ctx); err != nil {
		t.Fatal(err)
	}
	if e, _ := count(); e != 2 {
		t.Errorf("%d exchanges after 59 minutes, want 2", e)
	}
}

func TestShortLivedTokenRefreshesAtHalfLife(t *testing.T) {
	h := newHarness(t)
	h.on("/api-auth/token", answer{status: 200, body: `{"access_token":"t","token_type":"bearer","expires_in":60}`})
	ctx := context.Background()
	exchanges := func() int { return len(h.requests()) }
	h.c.Token(ctx)
	h.advance(29 * time.Second)
	h.c.Token(ctx)
	if exchanges() != 1 {
		t.Errorf("%d exchanges before half the lifetime, want 1", exchanges())
	}
	h.advance(time.Second)
	h.c.Token(ctx)
	if exchanges() != 2 {
		t.Errorf("%d exchanges at half the lifetime, want 2", exchanges())
	}
}

func TestConcurrentTokenCallersShareOneExchange(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	var exchanges atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		exchanges.Add(1)
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		io.WriteString(w, tokenJSON)
	}))
	defer srv.Close()
	c, err := guestapi.New(guestapi.Config{BaseURL: srv.URL, APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			tok, err := c.Token(context.Background())
			if err == nil && tok.AccessToken != "tok-SECRET-abc" {
				err = fmt.Errorf("got token %v", tok)
			}
			errs <- err
		})
	}
	close(start)
	<-entered // one exchange is in flight; the others find it or the cache
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := exchanges.Load(); got != 1 {
		t.Errorf("%d exchanges for %d concurrent callers, want 1", got, n)
	}
}

func TestTokenFollowerOutlivesCancelledLeader(t *testing.T) {
	var exchanges atomic.Int32
	entered := make(chan struct{}, 4)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // lets the server notice the client hanging up
		if exchanges.Add(1) == 1 {
			entered <- struct{}{}
			select { // the leader's request: never answered
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		io.WriteString(w, tokenJSON)
	}))
	defer srv.Close()
	defer close(release)
	c, err := guestapi.New(guestapi.Config{BaseURL: srv.URL, APIKey: testKey,
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() }})
	if err != nil {
		t.Fatal(err)
	}
	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	leaderErr := make(chan error, 1)
	go func() { _, err := c.Token(leaderCtx); leaderErr <- err }()
	<-entered
	followerErr := make(chan error, 1)
	go func() { _, err := c.Token(context.Background()); followerErr <- err }()
	cancelLeader()
	if err := <-leaderErr; !errors.Is(err, context.Canceled) {
		t.Errorf("leader error %v, want context.Canceled", err)
	}
	if err := <-followerErr; err != nil {
		t.Errorf("follower error %v, want a token of its own", err)
	}
}

func TestTokenAnswerChecked(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"token_type":"Bearer","expires_in":3600}`, "access_token is missing"},
		{`{"access_token":"x","token_type":"Bearer","expires_in":0}`, "expires_in 0"},
		{`{"access_token":"x","token_type":"MAC","expires_in":3600}`, `token_type "MAC"`},
		{`{"access_token":"x","expires_in":"3600"}`, "cannot unmarshal"},
	} {
		h := newHarness(t)
		h.on("/api-auth/token", answer{status: 200, body: tc.body})
		err := tokenCall(h.c)
		if !errors.Is(err, guestapi.ErrBadResponse) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "/api-auth/token") {
			t.Errorf("%s: error %v, want ErrBadResponse naming the endpoint and %q", tc.body, err, tc.want)
		}
	}
}

func TestVerifyRenewsARefusedToken(t *testing.T) {
	h := newHarness(t)
	h.on("/api-auth/token",
		answer{status: 200, body: `{"access_token":"old","token_type":"Bearer","expires_in":3600}`},
		answer{status: 200, body: `{"access_token":"new","token_type":"Bearer","expires_in":3600}`})
	h.on("/api-auth/verify", answer{status: 401, body: `{"error":"unauthorized"}`}, answer{status: 200, body: `{"organization":"o"}`})
	ctx := context.Background()
	if _, err := h.c.Token(ctx); err != nil {
		t.Fatal(err)
	}
	v, err := h.c.Verify(ctx)
	if err != nil || v.Organization != "o" {
		t.Fatalf("Verify = %+v, %v", v, err)
	}
	var auths []string
	for _, r := range h.requests() {
		if r.Path == "/api-auth/verify" {
			auths = append(auths, r.Header.Get("Authorization"))
		}
	}
	if want := []string{"Bearer old", "Bearer new"}; !slices.Equal(auths, want) {
		t.Errorf("verify authorizations %q, want %q", auths, want)
	}
	// A persistent 401 is an error, after one renewal only.
	h.on("/api-auth/verify", answer{status: 401, body: `{"error":"unauthorized"}`})
	if _, err := h.c.Verify(ctx); !errors.Is(err, guestapi.ErrUnauthorized) {
		t.Errorf("error %v, want ErrUnauthorized", err)
	}
}

func TestTokenRateLimitIsRetried(t *testing.T) {
	h := newHarness(t)
	h.on("/api-auth/token", answer{status: 429, body: `{"error":"rate_limited"}`}, answer{status: 200, body: tokenJSON})
	if err := tokenCall(h.c); err != nil {
		t.Fatal(err)
	}
	if got := h.recordedWaits(); !slices.Equal(got, []time.Duration{time.Minute}) {
		t.Errorf("waits %v, want [1m0s]", got)
	}
}

func TestKeyNeverLeaks(t *testing.T) {
	h := newHarness(t)
	echo := "your key " + testKey + " and token tok-SECRET-abc"
	h.on("/api-auth/token", answer{status: 200, body: tokenJSON})
	h.on("/api-auth/verify", answer{status: 403, body: `{"error":"forbidden","need":"` + testKey + `","message":"` + echo + `"}`})
	h.on(listPath, answer{status: 400, body: `{"error":"` + testKey + `","message":"` + echo + `","allowed":["` + testKey + `"]}`})
	h.on(ticketPath, answer{status: 502, body: "<title>" + echo + "</title>"})
	// A snippet cut short must not keep the start of the key either.
	h.on(msgPath, answer{status: 401, body: strings.Repeat("x", 105) + " " + echo})
	h.on(statusPath, answer{hangup: true})
	ctx := context.Background()
	var errs []error
	_, err := h.c.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.c.Verify(ctx)
	errs = append(errs, err)
	errs = append(errs, listCall(h.c), getCall(h.c), postCall(h.c), statusCall(h.c))
	for _, bad := range []guestapi.Config{
		{BaseURL: "http://h", APIKey: "sk_" + testKey},
		{BaseURL: "http://h", APIKey: testKey + " x"},
	} {
		_, err := guestapi.New(bad)
		errs = append(errs, err)
	}
	for i, err := range errs {
		if err == nil {
			t.Errorf("call %d: no error", i)
			continue
		}
		s := err.Error() + fmt.Sprintf("%+v %#v", err, err)
		if strings.Contains(s, "t3stK3y") || strings.Contains(s, "tok-SECRET") {
			t.Errorf("call %d: error leaks a secret: %s", i, s)
		}
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("client", "client", h.c)
	for _, s := range []string{h.c.String(), fmt.Sprintf("%v %+v %#v %s", h.c, h.c, h.c, h.c), buf.String(), h.logs.String()} {
		if strings.Contains(s, "t3stK3y") || strings.Contains(s, "tok-SECRET") {
			t.Errorf("output leaks a secret: %s", s)
		}
	}
	if !strings.Contains(buf.String(), `"key":"rta_[redacted]"`) {
		t.Errorf("LogValue output %s lacks the redacted key", buf.String())
	}
	if !strings.Contains(h.logs.String(), `"op":"list tickets"`) {
		t.Error("debug log is empty: the leak check proves nothing")
	}
}

func TestDebugLogPerAttempt(t *testing.T) {
	h := newHarness(t)
	h.on(ticketPath, answer{status: 503, body: "{}"}, answer{status: 200, body: threadJSON})
	if err := getCall(h.c); err != nil {
		t.Fatal(err)
	}
	var records []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(h.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == "api request" {
			records = append(records, m)
		}
	}
	if len(records) != 2 {
		t.Fatalf("%d request records, want 2: %s", len(records), h.logs.String())
	}
	for i, m := range records {
		if m["level"] != "DEBUG" || m["op"] != "get ticket" || m["method"] != "GET" || m["path"] != ticketPath ||
			m["attempt"] != float64(i+1) || m["duration"] == nil {
			t.Errorf("record %d: %v", i, m)
		}
		for k := range m {
			if strings.Contains(strings.ToLower(k), "header") || strings.Contains(strings.ToLower(k), "authorization") {
				t.Errorf("record %d logs %s", i, k)
			}
		}
	}
	if records[0]["status"] != float64(503) || records[1]["status"] != float64(200) {
		t.Errorf("statuses %v, %v; want 503, 200", records[0]["status"], records[1]["status"])
	}
}

func TestDefaultsWork(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("User-Agent") != guestapi.DefaultUserAgent {
			w.WriteHeader(400)
			return
		}
		io.WriteString(w, `{"tickets":[]}`)
	}))
	defer srv.Close()
	c, err := guestapi.New(guestapi.Config{BaseURL: srv.URL, APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if err := listCall(c); err != nil {
		t.Errorf("ListTickets with a default config: %v", err)
	}
}

func BenchmarkListTickets(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"tickets":[`)
	for i := range 200 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strings.Replace(ticketJSON, ticketID, fmt.Sprintf("t-%d", i), 1))
	}
	sb.WriteString(`]}`)
	body := sb.String()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }))
	defer srv.Close()
	c, err := guestapi.New(guestapi.Config{BaseURL: srv.URL, APIKey: testKey})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := c.ListTickets(context.Background(), guestapi.ListOptions{Limit: 200}); err != nil {
			b.Fatal(err)
		}
	}
}
