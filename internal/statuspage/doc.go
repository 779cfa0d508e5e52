// Package statuspage is the daemon's status page: what the people who run
// a bridge see in a browser on the telemetry listener (TICKETBRIDGE_LISTEN,
// at /), and the actions they may take on what is stuck.
//
// The page is rendered on the server with html/template from embedded
// templates and one stylesheet; it has no script at all, and its charts are
// inline SVG drawn on the server. It shows the recent cycles, the
// propagation times the engine measured, the journal backlog, the requests
// with errors, the entries refused for good, a searchable table of the
// tracked requests and a page per request (as `ticketbridge status ID`).
//
// It is read-only by default and then shows counts, ids and errors only,
// never message text. With a console token (TICKETBRIDGE_CONSOLE_TOKEN_FILE,
// or the service's console-token credential) a sign-in form sets an
// HttpOnly, SameSite=Strict session cookie, Secure behind an https proxy
// ([Options].SecureCookie). Sessions are kept in memory: signing out ends
// one at once, and a restart (which is how a new token is taken) ends all.
// Wrong tokens, at sign-in or as a bearer credential, are counted per
// client address (the X-Forwarded-For of [Options].TrustedProxies only):
// five within a minute are answered as wrong, further ones as too many
// until the minute has passed; other addresses are not affected. The
// right token is never refused, from any address: on loopback every
// local user is one address. A
// signed-in user sees the texts of the replies the bridge carries and may
// ask to read a request now, retry a journal entry or skip it (mark it
// abandoned, with a reason). Actions are POST forms with a CSRF token, or
// POSTs carrying the token as a bearer credential (the CLI's `retry` and
// `skip`), and are logged with who and what. They only change state: the
// next cycle does the work, with the entry's own Idempotency-Key.
//
// What the page shows comes from a [Source]: one hotel's state and its
// recent cycles. [Hotel] is the daemon's, kept in memory and refreshed
// after each cycle, so that a page view never reads every record: a hotel
// of many reads its request list at the first view after a cycle and
// serves that read until the next, and a request page reads its one
// request by key. The page has no login for reading, so views are bounded
// as well: so many a second, of which one client may take a quarter
// ([Options].ViewRate); a few are drawn at once, a few more wait their
// turn, and the rest are answered 429 or 503 with Retry-After
// ([Options].Renders, Waiting). The sign-in form, sign-ins and actions
// have a budget of their own, and a request with a live session or the
// console token is never refused: it only waits its turn to be drawn.
//
// A daemon gives the [Server] the list of its hotels ([Options].Hotels,
// each a [Listed]: its Source, or none and the reason it does not run).
// A daemon of one hotel (a fleet of one, [Options].One) has its one
// hotel's page at /: /tickets, /tickets/{id}, and the actions /retry,
// /skip and /read-now. A daemon of many hotels has / list the hotels, the
// ones that are not ready first, and each hotel's pages and actions the
// same under /hotels/{name}/. Sign-in (/login, /logout), the session and the
// token are the daemon's, one for all its hotels.
//
// The page answers only for the hosts it is opened at (the loopback
// names, [Options].Listen's host, ExternalHost and AllowedHosts; any IP
// address when it listens on every address) and refuses any other Host
// with 421, so that a site that turned its name to the page's address
// (DNS rebinding) cannot read it.
//
// The package is not the metrics or health endpoints (the daemon's
// telemetry serves those on the same listener) and holds no credential
// other than the console token.
//
// It owns the page's templates and stylesheet, its sessions, the sign-in
// throttle, the bounds on views, [Hotel], the in-memory source, and
// [Client], the console's other side: what a command asks a running
// daemon that holds the state (a request's audit trail, an action). It
// imports state and sync, to read a hotel's state and its recent cycles,
// notify for the conditions it lists, and plumbing; nothing else of the
// module: the daemon's other parts (its configuration, telemetry and
// fleet) use it, never the reverse, and give it the listener and token
// it serves or asks on.
package statuspage
