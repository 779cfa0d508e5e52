// Package zendeskfake is an in-process fake of the part of the Zendesk
// Support (Ticketing) API v2 that the zendesk adapter uses: an
// [http.Handler] that tests serve on loopback with net/http/httptest, plus
// methods that play the support team (an agent replies, adds a private
// note, changes a status, an automation closes a ticket) and let a test
// inspect and disturb the account (fault injection, rate limits, a
// request log).
//
// It is not Zendesk and not a general-purpose Zendesk emulator: it keeps
// one account in memory, knows only the endpoints below, and leaves out
// everything the adapter does not touch (uploads and attachment content,
// organisations, triggers, search other than by external_id, sideloads
// other than comment_events, notifications).
//
// # Endpoints and the pages they follow
//
// Each behaviour is taken from Zendesk's published developer
// documentation:
//
//   - Authentication, "{email}/token:{api_token}" basic auth; 401 with
//     {"error":"Couldn't authenticate you"} otherwise:
//     https://developer.zendesk.com/api-reference/introduction/security-and-auth/
//   - GET /api/v2/users/me, GET /api/v2/users/{id},
//     GET /api/v2/users/show_many?ids=:
//     https://developer.zendesk.com/api-reference/ticketing/users/users/
//   - GET /api/v2/groups/{id}:
//     https://developer.zendesk.com/api-reference/ticketing/groups/groups/
//   - POST /api/v2/tickets (the first comment in "comment", external_id,
//     group_id, tags, via_followup_source_id for a follow-up of a closed
//     ticket), GET /api/v2/tickets/{id}, GET /api/v2/tickets/show_many,
//     PUT /api/v2/tickets/{id} (a comment with "public", a status, subject,
//     external_id, group_id, priority, tags that replace the ticket's, additional_tags,
//     custom_fields of the account's [Options.TicketFields] checked by type,
//     safe_update with updated_stamp answered 409 on a collision), and
//     GET /api/v2/tickets?external_id= (the external id filter of List
//     Tickets): https://developer.zendesk.com/api-reference/ticketing/tickets/tickets/
//   - Archived tickets ([Server.Archive], a closed ticket only): left out
//     of List Tickets, still answered by Show Ticket, its comments and the
//     Search API:
//     https://support.zendesk.com/hc/en-us/articles/4408887617050
//   - GET /api/v2/search?query=type:ticket external_id:"..." with offset
//     pages of "results" (result_type "ticket"), archived tickets
//     included; [Options.SearchLag] delays new tickets and new external
//     ids as Zendesk's index does ("up to a few minutes"); any other
//     query is a 400:
//     https://developer.zendesk.com/api-reference/ticketing/ticket-management/search/
//   - GET /api/v2/tickets/{id}/audits, oldest first, in the form of the
//     audits API (child events under "events", a change as field_name and
//     value): https://developer.zendesk.com/api-reference/ticketing/tickets/ticket_audits/
//   - GET /api/v2/tickets?sort=-updated_at (or updated_at), List Tickets
//     in order of their last update
//   - GET /api/v2/tickets/{id}/comments, oldest first, with body, html_body,
//     plain_body, public and author_id:
//     https://developer.zendesk.com/api-reference/ticketing/tickets/ticket_comments/
//   - A comment's "attachments" (in the comments list, the audits and the
//     export's comment events), each in the form of the Attachments API:
//     id, file_name, content_url, content_type, size, inline, deleted,
//     thumbnails (https://developer.zendesk.com/api-reference/ticketing/tickets/ticket-attachments/).
//     Only an agent attaches files ([AgentUpdate].Attachments), and a
//     comment with files may have no text, as in the agent interface.
//   - Paging: cursor pagination with page[size] and page[after], answered
//     with meta.has_more, meta.after_cursor and links.next; offset
//     pagination with page and per_page when page[size] is absent:
//     https://developer.zendesk.com/api-reference/introduction/pagination/
//   - GET /api/v2/incremental/ticket_events?start_time=&include=comment_events,
//     time-based: up to 1000 events a page, end_time (the second of the
//     page's last event) and next_page to go on, a page that may end
//     inside a second so that its events come again on the next page (and
//     a second with more events than a page gives the same page again, as
//     Zendesk's export does: it cannot be paged past; seen in the issue
//     trackers of Zendesk API clients, e.g. zendesk/zendesk_api_client_rb#168
//     and estuary/connectors#1789),
//     end_of_stream, events of the last minute left out, a start_time
//     less than a minute old refused with 400 (the one-minute limit
//     Zendesk announced on 28 October 2024; the message is the fake's),
//     admins only, 10 requests a minute:
//     https://developer.zendesk.com/api-reference/ticketing/ticket-management/incremental_exports/
//     and https://developer.zendesk.com/documentation/ticketing/managing-tickets/using-the-incremental-export-api/
//     and https://support.zendesk.com/hc/en-us/articles/8143500919322
//   - Idempotency-Key on ticket creation: a repeat within two hours returns
//     the first answer with x-idempotency-lookup: hit, a first use says
//     miss, the same key with another payload is refused:
//     https://developer.zendesk.com/api-reference/ticketing/introduction/#idempotency
//   - Errors as JSON objects with error, description and, for 422
//     RecordInvalid, details keyed by field; a closed ticket cannot be
//     updated (422); an update to solved of a ticket whose fields
//     required on solve ([Options.RequiredOnSolve]) are empty is refused
//     with 422 RecordInvalid, one details.base entry per field
//     ("<title>: is required when solving a ticket", with
//     ticket_field_id), the shape Zendesk answers with (seen in the
//     issue trackers of Zendesk API clients, e.g. facetoe/zenpy#114);
//     429 with Retry-After when a rate limit is exceeded,
//     including the limit of 30 updates per ticket per user in ten minutes:
//     https://developer.zendesk.com/api-reference/introduction/requests/ and
//     https://developer.zendesk.com/api-reference/introduction/rate-limits/
//
// Where the pages leave a detail open the fake picks one and says so: the
// body of a 429 (Zendesk documents only the status and Retry-After), the
// code of a reused Idempotency-Key with another payload (400
// IdempotentRequestError), no audit event for a changed external_id (the
// audit events reference lists none for it; the ticket's updated_at
// moves), the end_time of an empty export page (the
// start_time asked for), the order of the events within a second (by
// id), and the html_body rendering (escaped
// text in paragraphs). The "body" of a comment is returned as it was written, with
// line endings normalised to \n and trailing white space trimmed.
//
// # Tests
//
// [New] takes [Options]; the zero value is usable and follows the
// documented limits, and tests shrink the page sizes (MaxPageSize,
// EventsPageSize) to exercise paging. The fake keeps the runtime's time: a
// test moves past the export delay and the rate-limit windows in a
// testing/synctest bubble, serving the fake on in-memory connections
// (testutil.PipeServer), where time.Sleep takes no time. Agent updates made
// while the bubble's clock stands still share one second, so a test can put
// more than a page of events into one second (a bulk macro);
// CommitLate ([saasfake.Base.CommitLate]) stamps them in the past.
package zendeskfake
