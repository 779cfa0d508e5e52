// Package guestapi is a typed client of the Guest Requests Public API v1 (a
// hotel's guest requests, as tickets with message threads) and of the
// key-for-token exchange of the service API, together with the wire types,
// and the typed [*Error]. Its retries follow the daemon's one retry policy
// (package internal/httpretry), which the helpdesk adapters share.
//
// It is not the reference server (see package refserver, which shares only
// the wire types), and it holds no sync logic: it never decides what to poll,
// never stores anything and never derives idempotency keys; the engine does.
//
// # Calls
//
// [New] checks a [Config] and returns a [*Client] with ListTickets,
// GetTicket, PostMessage and SetStatus for the ticket endpoints (each sent
// with Authorization: Bearer <API key>), and Token and Verify for the
// service API (the key exchanged for a cached access token). Every call
// takes a context, which bounds it whole: attempts and the waits between
// them.
//
// # Errors
//
// Every non-2xx answer becomes an [*Error] carrying the HTTP status, the
// code, need and allowed of the JSON body, and the method and path; match
// it with errors.Is against the sentinels (ErrNotFound, ErrForbidden, ...)
// or errors.As for the fields. A body that is not JSON (a proxy's HTML 502)
// still gives the status and a short sanitized snippet in Message. A 2xx
// answer the client cannot use matches [ErrBadResponse]. Errors, logs,
// String and LogValue never contain the API key or an access token.
//
// A key rotated while the client runs is taken through Config.Rekey: when
// the API answers 401, the client asks it for the key again and, given
// another well-formed one, makes the refused request once more with it
// (the token exchange too). Keys used before stay redacted.
//
// # Retries and idempotency
//
// Temporary failures are repeated, up to Config.MaxAttempts attempts in
// all: 408, 425 and 5xx answers and failures of the exchange itself
// (refused or reset connections, EOF, a timeout of one attempt) after a
// backoff wait (capped exponential, full jitter), and 429 after its
// Retry-After (seconds or an HTTP date; a minute when absent, as the spec
// says); a 503's Retry-After is honoured too. A certificate the client
// does not trust is not repeated. Whether a request is repeated depends on
// what it does:
//
//   - GET requests always;
//   - POST /tickets/{id}/messages and /status when the caller gives an
//     Idempotency-Key: the server answers a repeat with the first call's
//     result and creates no second message, so a repeat after a lost
//     answer is safe. Without a key they are repeated only when they
//     certainly did not take effect: after a 429, or when no connection
//     could be opened;
//   - the token exchange and verify create nothing and are repeated like a
//     GET. 429 is the exchange's rate limit (10 a minute per address); the
//     client waits the Retry-After and tries again while attempts and the
//     context allow. Tokens are cached, so a running daemon exchanges about
//     once an hour.
//
// When a wait would pass the context's deadline the call returns at once
// with an error matching both context.DeadlineExceeded and the last
// answer's *Error. A wait the server asks for that is longer than
// Config.MaxWait (five minutes by default; the engine lowers it to the
// schedule's interval through the context) is not sat out: the call
// returns at once with an error matching httpretry.ErrWaitTooLong and the
// last answer's *Error, whose httpretry.WaitError says until when.
//
// The client follows no redirect: a 3xx answer is a permanent error
// matching httpretry.ErrRedirect, so that the key (in the token exchange's
// body, or the Authorization header) goes to BaseURL only.
//
// # What the spec leaves open
//
// Where the spec says "not shown" the client decides as follows and depends
// on no particular server behaviour:
//
//   - Status transitions: the client sends any status it is given and lets
//     the server judge (invalid_status carries the allowed values). Unknown
//     statuses read from the server are kept as they came.
//   - Rate limits of the ticket endpoints: a 429 on any endpoint is honoured
//     like the exchange's.
//   - Idempotency key retention: the client reuses a key only within one
//     call's retries; how long repeats stay deduplicated is the server's
//     business and the engine's concern.
//   - Maximum message body: not checked here; the server's 400 is passed on.
//   - Field names of the verify answer: those of the reference server, see
//     [Verification]; unknown fields are ignored everywhere, as part 9 of the
//     spec requires.
//
// ListOptions.Limit 0 means the server's default (50); the client refuses a
// negative limit itself and passes any positive one on, so the server's
// maximum (200) stays the server's to enforce.
package guestapi
