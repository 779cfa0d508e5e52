package guestapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// The seed corpus lives in testdata/fuzz/<target>; these add the shapes the
// unit tests use. Run a target with e.g.
//
//	go test -run '^$' -fuzz FuzzDecodeList -fuzztime 30s ./guestapi

func FuzzDecodeList(f *testing.F) {
	for _, s := range []string{
		`{"tickets":[]}`,
		`{"tickets":null}`,
		`{"tickets":[{"id":"a","status":"new","guest_rating":4.5,"target_due_at":"2026-03-01T10:00:00.123456+00:00","created_at":"2026-03-01 10:00:00","updated_at":"2026-03-01T10:00:00Z"}]}`,
		`{"tickets":[{"id":"a","created_at":"2026-13-01T10:00:00Z"}]}`,
		`{"tickets":"x"}`,
		`[]`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ts, err := decodeList(body)
		if err != nil {
			checkErrorText(t, err)
			return
		}
		if ts == nil {
			t.Fatal("nil list without error")
		}
		// The list is decoded in one pass; each item must read as the one
		// ticket's decoder reads it.
		var one struct {
			Tickets []Ticket `json:"tickets"`
		}
		if err := json.Unmarshal(body, &one); err != nil {
			t.Fatalf("the list decoded, its tickets one by one did not: %v", err)
		}
		if len(one.Tickets) != len(ts) {
			t.Fatalf("%d tickets in one pass, %d one by one", len(ts), len(one.Tickets))
		}
		for i := range ts {
			if !reflect.DeepEqual(ts[i], one.Tickets[i]) {
				t.Fatalf("ticket %d: %+v in one pass, %+v alone", i, ts[i], one.Tickets[i])
			}
		}
		for i, tk := range ts {
			if tk.ID == "" {
				t.Fatalf("ticket %d has no id", i)
			}
			checkUTC(t, tk.CreatedAt, tk.UpdatedAt)
			if tk.TargetDueAt != nil {
				checkUTC(t, *tk.TargetDueAt)
			}
		}
	})
}

func FuzzDecodeThread(f *testing.F) {
	for _, s := range []string{
		`{"ticket":{"id":"a","status":"confirmed","comments":null,"created_at":"2026-03-01T10:00:00.123456+00:00"},"messages":[]}`,
		`{"ticket":{"id":"a"},"messages":[{"id":"m","author_type":"guest","body":"hi","visible_to_guest":true,"created_at":"2026-03-01T10:00:00+02:00"}]}`,
		`{"ticket":{"id":"a"},"messages":[{"id":"m","created_at":17}]}`,
		`{"ticket":null}`,
		`{"messages":[]}`,
		`{"ticket":{"id":"a","guest_rating":"five"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		th, err := decodeThread(body)
		if err != nil {
			checkErrorText(t, err)
			return
		}
		if th.Ticket.ID == "" || th.Messages == nil {
			t.Fatalf("accepted thread without id or message list: %+v", th)
		}
		checkUTC(t, th.Ticket.CreatedAt, th.Ticket.UpdatedAt)
		for i, m := range th.Messages {
			if m.ID == "" {
				t.Fatalf("message %d has no id", i)
			}
			checkUTC(t, m.CreatedAt)
		}
	})
}

func FuzzDecodeError(f *testing.F) {
	for _, s := range []struct {
		status int
		body   string
	}{
		{400, `{"error":"invalid_status","allowed":["new","done"]}`},
		{403, `{"error":"forbidden","need":"tickets:write"}`},
		{404, `{"error":"not_found","message":"no such ticket"}`},
		{502, `<html><head><title>502 Bad Gateway</title></head></html>`},
		{503, "\x00\x01\xffbinary"},
		{500, `{"error":{"nested":true},"allowed":[1,"x",null]}`},
		{429, ``},
	} {
		f.Add(s.status, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		e := decodeError(status, body)
		if e.StatusCode != status {
			t.Fatalf("status %d became %d", status, e.StatusCode)
		}
		for name, s := range map[string]string{"code": e.Code, "need": e.Need, "message": e.Message} {
			if !utf8.ValidString(s) {
				t.Fatalf("%s %q is not valid UTF-8", name, s)
			}
			if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
				t.Fatalf("%s %q holds unprintable characters", name, s)
			}
			if utf8.RuneCountInString(s) > 303 {
				t.Fatalf("%s is %d runes long", name, utf8.RuneCountInString(s))
			}
		}
		if len(e.Allowed) > 32 {
			t.Fatalf("%d allowed values kept", len(e.Allowed))
		}
		_ = e.Error()
		_ = e.Is(ErrNotFound)
	})
}

func checkErrorText(t *testing.T, err error) {
	t.Helper()
	if err.Error() == "" {
		t.Fatal("error with empty text")
	}
}

func checkUTC(t *testing.T, ts ...time.Time) {
	t.Helper()
	for _, x := range ts {
		if !x.IsZero() && x.Location() != time.UTC {
			t.Fatalf("time %s is not in UTC", x)
		}
	}
}

// BenchmarkDecodeList measures decoding a full list (200 tickets, the
// spec's maximum) without the HTTP round trip.
func BenchmarkDecodeList(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"tickets":[`)
	for i := range 200 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":"0b7f3c2e-5d1a-4c8e-9f00-%012d","department":"housekeeping","status":"new","task_description":"Extra towels","origin":"guest","guest_rating":null,"target_due_at":"2026-03-02T10:00:00.000000+00:00","created_at":"2026-03-01T10:00:00.123456+00:00","updated_at":"2026-03-01T10:05:00.000000+00:00"}`, i)
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeList(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeThread measures decoding a thread of ten messages, the
// safety net's full read, without the HTTP round trip.
func BenchmarkDecodeThread(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"ticket":{"id":"0b7f3c2e-5d1a-4c8e-9f00-3a2b1c0d9e8f","department":"housekeeping","status":"in_progress","task_description":"Extra towels","origin":"guest","guest_rating":4.5,"comments":"room 12","created_at":"2026-03-01T10:00:00.123456+00:00","updated_at":"2026-03-01T10:05:00.000000+00:00"},"messages":[`)
	for i := range 10 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":"m%d","author_type":"guest","author_name":"Ana","body":"Two more towels, please, and a bathrobe if there is one.","visible_to_guest":true,"created_at":"2026-03-01T10:%02d:00.123456+00:00"}`, i, i)
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeThread(body); err != nil {
			b.Fatal(err)
		}
	}
}
