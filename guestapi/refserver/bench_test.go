package refserver_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
)

// benchServer has one organisation with tickets tickets of msgs messages
// each and keys extra keys besides the one it returns.
func benchServer(b *testing.B, tickets, msgs, keys int) (*refserver.Server, string, string) {
	b.Helper()
	srv := refserver.New(refserver.Options{TokenRateLimit: refserver.RateLimit{Requests: -1}})
	if err := srv.AddOrganization("org", "hotel"); err != nil {
		b.Fatal(err)
	}
	for i := range keys {
		if _, err := srv.IssueKey("org", refserver.KeySpec{Name: fmt.Sprint("k", i), Tickets: refserver.TicketsRead}); err != nil {
			b.Fatal(err)
		}
	}
	k, err := srv.IssueKey("org", refserver.KeySpec{Name: "bench", Platform: refserver.PlatformRead, Tickets: refserver.TicketsWrite})
	if err != nil {
		b.Fatal(err)
	}
	var id string
	for i := range tickets {
		tv, err := srv.CreateTicket("org", refserver.NewTicket{Department: "housekeeping", TaskDescription: "towels",
			CreatedAt: start.Add(time.Duration(i) * time.Second)})
		if err != nil {
			b.Fatal(err)
		}
		id = tv.ID
		for j := range msgs {
			if _, err := srv.AddMessage(tv.ID, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, Body: fmt.Sprint("message ", j)}); err != nil {
				b.Fatal(err)
			}
		}
	}
	return srv, k.Value, id
}

func serve(b *testing.B, srv *refserver.Server, method, path, key, body, idem string) int {
	var r *http.Request
	if body != "" {
		r = httptest.NewRequest(method, path, strings.NewReader(body))
	} else {
		r = httptest.NewRequest(method, path, nil)
	}
	r.Header.Set("Authorization", "Bearer "+key)
	if idem != "" {
		r.Header.Set("Idempotency-Key", idem)
	}
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	if w.Code != 200 {
		b.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body.String())
	}
	return w.Body.Len()
}

// BenchmarkListTickets measures GET /tickets?limit=200 over 1000 tickets.
func BenchmarkListTickets(b *testing.B) {
	srv, key, _ := benchServer(b, 1000, 0, 0)
	var n int
	for b.Loop() {
		n = serve(b, srv, "GET", "/ops-public-api/v1/tickets?limit=200", key, "", "")
	}
	b.ReportMetric(float64(n), "answer-bytes")
}

// BenchmarkGetThread measures GET /tickets/{id} with a 50-message thread.
func BenchmarkGetThread(b *testing.B) {
	srv, key, id := benchServer(b, 10, 50, 0)
	for b.Loop() {
		serve(b, srv, "GET", "/ops-public-api/v1/tickets/"+id, key, "", "")
	}
}

// BenchmarkPostMessage measures POST /tickets/{id}/messages, each with a
// new Idempotency-Key.
func BenchmarkPostMessage(b *testing.B) {
	srv, key, id := benchServer(b, 10, 0, 0)
	i := 0
	for b.Loop() {
		i++
		serve(b, srv, "POST", "/ops-public-api/v1/tickets/"+id+"/messages", key, `{"body":"on the way","visible_to_guest":true}`, fmt.Sprint("op-", i))
	}
}

// BenchmarkIdempotentReplay measures a repeat answered from the store.
func BenchmarkIdempotentReplay(b *testing.B) {
	srv, key, id := benchServer(b, 10, 0, 0)
	for b.Loop() {
		serve(b, srv, "POST", "/ops-public-api/v1/tickets/"+id+"/messages", key, `{"body":"once"}`, "same")
	}
}

// BenchmarkAuthManyKeys measures a small request when the server holds
// 1000 keys, all compared in constant time.
func BenchmarkAuthManyKeys(b *testing.B) {
	srv, key, _ := benchServer(b, 1, 0, 1000)
	for b.Loop() {
		serve(b, srv, "GET", "/ops-public-api/v1/tickets?limit=1", key, "", "")
	}
}

// BenchmarkListTicketsManyOrgs measures GET /tickets?limit=200 of one
// organisation of 100 tickets when the server holds 2,000 such
// organisations, as the fleet benchmarks' reference server does: a list
// must cost what its own organisation holds, not what the server holds.
func BenchmarkListTicketsManyOrgs(b *testing.B) {
	srv := refserver.New(refserver.Options{TokenRateLimit: refserver.RateLimit{Requests: -1}})
	var key string
	for o := range 2000 {
		org := fmt.Sprint("org-", o)
		if err := srv.AddOrganization(org, "hotel"); err != nil {
			b.Fatal(err)
		}
		k, err := srv.IssueKey(org, refserver.KeySpec{Name: "bench", Tickets: refserver.TicketsRead})
		if err != nil {
			b.Fatal(err)
		}
		key = k.Value
		for i := range 100 {
			if _, err := srv.CreateTicket(org, refserver.NewTicket{Department: "housekeeping", TaskDescription: "towels",
				CreatedAt: start.Add(time.Duration(i) * time.Second)}); err != nil {
				b.Fatal(err)
			}
		}
	}
	for b.Loop() {
		serve(b, srv, "GET", "/ops-public-api/v1/tickets?limit=200", key, "", "")
	}
}
