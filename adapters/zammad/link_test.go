package zammad_test

import (
	"testing"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/zammad"
)

// TestTicketURL: a ticket's zoom view, by its id, below the configured
// address (its path kept, for a Zammad served below one); nothing for a
// ref that is no ticket id.
func TestTicketURL(t *testing.T) {
	for base, want := range map[string]string{
		"https://helpdesk.hotel.example/":     "https://helpdesk.hotel.example/#ticket/zoom/1234",
		"https://hotel.example/zammad/api/v1": "https://hotel.example/zammad/#ticket/zoom/1234",
		"https://helpdesk.hotel.example:8443": "https://helpdesk.hotel.example:8443/#ticket/zoom/1234",
	} {
		env := baseEnv()
		env["TICKETBRIDGE_ZAMMAD_URL"] = base
		cfg, err := zammad.LoadConfig(t.Context(), envconfig.MapLookuper(env))
		if err != nil {
			t.Errorf("%s: %v", base, err)
			continue
		}
		a, err := zammad.New(cfg, adapters.Deps{}, zammad.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := adapters.TicketURL(a, "1234"); got != want {
			t.Errorf("%s: TicketURL = %q, want %q", base, got, want)
		}
		if got := adapters.TicketURL(a, "#1234"); got != "" {
			t.Errorf("%s: TicketURL of no ticket id = %q", base, got)
		}
	}
}
