package sync_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters"
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
