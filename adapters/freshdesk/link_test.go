package freshdesk_test

import (
	"testing"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/freshdesk"
)

// TestTicketURL: a ticket's page in the agent portal, below the
// configured address without its API path; nothing for a ref that is no
// ticket number.
func TestTicketURL(t *testing.T) {
	cfg, err := freshdesk.LoadConfig(t.Context(), envconfig.MapLookuper(map[string]string{
		"TICKETBRIDGE_FRESHDESK_URL":     "https://hotel.freshdesk.com/api/v2/",
		"TICKETBRIDGE_FRESHDESK_API_KEY": testKey,
	}))
	if err != nil {
		t.Fatal(err)
	}
	a, err := freshdesk.New(cfg, adapters.Deps{}, freshdesk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[adapters.Ref]string{
		"7": "https://hotel.freshdesk.com/a/tickets/7",
		"":  "", "x7": "", "0": "",
	} {
		if got := adapters.TicketURL(a, ref); got != want {
			t.Errorf("TicketURL(%q) = %q, want %q", ref, got, want)
		}
	}
}
