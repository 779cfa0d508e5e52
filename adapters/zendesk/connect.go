package zendesk

import (
	"context"
	"fmt"
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
)

var _ adapters.Connector = (*Adapter)(nil)
var _ saas.Connecter[chain] = vendor{}

// Connect links ticket ref, one an agent made by hand, to the upstream
// ticket t (see [adapters.Connector]): it sets the ticket's external_id
// to the one EnsureTicket gives the tickets it makes, in one update that
// adds no comment, and leaves the group, tags and fields as they are. A
// ticket whose external_id is already set (the bridge's for another
// request, or another integration's) is refused, as is a closed one,
// which Zendesk no longer lets change. The update spends one of the
// ticket's budget of updates, as every update does (see [Adapter.Update]).
func (a *Adapter) Connect(ctx context.Context, ref adapters.Ref, t adapters.Ticket) error {
	return a.ConnectTicket(ctx, ref, t)
}

// Open reads ticket ref whatever its external_id holds: the upstream id
// the bridge stored there, "" for none; another integration's
// external_id is refused.
func (v vendor) Open(ctx context.Context, ref adapters.Ref) (chain, string, error) {
	id, err := saas.ParseRef(Name, ref)
	if err != nil {
		return chain{}, "", err
	}
	t, err := v.ticket(ctx, id)
	if err != nil {
		return chain{}, "", err
	}
	ext := t.externalID()
	upstream, ours := strings.CutPrefix(ext, externalPrefix)
	if ext != "" && (!ours || upstream == "") {
		return chain{}, "", fmt.Errorf("zendesk ticket %d has the external_id %q, which the bridge did not set (another integration's?): the bridge keeps the request's id there: %w", id, ext, adapters.ErrInvalid)
	}
	return chain{ref: ref, upstream: upstream, tickets: []zdTicket{t}}, upstream, nil
}

// Stamp sets the external_id of the chain's one ticket to upstreamID's and
// remembers that the ticket mirrors it, so that Changes reports its events
// at once.
func (v vendor) Stamp(ctx context.Context, c chain, upstreamID string) error {
	t := c.root()
	if t.Status == statusClosed {
		return fmt.Errorf("zendesk ticket %d is closed, and Zendesk lets a closed ticket change no more: connect its follow-up or a new ticket: %w", t.ID, adapters.ErrInvalid)
	}
	if _, err := v.put(ctx, c.ref, t.ID, zdTicketIn{ExternalID: externalPrefix + upstreamID}, "connect ticket"); err != nil {
		return fmt.Errorf("set external_id of zendesk ticket %d: %w", t.ID, v.closedMeanwhile(ctx, t.ID, err))
	}
	v.remember(t.ID, upstreamID, t.ID)
	return nil
}
