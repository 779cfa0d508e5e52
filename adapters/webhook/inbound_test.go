package webhook_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// post sends body to the adapter's inbound endpoint signed under secret at
// at, and returns the status and the decoded answer.
func post(t testing.TB, url, secret string, at time.Time, body []byte) (int, webhook.InboundAnswer) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	webhook.SetSignature(req.Header, secret, at, body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var ans webhook.InboundAnswer
	if err := json.Unmarshal(b, &ans); err != nil {
		t.Fatalf("answer %d is not JSON: %q", resp.StatusCode, b)
	}
	return resp.StatusCode, ans
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestInboundAnswers(t *testing.T) {
	r := newRig(t, false)
	ctx := t.Context()
	if _, err := r.a.EnsureTicket(ctx, upTicket("t-1")); err != nil {
		t.Fatal(err)
	}
	url := r.a.InboundURL()
	now := time.Now()
	reply := func(mod func(*webhook.InboundEvent)) []byte {
		ev := webhook.InboundEvent{ID: "rx-1", Type: "reply", TicketID: "t-1", Body: "On its way.", AuthorName: "Anna"}
		if mod != nil {
			mod(&ev)
		}
		return mustJSON(t, ev)
	}
	cases := []struct {
		name      string
		secret    string
		at        time.Time
		body      []byte
		status    int
		code      string
		field     string
		mentioned string
	}{
		{"bad signature", "another-secret-0123456789", now, reply(nil), 401, "unauthorized", "", "signature"},
		{"replayed old request", testSecret, now.Add(-6 * time.Minute), reply(nil), 401, "unauthorized", "", "tolerance"},
		{"from the future", testSecret, now.Add(6 * time.Minute), reply(nil), 401, "unauthorized", "", "ahead"},
		{"not JSON", testSecret, now, []byte("hello"), 400, "invalid", "", "JSON"},
		{"no event id", testSecret, now, reply(func(e *webhook.InboundEvent) { e.ID = "" }), 400, "invalid", "id", "id is required"},
		{"event id too long", testSecret, now, reply(func(e *webhook.InboundEvent) { e.ID = strings.Repeat("x", 201) }), 400, "invalid", "id", "at most 200"},
		{"event id with a newline", testSecret, now, reply(func(e *webhook.InboundEvent) { e.ID = "a\nb" }), 400, "invalid", "id", "control"},
		{"no type", testSecret, now, reply(func(e *webhook.InboundEvent) { e.Type = "" }), 400, "invalid", "type", "reply, note or status"},
		{"unknown type", testSecret, now, reply(func(e *webhook.InboundEvent) { e.Type = "comment" }), 400, "invalid", "type", `"comment"`},
		{"no ticket", testSecret, now, reply(func(e *webhook.InboundEvent) { e.TicketID = "" }), 400, "invalid", "ticket_id", "required"},
		{"blank body", testSecret, now, reply(func(e *webhook.InboundEvent) { e.Body = " \n" }), 400, "invalid", "body", "blank"},
		{"bad created_at", testSecret, now, reply(func(e *webhook.InboundEvent) { e.CreatedAt = "yesterday" }), 400, "invalid", "created_at", "RFC 3339"},
		{"status without status", testSecret, now, reply(func(e *webhook.InboundEvent) { e.Type, e.Body = "status", "" }), 400, "invalid", "status", "required"},
		{"unmapped status", testSecret, now, reply(func(e *webhook.InboundEvent) { e.Type, e.Status = "status", "confirmed" }), 422, "invalid", "status", "in_progress"},
		{"unknown ticket", testSecret, now, reply(func(e *webhook.InboundEvent) { e.TicketID = "t-404" }), 404, "unknown_ticket", "ticket_id", "t-404"},
		{"too large", testSecret, now, reply(func(e *webhook.InboundEvent) { e.Body = strings.Repeat("a", webhook.MaxInboundBytes) }), 413, "too_large", "", "bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, ans := post(t, url, c.secret, c.at, c.body)
			if status != c.status || ans.OK || ans.Error != c.code || ans.Field != c.field || !strings.Contains(ans.Message, c.mentioned) {
				t.Fatalf("answer %d %+v; want %d, error %q, field %q, a message mentioning %q", status, ans, c.status, c.code, c.field, c.mentioned)
			}
			if strings.Contains(ans.Message, testSecret) {
				t.Fatal("the answer contains the secret")
			}
		})
	}
	if evs, _, err := r.a.Changes(ctx, ""); err != nil || len(evs) != 0 {
		t.Fatalf("refused events were stored: %+v, %v", evs, err)
	}

	// The good one, twice; then the same id with other content.
	status, ans := post(t, url, testSecret, now, reply(nil))
	if status != 200 || !ans.OK || ans.Duplicate || ans.ID != "rx-1" || ans.Seq != 1 {
		t.Fatalf("good event: %d %+v", status, ans)
	}
	status, ans = post(t, url, testSecret, now.Add(time.Minute), reply(nil))
	if status != 200 || !ans.OK || !ans.Duplicate || ans.Seq != 1 {
		t.Fatalf("repeated event: %d %+v; want 200 duplicate", status, ans)
	}
	status, ans = post(t, url, testSecret, now, reply(func(e *webhook.InboundEvent) { e.Body = "Something else." }))
	if status != 409 || ans.Field != "id" {
		t.Fatalf("reused id: %d %+v; want 409 naming id", status, ans)
	}
	evs, _, err := r.a.Changes(ctx, "")
	if err != nil || len(evs) != 1 || evs[0].Body != "On its way." {
		t.Fatalf("Changes = %+v, %v; want the one reply", evs, err)
	}

	for _, m := range []string{http.MethodGet, http.MethodPut} {
		req, _ := http.NewRequestWithContext(ctx, m, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
			t.Errorf("%s: %d, Allow %q; want 405 and POST", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
	if status, _ := post(t, strings.TrimSuffix(url, "/events")+"/other", testSecret, now, reply(nil)); status != 404 {
		t.Errorf("POST to another path: %d, want 404", status)
	}
}

func TestChangesMapsEvents(t *testing.T) {
	r := newRig(t, false)
	ctx := t.Context()
	r.a.EnsureTicket(ctx, upTicket("t-1"))
	at := "2026-03-14T09:31:02.5+01:00"
	before := time.Now()
	for _, ev := range []webhook.InboundEvent{
		{ID: "a", Type: "reply", TicketID: "t-1", Body: "Reply.", AuthorName: "Anna", CreatedAt: at},
		{ID: "b", Type: "note", TicketID: "t-1", Body: "Note."},
		{ID: "c", Type: "status", TicketID: "t-1", Status: "done", Body: "ignored"},
	} {
		if _, err := r.rc.Send(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	evs, cur, err := r.a.Changes(ctx, "")
	if err != nil || len(evs) != 3 {
		t.Fatalf("Changes = %+v, %v", evs, err)
	}
	after := time.Now()
	// An event without created_at is stamped when it arrives.
	want := []adapters.Event{
		{ID: "a", Ref: "t-1", UpstreamTicketID: "t-1", Kind: adapters.EventReply, Body: "Reply.", AuthorName: "Anna", At: time.Date(2026, 3, 14, 8, 31, 2, 500000000, time.UTC)},
		{ID: "b", Ref: "t-1", UpstreamTicketID: "t-1", Kind: adapters.EventNote, Body: "Note."},
		{ID: "c", Ref: "t-1", UpstreamTicketID: "t-1", Kind: adapters.EventStatus, Status: guestapi.StatusDone},
	}
	for i := range want {
		switch {
		case !want[i].At.IsZero() && !evs[i].At.Equal(want[i].At):
			t.Errorf("event %d: At %s, want %s", i, evs[i].At, want[i].At)
		case want[i].At.IsZero() && (evs[i].At.Before(before) || evs[i].At.After(after)):
			t.Errorf("event %d: At %s, want the time it arrived, %s..%s", i, evs[i].At, before, after)
		}
		evs[i].At = want[i].At
		if evs[i] != want[i] {
			t.Errorf("event %d = %+v\nwant %+v", i, evs[i], want[i])
		}
	}
	if more, again, err := r.a.Changes(ctx, cur); err != nil || len(more) != 0 || again != cur {
		t.Errorf("Changes from the last cursor = %+v, %q, %v; want nothing and the same cursor", more, again, err)
	}
	if _, _, err := r.a.Changes(ctx, "garbage"); err == nil {
		t.Error("Changes accepted a malformed cursor")
	}
}

// An acknowledged event is on disk: a new instance reads it although the
// first one is gone, and a lost webhook directory does not hide new events
// behind the old cursor.
func TestInboundDurableAndCursorEpoch(t *testing.T) {
	r := newRig(t, false)
	ctx := t.Context()
	r.a.EnsureTicket(ctx, upTicket("t-1"))
	for i := range 3 {
		if _, err := r.rc.Send(ctx, webhook.InboundEvent{ID: fmt.Sprint("e", i), Type: "note", TicketID: "t-1", Body: "n"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.a.Close(); err != nil {
		t.Fatal(err)
	}
	b := r.open(webhook.Options{})
	evs, cur, err := b.Changes(ctx, "")
	if err != nil || len(evs) != 3 {
		t.Fatalf("a new instance read %d events, %v; want 3", len(evs), err)
	}
	// The directory is lost; the receiver's next event must still be seen
	// from the old cursor.
	if err := os.RemoveAll(r.dir); err != nil {
		t.Fatal(err)
	}
	c := r.open(webhook.Options{})
	if _, err := c.EnsureTicket(ctx, upTicket("t-1")); err != nil {
		t.Fatal(err)
	}
	// Post straight into the new instance's handler.
	srvURL := startHandler(t, c)
	if status, ans := post(t, srvURL, testSecret, time.Now(), mustJSON(t, webhook.InboundEvent{ID: "after-loss", Type: "note", TicketID: "t-1", Body: "n"})); status != 200 {
		t.Fatalf("post: %d %+v", status, ans)
	}
	evs, _, err = c.Changes(ctx, cur)
	if err != nil || len(evs) != 1 || evs[0].ID != "after-loss" {
		t.Fatalf("Changes from the old directory's cursor = %+v, %v; want the new event", evs, err)
	}
}

func startHandler(t *testing.T, a *webhook.Adapter) string {
	t.Helper()
	srv := newLoopbackServer(t, a.Handler())
	return srv + webhook.InboundPath
}

// Two instances on one directory (a daemon still stopping and its
// successor) never give two events one sequence number.
func TestInboundConcurrentInstances(t *testing.T) {
	r := newRig(t, false)
	ctx := t.Context()
	r.a.EnsureTicket(ctx, upTicket("t-1"))
	urls := []string{r.a.InboundURL(), startHandler(t, r.open(webhook.Options{}))}
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := mustJSON(t, webhook.InboundEvent{ID: fmt.Sprint("e", i), Type: "note", TicketID: "t-1", Body: "n"})
			if status, ans := post(t, urls[i%2], testSecret, time.Now(), body); status != 200 {
				t.Errorf("post %d: %d %+v", i, status, ans)
			}
		})
	}
	wg.Wait()
	evs, _, err := r.open(webhook.Options{}).Changes(ctx, "")
	if err != nil || len(evs) != n {
		t.Fatalf("Changes = %d events, %v; want %d", len(evs), err, n)
	}
	seen := map[string]bool{}
	for _, ev := range evs {
		if seen[ev.ID] {
			t.Errorf("event %s reported twice", ev.ID)
		}
		seen[ev.ID] = true
	}
	entries, _ := os.ReadDir(filepath.Join(r.dir, "inbound"))
	if len(entries) != n {
		t.Errorf("%d files in inbound/, want %d", len(entries), n)
	}
}
