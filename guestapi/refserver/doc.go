// Package refserver is a reference implementation of the Guest Requests
// Public API v1 and its key authentication (../shared/spec/guest-requests-api-v1.md
// in the project's shared docs): an http.Handler over an in-memory store,
// safe for concurrent use, with an injectable clock, a console for what
// the API lacks (creating tickets, writing as the guest, issuing keys),
// fault injection, and seeds.
//
// It is not the real service and not a mock: it answers every endpoint,
// field and error of the spec so that the client, the sync engine and
// `ticketbridge refserver` / `ticketbridge demo` run against it, and it
// picks one documented behaviour wherever the spec is silent. Clients must
// not depend on those picks. It shares the wire types of package guestapi
// but none of its client code. For tests, package refservertest starts it
// on a loopback port with keys of every right.
//
// # Routes
//
// Below {functions_url}:
//
//	GET  /ops-public-api/v1/tickets                  tickets:read
//	GET  /ops-public-api/v1/tickets/{id}             tickets:read
//	POST /ops-public-api/v1/tickets/{id}/messages    tickets:write
//	POST /ops-public-api/v1/tickets/{id}/status      tickets:write
//	POST /api-auth/token                             body {"api_key": "rta_..."}
//	POST /api-auth/verify                            Authorization: Bearer <access token>
//	     /console/v1/...                             Authorization: Bearer <console token>
//
// Console routes (JSON in and out, unknown request fields refused):
//
//	POST   /console/v1/organizations            {"id", "product_type"} -> 201
//	POST   /console/v1/tickets                  {"organization", "id"?, "department", "status"?, "task_description",
//	                                             "origin"?, "guest_rating"?, "target_due_at"?, "comments"?, "created_at"?} -> 201 ticket
//	GET    /console/v1/tickets?organization=ID  every ticket of the organisation, newest first
//	GET    /console/v1/tickets/{id}             internal view: ticket, messages with source and external,
//	                                            operations log, guest_view (what the guest's page shows)
//	DELETE /console/v1/tickets/{id}             delete it, as staff may on the platform: 404 from then on -> 200
//	POST   /console/v1/tickets/{id}/messages    {"author_type", "author_name"?, "body", "visible_to_guest"?, "created_at"?} -> 201 message
//	POST   /console/v1/tickets/{id}/status      {"status"}: any of the seven -> 200 ticket
//	POST   /console/v1/tickets/{id}/rating      {"guest_rating": number from 0 to 10, or null} -> 200 ticket
//	POST   /console/v1/tickets/{id}/fields      {"department"?, "task_description"?, "target_due_at"?: timestamp or null,
//	                                             "comments"?: text or null}: the fields given, checked first -> 200 ticket
//	POST   /console/v1/keys                     {"organization", "name", "platform", "tickets", "validity_days"} -> 201 with the value, once
//	GET    /console/v1/keys?organization=ID     the key table: prefix, rights, validity, last use; never values
//	DELETE /console/v1/keys/{name}?organization=ID  revoke -> 200
//	GET    /console/v1/stats                    requests per route and status code, injected faults per kind
//	GET    /console/v1/faults                   the faults in effect
//	PUT    /console/v1/faults                   {"seed", "latency": "250ms", "latency_rate", "error_rate", "rate_limit_rate",
//	                                             "retry_after", "drop_rate", "lost_answer_rate", "slow_body_rate",
//	                                             "slow_body_delay"}: replace them (the hook stays)
//
// A missing or wrong console token gets 401 (compared in constant time).
// The same operations are Go methods on [Server].
//
// # Choices where the spec is silent
//
//   - Transitions: any settable status may follow any status, the same one
//     included (it answers success and is logged; updated_at moves only on
//     a change). The console may set all seven, confirmed included.
//   - updated_at: a new message moves it to the message's time; a status,
//     rating or field change (department, task_description, target_due_at,
//     comments) moves it to the time of the change. Clients must not
//     rely on it: with [Options.MessagesKeepUpdatedAt] a new message leaves
//     it as it is, to test that they do not.
//   - Idempotency-Key: up to 255 characters; remembered 24 h
//     ([Options.IdempotencyTTL]) per organisation, for every key of it.
//     Only successful answers are remembered, so a request corrected after
//     a 4xx may reuse its key. A repeat within the retention returns the
//     first answer byte for byte (status and body) and changes nothing, also
//     when it is sent to another ticket, another endpoint or with another
//     body: the key names the operation, as the spec says. Authentication,
//     rights and the ticket are checked before the replay: a revoked key
//     gets 401, and another organisation's or an unknown ticket 404, never
//     a replayed success.
//   - body_required: the body field missing, null, not a string that has
//     something besides white space, or the whole request body empty or the
//     JSON null. A body of another JSON type is 400 bad_request.
//   - Other 400s carry the code bad_request and a message naming the field:
//     malformed JSON, a request body over [Options.MaxRequestBytes]
//     (1 MiB), a message text over [Options.MaxMessageBytes] (64 KiB), an
//     author_name over 255 bytes, visible_to_guest not a boolean, a bad
//     limit, an empty department filter, a Content-Type other than
//     application/json (a missing one is accepted). Unknown request fields
//     are ignored on the public API.
//   - Order of checks: route (404, 400 unsupported_version), method (405),
//     request body size and Content-Type, key (401), right (403), ticket rate
//     limit (429), ticket (404), Idempotency-Key replay, body (400).
//   - Filters: status must be one of the seven (else 400 invalid_status
//     with all seven in allowed; an empty value included); department is
//     an exact match. limit defaults to 50; above 200 gives at most 200;
//     zero, negative or non-numbers give 400 bad_request naming limit. The
//     list is newest first by created_at; a thread oldest first.
//   - A message posted through the API has author_type staff, author_name
//     "API" unless given, source api and external true; a status change
//     through the API is logged with source api and external true.
//   - Access tokens: 1 h, token_type Bearer, expires_in 3600. scopes follow
//     the platform right: read -> [read], write -> [read write],
//     admin -> [read write]. A key with platform none gets 403 forbidden with
//     need "read". Ticket rights do not matter to the token endpoint.
//     Revoking a key ends its tokens too. Tokens start with rtt_ and keys
//     with rta_: ticket endpoints refuse tokens and service endpoints
//     refuse keys, both with 401.
//   - POST /api-auth/verify answers organization, scopes, product_type and
//     expires_at (the fields of guestapi.Verification).
//   - Key exchange limit: 10 requests ([Options.TokenRateLimit]) in any
//     sliding 60 s window per client address (the connection's, proxy
//     headers are not trusted), counting every request to /api-auth/token
//     that is not itself refused; the 11th gets 429 rate_limited with
//     Retry-After in whole seconds until a slot frees.
//   - Ticket endpoints: no rate limit by default; [Options.TicketRateLimit]
//     sets one per API key (429 rate_limited with Retry-After).
//   - 429 and injected faults carry the code rate_limited or internal_error;
//     a wrong method gets 405 method_not_allowed with Allow; an unknown path
//     404 not_found. Every answer is JSON (Content-Type application/json),
//     errors with an error field and a message.
//   - Keys: only a SHA-256 fingerprint is stored, compared in constant time
//     against every stored key; the last use is kept; validity 30, 90, 365
//     days or unlimited; a seed may give any expiry, a past one included.
//     Revocation takes effect on the next request.
//   - Ticket ids are unique across organisations; another organisation's
//     ticket is 404 on all four ticket endpoints.
//   - Timestamps are written in UTC with microseconds and +00:00; the
//     server keeps times to the microsecond.
//
// # Faults
//
// [Faults] (in [Options] and [Server.SetFaults] while running) inject
// latency, 500s, 429s with Retry-After, dropped connections, answers lost
// after the request was carried out, and slow bodies at given rates from a
// seeded random source, plus a [Hook] that can answer or alter any request
// ([AddField], [AnswerHTML], [Match]). They apply to the public API and the
// token endpoints, never to the console. Waiting goes through
// [Options.Sleep].
package refserver
