package sync

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/state"
)

// heldRetry is how often a change the helpdesk holds (adapters.HeldError)
// is tried again, at most.
const heldRetry = 5 * time.Minute

// refreshBatch is how many refreshed tickets share one state transaction.
const refreshBatch = 100

// refreshResult is what refreshing one ticket did, to be stored.
type refreshResult struct {
	// panic is the read's panic, carried to the cycle's goroutine (see
	// carryPanic).
	panic *CyclePanic
	// orig is the record the read began from, t the one to store.
	orig      state.Ticket
	t         state.Ticket
	seed      *adoption                    // Lookup found the ticket: what it holds
	mirrored  []adapters.Appended          // messages now held by the helpdesk
	info      map[string]state.MessageInfo // what state keeps for staff of each message appended, by upstream id
	supersede []state.Entry                // pending status entries a newer upstream change overrode
	supersBy  guestapi.Status

	read, imported, created, adopted, statusDown bool
	appended                                     int   // messages newly written to the helpdesk
	unsignalled                                  bool  // the read found a change no list could show
	limited                                      error // the read was refused with a 429: the ticket is still due
	notFound                                     error // the read was answered 404: settled once every read is in (settleMissing)
	notOurs                                      *state.NotOurs
	fields                                       adapters.FieldSet   // the fields Update carried (see fields.go)
	wait                                         *adapters.WaitError // the field update waits for the helpdesk's budget

	// What a reconcile did (see reconcile.go): its outcome ("" when the
	// ticket was not reconciled), whether it carried the status up, the
	// messages it appended that state took for mirrored, the entries to
	// journal and the conflict's note.
	reconciled      string
	recUp           bool
	recAppended     int
	journal         []state.Entry
	conflictNote    []adapters.Message
	reconciledTouch bool
	// recDeferred: the reconcile left the status to a helpdesk status
	// change waiting in the journal (see applyMerge); a reconcile asked
	// for the next cycle (ReconcileSoon) is then asked for again, to
	// compare the sides once that change has crossed.
	recDeferred bool

	// cause is why the ticket was read, audit what its read carried to
	// the helpdesk: the trail's entries, stored with the result (see
	// audit.go).
	cause string
	audit []state.Audit
}

// refresh reads every due ticket, a pool at a time (see readAll), and
// stores the results in batches.
func (c *cycle) refresh() {
	e := c.e
	pending := map[string][]state.Entry{}
	tracked, entries, err := c.readRefreshState()
	if err != nil {
		c.stop(fmt.Errorf("read state: %w", err))
		return
	}
	release, wait := c.importGate(tracked)
	if wait {
		// While it waits, the cycle holds nothing of its reads of state:
		// 2,000 hotels starting together held about 100 KB each. They
		// are read again once there is room.
		tracked, entries, c.ws = nil, nil, nil
		var ok bool
		if release, ok = c.waitForImport(); !ok {
			return
		}
		if tracked, entries, err = c.readRefreshState(); err != nil {
			release()
			c.stop(fmt.Errorf("read state: %w", err))
			return
		}
	}
	defer release()
	for _, p := range entries {
		pending[p.TicketID] = append(pending[p.TicketID], p)
	}
	waiting := map[string]bool{} // tickets with a status change waiting to go up
	for id, ps := range pending {
		for _, p := range ps {
			if p.Kind == state.KindStatus {
				waiting[id] = true
			}
		}
	}
	recon := pickReconciles(tracked, e.pol, c.now, e.reconcileBudget())
	due := planReads(tracked, waiting, recon, e.pol, c.now)
	toImport := 0
	for _, t := range due {
		if t.Ref == "" {
			toImport++
		}
	}

	if err := c.readKnown(due); err != nil {
		c.stop(fmt.Errorf("read state: %w", err))
		return
	}
	results := make(chan refreshResult)
	e.workers.Go(func() {
		c.readAll(due, func(t state.Ticket) refreshResult { return c.refreshTicket(t, pending[t.ID], recon[t.ID]) }, results)
	})
	var batch []refreshResult
	imported := 0
	progressEvery := max(10, toImport/10)
	var unsignalled []string
	var missing []refreshResult // reads answered 404, settled once all are in
	var panicked *CyclePanic
	defer func() {
		if panicked != nil {
			panic(panicked) // once every read ended
		}
	}()
	for r := range results {
		if r.panic != nil || panicked != nil {
			panicked = cmp.Or(panicked, r.panic)
			continue
		}
		c.count(func(rep *Report) {
			if r.read {
				rep.Refreshed++
			}
			if r.created {
				rep.Created++
			}
			if r.adopted {
				rep.Adopted++
			}
			if r.statusDown {
				rep.StatusDown++
			}
			if r.unsignalled {
				rep.Unsignalled++
			}
			if r.fields != 0 {
				rep.FieldsUpdated++
			}
			rep.Mirrored += r.appended
			rep.countReconcile(r)
			rep.Skipped += len(r.supersede)
			if r.created || r.statusDown || r.appended > 0 || r.reconciledTouch || r.fields != 0 {
				rep.touch(r.t.ID)
			}
		})
		if r.unsignalled {
			unsignalled = append(unsignalled, r.t.ID)
		}
		if r.imported {
			imported++
			if toImport >= 20 && (imported%progressEvery == 0 || imported == toImport) {
				e.log.LogAttrs(c.ctx, slog.LevelInfo, fmt.Sprintf("imported %d/%d tickets", imported, toImport), slog.String("op", "import"))
			}
		}
		if r.limited != nil {
			c.unread(r.t.ID) // nothing changed: the ticket stays due
			continue
		}
		if r.notFound != nil {
			missing = append(missing, r)
			continue
		}
		if quietRead(r) {
			e.deferRead(r) // stored with the cycle record: see deferred.go
			continue
		}
		batch = append(batch, r)
		if len(batch) >= refreshBatch {
			c.flush(batch)
			batch = nil
		}
	}
	if panicked == nil {
		batch = append(batch, c.settleMissing(tracked, missing)...)
	}
	c.flush(batch)
	if len(unsignalled) > 0 && !c.storeBroken {
		c.noteUnsignalled(unsignalled)
	}
}

// readRefreshState returns the tracked tickets and the pending journal
// entries: those of the working set while it is fresh, else read again.
func (c *cycle) readRefreshState() (tracked []state.Ticket, pending []state.Entry, err error) {
	if ws, ok := c.fresh(); ok {
		return ws.tickets, ws.pending, nil
	}
	err = c.e.st.View(c.ctx, func(tx *state.Tx) error {
		if err := tx.ForEachTicket(func(t state.Ticket) error {
			tracked = append(tracked, t)
			return nil
		}); err != nil && !errors.Is(err, state.ErrCorrupt) {
			return err
		}
		var err error
		pending, err = tx.PendingJournal()
		if err != nil && !errors.Is(err, state.ErrCorrupt) {
			return err
		}
		return nil
	})
	c.e.overlay(tracked)
	return tracked, pending, err
}

// knownMax bounds how many tickets' message ids readKnown reads at once:
// the reads after them read their own, one transaction each.
const knownMax = 1000

// readKnown reads, in one read of state (one round trip on PostgreSQL),
// the message ids state records for the first knownMax tickets of due
// that the helpdesk holds: what helpdeskTicket needs of each, which was a
// transaction per ticket (three round trips on PostgreSQL, for every
// ticket's full read). Refresh is the only phase that writes them before
// send, and a cycle reads each ticket once, so what is read here stays
// true until the ticket's own read.
func (c *cycle) readKnown(due []state.Ticket) error {
	var ids []string
	for _, t := range due {
		if t.Ref != "" && len(ids) < knownMax {
			ids = append(ids, t.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	got, err := c.e.st.MessageIDs(c.ctx, ids)
	if err != nil {
		return err
	}
	c.known = make(map[string]map[string]bool, len(ids))
	for _, id := range ids {
		k := make(map[string]bool, len(got[id]))
		for _, m := range got[id] {
			k[m] = true
		}
		c.known[id] = k
	}
	return nil
}

// planReads returns the tracked tickets due at now, imports first, then
// the longest waiting. A ticket with a status change waiting to go up
// (waiting) is read every cycle it is not backing off: send lets the
// change go only after a read of the ticket in the same cycle, so that the
// newer of the two changes wins. A ticket to reconcile (recon) is read
// too. A ticket deleted on the platform is never read, nor one paused or
// unlinked (see commands.go); an unlinked one is picked once, for its
// note (see noteUnlinked). It does no I/O.
func planReads(tracked []state.Ticket, waiting, recon map[string]bool, pol policy, now time.Time) []state.Ticket {
	picked := pickTickets(tracked, func(t *state.Ticket) bool {
		if !t.Unlinked.IsZero() {
			return t.Paused.IsZero() && !t.UnlinkNoted && t.Ref != "" && (t.Attempts == 0 || pol.due(t, now))
		}
		return t.Deleted.IsZero() && t.Paused.IsZero() && (pol.due(t, now) || (waiting[t.ID] && t.Attempts == 0) || recon[t.ID])
	})
	slices.SortFunc(picked, func(a, b *state.Ticket) int {
		if (a.Ref == "") != (b.Ref == "") {
			if a.Ref == "" {
				return -1
			}
			return 1
		}
		if c := a.NextDue.Compare(b.NextDue); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if len(picked) == 0 {
		return nil
	}
	due := make([]state.Ticket, len(picked))
	for i, t := range picked {
		due[i] = *t
	}
	return due
}

// pickRoom is the room pickTickets makes at once: more than a hotel of
// 100 requests reads in a quiet cycle (five full reads at a 30 s schedule).
const pickRoom = 16

// pickTickets returns pointers to the tickets of tracked that pick
// accepts, in tracked's order. A cycle picks a few of a hotel's tickets to
// read or reconcile, and sorts them: appending the records themselves
// copied each several times as the slice grew, and again in every swap of
// the sort (planReads was the largest allocator of a quiet fleet). Room
// for pickRoom pointers is made at once.
func pickTickets(tracked []state.Ticket, pick func(*state.Ticket) bool) []*state.Ticket {
	picked := make([]*state.Ticket, 0, min(len(tracked), pickRoom))
	for i := range tracked {
		if pick(&tracked[i]) {
			picked = append(picked, &tracked[i])
		}
	}
	return picked
}

// noteUnsignalled records that the reads of ids found changes no list
// could show, and shortens the full-read interval (see FullRead).
func (c *cycle) noteUnsignalled(ids []string) {
	e := c.e
	slices.Sort(ids)
	var f FullRead
	var shortened bool
	err := e.st.Update(c.keep(), func(tx *state.Tx) error {
		var err error
		if f, _, err = readFullRead(tx, e.cfg.FullReadInterval, e.cfg.interval); err != nil {
			return err
		}
		shortened = f.note(len(ids), ids[0], c.now, e.cfg.interval)
		return putFullRead(tx, f)
	})
	if err != nil {
		c.stop(fmt.Errorf("store full-read interval: %w", err))
		return
	}
	e.pol.fullRead, e.pol.listsShowAll = f.Effective, false
	level, msg := slog.LevelDebug, "reads found changes that no list showed"
	if shortened {
		level, msg = slog.LevelWarn, "reads found changes that no list showed: the API did not move updated_at for them; "+f.String()
	}
	e.log.LogAttrs(c.ctx, level, fmt.Sprintf("%s (tickets %s)", msg, few(ids)), slog.String("op", "refresh"))
}

// flush stores a batch of results in one transaction. When a record is
// refused, the batch is stored result by result so that the others are
// kept. A helpdesk that groups what makes its writes durable (see
// adapters.Flusher) is flushed first: nothing is stored that a crash
// could still take from it.
func (c *cycle) flush(batch []refreshResult) {
	if len(batch) == 0 || c.storeBroken {
		return
	}
	e := c.e
	if f, ok := e.hd.(adapters.Flusher); ok {
		if err := f.Flush(c.keep()); err != nil {
			c.stop(fmt.Errorf("flush helpdesk: %w", err))
			return
		}
	}
	err := e.st.Update(c.keep(), func(tx *state.Tx) error {
		for _, r := range batch {
			if err := c.put(tx, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		return
	}
	if !errors.Is(err, state.ErrInvalid) {
		c.storeBroken = true
		c.stop(fmt.Errorf("store refreshed tickets: %w", err))
		return
	}
	for _, r := range batch {
		err := e.st.Update(c.keep(), func(tx *state.Tx) error { return c.put(tx, r) })
		if errors.Is(err, state.ErrInvalid) {
			c.failure(r.t.ID, "", "store ticket", err)
		} else if err != nil {
			c.storeBroken = true
			c.stop(fmt.Errorf("store refreshed tickets: %w", err))
			return
		}
	}
}

// put writes one result.
func (c *cycle) put(tx *state.Tx, r refreshResult) error {
	if r.notOurs != nil {
		return putNotOurs(tx, *r.notOurs)
	}
	if err := putTicket(tx, r.t); err != nil {
		return err
	}
	if r.adopted {
		// Found by Lookup after a 200: this hotel's after all.
		if err := tx.DeleteNotOurs(r.t.ID); err != nil {
			return err
		}
	}
	if r.seed != nil {
		if err := putSeeds(tx, c.e.hd.Name(), r.t.ID, r.seed.ref, r.seed.f, c.now); err != nil {
			return err
		}
	}
	for _, a := range r.mirrored {
		if err := tx.PutMirrored(r.t.ID, a.UpstreamID, a.HelpdeskID, c.now, r.info[a.UpstreamID]); err != nil {
			return err
		}
	}
	for _, en := range r.journal {
		if _, ok, err := tx.JournalEntry(en.EventID); err != nil || ok {
			if err != nil {
				return err
			}
			continue // journaled meanwhile (collect): it stays as it is
		}
		if _, err := tx.PutJournal(en); err != nil {
			return err
		}
	}
	for _, en := range r.supersede {
		if abandonedMeanwhile(tx, en.EventID) {
			continue
		}
		en.State = state.Failed
		en.LastError = fmt.Sprintf("superseded: the upstream status changed to %s after this helpdesk change", r.supersBy)
		if _, err := tx.PutJournal(en); err != nil {
			return err
		}
		if err := tx.AppendAudit(abandonAudit(en, c.e.now(), r.cause)); err != nil {
			return err
		}
	}
	for _, a := range r.audit {
		if err := tx.AppendAudit(a); err != nil {
			return err
		}
	}
	return nil
}

// refreshTicket reads one ticket and brings the helpdesk up to date with
// it, reconciling both sides when reconcile is set (see reconcile.go).
// pend holds the ticket's pending journal entries, oldest first.
func (c *cycle) refreshTicket(t state.Ticket, pend []state.Entry, reconcile bool) refreshResult {
	e := c.e
	r := refreshResult{orig: t, t: t, cause: readCause(t, reconcile)}
	if !t.Unlinked.IsZero() {
		return c.noteUnlinked(r)
	}
	th, err := e.api.GetTicket(c.ctx, t.ID)
	if err != nil {
		// A 429 whose wait puts the API off ended the cycle itself: it is
		// counted as one, not taken for an interruption.
		if errors.Is(err, guestapi.ErrRateLimited) && (!c.interrupted(err) || errors.Is(err, httpretry.ErrWaitTooLong)) {
			r.limited = err // still due: read in a later cycle, not backed off
			return r
		}
		if errors.Is(err, guestapi.ErrNotFound) && !c.interrupted(err) {
			c.unread(t.ID)
			r.notFound = err
			return r
		}
		return c.ticketError(r, "get ticket", err)
	}
	r.read = true
	d := th.Ticket
	if d.ID != t.ID {
		return c.ticketError(r, "get ticket", fmt.Errorf("the API answered with ticket %q", d.ID))
	}
	c.read200.Store(true)
	r.t.Missing = 0
	if lo, out := e.cfg.scope.leaves(d.Department, d.Origin); out {
		return c.leftOut(r, th, pend, reconcile, lo) // see rules.go
	}
	ref, known, err := c.helpdeskTicket(&r, d)
	if err != nil {
		return r
	}
	if r.t.Department == "" || r.t.Department != d.Department {
		r.t.Department = d.Department
	}
	if r.created {
		// Made with it: the first reconcile comes at the next slot.
		r.t.AgreedStatus, r.t.AgreedAt, r.t.ReconciledAt = string(d.Status), e.now(), c.now
	}
	var merge *statusMerge
	believed := known // what state says the helpdesk holds
	// Connected in this read (see connect.go): reconciled at the next
	// cycle, once what was set aside is stored.
	if reconcile && !r.created && !r.adopted && t.ConnectRef == "" {
		believed = maps.Clone(known) // reconcileFound makes known what the helpdesk holds
		f, ok, err := e.hd.Lookup(c.ctx, t.ID)
		if err != nil {
			return c.ticketError(r, "look up helpdesk ticket", err)
		}
		if ok {
			m, err := c.reconcileFound(&r, d, f, known)
			if err != nil {
				return c.ticketError(r, "read state", err)
			}
			merge = &m
		}
	}

	p := planThread(r.t, th, known, pend)
	for _, id := range p.refused {
		c.failure(t.ID, id, "refresh", fmt.Errorf("skip message: its id %q cannot be stored", id))
	}
	if merge != nil {
		c.applyMerge(&r, &p, *merge, pend)
	}
	if len(p.append) > 0 {
		app, err := e.hd.Append(c.ctx, ref, p.append)
		c.observeToHelpdesk(t, p.append, app)
		c.auditAppended(&r, app, err)
		r.info = make(map[string]state.MessageInfo, len(p.append))
		for _, m := range p.append {
			r.info[m.UpstreamID] = messageInfo(m)
		}
		noteWriters(&r.t, p.append, app)
		for _, a := range app {
			if validID(a.UpstreamID) {
				r.mirrored = append(r.mirrored, a)
				if !a.Existed {
					r.appended++
					if believed[a.UpstreamID] {
						r.recAppended++
					}
				}
			}
		}
		if err != nil {
			return c.ticketError(unknownOutcome(r, err), "append messages", err)
		}
	}
	if len(r.conflictNote) > 0 {
		if _, err := e.hd.Append(c.ctx, ref, r.conflictNote); err != nil {
			c.auditFailed(&r, "conflict note", err)
			return c.ticketError(unknownOutcome(r, err), "note a status conflict", err)
		}
		c.audit(&r, state.Audit{Kind: "conflict note", Outcome: state.AuditOK})
	}
	r.supersede, r.supersBy = p.supersede, d.Status
	if p.setStatus != "" {
		if err := e.hd.SetStatus(c.ctx, ref, p.setStatus); err != nil {
			c.audit(&r, state.Audit{Kind: "status", Status: string(p.setStatus), Outcome: state.AuditRetrying, Detail: err.Error()})
			return c.ticketError(unknownOutcome(r, err), "set helpdesk status", err)
		}
		c.audit(&r, state.Audit{Kind: "status", Status: string(p.setStatus), Outcome: state.AuditOK})
		r.t.HelpdeskStatus, r.t.HelpdeskStatusAt = string(p.setStatus), c.now
		r.t.AgreedStatus, r.t.AgreedAt = string(p.setStatus), e.now() // both sides show it now
		r.statusDown = true
	}
	if !c.carryFields(&r, ref, d) {
		return r
	}
	if merge != nil {
		r.t.ReconciledAt, r.t.LastReconcile = c.now, r.reconciled
		r.t.ReconcileSoon = r.t.ReconcileSoon && r.recDeferred
	}
	r.t.UpstreamStatus = string(d.Status)
	r.t.UpstreamUpdatedAt = d.UpdatedAt
	r.unsignalled = p.unsignalled
	e.pol.afterRead(&r.t, c.now, p.active)
	c.afterFields(&r)
	c.afterPriority(&r)
	return r
}

// helpdeskTicket returns the helpdesk ticket of r's ticket and the upstream
// messages it already holds or that are the bridge's own. A ticket not yet
// in the helpdesk is looked up (state may have been lost) and else created.
// A failure is recorded on r, and returned.
func (c *cycle) helpdeskTicket(r *refreshResult, d guestapi.TicketDetail) (adapters.Ref, map[string]bool, error) {
	e := c.e
	ref := adapters.Ref(r.t.Ref)
	if r.t.ConnectRef != "" && ref != "" {
		if ref != adapters.Ref(r.t.ConnectRef) {
			r.t.Ref, ref = "", "" // connected to another ticket: adopted below
		} else if err := c.relink(r, d); err != nil { // see connect.go
			return "", nil, err
		}
	}
	if k, ok := c.known[r.t.ID]; ok && ref != "" {
		return ref, k, nil // read with the others' (readKnown); this read's own
	}
	known := map[string]bool{}
	if ref != "" {
		err := e.st.View(c.ctx, func(tx *state.Tx) error {
			m, err := tx.Mirrored(r.t.ID)
			if err != nil {
				return err
			}
			for id := range m {
				known[id] = true
			}
			o, err := tx.OwnMessages(r.t.ID)
			for id := range o {
				known[id] = true
			}
			return err
		})
		if err != nil {
			*r = c.ticketError(*r, "read state", err)
		}
		return ref, known, err
	}
	connecting := r.t.ConnectRef != "" // an operator's connect: see connect.go
	if connecting {
		if err := c.connect(r, d); err != nil {
			return "", nil, err
		}
	}
	f, ok, err := e.hd.Lookup(c.ctx, r.t.ID)
	if err == nil && connecting {
		err = c.connected(r, f, ok)
	}
	if err != nil {
		*r = c.ticketError(*r, "look up helpdesk ticket", err)
		return "", nil, err
	}
	if ok && f.Ref != "" {
		ref = f.Ref
		r.seed = &adoption{found: true, ref: f.Ref, f: f}
		r.adopted = true
		r.t.Ref = string(f.Ref)
		if !connecting { // found after a state loss
			c.audit(r, state.Audit{Kind: "ticket", Outcome: state.AuditNothing, Detail: "the helpdesk had it already: found by its upstream id"})
		}
		for id := range f.Messages {
			known[id] = true
		}
		for _, id := range f.Sent {
			known[id] = true
		}
	} else {
		ref, err = e.hd.EnsureTicket(c.ctx, toAdapterTicket(d))
		if err == nil && ref == "" {
			err = errors.New("the adapter returned an empty reference")
		}
		if err != nil {
			c.auditFailed(r, "ticket", err)
			*r = c.ticketError(unknownOutcome(*r, err), "create helpdesk ticket", err)
			return "", nil, err
		}
		r.created = true
		r.t.Ref = string(ref)
		c.audit(r, state.Audit{Kind: "ticket", Outcome: state.AuditOK})
		r.t.HelpdeskStatus, r.t.HelpdeskStatusAt = string(d.Status), c.now
		e.log.LogAttrs(c.ctx, slog.LevelInfo, "created helpdesk ticket",
			slog.String("op", "import"), slog.String("ticket", r.t.ID), slog.String("ref", string(ref)))
	}
	r.t.Ref = string(ref)
	r.imported = true
	return ref, known, nil
}

// ticketError records err on the ticket of r and backs it off, unless the
// error stops the cycle or is only its end.
func (c *cycle) ticketError(r refreshResult, op string, err error) refreshResult {
	if c.apiFatal(err) || c.hdFatal(err) || c.interrupted(err) {
		return r
	}
	c.failure(r.t.ID, "", op, err)
	c.e.pol.afterError(&r.t, c.now, op+": "+err.Error())
	var held *adapters.HeldError
	switch {
	case errors.Is(err, adapters.ErrInvalid):
		// The helpdesk refuses the input itself: the adapter contract
		// promises no quick retry, so it waits the longest backoff.
		r.t.NextDue = c.now.Add(c.e.pol.quietMax)
	case errors.As(err, &held):
		// The helpdesk waits for the team (a field to fill in): try again
		// at a steady pace, so that the change goes through soon after.
		r.t.NextDue, r.t.DueReason = c.now.Add(min(c.e.pol.quietMax, max(c.e.pol.interval, heldRetry))), DueHeld
		c.count(func(rep *Report) { rep.Held++ })
	}
	c.unread(r.t.ID)
	return r
}

// unknownOutcome marks r's ticket for a reconcile in the next cycle when
// err leaves the outcome of a write unknown (anything but a refusal of
// the input).
func unknownOutcome(r refreshResult, err error) refreshResult {
	if !errors.Is(err, adapters.ErrInvalid) && !errors.Is(err, adapters.ErrNotFound) {
		r.t.ReconcileSoon = true
	}
	return r
}

// applyMerge carries out the reconcile's status merge m on the plan p:
// a status carried up keeps the helpdesk's status as it is, one carried
// down is set. While a helpdesk status change waits in the journal (pend),
// the change-driven path is under way and the status is left to it.
func (c *cycle) applyMerge(r *refreshResult, p *threadPlan, m statusMerge, pend []state.Entry) {
	for _, en := range pend {
		if en.Kind == state.KindStatus {
			r.reconciled, r.recDeferred = ReconcileInSync, true
			r.journal = slices.DeleteFunc(r.journal, func(en state.Entry) bool { return en.Kind == state.KindStatus })
			r.conflictNote = nil
			return
		}
	}
	r.reconciled, r.recUp = m.outcome, m.up != ""
	switch {
	case m.up != "":
		p.setStatus = ""
		p.active = true
	case m.down != "":
		p.setStatus, p.active = m.down, true
	}
	if m.agreed != "" {
		r.t.AgreedStatus, r.t.AgreedAt = string(m.agreed), c.e.now()
		if m.outcome == ReconcileAgreed {
			// The helpdesk shows it already: nothing to write.
			p.setStatus, r.t.HelpdeskStatus = "", string(m.agreed)
		}
	}
	if m.outcome != ReconcileInSync && m.outcome != ReconcileUnknown {
		r.t.LastActivity = c.now
		r.reconciledTouch = true
	}
}

// unread records that ticket id was due but not read in this cycle: its
// status changes wait (see sendTicket), for only a read says whether the
// upstream status changed since.
func (c *cycle) unread(id string) {
	c.mu.Lock()
	c.readFail[id] = true
	c.mu.Unlock()
}
