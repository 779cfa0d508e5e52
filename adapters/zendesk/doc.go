// Package zendesk is the adapter "zendesk": it mirrors guest requests into
// a Zendesk Support account through the Zendesk API v2 and reads the
// support team's replies, internal notes and status changes back.
//
// It is not a general Zendesk client, and it keeps nothing outside
// Zendesk: which guest request a ticket mirrors, which upstream messages a
// ticket holds and which agent events were delivered are all written into
// the tickets themselves, so that losing the bridge's state costs a rescan,
// never a duplicate. Package zendeskfake is its in-process test double.
//
// The Helpdesk methods are those of [saas.Helpdesk] (input checks,
// markers, no message written twice, the adapter's own writes left out);
// this package supplies the primitives of Zendesk's API ([saas.Vendor]).
//
// # How a guest request looks in Zendesk
//
//   - One ticket per guest request, created by the API user with the
//     request as its first comment (public when the guest wrote it), the
//     subject "[department] first line", the department's group
//     (TICKETBRIDGE_ZENDESK_GROUPS, else TICKETBRIDGE_ZENDESK_GROUP), the
//     tag TICKETBRIDGE_ZENDESK_TAG, and external_id
//     "ticketbridge:<upstream ticket id>". EnsureTicket finds it again with
//     the external_id filter of List Tickets, which has no lag but leaves
//     out archived tickets (Zendesk archives a ticket some 120 days after
//     it was closed), and with the Search API, which includes them, when
//     the list has none; Lookup and the follow-up chains read both. A new
//     message for an archived ticket goes to a follow-up, as for any
//     closed ticket. The creation carries an
//     Idempotency-Key derived from its payload, so a retry within Zendesk's
//     two hours gets the first ticket back. A ticket an agent made by hand
//     takes the same external_id when an operator connects it (Connect),
//     and nothing else.
//   - One comment per upstream message, written by the API user, public
//     after visible_to_guest. Its first line shows the author, the author
//     type and the time ("Ada Guest (guest), 2026-03-14 09:33 UTC"); its
//     last line is a marker, "[ticketbridge message <upstream id>]". The
//     bridge writes and reads the plain "body": Zendesk returns it as
//     written, while "html_body" is re-rendered and sanitised and would not
//     keep a marker verbatim. Only the last line of the API user's own
//     comments counts as a marker, so a marker quoted by a guest or an agent
//     never passes for the bridge's.
//   - Agent work is read from the incremental ticket event export with the
//     comment_events sideload: public comments are replies, private ones
//     notes, status changes are mapped with the status map. Comments and
//     changes by the API user are the bridge's own and never reported; use
//     a Zendesk user that nobody else works as. Event ids are
//     "comment-<comment id>" and "status-<event id>".
//   - The cursor cannot skip a change. Zendesk's ticket event export is
//     time-based only (cursor-based incremental exports exist for tickets
//     and users, not ticket events), returns up to 1000 events a page and
//     starts the next page at end_time, the second of the page's last
//     event; a page may end inside a second. The cursor therefore keeps
//     that second and the ids of its events already reported, skips them
//     when they come again, and moves on only past events it has seen.
//     When one second holds more events than a page (a bulk macro, an
//     automation sweep), the export answers the same page again and again;
//     the adapter then reads that second from the audits of the mirrored
//     tickets updated since (List Tickets newest first, then each
//     ticket's audits), reports the events it had not yet, and goes on at
//     the next second. TestSecondLargerThanAPageIsPassed shows 250 events
//     of one second, with pages of 100, reported once each and the cursor
//     past the second.
//   - MarkSent writes a private note ending in "[ticketbridge sent <event
//     id> <upstream message id>]", which Lookup reads back after a state
//     loss.
//   - The API carries text only. A comment with files sends its text
//     upstream (comments that are only files send nothing), and Changes
//     leaves the ticket one private note naming the files, ending in
//     "[ticketbridge unsent <event id>]", which keeps a second read of the
//     event from writing it again (see [adapters.NoteUnsent]); the
//     conformance case AttachmentsNoted shows it.
//
// # Statuses
//
// See [DefaultStatusMap]. SetStatus writes nothing when the ticket's
// status already maps to the upstream one (an agent's pending stays for
// in_progress). Zendesk cannot set "new" again once a ticket left it; it
// counts as open. A closed Zendesk ticket cannot be changed at all (Zendesk
// answers 422), so a new message for a closed ticket goes into a follow-up
// ticket (via_followup_source_id, same external_id, linked in Zendesk to
// the closed one), which takes every later message and status too; Refs
// and events keep naming the first ticket. This is the one exception to
// "a new message reopens the ticket": Zendesk closes solved tickets by
// itself after some days, and closed tickets are frozen. A guest's new
// public message on a solved or pending ticket reopens it (status open, in
// the same update as the comment).
//
// An account can make ticket fields required on solve; Zendesk then
// refuses (422 RecordInvalid, "<field>: is required when solving a
// ticket") to solve a ticket where one is empty. The adapter leaves the
// ticket as it is, tells the team in an internal comment which fields are
// missing, and fails SetStatus with an [adapters.HeldError]: not a
// permanent error, so the engine tries again with its backoff and solves
// the ticket once the fields are filled in. [Adapter.Held] lists the
// changes held so.
//
// # Limits and their cost
//
// Zendesk allows 30 updates of one ticket by one user in ten minutes, and
// 10 export requests a minute. The adapter spends per ticket: one creation
// (the first comment included, no update), one update per upstream message
// appended, one per status change that Zendesk does not already show, and
// one per agent event delivered upstream (the MarkSent note), one per
// field update and one per rating or comment note ([Adapter.Update]);
// reads (the ticket, its comments) cost no update. The adapter counts its
// updates of each ticket and does not send one over the budget: Update
// returns an [adapters.WaitError] naming when the next is allowed, the
// other writes fail temporarily. A busy conversation of more than
// about 15 guest messages and agent replies in ten minutes meets the limit:
// Zendesk answers 429 with Retry-After, the call fails temporarily, and the
// engine tries the ticket again later while the other tickets go on. One
// Changes call reads one export page (up to 1000 events), and at most
// three while they hold nothing for the bridge.
//
// Every request goes through [adapters.HTTPClient]: reads, status changes
// and creations (which carry an Idempotency-Key) are repeated on 429 (after
// Retry-After), 5xx and broken connections; writes that add a comment are
// sent once, because Zendesk offers no idempotency for updates: when their
// outcome is unknown the call fails, and the engine's next Append finds the
// comment by its marker if it was made.
//
// # Setup in Zendesk
//
// An admin user for the bridge (the ticket event export is for admins
// only), an API token (Admin Center > Apps and integrations > APIs >
// Zendesk API, with token access enabled), and optionally one group per
// department. Tickets are requested by the API user itself (guests have no
// Zendesk identity), so Zendesk's "notify requester" triggers mail that
// user: point its address at a mailbox nobody needs or exclude the tag from
// those triggers. [Adapter.Check] tests the credentials, the admin role and
// the groups.
//
// # Vendor documentation followed
//
//   - Tickets (create, show, show_many, update, list with external_id,
//     follow-ups): https://developer.zendesk.com/api-reference/ticketing/tickets/tickets/
//   - Ticket comments: https://developer.zendesk.com/api-reference/ticketing/tickets/ticket_comments/
//   - Search (type:ticket external_id:, archived tickets included):
//     https://developer.zendesk.com/api-reference/ticketing/ticket-management/search/
//     and archiving: https://support.zendesk.com/hc/en-us/articles/4408887617050
//   - Incremental exports and ticket events:
//     https://developer.zendesk.com/api-reference/ticketing/ticket-management/incremental_exports/
//     and https://developer.zendesk.com/documentation/ticketing/managing-tickets/using-the-incremental-export-api/
//     (the ticket event export takes start_time and include only; which
//     exports are cursor-based: "Incremental export workflow" on the
//     second page)
//   - Ticket audits (List Audits for a Ticket):
//     https://developer.zendesk.com/api-reference/ticketing/tickets/ticket_audits/
//   - Ticket audit events (Comment and Change):
//     https://developer.zendesk.com/documentation/ticketing/reference-guides/ticket-audit-events-reference
//   - Users and groups: https://developer.zendesk.com/api-reference/ticketing/users/users/
//     and https://developer.zendesk.com/api-reference/ticketing/groups/groups/
//   - Pagination: https://developer.zendesk.com/api-reference/introduction/pagination/
//   - Idempotency: https://developer.zendesk.com/api-reference/ticketing/introduction/#idempotency
//   - Rate limits and Retry-After: https://developer.zendesk.com/api-reference/introduction/rate-limits/
//   - API token authentication: https://developer.zendesk.com/api-reference/introduction/security-and-auth/
package zendesk
