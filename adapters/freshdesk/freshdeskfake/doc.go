// Package freshdeskfake is an in-process fake of the part of the Freshdesk
// API v2 that the freshdesk adapter uses: an [http.Handler] that tests serve
// on loopback with net/http/httptest, plus methods that play the support
// team (an agent makes a ticket, replies, adds a note, changes a status)
// and let a test inspect and disturb the helpdesk (fault injection, a
// per-minute request budget, a request log).
//
// It is not Freshdesk and not a general-purpose Freshdesk emulator: it
// keeps one helpdesk in memory, knows only the endpoints below, and leaves
// out everything the adapter does not touch (uploading attachments and
// their content, contacts' own
// endpoints, search, automations, SLAs, e-mail notifications).
//
// # Endpoints and the pages they follow
//
// Each behaviour is taken from Freshdesk's published API v2 reference,
// https://developers.freshdesk.com/api/ (one page; the anchors name the
// sections):
//
//   - Authentication (#authentication): basic auth with the API key as the
//     user name and any password ("X"); otherwise 401 with
//     {"code":"invalid_credentials","message":...}.
//   - GET /api/v2/agents/me (#me) and GET /api/v2/agents/{id}
//     (#view_agent): the agent with id, ticket_scope (1 global, 2 group,
//     3 restricted) and contact.name and contact.email.
//   - GET /api/v2/groups/{id} (#view_group).
//   - GET /api/v2/ticket_fields (#list_all_ticket_fields): the default
//     fields and the custom ones, named cf_..., of type custom_text.
//   - POST /api/v2/tickets (#create_ticket): subject, description (HTML),
//     the requester by email (a contact is made for an unknown address) or
//     requester_id, status, priority, source, group_id, tags, due_by and
//     fr_due_by, and custom_fields; 201 with the ticket.
//   - GET /api/v2/tickets/{id} (#view_a_ticket), with description and
//     description_text; a deleted ticket comes back with "deleted": true.
//   - PUT /api/v2/tickets/{id} (#update_ticket): status, priority (1 to
//     4, else 400 invalid_value), group_id, subject, description, tags
//     (which replace the ticket's), due_by and fr_due_by (checked as
//     Freshdesk checks them, and computed by an SLA policy until set: see
//     fields.go), custom_fields.
//   - GET /api/v2/tickets (#list_all_tickets): updated_since, order_by
//     (created_at, due_by, updated_at, status), order_type (asc, desc;
//     desc by default), page and per_page; without updated_since only the
//     tickets created in the last 30 days; deleted and spam tickets left
//     out; no page beyond the 300th.
//   - Archived tickets ([Server.Archive], a closed ticket only; Freshdesk
//     archives tickets closed and untouched for 120 days: "Ticket
//     archiving", https://support.freshdesk.com, article 212901): GET
//     /api/v2/tickets/archived/{id} (with "archived": true) and GET
//     /api/v2/tickets/archived/{id}/conversations show them; the list
//     leaves them out, and the other ticket endpoints answer 404 (the
//     pages do not say what they answer; 404 is the fake's pick), as do
//     the agent-side writes.
//   - GET /api/v2/tickets/{id}/conversations (#list_all_ticket_notes):
//     replies and notes oldest first, with body (HTML), body_text,
//     incoming, private, source (0 reply, 2 note), user_id, and
//     attachments (id, name, content_type, size, attachment_url,
//     thumb_url, created_at, updated_at) that only an agent adds
//     ([Server.ReplyWithFiles], [Server.NoteWithFiles]; the text may then
//     be empty).
//   - POST /api/v2/tickets/{id}/notes (#add_note_to_a_ticket): body,
//     private (true by default), incoming, user_id; POST
//     /api/v2/tickets/{id}/reply (#reply_ticket): body, user_id. Both
//     answer 201 with the conversation.
//   - Pagination (#pagination): page and per_page (30 by default, at most
//     100), and a Link header with rel="next" while more pages follow.
//   - Errors (#error): {"description":"Validation failed","errors":[{"field",
//     "message","code"}]} for 400 (codes missing_field, invalid_value,
//     invalid_field, datatype_mismatch, invalid_json), 404 for an unknown
//     resource, 405 for a method an endpoint does not take, 415 when a body
//     is not sent as application/json.
//   - Rate limits (#ratelimit): every answer carries X-RateLimit-Total,
//     X-RateLimit-Remaining and X-RateLimit-Used-CurrentRequest; a request
//     over the per-minute budget gets 429 with Retry-After in seconds.
//     Per-minute plans also cap single endpoints (Growth: tickets list 20,
//     ticket create 80, ticket update 80 of the account's 200; support
//     article 225439, "What are the rate limits for the API calls to
//     Freshdesk?"): [Options.EndpointLimits].
//
// Statuses are Freshdesk's numbers: 2 open, 3 pending, 4 resolved, 5
// closed. Timestamps are UTC with whole seconds, as Freshdesk writes them.
//
// # Choices where the pages leave a detail open
//
//   - The body of a 404 is empty, and that of a 429 is
//     {"message":"..."}; neither is documented. A deleted ticket answers
//     404 to every write.
//   - updated_since includes tickets updated at exactly that second, and
//     tickets with the same sort key are ordered by id.
//   - A request over an endpoint's budget gets 429 with Retry-After, the
//     account's headers unchanged (the pages do not say which headers
//     Freshdesk sends then), and spends neither budget; the endpoint's
//     minute counts from its first request, as the account's does.
//   - Without a configured budget ([Options.RateLimit] 0) there is no limit
//     and no rate-limit header. A budget counts whole minutes from the
//     first request of each minute; Retry-After is the rest of it, rounded
//     up to a second.
//   - Any change to a ticket (an update, a note, a reply) moves its
//     updated_at, also one that leaves every value as it was.
//   - A note's or reply's HTML is stored re-rendered (attributes dropped,
//     script and style removed) and its body_text is the text a reader sees:
//     <br> and the end of a block are line breaks, runs of white space in
//     the markup are one space, entities are decoded and a non-breaking
//     space becomes a plain space. The agent-side methods turn plain text
//     into HTML as Freshdesk's editor does: one line per <br>, spaces that
//     HTML would fold as &nbsp;. [Options.FlatBodyText] gives body_text
//     the other shape the reference allows ("content in plain text", with
//     nothing said of line breaks): the lines run together, one space
//     between them.
//   - The fake refuses what the list endpoint offers but the fake does not
//     implement (the parameters filter, requester_id, email, company_id and
//     include, and order_by=due_by) with a 400, so that a test cannot rely
//     on it by accident.
//
// # Tests
//
// [New] takes [Options]; the zero value is usable. Tests shrink the page
// sizes ([Options.MaxPerPage], [Options.MaxPages]) to exercise paging, set a
// budget ([Options.RateLimit]) or inject [Fault]s to exercise 429s and
// failures. The fake keeps the runtime's time: a test that needs it to pass
// (a rate limit's minute) runs in a testing/synctest bubble and serves the
// fake on in-memory connections (testutil.PipeServer);
// CommitLate ([saasfake.Base.CommitLate]) stamps writes in the past.
package freshdeskfake
