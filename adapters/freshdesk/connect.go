package freshdesk

import (
	"context"
	"fmt"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
)

var (
	_ adapters.Connector     = (*Adapter)(nil)
	_ saas.Connecter[thread] = vendor{}
)

// Connect links ticket ref, one an agent made by hand, to the upstream
// ticket t (see [adapters.Connector]): one ticket update writes t's id
// into the id field (Config.IDField), as Create does, and, unless the
// status field (Config.StatusField) records it already, the ticket's
// present status there as the bridge's, so that Changes reports the
// agents' status changes from then on but not the status the ticket had.
// It adds no note and leaves the group, tags and other fields as they
// are. A ticket whose id field holds another request, an archived ticket
// (Freshdesk lets it change no more) and one marked as spam (which the
// ticket list leaves out) are refused. The update spends the ticket update
// budget as the adapter's other updates do (see ratelimit.go).
func (a *Adapter) Connect(ctx context.Context, ref adapters.Ref, t adapters.Ticket) error {
	return a.ConnectTicket(ctx, ref, t)
}

// Open reads ticket ref whatever its id field holds.
func (v vendor) Open(ctx context.Context, ref adapters.Ref) (thread, string, error) {
	t, err := v.read(ctx, ref)
	if err != nil {
		return thread{}, "", err
	}
	upstream := t.field(v.cfg.IDField)
	return thread{t: t, upstream: upstream}, upstream, nil
}

// Stamp writes upstreamID into the id field of the thread's ticket, and
// the ticket's status into the status field as the bridge's baseline, and
// adds the ticket to the index.
func (v vendor) Stamp(ctx context.Context, th thread, upstreamID string) error {
	t := th.t
	switch {
	case t.Archived:
		return fmt.Errorf("freshdesk ticket %d is archived, and Freshdesk lets an archived ticket change no more: connect a new ticket: %w", t.ID, adapters.ErrInvalid)
	case t.Spam:
		return fmt.Errorf("freshdesk ticket %d is marked as spam, which the bridge does not read: take it out of spam first: %w", t.ID, adapters.ErrInvalid)
	}
	fields := map[string]string{v.cfg.IDField: upstreamID}
	if b := parseBaseline(t.field(v.cfg.StatusField)); !b.ok || b.status != t.Status {
		fields[v.cfg.StatusField] = b.next(t.Status)
	}
	if err := v.update(ctx, t.ID, fdTicketIn{CustomFields: fields}, "connect ticket"); err != nil {
		return fmt.Errorf("set field %s of freshdesk ticket %d: %w", v.cfg.IDField, t.ID, err)
	}
	v.remember(t.ID, upstreamID)
	return nil
}
