package sync_test

import (
	"context"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/notify"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// listHook calls during at each list of the API: what runs alongside a
// cycle, in the middle of it.
type listHook struct {
	tbsync.API
	during func()
}

func (l *listHook) ListTickets(ctx context.Context, opt guestapi.ListOptions) ([]guestapi.Ticket, error) {
	if l.during != nil {
		l.during()
	}
	return l.API.ListTickets(ctx, opt)
}

// TestNoticeWritesKeepCyclesQuiet: the notifications keep their episodes
// in the hotel's state and write them off the cycle's goroutine, while a
// cycle may run. Those writes are not the cycle's: a quiet cycle during
// which one lands stays quiet (it stores no record), as in
// TestQuietCycleWritesNothing.
func TestNoticeWritesKeepCyclesQuiet(t *testing.T) {
	e := newQuietEnv(t)
	hook := &listHook{}
	e.wrapAPI = func(a tbsync.API) tbsync.API { hook.API = a; return hook }
	e.newTicket("Two towels to room 214")
	e.quiesce()
	version := uint64(0)
	hook.during = func() {
		ep := notify.Episode{Key: notify.Key{Hotel: "default", Kind: notify.RequestError, Subject: "request r-1"},
			Version: version + 1, Since: e.clock.Now(), Cause: "the helpdesk answered 503"}
		if ok, err := e.store.Notices().Put(context.Background(), ep, version); !ok || err != nil {
			t.Errorf("Put notice: %t, %v", ok, err)
		}
		version++
	}
	lastStored := func() time.Time {
		t.Helper()
		var start time.Time
		if err := e.store.View(t.Context(), func(tx *state.Tx) error {
			c, _, err := tx.LastCycle()
			start = c.Start
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return start
	}
	checked, prevQuiet := 0, false
	for range 10 {
		e.clock.Advance(time.Second)
		stored := lastStored()
		r := e.cycle()
		if r.Outcome != "ok" || r.Mirrored+r.Created+r.Sent+r.StatusDown != 0 {
			t.Fatalf("quiet cycle: %s", r)
		}
		quiet := r.Refreshed == 0 && len(r.Reconcile) == 0
		if quiet && prevQuiet {
			checked++
			if got := lastStored(); !got.Equal(stored) {
				t.Errorf("a quiet cycle during which a notice was written stored its record (start %s, want the earlier %s)", got, stored)
			}
		}
		prevQuiet = quiet
	}
	if checked < 2 {
		t.Fatalf("only %d quiet cycles after a quiet one, of ten", checked)
	}
	if version < 10 {
		t.Fatalf("%d notices written, want one per cycle", version)
	}
}
