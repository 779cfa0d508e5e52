package receiver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/adapters/webhook/receiver"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

const secret = "receiver-test-secret-0123456789abcdef"

// inBubble runs f in a testing/synctest bubble, whose clock stands still
// at now unless something sleeps: the receiver checks every timestamp
// against it, and the daemon's stand-in is served on in-memory
// connections.
func inBubble(t *testing.T, f func(t *testing.T, now time.Time)) {
	synctest.Test(t, func(t *testing.T) { f(t, time.Now()) })
}

func noSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// daemon is a stand-in for the adapter's inbound endpoint: it verifies
// and keeps the events, answering with status.
type daemon struct {
	mu     sync.Mutex
	status int
	events []webhook.InboundEvent
}

func (d *daemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := webhook.ReadVerified(r, secret, time.Now(), 0, 1<<20)
	if err != nil {
		w.WriteHeader(401)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.status != 0 && d.status != 200 {
		w.WriteHeader(d.status)
		return
	}
	var ev webhook.InboundEvent
	_ = json.Unmarshal(body, &ev)
	d.events = append(d.events, ev)
	_ = json.NewEncoder(w).Encode(webhook.InboundAnswer{OK: true, ID: ev.ID, Seq: uint64(len(d.events))})
}

func (d *daemon) got() []webhook.InboundEvent {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]webhook.InboundEvent(nil), d.events...)
}

func (d *daemon) answer(status int) {
	d.mu.Lock()
	d.status = status
	d.mu.Unlock()
}

func newReceiver(t *testing.T, record string) (*receiver.Receiver, *daemon) {
	t.Helper()
	d := &daemon{}
	rc, err := receiver.New(receiver.Options{Secret: secret, ReplyURL: testutil.PipeURL + "/events", AutoReply: true, RecordPath: record, Sleep: noSleep,
		HTTP: &http.Client{Transport: testutil.PipeServer(t, d)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	return rc, d
}

// deliver sends a delivery of body, signed under key at at, to rc.
func deliver(t *testing.T, rc http.Handler, key string, at time.Time, id, event string, body []byte) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/hooks", bytes.NewReader(body))
	req.Header.Set(webhook.HeaderDelivery, id)
	req.Header.Set(webhook.HeaderEvent, event)
	webhook.SetSignature(req.Header, key, at, body)
	w := httptest.NewRecorder()
	rc.ServeHTTP(w, req)
	b, _ := io.ReadAll(w.Result().Body)
	return w.Code, string(b)
}

func guestMessage(id, author string) []byte {
	b, _ := json.Marshal(webhook.MessageAdded{ID: id, Type: webhook.EventMessageAdded, TicketID: "t-1", Message: webhook.MessageInfo{
		ID: "m-" + id, AuthorType: author, AuthorName: "Ada", Body: "Towels, please.", VisibleToGuest: true, CreatedAt: "2026-03-14T09:00:00.000000+00:00"}})
	return b
}

func TestRefusesBadSignaturesAndReplays(t *testing.T) {
	inBubble(t, func(t *testing.T, now time.Time) {
		rc, d := newReceiver(t, "")
		body := guestMessage("d-1", "guest")
		for name, c := range map[string]struct {
			key string
			at  time.Time
		}{
			"wrong secret": {"not-the-receivers-secret-0000", now},
			"old":          {secret, now.Add(-10 * time.Minute)},
			"future":       {secret, now.Add(10 * time.Minute)},
		} {
			if code, _ := deliver(t, rc, c.key, c.at, "d-1", webhook.EventMessageAdded, body); code != 401 {
				t.Errorf("%s: %d, want 401", name, code)
			}
		}
		// Tampered: signed for one body, sent with another.
		req := httptest.NewRequest(http.MethodPost, "/hooks", bytes.NewReader(guestMessage("d-1", "staff")))
		req.Header.Set(webhook.HeaderDelivery, "d-1")
		req.Header.Set(webhook.HeaderEvent, webhook.EventMessageAdded)
		webhook.SetSignature(req.Header, secret, now, body)
		w := httptest.NewRecorder()
		rc.ServeHTTP(w, req)
		if w.Code != 401 {
			t.Errorf("tampered body: %d, want 401", w.Code)
		}
		if st := rc.Stats(); st.Rejected != 4 || st.Accepted != 0 || len(d.got()) != 0 || len(rc.Deliveries()) != 0 {
			t.Errorf("after four bad deliveries: stats %+v, %d replies, %d recorded", st, len(d.got()), len(rc.Deliveries()))
		}
		// Headers that disagree with the body.
		if code, _ := deliver(t, rc, secret, now, "d-other", webhook.EventMessageAdded, body); code != 400 {
			t.Errorf("delivery id header differs from the body's id: %d, want 400", code)
		}
		if code, _ := deliver(t, rc, secret, now, "d-1", webhook.EventTicketCreated, body); code != 400 {
			t.Errorf("event header differs from the body's type: %d, want 400", code)
		}
	})
}

func TestRepliesOnceToGuestMessages(t *testing.T) {
	inBubble(t, func(t *testing.T, now time.Time) {
		rc, d := newReceiver(t, "")
		if code, b := deliver(t, rc, secret, now, "d-1", webhook.EventMessageAdded, guestMessage("d-1", "guest")); code != 200 {
			t.Fatalf("delivery: %d %s", code, b)
		}
		if code, b := deliver(t, rc, secret, now.Add(time.Minute), "d-1", webhook.EventMessageAdded, guestMessage("d-1", "guest")); code != 200 || !bytes.Contains([]byte(b), []byte(`"duplicate":true`)) {
			t.Fatalf("repeat: %d %s; want 200 duplicate", code, b)
		}
		if code, _ := deliver(t, rc, secret, now, "d-2", webhook.EventMessageAdded, guestMessage("d-2", "staff")); code != 200 {
			t.Fatalf("staff delivery: %d", code)
		}
		evs := d.got()
		if len(evs) != 1 || evs[0].ID != "reply-d-1" || evs[0].Type != webhook.InboundReply || evs[0].TicketID != "t-1" || evs[0].Body != receiver.DefaultReplyText {
			t.Fatalf("replies %+v; want one reply-d-1 to the guest message only", evs)
		}
		if st := rc.Stats(); st.Accepted != 2 || st.Duplicates != 1 {
			t.Errorf("stats %+v", st)
		}
		if ds := rc.Deliveries(); ds[0].Reply != "reply-d-1" || ds[1].Reply != "" {
			t.Errorf("deliveries %+v", ds)
		}
		tk, ok := rc.Ticket("t-1")
		if !ok || len(tk.Messages) != 3 || !tk.Messages[1].Own || tk.Messages[1].Body != receiver.DefaultReplyText {
			t.Errorf("ticket view %+v; want guest message, own reply, staff message", tk)
		}
	})
}

// A reply that cannot be posted leaves the delivery unacknowledged; the
// daemon's retry brings the same reply id again.
func TestReplyFailureIsNotAcknowledged(t *testing.T) {
	inBubble(t, func(t *testing.T, now time.Time) {
		rc, d := newReceiver(t, "")
		d.answer(500)
		if code, _ := deliver(t, rc, secret, now, "d-1", webhook.EventMessageAdded, guestMessage("d-1", "guest")); code != 502 {
			t.Fatalf("delivery whose reply failed: %d, want 502", code)
		}
		if len(rc.Deliveries()) != 0 {
			t.Fatal("a delivery whose reply failed was recorded")
		}
		d.answer(200)
		if code, _ := deliver(t, rc, secret, now, "d-1", webhook.EventMessageAdded, guestMessage("d-1", "guest")); code != 200 {
			t.Fatalf("retry: %d", code)
		}
		if evs := d.got(); len(evs) != 1 || evs[0].ID != "reply-d-1" {
			t.Fatalf("replies %+v", evs)
		}
	})
}

func TestRecordSurvivesRestart(t *testing.T) {
	inBubble(t, func(t *testing.T, now time.Time) {
		record := filepath.Join(t.TempDir(), "deliveries.jsonl")
		rc, d := newReceiver(t, record)
		for i := range 3 {
			id := "d-" + strconv.Itoa(i)
			if code, _ := deliver(t, rc, secret, now, id, webhook.EventMessageAdded, guestMessage(id, "guest")); code != 200 {
				t.Fatal(code)
			}
		}
		if err := rc.Close(); err != nil {
			t.Fatal(err)
		}
		again, _ := newReceiver(t, record)
		if n := len(again.Deliveries()); n != 3 {
			t.Fatalf("a restarted receiver read %d deliveries, want 3", n)
		}
		if code, b := deliver(t, again, secret, now, "d-1", webhook.EventMessageAdded, guestMessage("d-1", "guest")); code != 200 || !bytes.Contains([]byte(b), []byte("duplicate")) {
			t.Fatalf("a repeat after restart: %d %s; want a duplicate", code, b)
		}
		if n := len(d.got()); n != 3 {
			t.Errorf("%d replies, want 3 (none for the repeat)", n)
		}
		if tk, ok := again.Ticket("t-1"); !ok || len(tk.Messages) != 3 {
			t.Errorf("the ticket view was not rebuilt: %+v", tk)
		}
	})
}

func TestNewNeedsSecret(t *testing.T) {
	_, err := receiver.New(receiver.Options{Secret: secret[:31]})
	if err == nil || !strings.Contains(err.Error(), "31 bytes long; want at least 32") {
		t.Fatalf("New with a 31-byte secret: %v", err)
	}
	if strings.Contains(err.Error(), secret[:31]) {
		t.Fatalf("the error shows the secret: %v", err)
	}
}

// TestRepliesOnlyToNewMessages: with ReplySince, a guest message created
// before it (the past a first sync delivers) gets no reply; one created
// after does.
func TestRepliesOnlyToNewMessages(t *testing.T) {
	inBubble(t, func(t *testing.T, now time.Time) {
		d := &daemon{}
		since := time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)
		rc, err := receiver.New(receiver.Options{Secret: secret, ReplyURL: testutil.PipeURL + "/events", AutoReply: true, ReplySince: since, Sleep: noSleep,
			HTTP: &http.Client{Transport: testutil.PipeServer(t, d)}})
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		message := func(id, created string) []byte {
			b, _ := json.Marshal(webhook.MessageAdded{ID: id, Type: webhook.EventMessageAdded, TicketID: "t-1", Message: webhook.MessageInfo{
				ID: "m-" + id, AuthorType: "guest", AuthorName: "Ada", Body: "Towels, please.", VisibleToGuest: true, CreatedAt: created}})
			return b
		}
		if code, body := deliver(t, rc, secret, now, "d-old", webhook.EventMessageAdded, message("d-old", "2026-03-14T09:00:00.000000+00:00")); code != 200 {
			t.Fatalf("old message: %d %s", code, body)
		}
		if got := d.got(); len(got) != 0 {
			t.Fatalf("a message from before the start was answered: %+v", got)
		}
		if code, body := deliver(t, rc, secret, now, "d-new", webhook.EventMessageAdded, message("d-new", "2026-03-14T09:45:00.000000+00:00")); code != 200 {
			t.Fatalf("new message: %d %s", code, body)
		}
		if got := d.got(); len(got) != 1 || got[0].ID != "reply-d-new" {
			t.Fatalf("replies %+v, want one to d-new", got)
		}
	})
}
