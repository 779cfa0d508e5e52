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
// The hotels share one schedule but do not tick together: each runs its
// cycles at a phase of its own, drawn from its name (sync.Spread), so that
// 2,000 hotels at "@every 30s" start about 67 cycles a second rather than
// 2,000 in one second queued behind TICKETBRIDGE_MAX_IN_FLIGHT. An @every
// schedule is spread over its whole interval, on a grid counted from the
// Unix epoch, so a hotel keeps its instants when it restarts or moves to
// another replica; a cron expression keeps its times of day, each hotel's
// moved less than a minute later, as people read "0 3 * * *" as three
// o'clock. A hotel's first cycle still runs as soon as it starts, as a
// daemon of one hotel's does: the import of a new hotel, or the catch-up
// after a restart, waits for nothing but the bound on requests in flight;
// its lag counts from the hotel's start. The spreading begins with the
// next tick.
//
// It may import internal/lease, internal/bridge, internal/telemetry,
// internal/config, sync, state, the adapters' registry and the plumbing
// under internal/. Nothing but the commands imports it.
package fleet
