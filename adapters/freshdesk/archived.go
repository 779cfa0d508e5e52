package freshdesk

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
)

// Freshdesk archives a ticket that has been closed and untouched for 120
// days (on the plans that have the feature): the ticket endpoints and the
// ticket list no longer see it, GET /api/v2/tickets/archived/{id} and its
// conversations still do, and nothing can change it; mail to it starts a
// new ticket. The adapter reads an archived ticket through the archive's
// endpoints (resolve) and keeps what comes after it in a follow-up: a new
// ticket with the same id field, whose description names the archived
// one. A Ref keeps naming the archived ticket; Append, SetStatus and
// MarkSent work on the follow-up, and Lookup reports the markers of both,
// also when the listing after a state loss finds only the follow-up.
//
// Freshdesk offers no search of archived tickets by a custom field: after
// the bridge's state is lost, an archived ticket without a follow-up is
// not found, and EnsureTicket makes a new ticket, as Freshdesk does for
// mail to an archived ticket.

const followUpPrefix = "Follow-up of archived ticket #"

// followUpText is the description of the follow-up of archived ticket
// root.
func followUpText(root int64, upstream string) string {
	return fmt.Sprintf("%s%d: the guest request has news.\n\nGuest request: %s", followUpPrefix, root, upstream)
}

// followedUp returns the archived ticket that t, a follow-up the bridge
// made, follows, as its description names it; 0 when it names none.
func followedUp(t fdTicket) int64 {
	rest, ok := strings.CutPrefix(strings.TrimSpace(t.Description), followUpPrefix)
	if !ok {
		return 0
	}
	digits, _, _ := strings.Cut(rest, ":")
	id, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || id <= 0 {
		return 0
	}
	return id
}

// archivedRoot returns the archived ticket that follow-up t follows, if
// t is one and Freshdesk still shows the archived ticket as mirroring
// upstream.
func (a *Adapter) archivedRoot(ctx context.Context, t fdTicket, upstream string) (fdTicket, bool, error) {
	id := followedUp(t)
	if id == 0 || id == t.ID {
		return fdTicket{}, false, nil
	}
	root, up, err := a.resolve(ctx, saas.RefOf(id))
	switch {
	case errors.Is(err, adapters.ErrNotFound):
		return fdTicket{}, false, nil
	case err != nil:
		return fdTicket{}, false, err
	case !root.Archived || up != upstream:
		return fdTicket{}, false, nil
	}
	a.mu.Lock()
	a.followups[root.ID] = t.ID
	a.mu.Unlock()
	return root, true, nil
}

// liveFollowUp returns the follow-up of archived ticket root, if it has
// one that Freshdesk still shows.
func (a *Adapter) liveFollowUp(ctx context.Context, root fdTicket, upstream string) (fdTicket, bool, error) {
	a.mu.Lock()
	fid := a.followups[root.ID]
	a.mu.Unlock()
	if fid == 0 {
		id, err := a.find(ctx, upstream)
		if err != nil {
			return fdTicket{}, false, err
		}
		if id == root.ID {
			return fdTicket{}, false, nil
		}
		fid = id
	}
	if fid == 0 {
		return fdTicket{}, false, nil
	}
	f, up, err := a.resolve(ctx, saas.RefOf(fid))
	switch {
	case errors.Is(err, adapters.ErrNotFound) || (err == nil && (up != upstream || f.Archived)):
		a.forget(upstream, fid)
		a.mu.Lock()
		delete(a.followups, root.ID)
		a.mu.Unlock()
		return fdTicket{}, false, nil
	case err != nil:
		return fdTicket{}, false, err
	}
	a.mu.Lock()
	a.followups[root.ID] = fid
	a.mu.Unlock()
	return f, true, nil
}

// followUp returns the follow-up of archived ticket root, making it
// (open, in root's group, with its priority and tags and both custom
// fields) when it has none.
func (a *Adapter) followUp(ctx context.Context, root fdTicket, upstream string) (fdTicket, error) {
	if f, ok, err := a.liveFollowUp(ctx, root, upstream); err != nil || ok {
		return f, err
	}
	in := fdTicketIn{
		Subject:     root.Subject,
		Description: textHTML(followUpText(root.ID, upstream)),
		Email:       a.cfg.Requester,
		Name:        requesterName,
		Status:      statusOpen,
		Priority:    root.Priority, // the platform's fields go on with the follow-up: priority, tags, group
		Tags:        a.tags,
		CustomFields: map[string]string{
			a.cfg.IDField:     upstream,
			a.cfg.StatusField: baseline{}.next(statusOpen),
		},
	}
	if len(root.Tags) > 0 {
		in.Tags = root.Tags
	}
	if root.GroupID != nil {
		in.GroupID = *root.GroupID
	}
	f, err := a.create(ctx, in, upstream, "create follow-up")
	if err != nil {
		return fdTicket{}, fmt.Errorf("follow up archived ticket %d: %w", root.ID, err)
	}
	a.mu.Lock()
	a.followups[root.ID] = f.ID
	a.mu.Unlock()
	return f, nil
}
