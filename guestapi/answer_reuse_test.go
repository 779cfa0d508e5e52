package guestapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ticketbridge/ticketbridge/guestapi"
)

// TestAnswersAreNotKept: answers are read into pooled buffers and decoded
// where they lie; what a call returns must not share their bytes, or the
// next answer read into the same buffer would rewrite it. Each answer here
// has the same length as the one before, byte for byte other, so a
// decoded value that pointed into a buffer would change.
func TestAnswersAreNotKept(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Two letters that differ in every answer, of one length.
		c := string(rune('a' + n.Add(1)%26))
		if strings.HasSuffix(r.URL.Path, "/tickets") {
			io.WriteString(w, `{"tickets":[{"id":"id-`+c+`","department":"dept-`+c+`","status":"new","task_description":"task-`+c+`",
				"created_at":"2026-03-01T10:00:00.000000+00:00","updated_at":"2026-03-01T10:05:00.000000+00:00"}]}`)
			return
		}
		io.WriteString(w, `{"ticket":{"id":"id-`+c+`","department":"dept-`+c+`","status":"new","task_description":"task-`+c+`","comments":"room-`+c+`",
			"created_at":"2026-03-01T10:00:00.000000+00:00","updated_at":"2026-03-01T10:05:00.000000+00:00"},
			"messages":[{"id":"m-`+c+`","author_type":"guest","author_name":"name-`+c+`","body":"body-`+c+`","visible_to_guest":true,"created_at":"2026-03-01T10:00:00.000000+00:00"}]}`)
	}))
	defer srv.Close()
	c, err := guestapi.New(guestapi.Config{BaseURL: srv.URL, APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	list, err := c.ListTickets(ctx, guestapi.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	thread, err := c.GetTicket(ctx, "id-b")
	if err != nil {
		t.Fatal(err)
	}
	for range 20 { // whichever buffer the pool hands out, it is rewritten
		if _, err := c.ListTickets(ctx, guestapi.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetTicket(ctx, "id-b"); err != nil {
			t.Fatal(err)
		}
	}
	if got := list[0]; got.ID != "id-b" || got.Department != "dept-b" || got.TaskDescription != "task-b" {
		t.Errorf("the first list's ticket changed after later answers: %+v", got)
	}
	if got := thread.Ticket; got.ID != "id-c" || got.Department != "dept-c" || got.Comments == nil || *got.Comments != "room-c" {
		t.Errorf("the first thread's ticket changed after later answers: %+v", got)
	}
	if got := thread.Messages[0]; got.ID != "m-c" || got.AuthorName != "name-c" || got.Body != "body-c" {
		t.Errorf("the first thread's message changed after later answers: %+v", got)
	}
}
