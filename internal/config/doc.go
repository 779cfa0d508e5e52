// Package config reads the daemon's configuration: every daemon-level
// TICKETBRIDGE_* variable (the daemon's own, the status page's, the
// telemetry's, the hotels directory's), the env files and how they are
// found (--env-file, the packaged service's layout under systemd or not),
// the hotel files of TICKETBRIDGE_HOTELS_DIR resolved against the main
// configuration and the hotels a command acts on (Sections), secret
// files, the check for variables nobody reads, the helpdesk folders a
// configuration keeps on disk (HelpdeskFolders), the installed systemd
// unit (whom the service runs as, its credentials and sandbox: Unit; who
// owns a file: FileOwner), and the one table of fixes that check's rows,
// the daemon's start errors and each cycle's fatal error share (Problem,
// WithFix).
//
// It reads and checks; it starts nothing. The engine and the adapters
// declare their own variables in their packages, which config loads
// against the same lookuper (sync.LoadConfig, the adapters' LoadConfig),
// so that the known-variable check covers them.
//
// It may import sync and the adapters (for their settings), the status
// page (its token and proxy checks) and the plumbing under internal/; it
// never imports the daemon's running parts (telemetry, the bridge, the
// leases, the fleet) nor check, and sync, state, the adapters and
// guestapi never import it.
package config
