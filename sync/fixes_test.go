package sync_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/memory"
	"github.com/ticketbridge/ticketbridge/guestapi"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// badID is an id state refuses (U+0085 is a control character) that
// looks harmless otherwise.
const badID = "0f8fad5b-d9cb-469f-a165-7086772895\u0085e"

// oddList adds a ticket with an odd id to every list.
type oddList struct {
	tbsync.API
	id string
}

func (a oddList) ListTickets(ctx context.Context, opt guestapi.ListOptions) ([]guestapi.Ticket, error) {
	ts, err := a.API.ListTickets(ctx, opt)
	if err != nil {
		return ts, err
	}
	return append(ts, guestapi.Ticket{ID: a.id, Department: "housekeeping", Status: guestapi.StatusNew, CreatedAt: start, UpdatedAt: start}), nil
}

// TestListedIDStateRefusesIsSkipped: a listed ticket whose id state cannot
// store is recorded as a failure and skipped; the other tickets are
// imported and the cycle goes on (invariant 8).
func TestListedIDStateRefusesIsSkipped(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("x")
	e.wrapAPI = func(a tbsync.API) tbsync.API { return oddList{API: a, id: badID} }
	e.open()
	rep := e.cycle()
	if rep.Errors == 0 || !strings.Contains(rep.String()+e.logs.String(), "cannot be stored") {
		t.Errorf("the odd id was not recorded as a failure: %s", rep)
	}
	e.tick()
	e.ref(id)
	e.checkExactlyOnce()
}

// oddEvents reports, before the helpdesk's own events, one on a ticket
// whose upstream id state cannot store.
type oddEvents struct {
	adapters.Helpdesk
	id string
}

func (h oddEvents) Changes(ctx context.Context, cur adapters.Cursor) ([]adapters.Event, adapters.Cursor, error) {
	evs, next, err := h.Helpdesk.Changes(ctx, cur)
	if err != nil {
		return evs, next, err
	}
	odd := adapters.Event{ID: "odd-" + string(cur), Ref: "hd-odd", UpstreamTicketID: h.id, Kind: adapters.EventReply, Body: "hello", At: start}
	return append([]adapters.Event{odd}, evs...), next, nil
}

// TestHelpdeskEventOnIDStateRefusesIsSkipped: a helpdesk event naming an
// upstream id state cannot store is skipped as malformed; the other
// events are journaled and sent.
func TestHelpdeskEventOnIDStateRefusesIsSkipped(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("x")
	e.cycle()
	e.wrapHD = func(h adapters.Helpdesk) adapters.Helpdesk { return oddEvents{Helpdesk: h, id: badID} }
	e.open()
	if _, err := e.backend.Reply(e.ref(id), "Agent", "on our way"); err != nil {
		t.Fatal(err)
	}
	e.tick()
	e.tick()
	found := false
	for _, m := range e.upstream(id).Messages {
		found = found || m.Body == "on our way"
	}
	if !found {
		t.Fatal("the agent's reply was not sent upstream")
	}
	e.checkExactlyOnce()
}

// oddMessageIDs answers every post with a message id state cannot store,
// counting the posts.
type oddMessageIDs struct {
	tbsync.API
	posts *atomic.Int64
}

func (a oddMessageIDs) PostMessage(ctx context.Context, id string, m guestapi.NewMessage, key string) (guestapi.PostMessageResult, error) {
	a.posts.Add(1)
	res, err := a.API.PostMessage(ctx, id, m, key)
	if err == nil {
		res.MessageID += "/odd"
	}
	return res, err
}

// TestOddMessageIDStillStoresTheSend: a message id the API returns that
// cannot be stored does not undo the cycle's confirmed sends: each reply
// is posted once, not again every cycle.
func TestOddMessageIDStillStoresTheSend(t *testing.T) {
	e := newEnv(t)
	a, b := e.newTicket("a"), e.newTicket("b")
	e.cycle()
	var posts atomic.Int64
	e.wrapAPI = func(api tbsync.API) tbsync.API { return oddMessageIDs{API: api, posts: &posts} }
	e.open()
	for _, id := range []string{a, b} {
		if _, err := e.backend.Reply(e.ref(id), "Agent", "reply on "+id); err != nil {
			t.Fatal(err)
		}
	}
	for range 4 {
		if _, err := e.engine.RunCycle(context.Background()); err != nil {
			t.Fatalf("cycle: %v", err)
		}
		e.clock.Advance(30 * time.Second)
	}
	if n := posts.Load(); n != 2 {
		t.Fatalf("%d posts for 2 replies", n)
	}
}

// TestStateLostDeliveredStatusNotSentAgain: after a state loss, a status
// change the helpdesk recorded as delivered, reported again on a later
// page of Changes than the one that adopted its ticket, is not sent again:
// it would revert the newer upstream status.
func TestStateLostDeliveredStatusNotSentAgain(t *testing.T) {
	e := newEnv(t)
	e.wrapHD = func(adapters.Helpdesk) adapters.Helpdesk {
		return memory.New(e.backend, memory.Options{PageSize: 1})
	}
	id := e.newTicket("a")
	e.cycle()
	if _, err := e.backend.Reply(e.ref(id), "Agent", "on it"); err != nil {
		t.Fatal(err)
	}
	if err := e.backend.SetStatus(e.ref(id), "Agent", "working"); err != nil {
		t.Fatal(err)
	}
	e.quiesce()
	if got := e.upstream(id).Ticket.Status; got != guestapi.StatusInProgress {
		t.Fatalf("upstream status %s, want in_progress", got)
	}
	e.clock.Advance(time.Minute)
	if err := e.ts.Server.SetStatus(id, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	e.quiesce()

	e.store.Close()
	e.store = nil
	if err := os.Remove(e.path); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(48 * time.Hour) // the server's idempotency keys have expired
	e.open()
	e.quiesce()
	if got := e.upstream(id).Ticket.Status; got != guestapi.StatusDone {
		t.Fatalf("upstream status %s after the state was lost, want done", got)
	}
	e.checkExactlyOnce()
}

// frozenList shows every listed ticket as never updated: an API that does
// not move updated_at on a new message.
type frozenList struct{ tbsync.API }

func (a frozenList) ListTickets(ctx context.Context, opt guestapi.ListOptions) ([]guestapi.Ticket, error) {
	ts, err := a.API.ListTickets(ctx, opt)
	for i := range ts {
		ts[i].UpdatedAt = ts[i].CreatedAt
	}
	return ts, err
}

// TestRetiredTicketStillRead: a guest message on a ticket closed long ago
// (retired) reaches the helpdesk within the retired interval, even when
// no list shows the ticket updated.
func TestRetiredTicketStillRead(t *testing.T) {
	e := newEnv(t)
	e.wrapAPI = func(a tbsync.API) tbsync.API { return frozenList{a} }
	id := e.newTicket("a")
	e.cycle()
	if err := e.ts.Server.SetStatus(id, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	for range 80 { // past the closed grace: retired
		e.clock.Advance(time.Hour)
		e.cycle()
	}
	e.guest(id, "one more thing")
	for range 25 {
		e.clock.Advance(time.Hour)
		e.cycle()
	}
	for _, m := range e.backend.Messages(e.ref(id)) {
		if m.Body == "one more thing" {
			e.checkExactlyOnce()
			return
		}
	}
	t.Fatal("the guest's message on the retired ticket was not mirrored")
}

// failingReads fails every read of the tickets in fail.
type failingReads struct {
	tbsync.API
	fail *gosync.Map
}

func (a failingReads) GetTicket(ctx context.Context, id string) (*guestapi.Thread, error) {
	if _, ok := a.fail.Load(id); ok {
		return nil, &guestapi.Error{StatusCode: 503, Code: "unavailable", Message: "injected"}
	}
	return a.API.GetTicket(ctx, id)
}

// TestStatusWaitsWhileTicketBacksOff: a helpdesk status change is not sent
// while its ticket backs off after a failed read (it is not read in that
// cycle): the upstream status may be newer, and it is.
func TestStatusWaitsWhileTicketBacksOff(t *testing.T) {
	e := newEnv(t)
	var fail gosync.Map
	e.wrapAPI = func(a tbsync.API) tbsync.API { return failingReads{API: a, fail: &fail} }
	id := e.newTicket("a")
	e.cycle()
	fail.Store(id, true)
	e.clock.Advance(30 * time.Second)
	if err := e.backend.SetStatus(e.ref(id), "Agent", "working"); err != nil {
		t.Fatal(err)
	}
	e.cycle() // the read fails: the status waits, the ticket backs off
	e.clock.Advance(5 * time.Second)
	if err := e.ts.Server.SetStatus(id, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(5 * time.Second)
	e.cycle() // the ticket is not due: not read
	fail.Delete(id)
	e.quiesce()
	if got := e.upstream(id).Ticket.Status; got != guestapi.StatusDone {
		t.Fatalf("upstream status %s, want the newer done", got)
	}
}

// failingMarks fails every MarkSent with err while on is set, counting the
// calls.
type failingMarks struct {
	adapters.Helpdesk
	err   error
	on    *atomic.Bool
	calls *atomic.Int64
}

func (h failingMarks) MarkSent(ctx context.Context, ref adapters.Ref, eventID, msgID string) error {
	h.calls.Add(1)
	if h.on.Load() {
		return h.err
	}
	return h.Helpdesk.MarkSent(ctx, ref, eventID, msgID)
}

func markSentEnv(t *testing.T, err error) (*env, *atomic.Bool, *atomic.Int64) {
	e := newEnv(t)
	var fail atomic.Bool
	fail.Store(true)
	var calls atomic.Int64
	e.wrapHD = func(h adapters.Helpdesk) adapters.Helpdesk {
		return failingMarks{Helpdesk: h, err: err, on: &fail, calls: &calls}
	}
	id := e.newTicket("a")
	e.cycle()
	if _, err := e.backend.Reply(e.ref(id), "Agent", "on it"); err != nil {
		t.Fatal(err)
	}
	return e, &fail, &calls
}

// TestMarkSentNotFoundGivenUp: a delivery the helpdesk refuses to record
// for good (its ticket is gone) is given up, not retried every cycle.
func TestMarkSentNotFoundGivenUp(t *testing.T) {
	e, _, calls := markSentEnv(t, fmt.Errorf("mark sent: %w", adapters.ErrNotFound))
	for range 10 {
		e.tick()
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("MarkSent called %d times, want 1", n)
	}
}

// TestMarkSentBacksOff: a delivery the helpdesk fails to record for now is
// retried with a growing wait, and recorded once the helpdesk is back.
func TestMarkSentBacksOff(t *testing.T) {
	e, fail, calls := markSentEnv(t, errors.New("helpdesk unavailable"))
	for range 30 { // 15 minutes
		e.tick()
	}
	if n := calls.Load(); n < 2 || n > 6 {
		t.Fatalf("MarkSent called %d times in 30 cycles, want a few", n)
	}
	fail.Store(false)
	e.clock.Advance(time.Hour)
	e.cycle()
	n := calls.Load()
	for range 5 {
		e.tick()
	}
	if calls.Load() != n {
		t.Fatal("MarkSent still called after it succeeded")
	}
}
