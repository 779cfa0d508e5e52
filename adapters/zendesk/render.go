package zendesk

import (
	"fmt"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// Every comment the bridge writes ends with an [adapters.Marker] line:
//
//	[ticketbridge message 0b6c…]   an upstream message mirrored by Append
//	[ticketbridge ticket 7e1d…]    the description of a ticket EnsureTicket made
//	[ticketbridge sent 3600… 5f2a…] MarkSent: a helpdesk event delivered upstream
//
// Zendesk returns a comment's plain "body" as it was written (line endings
// and trailing white space aside), while "html_body" is re-rendered and
// sanitised; so the bridge writes and reads "body", and only the last
// non-empty line counts, so that a marker quoted inside a message (a guest
// pasting one) never passes for the bridge's own.

// followUpBody is the first comment of a follow-up ticket made for
// message m because ticket closed was closed.
func followUpBody(closed int64, m adapters.Message) string {
	return fmt.Sprintf("Follow-up of closed ticket #%d: the guest request has a new message.\n\n", closed) + saas.MessageText(m)
}

// reopenBody is the first comment of a follow-up ticket made because the
// guest request was reopened while ticket closed was closed.
func reopenBody(closed int64, upstreamID string, s guestapi.Status) string {
	return fmt.Sprintf("Follow-up of closed ticket #%d: the guest request was reopened with status %q.\n\n", closed, s) +
		adapters.Marker{Kind: adapters.MarkerTicket, ID: upstreamID}.Line()
}

// heldBody is the internal comment that says the guest request reached
// status s but Zendesk refuses to solve the ticket for want of need.
func heldBody(s guestapi.Status, need string) string {
	return fmt.Sprintf("The guest request is %s, but Zendesk refuses to solve this ticket: %s.\n\nFill in the field, and the bridge solves the ticket on its next attempt.", s, need)
}

// subject is the ticket's subject (see [adapters.Subject]).
func subject(t adapters.Ticket) string {
	return adapters.Subject(t)
}
