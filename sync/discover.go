package sync

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
)

// discover lists the whole queue (see listQueue) and plans from what it
// shows (see planDiscover): tickets to import, tracked ones a list shows
// changed, open ones whose next read lies beyond their full-read slot. The
// plan is stored in one transaction.
func (c *cycle) discover() {
	e := c.e
	in, err := c.readDiscoverState()
	if err != nil {
		c.stop(fmt.Errorf("read state: %w", err))
		return
	}
	e.pol.fullRead, e.pol.listsShowAll = in.fullRead.Effective, in.fullRead.Unsignalled == 0
	if e.rawLists {
		in.key = listKey(in)
		in.unchanged = c.replayLists(in)
	}
	if in.unchanged {
		// The lists are those that agreed with this state: planned from
		// state alone (no listed ticket, no list whole), they plan what
		// decoding them would.
		in.listOK = true
		e.sameLists++
	} else {
		in.listed, in.cover, in.listOK = c.listQueue(in)
		c.endLists()
		if in.listOK {
			// Lists the same as the last cycle's (unchanged) are as
			// full as they were; lists some of which failed say
			// nothing new.
			e.fullLists = c.full
			c.count(func(r *Report) { r.FullLists = c.full })
		}
	}
	if c.stopped() {
		return
	}
	p := e.planDiscover(in)
	if in.listOK && !in.unchanged {
		// As full lists are: the same lists leave out what they did.
		e.leftOut = p.leftOut
		c.count(func(r *Report) { r.LeftOut = p.leftOut })
	}
	if len(p.imports) >= importGateMin && !c.takeImportRoom() {
		// Not held while the cycle waits: 2,000 hotels starting
		// together held about 60 KB each in their lists and plans.
		n := len(p.imports)
		p, in.listed = discoverPlan{}, nil
		if !c.waitImportRoom(n, &in) {
			return
		}
		p = e.planDiscover(in)
	}
	c.keepLists(in, p)
	c.dues = p.dues
	for _, id := range p.refused {
		c.failure(id, "", "discover", fmt.Errorf("ticket id %q cannot be stored: want a UUID", id))
	}
	if len(p.puts) > 0 || !p.importSince.IsZero() || p.fullRead != nil {
		err = e.st.Update(c.keep(), func(tx *state.Tx) error {
			for _, t := range p.puts {
				if err := putTicket(tx, t); err != nil {
					return err
				}
			}
			if !p.importSince.IsZero() {
				if err := tx.SetMeta(MetaImportSince, p.importSince.UTC().Format(time.RFC3339Nano)); err != nil {
					return err
				}
			}
			if p.fullRead != nil {
				return putFullRead(tx, *p.fullRead)
			}
			return nil
		})
		if err != nil {
			c.stop(fmt.Errorf("store discovered tickets: %w", err))
			return
		}
	}
	// Counted from copies: a closure over p would keep the plan on the
	// stack, and live, for the whole of discover.
	listed, imported, woken := len(in.listed), len(p.imports), len(p.woken)
	if in.unchanged {
		listed = e.lists.listed
	}
	c.count(func(r *Report) {
		r.Discovered += imported
		r.Listed += listed
		r.Signalled += woken
	})
	if len(p.imports) > 0 {
		e.log.LogAttrs(c.ctx, slog.LevelInfo, fmt.Sprintf("discovered %d new tickets: %s", len(p.imports), few(p.imports)), slog.String("op", "discover"))
	}
	if len(p.woken) > 0 {
		e.log.LogAttrs(c.ctx, slog.LevelDebug, fmt.Sprintf("lists show %d tickets changed: %s", len(p.woken), few(p.woken)), slog.String("op", "discover"))
	}
}

// discoverInput is what discover reads before it plans.
type discoverInput struct {
	now         time.Time
	tracked     []state.Ticket // in id order
	first       bool           // no cycle has listed the queue yet
	importSince time.Time      // when the first cycle started
	fullRead    FullRead       // the stored full-read interval, already reset to the configured one if that changed
	fullReadNew bool           // fullRead differs from what is stored

	listed []guestapi.Ticket // every ticket the lists of this cycle showed, in id order (see byID)
	cover  coverage          // which lists were whole
	listOK bool              // every list request succeeded

	key       uint64 // listKey of this state (with an API of raw lists)
	unchanged bool   // the lists are those of the last cycle, which agreed with this state: listed is empty
}

// coverage says which lists of a cycle were whole (below the limit): a
// ticket of that status and department missing from them has left it.
type coverage struct {
	all    bool                     // one list held the whole queue
	status map[guestapi.Status]bool // the status's list was whole
	dept   map[[2]string]bool       // the list of (status, department) was whole
}

// whole reports whether the lists showed every ticket of status s in
// department dept.
func (cv coverage) whole(s guestapi.Status, dept string) bool {
	return cv.all || cv.status[s] || cv.dept[[2]string{string(s), dept}]
}

// departments returns the departments of the tracked tickets; live, those
// of the tracked tickets not retired.
func (in discoverInput) departments(live bool) map[string]bool {
	depts := map[string]bool{}
	for _, t := range in.tracked {
		if t.Department != "" && !(live && t.Retired) {
			depts[t.Department] = true
		}
	}
	return depts
}

// discoverPlan is what discover stores.
type discoverPlan struct {
	puts        []state.Ticket // new and changed ticket records
	imports     []string       // ids of the tickets to import, sorted
	woken       []string       // tracked tickets a list showed changed, sorted
	refused     []string       // listed ids state cannot store
	importSince time.Time      // to record as MetaImportSince; zero: leave it
	fullRead    *FullRead      // to record; nil: leave it
	// dues are the listed due dates the reads of the cycle need (see
	// fields.go), by ticket id; nil when none.
	dues map[string]time.Time
	// agree says that the lists agreed with state: every listed ticket
	// tracked and as its record has it (or not read yet), or untracked
	// and too old to import or left out by the rules; no tracked ticket
	// missing from a whole list.
	agree bool
	// leftOut counts the listed tickets the rules leave out (see
	// rules.go).
	leftOut []LeftOut
}

func (c *cycle) readDiscoverState() (discoverInput, error) {
	e := c.e
	in := discoverInput{now: c.now}
	// A slice of an earlier cycle (see recycle), or one sized as the last
	// cycle found them: a quiet cycle grows nothing.
	tickets := *ticketSlices.Get().(*[]state.Ticket)
	if cap(tickets) < e.tracked {
		tickets = make([]state.Ticket, 0, e.tracked)
	}
	ws := &workingSet{commits: e.st.Commits(), tickets: tickets[:0]}
	err := e.st.ViewWorkingSet(c.ctx, func(tx *state.Tx) error {
		if err := tx.ForEachTicket(func(t state.Ticket) error {
			ws.tickets = append(ws.tickets, t)
			return nil
		}); err != nil {
			if !errors.Is(err, state.ErrCorrupt) {
				return err
			}
			e.log.LogAttrs(c.ctx, slog.LevelError, "skipping unreadable ticket records", slog.Any("error", err), slog.String("op", "discover"))
		}
		v, ok, err := tx.Meta(MetaImportSince)
		if err != nil {
			return err
		}
		in.first = !ok
		if ok {
			if in.importSince, err = time.Parse(time.RFC3339Nano, v); err != nil {
				return fmt.Errorf("%w: meta %s=%q is not a time: %w", state.ErrCorrupt, MetaImportSince, v, err)
			}
		}
		if in.fullRead, in.fullReadNew, err = readFullRead(tx, e.cfg.FullReadInterval, e.cfg.interval); err != nil {
			return err
		}
		return ws.read(tx, e.hd.Name())
	})
	if err != nil {
		return in, err
	}
	e.overlay(ws.tickets)
	// The working set's own slice, searched by id: a copy of every
	// ticket into a map was a third of what a quiet cycle allocated.
	in.tracked = ws.tickets
	e.tracked, c.ws = len(ws.tickets), ws
	return in, nil
}

// planDiscover decides, from the state read and the lists of this cycle,
// what discover stores. It does no I/O.
//
//   - A listed ticket state does not hold is imported when its status is
//     new or a backfill status, or when it was created since the first
//     cycle (it may have left new before a list showed it), unless the
//     rules leave it out (see rules.go): then it is counted, and imported
//     once a list shows it within them.
//   - A tracked ticket whose listed status or updated_at differs from what
//     its last read stored is due now (DueUpdated); a retired one comes
//     back. So is one whose listed fields differ from those last carried
//     to a helpdesk that keeps them (see fields.go). Absence from the
//     lists means nothing.
//   - An open ticket whose next read lies beyond its next full-read slot
//     (the interval was shortened, or the record predates the slots) is
//     brought forward to the slot.
//   - A paused ticket is left as it is (see commands.go).
func (e *Engine) planDiscover(in discoverInput) discoverPlan {
	p := discoverPlan{agree: true}
	importSince := in.importSince
	if in.first {
		importSince = in.now
		if in.listOK {
			p.importSince = in.now
		}
	}
	if in.fullReadNew {
		fr := in.fullRead
		p.fullRead = &fr
	}
	importable := map[guestapi.Status]bool{guestapi.StatusNew: true}
	for _, s := range e.cfg.Backfill {
		importable[s] = true
	}
	// The slack covers clocks that differ a little.
	horizon := importSince.Add(-2 * e.cfg.interval)
	var left leftOutCounter
	scoped := e.cfg.scope.any()

	for _, lt := range in.listed {
		id := lt.ID
		t, ok := findTicket(in.tracked, id)
		if scoped && (ok || importable[lt.Status] || !lt.CreatedAt.Before(horizon)) {
			// Counted: a ticket the helpdesk holds, or one it would.
			// Read as any other, a tracked one is left out by refresh.
			if left.count(e.cfg.scope, lt.Department, lt.Origin, ok && t.Ref != "") && !ok {
				continue
			}
		}
		if ok && t.Halted() {
			continue // left as it is until resumed or connected (see commands.go)
		}
		if !ok {
			if !importable[lt.Status] && lt.CreatedAt.Before(horizon) {
				continue
			}
			p.agree = false
			if !validID(id) {
				p.refused = append(p.refused, id)
				continue
			}
			p.puts = append(p.puts, state.Ticket{ID: id, Department: lt.Department, NextDue: in.now, DueReason: DueNew})
			p.imports = append(p.imports, id)
			if e.up != nil {
				p.due(lt)
			}
			continue
		}
		unsure := t.Carried.Unsure
		if t.UpstreamStatus == "" || (string(lt.Status) == t.UpstreamStatus && lt.UpdatedAt.Equal(t.UpstreamUpdatedAt)) {
			// Not read yet (an import), or unchanged: but for its
			// fields, which only the helpdesk's Updater needs.
			if !e.planFields(&p, &t, lt, in.now) {
				continue
			}
		} else if e.up != nil {
			p.due(lt)
			if _, out := e.cfg.scope.leaves(lt.Department, lt.Origin); !out {
				markUnsure(&t, lt)
			}
		}
		p.agree = false
		before := t
		e.pol.wake(&t, in.now, DueUpdated)
		if !t.NextDue.Equal(before.NextDue) || t.DueReason != before.DueReason || t.Retired != before.Retired || t.Carried.Unsure != unsure {
			p.puts = append(p.puts, t)
			p.woken = append(p.woken, id)
		}
	}
	// An open ticket missing from a whole list of its status and
	// department has moved (closed, say, and older than the closed lists
	// show): it is read to see where it went. Absence says nothing more.
	var moved []string
	for _, t := range in.tracked {
		id := t.ID
		st := guestapi.Status(t.UpstreamStatus)
		if _, ok := findListed(in.listed, id); ok || t.Ref == "" || t.Retired || t.Halted() || st.Closed() || !in.cover.whole(st, t.Department) {
			continue
		}
		p.agree = false
		before := t
		e.pol.wake(&t, in.now, DueMoved)
		if !t.NextDue.Equal(before.NextDue) || t.DueReason != before.DueReason {
			p.puts = append(p.puts, t)
			moved = append(moved, id)
		}
	}
	slices.Sort(moved)
	p.woken = append(p.woken, moved...)
	woken := map[string]bool{}
	for _, id := range p.woken {
		woken[id] = true
	}
	var capped []state.Ticket
	for _, t := range in.tracked {
		if !woken[t.ID] && !t.Halted() && e.pol.capFull(&t, in.now) {
			capped = append(capped, t)
		}
	}
	slices.SortFunc(capped, func(a, b state.Ticket) int { return strings.Compare(a.ID, b.ID) })
	p.puts = append(p.puts, capped...)
	p.leftOut = left.list()
	return p
}

// listQueue lists every ticket of the queue the API shows: one request
// without a status filter while the whole queue fits in one list, else a
// list per status, and a list per department for a status whose list
// reaches the limit: for an open status every department known (a ticket
// of any department may move into it), for a closed one the departments of
// the tickets not retired (closed lists grow with time; a retired ticket of
// a department without others is still seen while it is among the newest
// of its status, and else at TICKETBRIDGE_RETIRED_INTERVAL), and those of
// the list for a status imported (TICKETBRIDGE_BACKFILL). What still
// reaches the limit is recorded in c.full and logged (see noteFull): the
// API has no paging, so requests older than the limit's newest are not
// discovered until newer ones move on; the full-read safety net reads
// only those already tracked. It reports whether every request
// succeeded.
func (c *cycle) listQueue(in discoverInput) ([]guestapi.Ticket, coverage, bool) {
	var out []guestapi.Ticket
	cv := coverage{status: map[guestapi.Status]bool{}, dept: map[[2]string]bool{}}
	if c.e.queueFits {
		ts, ok := c.listOnce(guestapi.ListOptions{Limit: ListLimit})
		if !ok {
			return nil, cv, false
		}
		if len(ts) < ListLimit {
			cv.all = true
			return byID(ts), cv, true
		}
		out = ts
	}
	all := true
	for _, s := range guestapi.Statuses() {
		if !c.listStatus(s, in, !s.Closed() || slices.Contains(c.e.cfg.Backfill, s), &out, cv) {
			all = false
		}
	}
	out = byID(out)
	c.e.queueFits = all && len(out) < ListLimit
	return out, cv, all
}

// listStatus appends the tickets of status s to out; a list that reaches
// the limit is asked again per department of the tracked tickets (those
// not retired, for a closed status), and with listed, of the list. It
// records in cv the lists that were whole, and reports whether every
// request succeeded.
func (c *cycle) listStatus(s guestapi.Status, in discoverInput, listed bool, out *[]guestapi.Ticket, cv coverage) bool {
	ts, ok := c.listOnce(guestapi.ListOptions{Status: s, Limit: ListLimit})
	if !ok {
		return false
	}
	*out = append(*out, ts...)
	if len(ts) < ListLimit {
		cv.status[s] = true
		return true
	}
	depts := in.departments(s.Closed())
	noDept := false
	for _, t := range ts {
		switch {
		case t.Department == "":
			noDept = true
		case listed:
			depts[t.Department] = true
		}
	}
	if noDept {
		// No department list shows a request without a department:
		// the status's list is the only one that does.
		c.noteFull(s, "", listed)
	}
	names := make([]string, 0, len(depts))
	for d := range depts {
		names = append(names, d)
	}
	slices.Sort(names)
	// The department lists go out Concurrency at a time, as the reads
	// do: at a hosted API's latency one after the other they were most
	// of a large hotel's cycle. Their answers are taken in name order.
	lists := make([][]guestapi.Ticket, len(names))
	oks := make([]bool, len(names))
	idx := make([]int, len(names))
	for i := range idx {
		idx[i] = i
	}
	forEach(c.ctx, c.e.workers, c.e.cfg.Concurrency, idx, func(i int) {
		lists[i], oks[i] = c.listOnce(guestapi.ListOptions{Status: s, Department: names[i], Limit: ListLimit})
	})
	all := true
	for i, d := range names {
		dts, ok := lists[i], oks[i]
		if !ok {
			all = false
			continue
		}
		*out = append(*out, dts...)
		if len(dts) >= ListLimit {
			c.noteFull(s, d, listed)
		} else {
			cv.dept[[2]string{string(s), d}] = true
		}
	}
	return all
}

// noteFull records that the list of status s in department dept ("": the
// status's list, of the requests without a department) holds ListLimit
// requests, the most the API shows, with no paging. For a status whose
// requests are imported or may be open (hides), the requests older than
// the ListLimit-th newest are not discovered until newer ones leave the
// status: the list is recorded in c.full, for the report, and a warning
// says so once an hour for each such list (the cycles in between say it
// at debug). A full closed list hides nothing to import: it is said at
// debug only.
func (c *cycle) noteFull(s guestapi.Status, dept string, hides bool) {
	which := fmt.Sprintf("the list of department %q in status %s", dept, s)
	if dept == "" {
		which = fmt.Sprintf("the list of status %s, the only one that shows its requests without a department,", s)
	}
	if !hides {
		c.e.log.LogAttrs(c.ctx, slog.LevelDebug,
			fmt.Sprintf("%s holds %d tickets, the API's limit: older ones are read at the closed interval if tracked, and not imported otherwise", which, ListLimit),
			slog.String("op", "discover"))
		return
	}
	c.full = append(c.full, FullList{Status: s, Department: dept})
	level := slog.LevelDebug
	key := string(s) + "\x00" + dept
	if last, ok := c.e.warnedFull[key]; !ok || c.now.Sub(last) >= time.Hour {
		if c.e.warnedFull == nil {
			c.e.warnedFull = map[string]time.Time{}
		}
		c.e.warnedFull[key] = c.now
		level = slog.LevelWarn
	}
	c.e.log.LogAttrs(c.ctx, level,
		fmt.Sprintf("%s holds %d tickets, the API's limit, and the API has no paging: older ones are not discovered (not created in the helpdesk, nothing their guests write mirrored) until newer ones leave the status; tracked ones are still read by the full-read safety net. Work the backlog down, or split the department in the hotel's console", which, ListLimit),
		slog.String("op", "discover"))
}

// listOnce makes one list request; a failure is recorded (or stops the
// cycle) and reported as false.
func (c *cycle) listOnce(opt guestapi.ListOptions) ([]guestapi.Ticket, bool) {
	if c.stopped() {
		return nil, false
	}
	ts, err := c.fetchList(opt)
	if err != nil {
		if c.apiFatal(err) || c.interrupted(err) {
			return nil, false
		}
		c.failure("", "", "list tickets", err)
		return nil, false
	}
	return ts, true
}

// byID sorts ts by id, in place, and keeps one of each: of a ticket
// listed twice (it changed between two requests), the later update. The
// lists of a cycle are kept this way, not in a map: a quiet cycle of one
// list then copies none of its tickets.
func byID(ts []guestapi.Ticket) []guestapi.Ticket {
	// Reversed, then sorted stably: of two listings of one update the one
	// listed last comes first, and is kept.
	slices.Reverse(ts)
	slices.SortStableFunc(ts, func(a, b guestapi.Ticket) int {
		if c := strings.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		return b.UpdatedAt.Compare(a.UpdatedAt) // the later first
	})
	return slices.CompactFunc(ts, func(a, b guestapi.Ticket) bool { return a.ID == b.ID })
}

// findListed returns the ticket id of listed (in id order) shows.
func findListed(listed []guestapi.Ticket, id string) (guestapi.Ticket, bool) {
	i, ok := slices.BinarySearchFunc(listed, id, func(t guestapi.Ticket, id string) int { return strings.Compare(t.ID, id) })
	if !ok {
		return guestapi.Ticket{}, false
	}
	return listed[i], true
}

// few names up to five ids, then how many more.
func few(ids []string) string {
	const n = 5
	if len(ids) <= n {
		return fmt.Sprint(ids)
	}
	return fmt.Sprintf("%v and %d more", ids[:n], len(ids)-n)
}
