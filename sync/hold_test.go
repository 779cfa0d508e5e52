package sync_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
)

// TestStuckReplyHoldsNothingBack: while an agent's reply cannot be posted
// (the API keeps answering 503 to it), a staff message from the console
// and the guest's next message still reach the helpdesk; once the API
// recovers the reply goes up once and nothing echoes.
func TestStuckReplyHoldsNothingBack(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("late checkout")
	e.cycle()
	ref := e.ref(id)
	if _, err := e.backend.Reply(ref, "Maria", "Checkout at 2 pm is fine."); err != nil {
		t.Fatal(err)
	}
	e.ts.Server.SetHook(refserver.Match(http.MethodPost, "/ops-public-api/v1/tickets/"+id+"/messages", func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":"internal_error"}`))
	}))
	e.tick()
	if _, err := e.ts.Server.AddMessage(id, refserver.ConsoleMessage{AuthorType: guestapi.AuthorStaff, AuthorName: "Front desk", Body: "Room 12 asked twice.", VisibleToGuest: new(bool)}); err != nil {
		t.Fatal(err)
	}
	e.guest(id, "Thank you! And a taxi at 3?")
	e.tick()
	var text strings.Builder
	for _, m := range e.backend.Messages(ref) {
		text.WriteString(m.Text())
	}
	for _, want := range []string{"Room 12 asked twice.", "And a taxi at 3?"} {
		if !strings.Contains(text.String(), want) {
			t.Fatalf("helpdesk lacks %q while the reply is stuck:\n%s", want, text.String())
		}
	}
	e.ts.Server.SetHook(nil)
	e.quiesce()
	e.checkExactlyOnce()
}
