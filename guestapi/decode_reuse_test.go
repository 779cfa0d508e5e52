package guestapi

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestListDecodeReusesNothingVisible: lists are decoded into reused
// buffers, and nothing of one list shows in the tickets of another: not a
// field the later list leaves out, not a rating the earlier list's
// tickets point to.
func TestListDecodeReusesNothingVisible(t *testing.T) {
	first, err := decodeList([]byte(`{"tickets":[{"id":"a","department":"hk","status":"new","guest_rating":4.5,
		"target_due_at":"2026-11-28T12:00:00.000000+00:00","task_description":"towels",
		"created_at":"2026-11-28T10:00:00.000000+00:00","updated_at":"2026-11-28T11:00:00.000000+00:00"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // the pool may hand out the same buffer, or a new one
		second, err := decodeList([]byte(`{"tickets":[{"id":"b","status":"done","guest_rating":1},{"id":"c"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		if len(second) != 2 {
			t.Fatalf("decoded %d tickets, want 2", len(second))
		}
		b, c := second[0], second[1]
		if b.Department != "" || b.TaskDescription != "" || b.TargetDueAt != nil || !b.CreatedAt.IsZero() {
			t.Errorf("ticket b carries fields of the earlier list: %+v", b)
		}
		if c.GuestRating != nil || c.Status != "" {
			t.Errorf("ticket c carries fields of the earlier list: %+v", c)
		}
		if r := first[0].GuestRating; r == nil || *r != 4.5 {
			t.Errorf("the earlier list's rating changed to %v", r)
		}
	}
	if _, err := decodeList([]byte(`{"tickets":[{"id":"x"},{"id":"x"}]}`)); err == nil || !strings.Contains(err.Error(), "repeats") {
		t.Fatalf("repeated id: %v", err)
	}
}

// TestListBufferKeptAtTheSpecsLargest: the buffer a list of 200 tickets
// (the spec's largest) grew is kept for the next list. Growing to 200
// rounds the capacity past 200, and a bound at 200 dropped every such
// buffer, so each list grew a new one.
func TestListBufferKeptAtTheSpecsLargest(t *testing.T) {
	var sb strings.Builder
	sb.WriteString(`{"tickets":[`)
	for i := range 200 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"id":"t-` + strconv.Itoa(i) + `","status":"new"}`)
	}
	sb.WriteString(`]}`)
	for range 20 { // the race detector's pool drops some of what is put
		if _, err := decodeList([]byte(sb.String())); err != nil {
			t.Fatal(err)
		}
		buf := listItems.Get().(*[]listedWire)
		kept := cap(*buf) >= 200
		listItems.Put(buf)
		if kept {
			return
		}
	}
	t.Fatal("no list buffer that held 200 tickets was kept")
}

// TestThreadDecodesAsItsTypes: a thread is decoded in one pass into its
// wire forms; it must come out as TicketDetail's and Message's own
// UnmarshalJSON read it.
func TestThreadDecodesAsItsTypes(t *testing.T) {
	for _, body := range []string{
		`{"ticket":{"id":"a","department":"hk","status":"new","task_description":"towels","origin":"guest","guest_rating":4.5,"comments":"room 12",
			"created_at":"2026-03-01T10:00:00.123456+00:00","updated_at":"2026-03-01T10:05:00Z","extra":[1,{"x":null}]},
			"messages":[{"id":"m1","author_type":"guest","author_name":"Ana","body":"Two \u00e9 please","visible_to_guest":true,"created_at":"2026-03-01T11:00:00+01:00"},
			{"id":"m2","author_type":"staff","body":"","created_at":"2026-03-01T10:00:00.000000+00:00","unknown":true}]}`,
		`{"ticket":{"id":"b","guest_rating":null,"comments":null,"created_at":"2026-03-01T10:00:00Z","updated_at":"2026-03-01T10:00:00Z"},"messages":null}`,
		`{"ticket":{"id":"c","created_at":"2026-03-01T10:00:00Z","updated_at":"2026-03-01T10:00:00Z"}}`,
		`{"ticket":{"id":"d","created_at":"2026-03-01T10:00:00Z","updated_at":"2026-03-01T10:00:00Z"},"messages":[]}`,
	} {
		got, err := decodeThreadWire([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		var want struct {
			Ticket   *TicketDetail `json:"ticket"`
			Messages []Message     `json:"messages"`
		}
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, threadWire(want)) {
			t.Errorf("%s:\n got %#v\nwant %#v", body, got, threadWire(want))
		}
	}
}
