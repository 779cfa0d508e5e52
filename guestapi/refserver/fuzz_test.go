package refserver_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
)

// FuzzHandler feeds the server arbitrary requests. In a path, {T} stands
// for a ticket of the caller's organisation and {O} for a ticket of the
// other one. Invariants: the server never panics; a request with a key of
// the first organisation never gets 2xx on the other organisation's ticket
// nor changes it; every answer is JSON, and every error answer has an
// error field.
func FuzzHandler(f *testing.F) {
	f.Add("GET", "/ops-public-api/v1/tickets", "limit=5&status=new", []byte(nil), uint8(1), "", "")
	f.Add("GET", "/ops-public-api/v1/tickets/{O}", "", []byte(nil), uint8(1), "", "")
	f.Add("POST", "/ops-public-api/v1/tickets/{O}/messages", "", []byte(`{"body":"x"}`), uint8(1), "k", "application/json")
	f.Add("POST", "/ops-public-api/v1/tickets/{T}/status", "", []byte(`{"status":"done"}`), uint8(1), "k", "application/json")
	f.Add("POST", "/api-auth/token", "", []byte(`{"api_key":"KEY"}`), uint8(0), "", "application/json")
	f.Add("POST", "/console/v1/tickets/{O}/messages", "", []byte(`{"author_type":"guest","body":"x"}`), uint8(3), "", "")
	f.Add("POST", "/ops-public-api/v2/tickets", "", []byte(`{`), uint8(2), "", "text/plain")

	srv := refserver.New(refserver.Options{ConsoleToken: "console", Now: func() time.Time { return start }, TokenRateLimit: refserver.RateLimit{Requests: -1}})
	for _, org := range []string{"org-a", "org-b"} {
		if err := srv.AddOrganization(org, "hotel"); err != nil {
			f.Fatal(err)
		}
	}
	write, _ := srv.IssueKey("org-a", refserver.KeySpec{Name: "w", Platform: refserver.PlatformAdmin, Tickets: refserver.TicketsWrite})
	read, _ := srv.IssueKey("org-a", refserver.KeySpec{Name: "r", Platform: refserver.PlatformRead, Tickets: refserver.TicketsRead})
	mine, _ := srv.CreateTicket("org-a", refserver.NewTicket{Department: "d", TaskDescription: "mine"})
	theirs, _ := srv.CreateTicket("org-b", refserver.NewTicket{Department: "d", TaskDescription: "theirs"})
	_, _ = srv.AddMessage(theirs.ID, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, Body: "secret"})
	creds := []string{"", "Bearer " + write.Value, "Bearer " + read.Value, "Bearer console", "Bearer rta_unknown", "Basic x"}

	f.Fuzz(func(t *testing.T, method, path, query string, body []byte, auth uint8, idem, ctype string) {
		path = strings.NewReplacer("{T}", mine.ID, "{O}", theirs.ID).Replace(path)
		body = bytes.ReplaceAll(body, []byte("KEY"), []byte(write.Value))
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		r := httptest.NewRequest("GET", "/", bytes.NewReader(body))
		r.Method = method
		r.URL = &url.URL{Path: path, RawQuery: query}
		r.RequestURI = r.URL.RequestURI()
		cred := creds[int(auth)%len(creds)]
		if cred != "" {
			r.Header.Set("Authorization", cred)
		}
		if idem != "" {
			r.Header.Set("Idempotency-Key", idem)
		}
		if ctype != "" {
			r.Header.Set("Content-Type", ctype)
		}
		console := cred == "Bearer console"
		before, _ := srv.Ticket(theirs.ID)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)

		if !console && strings.Contains(path, theirs.ID) && w.Code < 300 {
			t.Fatalf("%s %s: %d on the other organisation's ticket: %s", method, path, w.Code, w.Body.Bytes())
		}
		if !console {
			after, _ := srv.Ticket(theirs.ID)
			if len(after.Messages) != len(before.Messages) || after.Ticket.Status != before.Ticket.Status {
				t.Fatalf("%s %s changed the other organisation's ticket", method, path)
			}
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %s: Content-Type %q", method, path, ct)
		}
		var m map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
			t.Fatalf("%s %s: %d answer is not a JSON object: %v: %q", method, path, w.Code, err, w.Body.Bytes())
		}
		if w.Code >= 400 {
			if code, _ := m["error"].(string); code == "" {
				t.Fatalf("%s %s: %d error answer without error field: %s", method, path, w.Code, w.Body.Bytes())
			}
		}
	})
}
