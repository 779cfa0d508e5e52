// Package lease shares the hotels of a PostgreSQL state among replicas:
// any number of `ticketbridge run` processes with the same hotels
// directory and the same database. Each hotel is synced by the one
// replica that holds its lease (see state.Leases); the hotels are spread
// evenly over the live replicas (Assign) and move when replicas join or
// leave.
//
// It owns a hotel's lease as a running hotel holds it (Owned: its view,
// the timer that ends the hotel when the view ends, and the Guard of its
// HTTP clients), the keeper of each database (Keeper, one per database
// under Keepers, renewing on a goroutine of its own on an injected
// Clock), and the lease of one hotel a command holds on its own (Single,
// Take), renewed by a keeper of its own: one loop renews every lease. A
// daemon of one hotel holds its lease as a fleet of one, through the
// fleet's balancer.
//
// A keeper never waits for a hotel: what runs the hotels (the fleet)
// balances them through the Balancer it is given, starting and stopping
// hotels without waiting. It may import state and the plumbing under
// internal/; it imports neither the fleet, the bridge, the telemetry nor
// the configuration, and nothing below the daemon imports it.
package lease
