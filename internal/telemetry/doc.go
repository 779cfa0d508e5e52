// Package telemetry is what a running daemon shows the world: the
// Prometheus series (one registry per scope: the process, and each hotel
// of a daemon of many with a hotel label), /metrics, /healthz and /readyz
// on TICKETBRIDGE_LISTEN with the status page at /, and systemd's
// notifications and watchdog, fed only while cycles complete.
//
// A Telemetry is made whole by New (one hotel) or NewFleet (many hotels,
// each added with Hotel); the daemon then reports each cycle to it, and
// hands it the status page as a Page when it starts serving.
//
// It may import sync and state (the reports and statistics it counts),
// guestapi (the API's endpoints), internal/statuspage (the hotels it
// lists) and internal/version. It does not import internal/config: the
// daemon maps its settings to Options. sync, state, the adapters and
// guestapi never import it.
package telemetry
