// Package webhook is the generic helpdesk adapter: it mirrors guest requests
// into any system that can receive an HTTP POST, and takes that system's
// replies, internal notes and status changes back through an HTTP endpoint
// of its own.
//
// # Out: signed deliveries
//
// Each event is POSTed as JSON to TICKETBRIDGE_WEBHOOK_URL:
//
//	ticket.created   a guest request is mirrored for the first time
//	message.added    a message of its thread (from the guest, staff, the AI concierge or the platform)
//	status.changed   its status changed upstream
//	ticket.updated   its fields changed upstream (department, description, due date,
//	                 rating, console comment), with their previous values; sent only
//	                 when TICKETBRIDGE_WEBHOOK_EVENTS lists it
//	ping             sent by Check (`ticketbridge check`) only
//
// with these headers:
//
//	X-Ticketbridge-Timestamp: <unix seconds of this attempt>
//	X-Ticketbridge-Signature: sha256=<hex HMAC-SHA256 under the secret of "<timestamp>.<raw body>">
//	X-Ticketbridge-Delivery:  <UUID, the same on every retry of one event>
//	X-Ticketbridge-Event:     <the event type>
//
// The body's "id" equals X-Ticketbridge-Delivery. A receiver verifies the
// signature (see [Verify]), refuses timestamps older than a few minutes (a
// replayed delivery), and keeps the delivery ids it processed so that a
// repeat is acknowledged without being processed twice. The JSON Schema of
// every event, with examples, is in docs/webhook of the repository.
//
// Delivery ids are UUIDv5 over the event's identity (the ticket; the ticket
// and upstream message; the ticket, the ordinal of the status change and
// the status), so they are the same on every retry, after a restart, and
// even after the webhook directory is lost.
//
// A delivery the receiver does not answer with 2xx is retried with the
// daemon's shared backoff ([adapters.HTTPClient]); when it still fails, the
// call returns a temporary error and the engine repeats the whole call on a
// later cycle. Nothing is dropped and nothing is recorded as delivered
// before a 2xx.
//
// # In: the inbound endpoint
//
// The adapter serves POST /events on TICKETBRIDGE_WEBHOOK_LISTEN (default
// 127.0.0.1:9465; "off" serves nothing). The receiver posts an
// [InboundEvent] (a reply, a note or a status change, with its own event
// id) signed the same way under the same secret. Answers:
//
//	200  stored (or a repeat of an id already stored: "duplicate": true)
//	400  the body is not a valid event; "field" names the field at fault
//	401  signature missing or wrong, or timestamp outside the tolerance
//	404  ticket_id names no ticket this daemon delivered
//	409  the event id was used before for a different event
//	413  body over 1 MiB
//	422  status is not mapped to an upstream status
//	500  the event could not be stored; post it again
//
// An event is written to disk (and synced) before it is answered 200, so
// nothing acknowledged is lost. Changes reports the stored events in order.
// The cursor is the last sequence number reported, and it cannot skip an
// event: a number is taken under the directory's lock when the event is
// stored, and Changes reads the directory after the numbers it holds, so
// no event becomes visible behind one already reported, even with two
// instances on one directory (TestInboundConcurrentInstances).
//
// # The webhook directory
//
// The receiver holds no state the bridge can query, so the adapter keeps a
// small record in TICKETBRIDGE_WEBHOOK_DIR: per ticket what was delivered
// and acknowledged (which makes Lookup work after the bridge's state file is
// lost) and what MarkSent recorded, and every inbound event. Losing this
// directory as well means that tickets and messages are delivered again
// with the same delivery ids, which the receiver recognises, and that the
// cursor of inbound events starts over: stored events are kept by id, so a
// receiver that posts an event again is served as before.
//
// It is not a receiver: package receiver in this directory is a reference
// receiver for tests and local development, and cmd/webhook-receiver runs it.
// It does not queue deliveries of its own (the engine's cycle is the queue)
// and never talks to the Guest Requests API.
package webhook
