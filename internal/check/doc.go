// Package check owns the checks of what the daemon and the installed
// service need, each one row of PASS, WARN, FAIL or SKIP with, for a
// failure, its fix: the configuration (every variable's form, names that
// are no variable), the API key, the API (reachable, key accepted,
// tickets readable), the right to write, the helpdesk, the state file or
// database, whether the state serves this API, key and helpdesk (a copy
// the daemon would hold, serves.go), the full reads, the lists the API answered full and the
// changes the helpdesk holds, for one hotel or for each hotel of the
// hotels directory. The fixes of files the service could not use come
// from the one table of fixes in internal/config (Problem), which the
// daemon's start errors share.
//
// It changes nothing it checks: the state and the helpdesk's adapter
// open read-only (a new key is proven the organisation's by reading a
// request the state knows, as the daemon does), a folder's write right is proven with a file removed
// at once, and the API's with POST /tickets/<random id>/status and an
// empty status, which an API that knows the key's rights answers 403
// (tickets:write missing) or 404 (the right is there; no such ticket).
//
// With the packaged env file, the checks run as the service would:
// credentials from the service's credentials' sources, the state in its
// state directory (a scratch directory when systemd has not made it
// yet), and, with the unit installed, "as the service" judges what the
// daemon reads and writes at start as the unit runs it (service.go): its
// user, credentials and sandbox, with the files' owners, groups and
// modes.
//
// It prints nothing but through the writer Run is given (the adapters'
// and the store's warnings go to the Logger of Options). It may import
// internal/config, internal/bridge (the status snapshot the daemon
// writes; cmd gives it the adapters' registry), state, sync, guestapi,
// the adapters and the plumbing; it needs none of the fleet, the leases
// or telemetry, and imports none of them. Nothing but cmd imports it.
package check
