// Package sync is ticketbridge's engine: it keeps a hotel's guest requests
// (tickets with message threads, read from the Guest Requests API v1)
// mirrored in a helpdesk and carries the support team's replies, notes and
// status changes back upstream. It also holds the scheduler that runs its
// cycles and the recorders of a dry run.
//
// It is not the API client (package guestapi), not a helpdesk adapter
// (package adapters and its children) and not the store (package state): it
// decides what to poll, what to copy and what to send, and tells the store
// what to remember. It opens no files and reads no environment itself; cmd
// builds a [Config] and [Deps] and calls [New].
//
// # One cycle
//
// [Engine.RunCycle] runs one cycle synchronously, in four phases:
//
//  1. Discover: GET /tickets?status=new (limit 200; a full list is asked
//     again per department). Tickets state does not hold are recorded as
//     new; a list item with a newer updated_at makes its ticket due. On the
//     first start the statuses of TICKETBRIDGE_BACKFILL are listed too, and
//     every TICKETBRIDGE_SWEEP_INTERVAL the whole queue is listed without a
//     status filter to catch tickets that left new between two polls (only
//     those created since the first start, or in new or a backfill status,
//     are imported). Absence from a list never means closed or deleted.
//  2. Collect: the adapter's Changes since its stored cursor. Each event is
//     journaled with its Idempotency-Key ([IdempotencyKey]); the entries and
//     the new cursor are stored in one transaction, so the cursor moves only
//     past events stored. An event on a ticket state does not hold (a lost
//     state file) adopts the ticket first through Helpdesk.Lookup.
//  3. Refresh: each due ticket is read with GET /tickets/{id}. A ticket not
//     yet in the helpdesk is looked up (state may have been lost) and else
//     created; messages neither mirrored nor the bridge's own posts are
//     appended in order, in one Append; a changed upstream status is set in
//     the helpdesk. When both sides changed the status, the newer change
//     wins (upstream updated_at against the helpdesk event's time).
//  4. Send: pending journal entries, oldest first and in order per ticket,
//     are posted (replies visible to the guest, notes internal) or set
//     (status). A temporary failure keeps the entry pending with a backoff
//     and holds the ticket's later entries behind it; a permanent one marks
//     it failed with the reason. The returned message_id is recorded as the
//     ticket's own post, so the next refresh does not mirror it back, and
//     Helpdesk.MarkSent records the delivery in the helpdesk.
//
// Tickets are worked on by a bounded pool ([Config.Concurrency]); one
// ticket's failure is recorded on it and backed off while the others go on.
// State writes are grouped: one transaction after discovery, one for the
// journal, one per batch of refreshed tickets, one for the sends, one for
// MarkSent and one for the cycle's report.
//
// # Due-ness
//
// A ticket with activity (a new message, a status change, a helpdesk event)
// is read on the next cycle; a quiet one waits twice the schedule interval,
// then four times, up to TICKETBRIDGE_QUIET_MAX; a closed one (done,
// completed, confirmed, cancelled) is read every TICKETBRIDGE_CLOSED_INTERVAL
// for TICKETBRIDGE_CLOSED_GRACE after it closed and is then retired, until a
// list shows it updated or the helpdesk reports an event on it. A failing
// ticket backs off like a quiet one.
//
// # Errors that stop a cycle
//
// A 401 from the API stops every write of the cycle and fails it with
// [ErrKeyRefused]; a 403 does the same with [ErrMissingRight] naming the
// right the key lacks. The work completed before is stored.
//
// # Dry run
//
// [NewDryRunAPI] and [NewDryRunHelpdesk] wrap the two sides so that reads
// pass through and every write is printed as a plan line and answered with a
// synthetic result; [DryRun] runs a cycle so, against a scratch copy of the
// state that the caller makes (cmd), and the cycle then writes nothing
// anywhere.
package sync
