package sync

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
)

// discover lists the queue and records what is new: unknown tickets (to be
// imported by refresh) and known ones a list shows updated (due now).
func (c *cycle) discover() {
	e := c.e
	var (
		tracked     = map[string]state.Ticket{}
		importSince time.Time
		lastSweep   time.Time
		first       bool
	)
	err := e.st.View(func(tx *state.Tx) error {
		if err := tx.ForEachTicket(func(t state.Ticket) error {
			tracked[t.ID] = t
			return nil
		}); err != nil {
			if !errors.Is(err, state.ErrCorrupt) {
				return err
			}
			e.log.LogAttrs(c.ctx, slog.LevelError, "skipping unreadable ticket records: "+err.Error(), slog.String("op", "discover"))
		}
		v, ok, err := tx.Meta(MetaImportSince)
		if err != nil {
			return err
		}
		first = !ok
		if ok {
			importSince, _ = time.Parse(time.RFC3339Nano, v)
		}
		if v, ok, err := tx.Meta(MetaLastSweep); err != nil {
			return err
		} else if ok {
			lastSweep, _ = time.Parse(time.RFC3339Nano, v)
		}
		return nil
	})
	if err != nil {
		c.stop(fmt.Errorf("read state: %w", err))
		return
	}

	depts := map[string]bool{}
	for _, t := range tracked {
		if t.Department != "" {
			depts[t.Department] = true
		}
	}
	statuses := []guestapi.Status{guestapi.StatusNew}
	if first {
		statuses = append(statuses, e.cfg.backfill...)
		importSince = c.now
	}
	sweep := !first && c.now.Sub(lastSweep) >= e.cfg.SweepInterval

	listed := map[string]guestapi.Ticket{}
	listOK := true
	for _, s := range statuses {
		if !c.list(s, depts, listed) {
			listOK = false
		}
	}
	if sweep {
		if c.list("", depts, listed) {
			c.count(func(r *Report) { r.Sweep = true })
		} else {
			sweep = false
		}
	}
	if c.stopped() {
		return
	}

	importable := map[guestapi.Status]bool{guestapi.StatusNew: true}
	for _, s := range e.cfg.backfill {
		importable[s] = true
	}
	// A ticket created since the first start may have left new before a
	// poll saw it; one created before is imported only in new or a
	// backfill status. The slack covers clocks that differ a little.
	horizon := importSince.Add(-2 * e.cfg.interval)

	var puts []state.Ticket
	newCount := 0
	ids := make([]string, 0, len(listed))
	for id := range listed {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		lt := listed[id]
		if t, ok := tracked[id]; ok {
			if lt.UpdatedAt.After(t.UpstreamUpdatedAt) && !e.pol.due(&t, c.now) {
				before := t
				e.pol.wake(&t, c.now, DueUpdated)
				if t.NextDue != before.NextDue || t.Retired != before.Retired {
					puts = append(puts, t)
				}
			}
			continue
		}
		if !importable[lt.Status] && lt.CreatedAt.Before(horizon) {
			continue
		}
		if !validID(id) {
			c.failure(id, "", "discover", fmt.Errorf("ticket id %q cannot be stored: want a UUID", id))
			continue
		}
		puts = append(puts, state.Ticket{ID: id, Department: lt.Department, NextDue: c.now, DueReason: DueNew})
		newCount++
	}
	if len(puts) == 0 && !first && !sweep {
		return
	}
	err = e.st.Update(func(tx *state.Tx) error {
		for _, t := range puts {
			if err := tx.PutTicket(t); err != nil {
				return err
			}
		}
		if first && listOK {
			if err := tx.SetMeta(MetaImportSince, importSince.UTC().Format(time.RFC3339Nano)); err != nil {
				return err
			}
		}
		if (first && listOK) || sweep {
			return tx.SetMeta(MetaLastSweep, c.now.UTC().Format(time.RFC3339Nano))
		}
		return nil
	})
	if err != nil {
		c.stop(fmt.Errorf("store discovered tickets: %w", err))
		return
	}
	c.count(func(r *Report) { r.Discovered += newCount })
	if newCount > 0 {
		e.log.LogAttrs(c.ctx, slog.LevelInfo, fmt.Sprintf("discovered %d new tickets", newCount), slog.String("op", "discover"))
	}
}

// list lists tickets of status s ("" for every status) into out. A list
// that reaches the limit is asked again per department (those of the list
// and those known in state), and a department list of every status that
// still reaches it per status; what still reaches it is logged as a
// warning. It reports whether every request succeeded.
func (c *cycle) list(s guestapi.Status, known map[string]bool, out map[string]guestapi.Ticket) bool {
	ts, ok := c.listOnce(guestapi.ListOptions{Status: s, Limit: ListLimit})
	if !ok {
		return false
	}
	add(out, ts)
	if len(ts) < ListLimit {
		return true
	}
	depts := map[string]bool{}
	for d := range known {
		depts[d] = true
	}
	for _, t := range ts {
		if t.Department != "" {
			depts[t.Department] = true
		}
	}
	names := make([]string, 0, len(depts))
	for d := range depts {
		names = append(names, d)
	}
	slices.Sort(names)
	all := true
	for _, d := range names {
		dts, ok := c.listOnce(guestapi.ListOptions{Status: s, Department: d, Limit: ListLimit})
		if !ok {
			all = false
			continue
		}
		add(out, dts)
		if len(dts) < ListLimit {
			continue
		}
		if s != "" {
			c.warnFull(s, d)
			continue
		}
		for _, st := range guestapi.Statuses() {
			sts, ok := c.listOnce(guestapi.ListOptions{Status: st, Department: d, Limit: ListLimit})
			if !ok {
				all = false
				continue
			}
			add(out, sts)
			if len(sts) >= ListLimit {
				c.warnFull(st, d)
			}
		}
	}
	return all
}

func (c *cycle) warnFull(s guestapi.Status, dept string) {
	c.e.log.LogAttrs(c.ctx, slog.LevelWarn,
		fmt.Sprintf("the list of department %q in status %s still holds %d tickets, the API's limit: older ones may be missed until they change", dept, s, ListLimit),
		slog.String("op", "discover"))
}

// listOnce makes one list request; a failure is recorded (or stops the
// cycle) and reported as false.
func (c *cycle) listOnce(opt guestapi.ListOptions) ([]guestapi.Ticket, bool) {
	if c.stopped() {
		return nil, false
	}
	ts, err := c.e.api.ListTickets(c.ctx, opt)
	if err != nil {
		if c.apiFatal(err) || c.interrupted(err) {
			return nil, false
		}
		c.failure("", "", "list tickets", err)
		return nil, false
	}
	return ts, true
}

func add(out map[string]guestapi.Ticket, ts []guestapi.Ticket) {
	for _, t := range ts {
		out[t.ID] = t
	}
}
