// Package bridge is one hotel wired: from the hotel's configuration it
// builds the API client, the helpdesk adapter, the state store and the
// engine (New), starts the adapter and checks the helpdesk (Start), runs
// the engine on its schedule (Scheduler), and keeps what a running hotel
// writes next to its state: the status snapshot after cycles and the copy
// of the state file on demand (Backup). DryRun runs one cycle that writes
// nothing. Close releases what New opened.
//
// It reports each cycle to a Reporter and to the hotel's status page
// source (Console), and is given its HTTP client and its lease's fence by
// the daemon; it knows neither the telemetry, nor the leases, nor the
// fleet that runs many bridges.
//
// It may import sync, state, guestapi, the adapters, internal/config,
// internal/statuspage and the plumbing under internal/. sync, state, the
// adapters and guestapi never import it.
package bridge
