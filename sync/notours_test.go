package sync_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// neighbour returns the hotel next door of a: the other organisation of
// a's reference server, with a key of its own, a state file of its own,
// and a's helpdesk, one queue for both (a hotel group's central desk).
func neighbour(a *env) *env {
	a.t.Helper()
	b := &env{
		t: a.t, clock: a.clock, ts: a.ts, backend: a.backend,
		path: filepath.Join(a.t.TempDir(), "neighbour.db"),
		cfg:  testConfig(),
		key:  a.ts.Keys.OtherTicketsWrite,
		logs: &testutil.Buffer{},
	}
	a.t.Cleanup(func() {
		if b.store != nil {
			b.store.Close()
		}
	})
	return b
}

// request creates a request in org with one guest message.
func (e *env) request(org, desc string) string {
	e.t.Helper()
	tv, err := e.ts.Server.CreateTicket(org, refserver.NewTicket{Department: "housekeeping", TaskDescription: desc})
	if err != nil {
		e.t.Fatal(err)
	}
	e.guest(tv.ID, "first message of "+desc)
	return tv.ID
}

// statusJSON returns `ticketbridge status --json`'s snapshot of e's state.
func (e *env) statusJSON() (tbsync.Status, string) {
	e.t.Helper()
	s, err := tbsync.ReadStatus(context.Background(), e.store, e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		e.t.Fatal(err)
	}
	return s, string(b)
}

// hasBody reports whether some upstream message of id has body.
func hasBody(v refserver.InternalView, body string) bool {
	for _, m := range v.Messages {
		if m.Body == body {
			return true
		}
	}
	return false
}

// TestSharedQueueNeighbourNotOurs: two hotels, one helpdesk queue. Each
// syncs its own requests; the neighbour's ticket, whose events the
// helpdesk reports to both, is not tracked by the other, lists nothing
// as failing there and journals nothing there, and is counted as not
// this hotel's.
func TestSharedQueueNeighbourNotOurs(t *testing.T) {
	a := newEnv(t)
	b := neighbour(a)
	ida := a.request(a.ts.Org, "Towels to 214")
	idb := b.request(a.ts.OtherOrg, "Pillows to 118")
	a.cycle()
	b.cycle()
	refa, refb := a.ref(ida), a.ref(idb)

	// The desk answers both guests.
	a.clock.Advance(time.Minute)
	if _, err := a.backend.Reply(refa, "Maria", "Towels on the way."); err != nil {
		t.Fatal(err)
	}
	if _, err := a.backend.Reply(refb, "Maria", "Pillows on the way."); err != nil {
		t.Fatal(err)
	}
	if err := a.backend.SetStatus(refb, "Maria", "working"); err != nil {
		t.Fatal(err)
	}
	errs := 0
	for range 6 {
		errs += a.tick().Errors
		errs += b.cycle().Errors
	}
	if !hasBody(a.upstream(ida), "Towels on the way.") || !hasBody(a.upstream(idb), "Pillows on the way.") {
		t.Fatal("a reply did not reach its own guest")
	}
	if got := a.upstream(idb).Ticket.Status; got != guestapi.StatusInProgress {
		t.Errorf("the neighbour's request is %s upstream, want in_progress", got)
	}
	if errs != 0 {
		t.Errorf("%d failures in the cycles after the replies", errs)
	}

	// Another reply on the neighbour's ticket, once it is known as not ours.
	if _, err := a.backend.Reply(refb, "Maria", "Anything else?"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if r := a.tick(); r.Errors != 0 || r.Events != 0 {
			t.Errorf("hotel A's cycle after the neighbour's second reply: %s", r)
		}
		b.cycle()
	}

	for _, h := range []struct {
		e            *env
		own, foreign string
	}{{a, ida, idb}, {b, idb, ida}} {
		s, js := h.e.statusJSON()
		if len(s.Tickets) != 1 || s.Tickets[0].ID != h.own {
			t.Errorf("a hotel tracks %+v, want only %s", s.Tickets, h.own)
		}
		if s.Counts.Failing != 0 || s.Counts.Failed != 0 || s.Counts.Pending != 0 {
			t.Errorf("a hotel's counts: %+v", s.Counts)
		}
		if strings.Contains(js, h.foreign) {
			t.Errorf("a hotel's status names the other's request %s:\n%s", h.foreign, js)
		}
		d, err := tbsync.ReadTicket(context.Background(), h.e.store, h.foreign)
		if err == nil {
			t.Errorf("a hotel holds the other's request: %+v", d)
		}
	}
	if _, js := a.statusJSON(); !strings.Contains(js, `"not_ours":1`) {
		t.Errorf("hotel A's status does not count one request not its own:\n%s", js)
	}
	if strings.Contains(a.logs.String(), "level=ERROR") || strings.Contains(a.logs.String(), "level=WARN") {
		t.Errorf("hotel A logged warnings or errors:\n%s", a.logs)
	}
}

// deletedNotes returns the bodies of ref's helpdesk messages that say the
// request was deleted on the platform.
func (e *env) deletedNotes(id string) []string {
	var out []string
	for _, m := range e.backend.Messages(e.ref(id)) {
		if strings.Contains(m.Body, "deleted on the platform") {
			out = append(out, m.Body)
		}
	}
	return out
}

// getsOf counts the reads of the API answered with status.
func (e *env) gets(status int) int {
	return e.ts.Server.Stats().Requests["GET "+refserver.BasePath+"/tickets/{id}"][status]
}

// TestDeletedRequestRetired: a request deleted on the platform answers
// 404 while the hotel's other requests still read 200. After a few
// cycles of it, the bridge retires it: no more reads, nothing failing,
// one note on its helpdesk ticket, and its helpdesk events are ignored.
func TestDeletedRequestRetired(t *testing.T) {
	e := newEnv(t)
	gone := e.newTicket("Towels to 214")
	kept := e.newTicket("Lamp in 305")
	e.cycle()
	if err := e.ts.Server.DeleteTicket(gone); err != nil {
		t.Fatal(err)
	}
	// The guest of the other request keeps writing, so that it is read.
	for i := range 40 {
		e.clock.Advance(5 * time.Minute)
		e.guest(kept, "still waiting "+string(rune('a'+i%26)))
		e.tick()
	}
	s, js := e.statusJSON()
	if s.Counts.Failing != 0 {
		t.Errorf("failing %d after the request was deleted:\n%s", s.Counts.Failing, js)
	}
	if !strings.Contains(js, `"deleted":1`) {
		t.Errorf("status counts no deleted request:\n%s", js)
	}
	if n := len(e.deletedNotes(gone)); n != 1 {
		t.Errorf("%d notes that the request was deleted, want 1", n)
	}
	if n := len(e.deletedNotes(kept)); n != 0 {
		t.Errorf("the request still there got %d notes that it was deleted", n)
	}

	// Retired: no more reads, and its helpdesk events are ignored.
	reads := e.gets(404)
	if _, err := e.backend.Reply(e.ref(gone), "Maria", "Are the towels still needed?"); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		e.clock.Advance(time.Hour)
		if r := e.tick(); r.Errors != 0 || r.Events != 0 {
			t.Errorf("cycle after the retirement: %s", r)
		}
	}
	if got := e.gets(404); got != reads {
		t.Errorf("%d reads answered 404 after the retirement", got-reads)
	}
	if s, _ := e.statusJSON(); s.Counts.Pending+s.Counts.Failed+s.Counts.Failing != 0 {
		t.Errorf("counts after a reply on the retired request: %+v", s.Counts)
	}
	if n := len(e.deletedNotes(gone)); n != 1 {
		t.Errorf("%d notes that the request was deleted, want 1", n)
	}
}

// TestWrongKeyRetiresNothing: a key of another organisation makes every
// read 404. Nothing is taken for deleted, however long it lasts: once the
// right key is back, every request syncs as before.
func TestWrongKeyRetiresNothing(t *testing.T) {
	e := newEnv(t)
	ids := []string{e.newTicket("Towels to 214"), e.newTicket("Lamp in 305")}
	e.cycle()
	e.key = e.ts.Keys.OtherTicketsWrite
	e.open()
	for range 40 {
		e.clock.Advance(10 * time.Minute)
		for _, id := range ids {
			e.guest(id, "anyone there? "+e.clock.Now().Format(time.TimeOnly))
		}
		e.tick()
	}
	if s, js := e.statusJSON(); s.Counts.Deleted != 0 || s.Counts.Retired != 0 || s.Counts.NotOurs != 0 {
		t.Errorf("requests taken for deleted or not ours with a wrong key:\n%s", js)
	}
	e.key = e.ts.Keys.TicketsWrite
	e.open()
	e.clock.Advance(time.Hour)
	e.quiesce()
	s, js := e.statusJSON()
	if len(s.Tickets) != 2 || s.Counts.Failing != 0 {
		t.Errorf("after the right key is back:\n%s", js)
	}
	for _, id := range ids {
		if n := len(e.deletedNotes(id)); n != 0 {
			t.Errorf("request %s got %d notes that it was deleted", id, n)
		}
	}
	e.checkExactlyOnce()
}

// TestNeighbourRecordOfEarlierVersionLeaves: a state that an earlier
// version filled with the neighbour's ticket (tracked from its events,
// never read with a 200, a reply journaled) lets it go at its next read:
// no longer tracked, its entries gone, nothing failing, counted as not
// this hotel's.
func TestNeighbourRecordOfEarlierVersionLeaves(t *testing.T) {
	a := newEnv(t)
	b := neighbour(a)
	ida := a.request(a.ts.Org, "Towels to 214")
	idb := b.request(a.ts.OtherOrg, "Pillows to 118")
	a.cycle()
	b.cycle()
	refb := a.ref(idb)
	if err := a.store.Update(context.Background(), func(tx *state.Tx) error {
		if err := tx.PutTicket(state.Ticket{ID: idb, Ref: string(refb), NextDue: a.clock.Now(), DueReason: tbsync.DueEvent}); err != nil {
			return err
		}
		_, err := tx.PutJournal(state.Entry{EventID: "old-event", TicketID: idb, Ref: string(refb), IdempotencyKey: "k-old-event",
			Kind: state.KindReply, Payload: state.Payload{Body: "Pillows on the way.", Visible: true}, State: state.Pending, CreatedAt: a.clock.Now()})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if r := a.tick(); r.Errors != 0 {
			t.Errorf("cycle: %s", r)
		}
	}
	s, js := a.statusJSON()
	if len(s.Tickets) != 1 || s.Tickets[0].ID != ida || s.Counts.NotOurs != 1 || s.Counts.Pending+s.Counts.Failed+s.Counts.Failing != 0 {
		t.Errorf("hotel A after the neighbour's record left:\n%s", js)
	}
	if hasBody(a.upstream(idb), "Pillows on the way.") {
		t.Error("hotel A sent its journaled entry to the neighbour's request")
	}
}
