// Package zammadfake is an in-process fake of the part of the Zammad REST
// API (v1) that the zammad adapter uses: an [http.Handler] that tests serve
// on loopback with net/http/httptest, plus methods that play the support
// team (an agent writes a public reply or an internal note, changes a
// state) and let a test inspect and disturb the system (fault injection, a
// request log, a lagging full-text index).
//
// It is not Zammad and not a general-purpose Zammad emulator: it keeps one
// system in memory, knows only the endpoints below, and leaves out what the
// adapter does not touch (uploads and attachment content, organisations,
// triggers, overviews, SLAs, e-mail, links, notifications).
//
// # Endpoints and the pages they follow
//
// Each behaviour is taken from Zammad's published REST API documentation,
// and where the documentation is silent, from Zammad's public source:
//
//   - Authentication with "Authorization: Token token={token}" (or "Token
//     {token}"); a missing or unknown token gets 401 with an X-Failure
//     header; a token without the permission an endpoint needs gets 403:
//     https://docs.zammad.org/en/latest/api/intro.html#authentication,
//     https://admin-docs.zammad.org/en/latest/system/api.html and
//     https://github.com/zammad/zammad/blob/develop/app/controllers/application_controller/handles_errors.rb.
//     Every user may make tokens of its own (Profile > Token Access):
//     [Server.Token] gives an agent one, with ticket.agent, and a request
//     with it acts as that agent, e.g. a ticket made by hand through POST
//     /api/v1/tickets, as Zammad's web app makes it.
//   - Errors as {"error": "...", "error_human": "..."}; 404 for an unknown
//     record, 422 for invalid input (an unknown group, state or customer, a
//     blank article body, an unknown search attribute): same source.
//   - GET /api/v1/users/me (any valid token) and GET /api/v1/users/{id}
//     (ticket.agent); with expand=true, names of roles and groups:
//     https://docs.zammad.org/en/latest/api/user.html and
//     https://docs.zammad.org/en/latest/api/intro.html#response-payloads-expand
//   - GET /api/v1/tickets (ordered by id, page and per_page, at most 100 a
//     page), GET /api/v1/tickets/{id}, POST /api/v1/tickets (title, group,
//     customer or customer_id with "guess:{email}", state, pending_time,
//     custom attributes, tags, priority or priority_id, and a first
//     "article"), PUT /api/v1/tickets/{id} (state, pending_time, title,
//     group, priority or priority_id, custom attributes, an optional new
//     "article"): https://docs.zammad.org/en/latest/api/ticket/index.html;
//     an update that changes something records each change in the history.
//     Priorities, Date & Time attributes and their past and future
//     options, and tags (GET /api/v1/tags, POST /api/v1/tags/add, DELETE
//     /api/v1/tags/remove) are described in fields.go, with the pages and
//     source they follow.
//   - GET /api/v1/tickets/search with query (full text, served by the search
//     index, see Options.SearchLag), or with a condition
//     (condition[ticket.{attribute}][operator] and [value]) answered from the
//     database, sort_by and order_by, page and per_page (at most 200, 50 by
//     default), the answer being ids with assets, or a list of tickets with
//     expand=true: https://docs.zammad.org/en/latest/api/ticket/index.html#search,
//     https://docs.zammad.org/en/latest/api/intro.html#pagination, and for
//     the condition, which the REST pages do not describe,
//     https://github.com/zammad/zammad/blob/develop/app/controllers/tickets_controller.rb
//     and https://github.com/zammad/zammad/blob/develop/app/models/concerns/can_search.rb
//   - POST /api/v1/ticket_articles, GET /api/v1/ticket_articles/{id},
//     GET /api/v1/ticket_articles/by_ticket/{id} (oldest first), with body,
//     content_type, type, internal, sender, from, created_by_id and
//     attachments (id, filename, size, preferences with the Mime-Type; only
//     an agent attaches files, [AgentUpdate].Attachments, and the text may
//     then be empty):
//     https://docs.zammad.org/en/latest/api/ticket/articles.html. by_ticket
//     is not paged: it answers every article the user may read in one
//     array and ignores page and per_page, as index_by_ticket in
//     https://github.com/zammad/zammad/blob/develop/app/controllers/ticket_articles_controller.rb
//     does in every release read (2014 to 2022: it iterates
//     ticket.articles and renders the whole list).
//   - GET /api/v1/ticket_states with the default states new, open, pending
//     reminder, closed, merged, removed, pending close:
//     https://docs.zammad.org/en/latest/api/ticket/states.html
//   - GET /api/v1/ticket_history/{id}: {"history": [...], "assets": {...}},
//     one entry per change with type, object, attribute, value_from,
//     value_to, created_by_id and created_at (not in the REST pages; from
//     https://github.com/zammad/zammad/blob/develop/app/controllers/tickets_controller.rb
//     and https://github.com/zammad/zammad/blob/develop/app/models/history.rb)
//   - GET /api/v1/object_manager_attributes (admin.object):
//     https://docs.zammad.org/en/latest/api/object.html
//
// Where the pages leave a detail open the fake picks one and says so:
//
//   - Unknown fields of a ticket are dropped, as Zammad's parameter cleanup
//     does, so a custom attribute that was never created (or not yet
//     applied with "Update database") is silently not stored.
//   - Agents may set the states of the ticket edit screen's filter listed by
//     the object manager (open, pending reminder, closed, pending close) or
//     keep the current one; "new" is refused once a ticket left it, and a
//     pending state needs a pending_time (422), as the UI and its core
//     workflows require.
//   - An article written through the API by an agent gets the sender
//     "Agent" and, without content_type, "text/plain"; the body of a
//     text/plain article is returned as written. The agent methods write
//     text/html as Zammad's editor does: each line a <div>, an empty line
//     <div><br></div>, runs of spaces as &nbsp;.
//   - Every write gets a time stamp at least a millisecond after the
//     previous one, so that tickets and articles never share an
//     updated_at or created_at (real Zammad stores microseconds).
//   - Texts of errors are the fake's own; their shape is Zammad's.
//   - The Date header of every answer is the runtime's time.
//
// # Tests
//
// [New] takes [Options]; the zero value of each field but Token is usable
// and follows Zammad's defaults. Tests shrink MaxPerPage to exercise paging,
// set SearchLag to show what the full-text index misses, inject faults with
// [Server.Inject], and act as agents with [Server.AddAgent], [Server.Reply],
// [Server.Note] and [Server.SetState], or through the API with an agent's
// [Server.Token]. The fake keeps the runtime's time: a
// test that needs it to pass (the index's lag, a pending time) runs in a
// testing/synctest bubble and serves the fake on in-memory connections
// (testutil.PipeServer); CommitLate ([saasfake.Base.CommitLate]) stamps
// writes in the past.
package zammadfake
