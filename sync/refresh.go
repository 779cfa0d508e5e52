package sync

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
)

// refreshBatch is how many refreshed tickets share one state transaction.
const refreshBatch = 100

// refreshResult is what refreshing one ticket did, to be stored.
type refreshResult struct {
	t         state.Ticket
	seed      *adoption           // Lookup found the ticket: what it holds
	mirrored  []adapters.Appended // messages now held by the helpdesk
	supersede []state.Entry       // pending status entries a newer upstream change overrode
	supersBy  guestapi.Status

	read, imported, created, adopted, statusDown bool
	appended                                     int // messages newly written to the helpdesk
}

// refresh reads every due ticket, a pool at a time, and stores the results
// in batches.
func (c *cycle) refresh() {
	e := c.e
	var due []state.Ticket
	pending := map[string][]state.Entry{}
	err := e.st.View(func(tx *state.Tx) error {
		if err := tx.ForEachTicket(func(t state.Ticket) error {
			if e.pol.due(&t, c.now) {
				due = append(due, t)
			}
			return nil
		}); err != nil && !errors.Is(err, state.ErrCorrupt) {
			return err
		}
		ps, err := tx.PendingJournal()
		if err != nil && !errors.Is(err, state.ErrCorrupt) {
			return err
		}
		for _, p := range ps {
			pending[p.TicketID] = append(pending[p.TicketID], p)
		}
		return nil
	})
	if err != nil {
		c.stop(fmt.Errorf("read state: %w", err))
		return
	}
	// Imports first, then the longest waiting.
	slices.SortFunc(due, func(a, b state.Ticket) int {
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
	toImport := 0
	for _, t := range due {
		if t.Ref == "" {
			toImport++
		}
	}

	results := make(chan refreshResult)
	go func() {
		forEach(c.ctx, e.cfg.Concurrency, due, func(t state.Ticket) {
			results <- c.refreshTicket(t, pending[t.ID])
		})
		close(results)
	}()
	var batch []refreshResult
	imported := 0
	progressEvery := max(10, toImport/10)
	for r := range results {
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
			rep.Mirrored += r.appended
			rep.Skipped += len(r.supersede)
			if r.created || r.statusDown || r.appended > 0 {
				rep.touch(r.t.ID)
			}
		})
		if r.imported {
			imported++
			if toImport >= 20 && (imported%progressEvery == 0 || imported == toImport) {
				e.log.LogAttrs(c.ctx, slog.LevelInfo, fmt.Sprintf("imported %d/%d tickets", imported, toImport), slog.String("op", "import"))
			}
		}
		batch = append(batch, r)
		if len(batch) >= refreshBatch {
			c.flush(batch)
			batch = nil
		}
	}
	c.flush(batch)
}

// flush stores a batch of results in one transaction. When a record is
// refused, the batch is stored result by result so that the others are
// kept.
func (c *cycle) flush(batch []refreshResult) {
	if len(batch) == 0 || c.storeBroken {
		return
	}
	e := c.e
	err := e.st.Update(func(tx *state.Tx) error {
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
		err := e.st.Update(func(tx *state.Tx) error { return c.put(tx, r) })
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
	if err := tx.PutTicket(r.t); err != nil {
		return err
	}
	if r.seed != nil {
		if err := putSeeds(tx, c.e.hd.Name(), r.t.ID, r.seed.ref, r.seed.f, c.now); err != nil {
			return err
		}
	}
	for _, a := range r.mirrored {
		if err := tx.PutMirrored(r.t.ID, a.UpstreamID, a.HelpdeskID, c.now); err != nil {
			return err
		}
	}
	for _, en := range r.supersede {
		en.State = state.Failed
		en.LastError = fmt.Sprintf("superseded: the upstream status changed to %s after this helpdesk change", r.supersBy)
		if _, err := tx.PutJournal(en); err != nil {
			return err
		}
	}
	return nil
}

// refreshTicket reads one ticket and brings the helpdesk up to date with
// it. pend holds the ticket's pending journal entries, oldest first.
func (c *cycle) refreshTicket(t state.Ticket, pend []state.Entry) refreshResult {
	e := c.e
	r := refreshResult{t: t}
	th, err := e.api.GetTicket(c.ctx, t.ID)
	if err != nil {
		return c.ticketError(r, "get ticket", err)
	}
	r.read = true
	d := th.Ticket
	if d.ID != t.ID {
		return c.ticketError(r, "get ticket", fmt.Errorf("the API answered with ticket %q", d.ID))
	}

	ref := adapters.Ref(t.Ref)
	known := map[string]bool{}
	if ref == "" {
		f, ok, err := e.hd.Lookup(c.ctx, t.ID)
		if err != nil {
			return c.ticketError(r, "look up helpdesk ticket", err)
		}
		if ok && f.Ref != "" {
			ref = f.Ref
			r.seed = &adoption{found: true, ref: f.Ref, f: f}
			r.adopted = true
			for id := range f.Messages {
				known[id] = true
			}
			for _, id := range f.Sent {
				known[id] = true
			}
		} else {
			ref, err = e.hd.EnsureTicket(c.ctx, toAdapterTicket(d))
			if err != nil {
				return c.ticketError(r, "create helpdesk ticket", err)
			}
			if ref == "" {
				return c.ticketError(r, "create helpdesk ticket", errors.New("the adapter returned an empty reference"))
			}
			r.created = true
			r.t.HelpdeskStatus, r.t.HelpdeskStatusAt = string(d.Status), c.now
			e.log.LogAttrs(c.ctx, slog.LevelInfo, "created helpdesk ticket",
				slog.String("op", "import"), slog.String("ticket", t.ID), slog.String("ref", string(ref)))
		}
		r.t.Ref = string(ref)
		r.imported = true
	} else {
		err := e.st.View(func(tx *state.Tx) error {
			m, err := tx.Mirrored(t.ID)
			if err != nil {
				return err
			}
			for id := range m {
				known[id] = true
			}
			o, err := tx.OwnMessages(t.ID)
			for id := range o {
				known[id] = true
			}
			return err
		})
		if err != nil {
			return c.ticketError(r, "read state", err)
		}
	}
	if r.t.Department == "" || r.t.Department != d.Department {
		r.t.Department = d.Department
	}

	// Messages: new ones in order. A staff message that matches a post of
	// the bridge not yet confirmed (a crash, or an answer lost, after the
	// API stored it) is the bridge's own: it is skipped until the send
	// confirms it and records its id. Everything else is mirrored, so a
	// reply stuck in backoff never holds back what the guest writes.
	var hdStatus []state.Entry
	ownBodies := map[string]bool{}
	for _, en := range pend {
		if en.Kind == state.KindStatus {
			hdStatus = append(hdStatus, en)
		} else {
			ownBodies[postKey(en.Payload.Body, en.Payload.Visible)] = true
		}
	}
	var msgs []adapters.Message
	held := false
	for _, m := range th.Messages {
		if known[m.ID] {
			continue
		}
		if !validID(m.ID) {
			c.failure(t.ID, m.ID, "refresh", fmt.Errorf("skip message: its id %q cannot be stored", m.ID))
			continue
		}
		if m.AuthorType != guestapi.AuthorGuest && ownBodies[postKey(m.Body, m.VisibleToGuest)] {
			held = true
			continue
		}
		msgs = append(msgs, adapters.Message{
			UpstreamID: m.ID, AuthorType: m.AuthorType, AuthorName: m.AuthorName,
			Body: mirrorBody(m.Body), Public: m.VisibleToGuest, CreatedAt: m.CreatedAt,
		})
	}
	if len(msgs) > 0 {
		app, err := e.hd.Append(c.ctx, ref, msgs)
		for _, a := range app {
			if validID(a.UpstreamID) {
				r.mirrored = append(r.mirrored, a)
				if !a.Existed {
					r.appended++
				}
			}
		}
		if err != nil {
			return c.ticketError(r, "append messages", err)
		}
	}

	// Status: the newer change wins when both sides changed.
	st := d.Status
	upChanged := string(st) != t.UpstreamStatus
	setDown := string(st) != r.t.HelpdeskStatus
	if len(hdStatus) > 0 {
		last := hdStatus[len(hdStatus)-1]
		if upChanged && d.UpdatedAt.After(last.CreatedAt) && !explainedByMessage(th.Messages, d.UpdatedAt, last.CreatedAt) {
			r.supersede, r.supersBy = hdStatus, st
		} else {
			setDown = false // the helpdesk's change is newer: it goes up
		}
	}
	if setDown {
		if err := e.hd.SetStatus(c.ctx, ref, st); err != nil {
			return c.ticketError(r, "set helpdesk status", err)
		}
		r.t.HelpdeskStatus, r.t.HelpdeskStatusAt = string(st), c.now
		r.statusDown = true
	}
	r.t.UpstreamStatus = string(st)
	r.t.UpstreamUpdatedAt = d.UpdatedAt

	// The first read of a ticket finds old news: it is not activity.
	first := t.UpstreamStatus == ""
	active := held || len(pend) > 0 || t.DueReason == DueEvent ||
		(!first && (len(msgs) > 0 || upChanged))
	e.pol.afterRead(&r.t, c.now, active)
	return r
}

// ticketError records err on the ticket of r and backs it off, unless the
// error stops the cycle or is only its end.
func (c *cycle) ticketError(r refreshResult, op string, err error) refreshResult {
	if c.apiFatal(err) || c.interrupted(err) {
		return r
	}
	c.failure(r.t.ID, "", op, err)
	c.e.pol.afterError(&r.t, c.now, op+": "+err.Error())
	if errors.Is(err, adapters.ErrInvalid) {
		// The helpdesk refuses the input itself: the adapter contract
		// promises no quick retry, so it waits the longest backoff.
		r.t.NextDue = c.now.Add(c.e.pol.quietMax)
	}
	c.mu.Lock()
	c.readFail[r.t.ID] = true
	c.mu.Unlock()
	return r
}

func toAdapterTicket(d guestapi.TicketDetail) adapters.Ticket {
	comments := ""
	if d.Comments != nil {
		comments = *d.Comments
	}
	return adapters.Ticket{
		UpstreamID: d.ID, Department: d.Department, Status: d.Status, TaskDescription: d.TaskDescription,
		Origin: d.Origin, Comments: comments, GuestRating: d.GuestRating, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt,
	}
}

// NoTextPlaceholder stands in the helpdesk for an upstream message without
// text. The API returns no attachments, so a guest who sends only a photo
// produces one; adapters refuse an empty body, and the ticket would
// otherwise be stuck on it.
const NoTextPlaceholder = "(no text: the guest request holds only what the API does not return, such as a photo)"

func mirrorBody(body string) string {
	if strings.TrimSpace(body) == "" {
		return NoTextPlaceholder
	}
	return body
}

// postKey identifies a post by what the API keeps of it: its text, spaces
// around it aside, and its visibility.
func postKey(body string, visible bool) string {
	return fmt.Sprintf("%t\x00%s", visible, strings.TrimSpace(body))
}

// explainedByMessage reports whether a message written after the helpdesk
// change (at) may be what moved updated_at. Then updated_at says nothing of
// when the upstream status changed, and the helpdesk's change, whose time
// is known, is taken as the newer.
func explainedByMessage(msgs []guestapi.Message, updated, at time.Time) bool {
	for _, m := range msgs {
		if m.CreatedAt.After(at) && !m.CreatedAt.Before(updated) {
			return true
		}
	}
	return false
}
