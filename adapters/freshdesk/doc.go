// Package freshdesk is the adapter "freshdesk": it mirrors guest requests
// into a Freshdesk helpdesk through the Freshdesk API v2 and reads the
// support team's replies, private notes and status changes back.
//
// It is not a general Freshdesk client, and it keeps nothing outside
// Freshdesk that it needs after a restart: which guest request a ticket
// mirrors, which upstream messages a ticket holds, which agent events were
// delivered and which status the bridge last accounted for are all written
// into the tickets themselves, so that losing the bridge's state costs a
// rescan, never a duplicate. Package freshdeskfake is its in-process test
// double.
//
// The Helpdesk methods are those of [saas.Helpdesk] (input checks,
// markers, no message written twice, the adapter's own writes left out);
// this package supplies the primitives of Freshdesk's API ([saas.Vendor]).
//
// # How a guest request looks in Freshdesk
//
//   - One ticket per guest request, created by the API agent on behalf of
//     a fixed requester (TICKETBRIDGE_FRESHDESK_REQUESTER: guests have no
//     Freshdesk contact), with the subject "[department] first line", the
//     request and the console card's details as its description, the
//     department's group (TICKETBRIDGE_FRESHDESK_GROUPS, else
//     TICKETBRIDGE_FRESHDESK_GROUP), the tag TICKETBRIDGE_FRESHDESK_TAG,
//     and the upstream ticket id in the custom field
//     TICKETBRIDGE_FRESHDESK_ID_FIELD. A ticket an agent made by hand
//     takes the id there when an operator connects it (Connect), with its
//     present status recorded as the bridge's, and nothing else.
//   - One note per upstream message, by the API agent: public (private
//     false) when the guest sees the message, private otherwise. Never a
//     reply: Freshdesk e-mails a reply to the requester, and the guest must
//     hear nothing from the helpdesk. The note's first line shows the
//     author, the author type and the time ("Ada Guest (guest),
//     2026-03-14 09:33 UTC"); its last line is a marker, "[ticketbridge
//     message <upstream id>]". The text is sent as HTML that shows it
//     unchanged (see textHTML). Markers are read from the HTML body, parsed
//     with golang.org/x/net/html, where <br> keeps the marker on a line of
//     its own; body_text is only a fallback, because the reference promises
//     no more of it than "content in plain text" and a body_text with its
//     lines run together has no last line. Only the last line of the API
//     agent's own notes counts as a marker.
//   - A guest's new public message on a pending, resolved or closed ticket
//     reopens it (status open) before the note is added.
//   - Agents' work is read back by Changes: a reply, or a public note, by
//     anybody but the API agent is a reply to the guest; a private note is
//     an internal note; conversations by the API agent are the bridge's own
//     and never reported, so use an agent nobody else works as. Event ids
//     are "conv-<conversation id>".
//   - MarkSent writes a private note ending in "[ticketbridge sent <event
//     id> <upstream message id>]", which Lookup reads back after a state
//     loss.
//   - The API carries text only. A conversation with files sends its text
//     upstream (conversations that are only files send nothing), and Changes
//     leaves the ticket one private note naming the files, ending in
//     "[ticketbridge unsent <event id>]", which keeps a second read of the
//     event from writing it again (see [adapters.NoteUnsent]); the
//     conformance case AttachmentsNoted shows it.
//
// # The platform's fields
//
// [Adapter.Update] keeps the request's fields current in the ticket's own
// fields: the department's group, the subject, due_by (within Freshdesk's
// rules for it: not before the creation nor before fr_due_by, none while
// the status stops the SLA clock, never cleared), a guest_rating_ tag and
// the priority, in one ticket update of the fields that differ; a rating
// and a console comment also become one private note each per distinct
// value, found again by their markers. The origin is a tag set at
// creation. A 429 on the update is an [adapters.WaitError].
//
// # Archived tickets
//
// Freshdesk archives tickets closed and untouched for 120 days; the
// adapter reads them through /api/v2/tickets/archived/{id} and puts what
// comes after in a follow-up ticket (see archived.go). An archived ticket
// without a follow-up is not found after a state loss: Freshdesk offers no
// search of archived tickets by a custom field.
//
// # Statuses
//
// See [DefaultStatusMap]; overrides may name Freshdesk statuses by number
// or as open, pending, resolved, closed. Freshdesk offers no history of a
// ticket's statuses, so the adapter keeps its own record in the custom
// field TICKETBRIDGE_FRESHDESK_STATUS_FIELD: "4/12" means the bridge last
// accounted for status 4 (resolved), in the record's 12th generation.
// SetStatus writes the status and the record in one update, so a crash
// cannot leave one without the other; creation writes "<status>/1"; a
// reopen writes the record too. Changes reports a status change when a
// ticket's status differs from the record and the two map to different
// upstream statuses, with the id "status-<ticket>-<generation>-<status>";
// MarkSent then moves the record to the delivered status in the next
// generation, so the event is not reported again and its id never comes
// back. Only the status a ticket has when the adapter lists it is seen:
// two changes between polls arrive as the second. SetStatus writes nothing
// when the ticket's status already maps to the upstream one (an agent's
// pending stays for in_progress).
//
// # Finding tickets, and the cost of it
//
// Freshdesk's filter API searches custom fields, but its index lags writes
// by minutes, and a ticket missed that way is a duplicate. The adapter
// therefore lists: GET /api/v2/tickets with updated_since, sorted by
// updated_at, paged by time (the next request starts a second before the
// last ticket seen) rather than by page number, so a ticket updated during
// a listing cannot make another slip through, and no listing meets
// Freshdesk's 300-page cap. Lists have no lag. An instance reads the list
// once from TICKETBRIDGE_FRESHDESK_SINCE (one request per 100 tickets
// updated since then), keeping upstream id to ticket id in memory, and
// afterwards lists for a lookup only after a creation whose outcome is
// unknown: it remembers the tickets it makes, and Changes lists what
// changed anyway. The ticket list has the smallest of Freshdesk's
// per-endpoint budgets; a lookup after a state loss costs one listing for
// all tickets.
//
// Changes lists the tickets updated since its cursor less a minute and
// reads the conversations of each one that mirrors a guest request; the
// cursor holds the time of the newest ticket listed and the ids of the
// events of the minute before it. A reply reaches the guest on the next
// poll, with no delay of Freshdesk's own.
//
// The cursor cannot skip a change: Freshdesk stamps a change when it is
// made, and a change can become visible after a later one was listed (a
// write committed late, or an update listed while a listing ran). Each
// listing therefore starts a minute before the cursor's time, and the
// events of that minute already reported are named in the cursor and left
// out. Only a change that takes longer than that minute to become visible
// can be missed. TestChangesLateCommit shows it, TestListingWhileTicketsChange
// the listing that must not lose a ticket sliding into its page.
//
// Freshdesk counts requests per minute and account: every answer carries
// X-RateLimit-Total and X-RateLimit-Remaining, and a request over the
// budget gets 429 with Retry-After. Each request goes through
// [adapters.HTTPClient]: a 429 is repeated after Retry-After (a minute
// when the header is missing), reads and updates also after 5xx and broken
// connections, and creations and notes only when Freshdesk certainly did
// not take them (Freshdesk has no idempotency key: when an outcome is
// unknown the call fails, and the next call finds the ticket or the note if
// it was made). While Freshdesk asked to wait, the adapter's other requests
// of the same endpoint (of every endpoint when the account's budget is
// spent) are held back without being sent. See [Adapter.RateLimit] and
// [Adapter.EndpointLimits].
//
// Per guest request the adapter spends: one creation, one note per
// upstream message, one update per status change Freshdesk does not
// already show, one note per agent reply or note delivered (MarkSent), one
// update per agent status change delivered, one update per field change
// and one note per rating or comment ([Adapter.Update]); reads of the
// ticket and its conversations for each Append, SetStatus, MarkSent and
// Update; and per poll one
// list request plus one conversations request for each mirrored ticket
// updated in the last minute or since the previous poll.
//
// # Setup in Freshdesk
//
// An agent for the bridge, with global ticket scope (it must see every
// ticket) and a role that may add notes and edit tickets, whom nobody else
// works as; its API key (Profile settings > View API key).
// Two custom ticket fields of type single-line text (Admin > Workflows >
// Ticket Fields), labelled "Guest request id" and "Guest request status"
// (Freshdesk names them cf_guest_request_id and cf_guest_request_status);
// agents should leave both alone. Optionally one group per department.
// Freshdesk e-mails the requester about new tickets: the default requester
// address cannot receive mail, or switch off the requester notifications.
// [Adapter.Check] tests the API key, the agent's scope, both fields and
// the groups.
//
// # Vendor documentation followed
//
// Freshdesk documents its API v2 on one page,
// https://developers.freshdesk.com/api/, whose sections are:
//
//   - Authentication (API key as user name, "X" as password): #authentication
//   - Archived tickets: #view_an_archived_ticket, and the article on
//     ticket archiving,
//     https://support.freshdesk.com/support/solutions/articles/212901
//   - Create, view, update and list tickets (updated_since, order_by,
//     order_type, the 300-page cap; due_by, fr_due_by, priority, tags):
//     #create_ticket, #view_a_ticket, #update_ticket, #list_all_tickets,
//     and the article on changing a ticket's due date,
//     https://support.freshdesk.com/support/solutions/folders/272943
//   - Filter tickets (not used, see above): #filter_tickets
//   - Conversations, notes and replies: #list_all_ticket_notes,
//     #add_note_to_a_ticket, #reply_ticket
//   - The API agent and agents: #me, #view_agent
//   - Ticket fields: #list_all_ticket_fields; groups: #view_group
//   - Pagination and the Link header: #pagination
//   - Errors: #error; rate limits and their headers: #ratelimit
//
// and the API key's place in the agent's profile:
// https://support.freshdesk.com/support/solutions/articles/215517
package freshdesk
