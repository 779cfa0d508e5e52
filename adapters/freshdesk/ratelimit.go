package freshdesk

import (
	"net/http"
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// Freshdesk counts API requests per minute and per account, whoever sends
// them, and on the per-minute plans also per endpoint: the Growth plan
// allows 200 calls a minute, of which at most 20 may list tickets and 80
// create or update tickets (more on higher plans; support article 225439).
// Every answer carries X-RateLimit-Total (the account's budget of the
// minute) and X-RateLimit-Remaining; a request over a budget gets 429 with
// Retry-After, the seconds to wait. The adapter
//
//   - waits out Retry-After before repeating a request that got 429 (the
//     shared [adapters.HTTPClient] does, through [saas.Wait429]; a 429
//     without the header waits a minute, the length of Freshdesk's window);
//   - holds back, through [adapters.Budgets], the other requests that would
//     spend the refused budget: only those of the same endpoint while the
//     account's budget has calls left (a spent ticket list does not stop
//     notes and creations), all of them when the account's is spent;
//   - keeps the ticket list, the endpoint with the smallest budget, for
//     the listings that need it (see Adapter.find);
//   - logs a warning when less than a tenth of the account's budget is
//     left, once until the budget recovers, and reports the last figures
//     through [Adapter.RateLimit].

// Endpoint budgets of Freshdesk, as [adapters.Budgets] names them.
const (
	EndpointTicketsList  = "tickets list"
	EndpointTicketCreate = "ticket create"
	EndpointTicketUpdate = "ticket update"
)

// endpoint names the endpoint budget r spends.
func endpoint(r *http.Request) string {
	p := strings.TrimSuffix(r.URL.Path, "/")
	rest, ok := strings.CutPrefix(p, "/api/v2/tickets")
	if !ok {
		return ""
	}
	switch {
	case rest == "" && r.Method == http.MethodGet:
		return EndpointTicketsList
	case rest == "" && r.Method == http.MethodPost:
		return EndpointTicketCreate
	case r.Method == http.MethodPut && strings.Count(rest, "/") == 1:
		return EndpointTicketUpdate
	}
	return ""
}

// RateLimit is what the adapter last learnt of Freshdesk's request budget.
type RateLimit = adapters.Budget

// RateLimit returns the last figures of the account's budget Freshdesk
// sent.
func (a *Adapter) RateLimit() RateLimit { return a.rate.Account() }

// EndpointLimits returns the endpoint budgets a 429 has blocked, by the
// names EndpointTicketsList, EndpointTicketCreate, EndpointTicketUpdate.
func (a *Adapter) EndpointLimits() map[string]RateLimit { return a.rate.Endpoints() }
