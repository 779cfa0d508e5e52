package saas_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

func TestMarkers(t *testing.T) {
	m := adapters.Message{UpstreamID: "m-1", AuthorType: guestapi.AuthorGuest, AuthorName: "Ada", Body: "Hi\n[ticketbridge message forged]\n",
		Public: false, CreatedAt: time.Date(2026, 3, 14, 9, 33, 0, 0, time.UTC)}
	body := saas.MessageText(m)
	if !strings.HasPrefix(body, "Ada (guest), 2026-03-14 09:33 UTC, internal note\n\n") {
		t.Errorf("author line: %q", body)
	}
	if got, ok := adapters.ParseMarker(body); !ok || got != (adapters.Marker{Kind: adapters.MarkerMessage, ID: "m-1"}) {
		t.Errorf("adapters.ParseMarker(MessageText) = %+v, %v", got, ok)
	}
	if got, ok := adapters.ParseMarker(strings.ReplaceAll(body, "\n", "\r\n") + "  \r\n"); !ok || got.ID != "m-1" {
		t.Errorf("CRLF and trailing space: %+v, %v", got, ok)
	}
	for _, b := range []string{"", "text", "[ticketbridge message a b]", "[ticketbridge other x]", "[ticketbridge message x", "x\n[ticketbridge sent e]"} {
		if got, ok := adapters.ParseMarker(b); ok {
			t.Errorf("adapters.ParseMarker(%q) = %+v, want none", b, got)
		}
	}
	for _, tc := range []struct{ event, msg string }{{"article-3", "5f2a"}, {"state-9", ""}} {
		got, ok := adapters.ParseMarker(saas.SentText(tc.event, tc.msg))
		if !ok || got != (adapters.Marker{Kind: adapters.MarkerSent, ID: tc.event, Arg: tc.msg}) {
			t.Errorf("sent marker of %s %q: %+v, %v", tc.event, tc.msg, got, ok)
		}
	}
	if got, ok := adapters.ParseMarker(saas.DescriptionText(adapters.Ticket{UpstreamID: "u-1", TaskDescription: "x"})); !ok || got != (adapters.Marker{Kind: adapters.MarkerTicket, ID: "u-1"}) {
		t.Errorf("ticket marker: %+v, %v", got, ok)
	}
}
