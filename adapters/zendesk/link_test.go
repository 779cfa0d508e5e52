package zendesk_test

import (
	"testing"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/zendesk"
)

// TestTicketURL: a ticket's page in the agent workspace, below the
// configured address without its API path; nothing for a ref that is no
// ticket number.
func TestTicketURL(t *testing.T) {
	cfg, err := zendesk.LoadConfig(t.Context(), envconfig.MapLookuper(map[string]string{
		"TICKETBRIDGE_ZENDESK_URL":   "https://Hotel.Zendesk.com:443/api/v2/",
		"TICKETBRIDGE_ZENDESK_EMAIL": testEmail,
		"TICKETBRIDGE_ZENDESK_TOKEN": testToken,
	}))
	if err != nil {
		t.Fatal(err)
	}
	a, err := zendesk.New(cfg, adapters.Deps{}, zendesk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[adapters.Ref]string{
		"42": "https://hotel.zendesk.com/agent/tickets/42",
		"":   "", "042": "", "-1": "", "42/../x": "",
	} {
		if got := adapters.TicketURL(a, ref); got != want {
			t.Errorf("TicketURL(%q) = %q, want %q", ref, got, want)
		}
	}
}
