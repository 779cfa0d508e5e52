// Package zammad is the adapter "zammad": it mirrors guest requests into a
// Zammad helpdesk through Zammad's REST API (v1) and reads the support
// team's public replies, internal notes and state changes back.
//
// It is not a general Zammad client, and it keeps nothing outside Zammad:
// which guest request a ticket mirrors, which upstream messages a ticket
// holds and which agent events were delivered are all written into the
// tickets themselves, so that losing the bridge's state costs a rescan,
// never a duplicate. Package zammadfake is its in-process test double.
//
// The Helpdesk methods are those of [saas.Helpdesk] (input checks,
// markers, no message written twice, the adapter's own writes left out);
// this package supplies the primitives of Zammad's API ([saas.Vendor]).
//
// # How a guest request looks in Zammad
//
//   - One ticket per guest request, created by the API user with the title
//     "[department] first line", in the department's group
//     (TICKETBRIDGE_ZAMMAD_GROUPS, else TICKETBRIDGE_ZAMMAD_GROUP), for the
//     customer TICKETBRIDGE_ZAMMAD_CUSTOMER (guests have no Zammad
//     identity), with the upstream ticket id in the custom text attribute
//     TICKETBRIDGE_ZAMMAD_ID_FIELD, the tag origin_<origin>, and the
//     request as its first article (public when the guest wrote it).
//   - The request's fields are kept current by [Adapter.Update]: group,
//     title, priority, the due date in the Date & Time attribute
//     TICKETBRIDGE_ZAMMAD_DUE_ATTRIBUTE, the rating as a tag, and the
//     rating and console comment as internal notes.
//   - One article per upstream message: type note, internal when the
//     message is not visible to the guest, written by the API user as
//     text/plain. Its first line shows the author, the author type and the
//     time ("Ada Guest (guest), 2026-03-14 09:33 UTC"); its last line is a
//     marker, "[ticketbridge message <upstream id>]". Zammad keeps a
//     text/plain body as written, while text/html is sanitised and would
//     not keep the marker verbatim. Only the last line of the API user's
//     own articles counts as a marker, so a marker quoted by an agent never
//     passes for the bridge's.
//   - Finding a ticket by its upstream id uses the ticket search with a
//     condition on the attribute and no full-text query. Zammad answers
//     such a search from its database; only full-text queries go to the
//     search index (Elasticsearch), which lags behind writes by seconds to
//     minutes. So a ticket is found the moment it exists: a retried
//     creation after a lost answer, or a rescan after the bridge's state
//     was lost, never makes a second ticket. Every answer is checked
//     against the attribute's value: a search that ignored the condition
//     is an error, so no foreign ticket is adopted and none duplicated.
//   - Agent work is read from the tickets changed since the cursor (the
//     same search, with a condition on updated_at, sorted by it and paged
//     by time), then each mirrored ticket's articles
//     (/ticket_articles/by_ticket) and history (/ticket_history). Public
//     articles by agents are replies, internal ones notes; an article
//     written in the editor (text/html) is turned into plain text.
//     Articles of the customer or the system sender are not the team's and
//     are not carried up. State changes are read from the history rather
//     than by comparing the ticket's state with the last one seen, so that
//     two changes between polls are two events and the cursor needs no
//     per-ticket memory; each is mapped with the status map. Articles and
//     changes by the API user are the bridge's own and never reported: use
//     a Zammad user nobody else works as. Event ids are "article-<article
//     id>" and "state-<history id>".
//   - A ticket an agent made by hand is linked to a guest request by
//     [Adapter.Connect], which writes the attribute and nothing else.
//     Zammad's history records that update; Changes reports only the
//     articles and state changes after it, so the ticket's first article
//     and what agents wrote before the connect do not come back as new
//     work (Lookup lists them, and the engine sets them aside).
//   - MarkSent writes an internal note ending in "[ticketbridge sent <event
//     id> <upstream message id>]", which Lookup reads back after a state
//     loss.
//   - The API carries text only. A article with files sends its text
//     upstream (articles that are only files send nothing), and Changes
//     leaves the ticket one internal note naming the files, ending in
//     "[ticketbridge unsent <event id>]", which keeps a second read of the
//     event from writing it again (see [adapters.NoteUnsent]); the
//     conformance case AttachmentsNoted shows it.
//
// # Statuses
//
// See [DefaultStatusMap]; TICKETBRIDGE_STATUS_TO_HELPDESK and
// TICKETBRIDGE_STATUS_FROM_HELPDESK override it, custom states included.
// SetStatus writes nothing when the ticket's state already maps to the
// upstream one (an agent's pending reminder stays for in_progress). Zammad
// does not let agents move a ticket back to new, so new then counts as
// open. A pending state is set with a pending till TICKETBRIDGE_ZAMMAD_PENDING_FOR
// ahead, which Zammad requires. A guest's new public message on a closed
// or pending ticket reopens it (state open) before the article is added.
//
// # Requests and their cost
//
// Zammad offers no idempotency key. Every request goes through
// [adapters.HTTPClient]: reads and state changes are repeated on 429 (after
// Retry-After), 5xx and broken connections; creations of tickets and
// articles are sent once, and when their outcome is unknown the call fails
// and the engine's next call finds the ticket by its attribute or the
// article by its marker if it was made.
//
// Per ticket the adapter spends: a search and a creation for a new ticket;
// for Append, a read of the ticket and of its articles, and one creation per
// new message; for SetStatus, a read and at most one update; for MarkSent,
// two reads and one note; for Update, a read of the ticket (and of its tags
// when the rating changes), at most one ticket update, one request per
// rating tag removed or added, and for a new rating or comment a read of
// the articles and one note each; for Connect, a read, a search and one
// update. Each Changes call costs one search per page of
// changed tickets (TICKETBRIDGE_ZAMMAD_PAGE_SIZE) plus two reads per changed
// ticket that mirrors a guest request, the bridge's own writes included.
// The cursor looks two minutes back past its watermark (against writes
// committed late and clock differences) and names the events it reported
// in that window. An empty cursor starts at TICKETBRIDGE_ZAMMAD_EVENTS_SINCE,
// by default at the beginning: after the state is lost, the first call
// reads every mirrored ticket once.
// So the cursor cannot skip a change that became visible after a later one
// was read: TestChangesLateCommit shows a reply stamped before the last
// poll but committed after it reported once, and TestCursorForgetsOldEvents
// that the ids the cursor names stay within the overlap.
//
// # Setup in Zammad
//
//   - Token Access enabled (Admin > System > API), and a user for the
//     bridge: an agent with full access to the groups it writes to, and
//     read access to every group a mirrored ticket may be moved to (Zammad
//     hides tickets of other groups from its searches, and a ticket the
//     bridge cannot see is, after a state loss, created again).
//   - An access token of that user (avatar > Profile > Token Access) with
//     the permission ticket.agent; admin.object as well lets [Adapter.Check]
//     read the object manager (without it the check reads a ticket
//     instead).
//   - A ticket attribute (Admin > System > Objects > Ticket > New
//     Attribute): name guest_request_id (or TICKETBRIDGE_ZAMMAD_ID_FIELD),
//     format Text field, maximal length 255, applied with Update Database.
//   - Optionally a Date & Time ticket attribute for the due date, with
//     Allow past on, named by TICKETBRIDGE_ZAMMAD_DUE_ATTRIBUTE.
//   - The groups named by TICKETBRIDGE_ZAMMAD_GROUP (default Users, Zammad's
//     own) and TICKETBRIDGE_ZAMMAD_GROUPS.
//   - Agents answer the guest with a public article (a note with internal
//     off, or any other type) and talk among themselves with internal
//     notes. Give TICKETBRIDGE_ZAMMAD_CUSTOMER an address nobody reads, so
//     that an e-mail reply or a trigger's notification to the customer goes
//     nowhere.
//
// [Adapter.Check] tests the token, the group access and the attribute, and
// says what to create when something is missing.
//
// # Vendor documentation followed
//
//   - Authentication, expand, pagination, errors:
//     https://docs.zammad.org/en/latest/api/intro.html
//   - Tickets (list, search, show, create with article, update):
//     https://docs.zammad.org/en/latest/api/ticket/index.html
//   - Articles (by_ticket, create, content_type, internal):
//     https://docs.zammad.org/en/latest/api/ticket/articles.html; that
//     by_ticket answers every article at once, unpaged, is from
//     index_by_ticket in app/controllers/ticket_articles_controller.rb
//   - States: https://docs.zammad.org/en/latest/api/ticket/states.html
//   - Users (me, show): https://docs.zammad.org/en/latest/api/user.html
//   - Tags: https://docs.zammad.org/en/latest/api/ticket/tags.html; a
//     creation's "tags" (comma-separated) from create in
//     app/controllers/tickets_controller.rb
//   - Priorities (seeded 1 low, 2 normal, 3 high):
//     https://docs.zammad.org/en/latest/api/ticket/priorities.html
//   - The past/future validation of date attributes, and that it checks
//     every custom attribute whenever an update changes any:
//     app/models/object_manager/attribute/validation.rb and
//     validation/future_past.rb; unknown parameters dropped by
//     param_cleanup (app/models/application_model/can_cleanup_param.rb)
//   - Object manager attributes: https://docs.zammad.org/en/latest/api/object.html
//     and https://admin-docs.zammad.org/en/latest/system/objects.html
//   - Token access: https://admin-docs.zammad.org/en/latest/system/api.html
//   - Where the REST pages are silent, Zammad's source: the search's
//     condition parameter and /ticket_history in
//     https://github.com/zammad/zammad/blob/develop/app/controllers/tickets_controller.rb,
//     a condition search answered from the database in
//     https://github.com/zammad/zammad/blob/develop/app/models/concerns/can_search.rb,
//     history entries in https://github.com/zammad/zammad/blob/develop/app/models/history.rb,
//     and the error form in
//     https://github.com/zammad/zammad/blob/develop/app/controllers/application_controller/handles_errors.rb
package zammad
