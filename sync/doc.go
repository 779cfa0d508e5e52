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
//  1. Discover and detect: the whole queue is listed (limit 200): one list
//     without a filter while the queue fits in one, else a list per
//     status, and a list per department of each status whose list is
//     full (for a closed status, only the departments of tickets not
//     retired). Tickets state does not hold are recorded as new when they are
//     in new or a TICKETBRIDGE_BACKFILL status, or were created since the
//     first start; a tracked ticket whose listed status or updated_at
//     differs from what its last read stored is due now. A few lists thus
//     show every change, at a cost that grows with N/200, not N. Absence
//     from a list never means closed or deleted. Lists that agreed with
//     state keep a digest each; when the next cycle's answers are byte for
//     byte the same and the state they are compared with is too, they
//     are not decoded (most of a quiet cycle's cost; see listmemo.go).
//     A department's list that still holds 200 is full ([FullList]): the
//     API has no paging, so its requests older than the 200th newest are
//     not discovered until newer ones leave the status. Every report
//     names the full lists, for status, check, the status page and
//     ticketbridge_full_lists.
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
// A tracked ticket is read when a list shows it changed, when the helpdesk
// reports an event on it, and, if it is open, at least every
// TICKETBRIDGE_FULL_READ_INTERVAL: the safety net, for the spec does not
// promise that a message moves updated_at. Each ticket's safety read falls
// at a slot its id's hash places in each interval, so the reads are spread
// evenly over the cycles. A read that finds a change no list could show (a
// new message or status while updated_at stayed) is counted ([FullRead]):
// the interval is halved, down to a quarter, and recent activity is polled
// too (an active ticket is read every cycle, then less and less often up to
// TICKETBRIDGE_QUIET_MAX). A closed ticket (done, completed, confirmed,
// cancelled) is read every TICKETBRIDGE_CLOSED_INTERVAL for
// TICKETBRIDGE_CLOSED_GRACE after it closed and is then retired: read every
// TICKETBRIDGE_RETIRED_INTERVAL, or at once when a list shows it changed or
// the helpdesk reports an event on it. A failing ticket backs off.
//
// A read answered with 429 is not a failure: the reads in flight are
// halved, the next waits the Retry-After, and the tickets not read stay due.
//
// No call waits longer than the schedule's interval (at most five
// minutes) to be repeated. A side that asks for longer (a Retry-After of
// an hour from a proxy, a 429 longer than the interval) is put off
// ([PutOff]): the cycle stops calling it and ends with the outcome
// put_off, and until the wait has passed the cycles skip the phases that
// call it (discover, refresh and send for the API; collect, refresh and
// send for the helpdesk). A cycle that runs past TICKETBRIDGE_CYCLE_MAX
// ([Scheduler.Deadline]) stops where it is with [ErrCycleDeadline]; the
// next one goes on.
//
// # Errors that stop a cycle
//
// A 401 from the API stops every write of the cycle and fails it with
// [ErrKeyRefused]; a 403 does the same with [ErrMissingRight] naming the
// right the key lacks. A helpdesk that refuses the bridge's credentials
// (adapters.ErrAuth) stops it too, with [ErrHelpdeskRefused], after its
// first refusal rather than one failure per ticket; no ticket is backed off
// for it. The work completed before is stored. These errors say what is
// wrong; [Deps.Advise] adds what to do about it (the daemon's table of
// fixes) to the cycle's error and report.
//
// # Dry run
//
// [NewDryRunAPI] and [NewDryRunHelpdesk] wrap the two sides so that reads
// pass through and every write is printed as a plan line and answered with a
// synthetic result; [DryRun] runs a cycle so, against a scratch copy of the
// state that the caller makes (cmd), and the cycle then writes nothing
// anywhere.
package sync
