package bridge

import (
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/email"
	"github.com/ticketbridge/ticketbridge/adapters/files"
	"github.com/ticketbridge/ticketbridge/adapters/freshdesk"
	"github.com/ticketbridge/ticketbridge/adapters/rt"
	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/adapters/zammad"
	"github.com/ticketbridge/ticketbridge/adapters/zendesk"
)

// TestEveryAdapterKeepsFieldsCurrent: the platform's fields reach every
// helpdesk the daemon can run (docs/fields.md's table has no empty
// column), so every registered adapter implements adapters.Updater. A new
// adapter must be listed here, and so be made to carry the fields.
func TestEveryAdapterKeepsFieldsCurrent(t *testing.T) {
	helpdesks := map[string]adapters.Helpdesk{
		files.Name:     (*files.Adapter)(nil),
		rt.Name:        (*rt.Adapter)(nil),
		zendesk.Name:   (*zendesk.Adapter)(nil),
		freshdesk.Name: (*freshdesk.Adapter)(nil),
		zammad.Name:    (*zammad.Adapter)(nil),
		webhook.Name:   (*webhook.Adapter)(nil),
		email.Name:     (*email.Adapter)(nil),
	}
	for _, name := range Adapters().Names() {
		h, ok := helpdesks[name]
		if !ok {
			t.Errorf("adapter %q is registered but not listed here: list it, and make it an adapters.Updater", name)
			continue
		}
		if _, ok := h.(adapters.Updater); !ok {
			t.Errorf("adapter %q does not implement adapters.Updater: the platform's fields would never reach its helpdesk", name)
		}
	}
}
