// Package fleet runs the hotels of a hotels directory
// (TICKETBRIDGE_HOTELS_DIR): one goroutine per hotel that wires it
// (internal/bridge), runs its scheduler, and starts it again after a
// panic, which fails that hotel alone; Reload (SIGHUP) makes the hotels
// running match the directory without waiting for any hotel's cycle;
// Backup (SIGUSR1) copies each hotel's state file; Stop stops them all.
// The hotels whose state is in PostgreSQL run only while this replica
// holds their lease: the fleet is the Balancer of the lease keepers of
// package lease, which start and hand over hotels through it.
//
// It may import internal/lease, internal/bridge, internal/telemetry,
// internal/config, sync, state, the adapters' registry and the plumbing
// under internal/. Nothing but the commands imports it.
package fleet
