package sync_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/state"
)

// countLists makes the reference server count the list requests it
// answers; while broken is set, it answers each with a list that cannot
// be decoded (an id missing) instead.
func (e *env) countLists(broken *atomic.Bool) *atomic.Int64 {
	e.t.Helper()
	var n atomic.Int64
	hook := refserver.Match(http.MethodGet, guestapi.TicketsPrefix+"/tickets", func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.URL.Path != guestapi.TicketsPrefix+"/tickets" {
			next.ServeHTTP(w, r)
			return
		}
		n.Add(1)
		if broken != nil && broken.Load() {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"tickets":[{"status":"new"}]}`))
			return
		}
		next.ServeHTTP(w, r)
	})
	if err := e.ts.Server.SetFaults(refserver.Faults{Hook: hook}); err != nil {
		e.t.Fatal(err)
	}
	return &n
}

// TestQuietListsAreNotDecoded: once the lists agreed with state, a cycle
// whose lists are byte for byte the last ones decodes none of them, and
// asks each once, as before; a change still crosses in the next cycle,
// and the cycle that finds it asks no list twice. With one list (the
// queue fits) and with a list per status (it does not).
func TestQuietListsAreNotDecoded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tickets int
		lists   int64
	}{{"one list", 20, 1}, {"a list per status", 210, int64(len(guestapi.Statuses()))}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			var ids []string
			for i := range tc.tickets {
				tv, err := e.ts.Server.CreateTicket(e.ts.Org, refserver.NewTicket{Department: "housekeeping",
					Status: []guestapi.Status{guestapi.StatusNew, guestapi.StatusAssigned}[i%2], TaskDescription: fmt.Sprintf("request %d", i)})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, tv.ID)
			}
			e.settle()
			lists := e.countLists(nil)
			const quiet = 10
			same0 := e.engine.SameLists()
			for i := range quiet {
				before := lists.Load()
				r := e.tick()
				if got := lists.Load() - before; got != tc.lists {
					t.Errorf("quiet cycle %d asked %d lists, want %d: %s", i, got, tc.lists, r)
				}
				if r.Listed != tc.tickets || r.Signalled+r.Discovered != 0 {
					t.Errorf("quiet cycle %d: %s, want %d listed and nothing changed", i, r, tc.tickets)
				}
			}
			if got := e.engine.SameLists() - same0; got != quiet {
				t.Errorf("%d of %d quiet cycles had the last lists, want all", got, quiet)
			}

			id := ids[len(ids)/2]
			e.guest(id, "A late message")
			same0, before := e.engine.SameLists(), lists.Load()
			r := e.tick()
			if !e.helpdeskHas(id, "A late message") || r.Signalled != 1 {
				t.Errorf("the cycle after a guest message: %s; want the ticket signalled and its message mirrored", r)
			}
			if got := lists.Load() - before; got != tc.lists {
				t.Errorf("the cycle that found a change asked %d lists, want %d: none twice", got, tc.lists)
			}
			if e.engine.SameLists() != same0 {
				t.Error("the cycle after a guest message took the lists for the last ones")
			}
			e.tick() // the lists agree with state again
			same0 = e.engine.SameLists()
			e.tick()
			if e.engine.SameLists() != same0+1 {
				t.Error("the lists agreed with state again, yet the next quiet cycle decoded them")
			}
			e.checkExactlyOnce()
		})
	}
}

// TestListsComparedWithTheStateReadNow: a ticket's record changed while
// the lists did not (here by hand; a restore does this) has its lists
// decoded and compared again: the list's updated_at differs from the
// record, and the ticket is read.
func TestListsComparedWithTheStateReadNow(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("A lamp is broken")
	e.newTicket("Two towels")
	e.settle()
	same0 := e.engine.SameLists()
	e.tick()
	if e.engine.SameLists() != same0+1 {
		t.Fatal("a quiet cycle decoded its lists: nothing to compare with")
	}
	err := e.store.Update(t.Context(), func(tx *state.Tx) error {
		tk, ok, err := tx.Ticket(id)
		if err != nil || !ok {
			return fmt.Errorf("ticket %s: %t, %v", id, ok, err)
		}
		tk.UpstreamUpdatedAt = tk.UpstreamUpdatedAt.Add(-time.Minute)
		return tx.PutTicket(tk)
	})
	if err != nil {
		t.Fatal(err)
	}
	same0 = e.engine.SameLists()
	r := e.tick()
	if r.Signalled != 1 || e.engine.SameLists() != same0 {
		t.Errorf("after the record's updated_at moved back: %s; want the lists decoded and the ticket signalled", r)
	}
}

// TestBrokenListAfterQuietCycles: a list answer that cannot be decoded,
// coming where the last one was quiet, fails the cycle's listing once (it
// is not asked again in the cycle), loses nothing, and the next good
// answer is decoded and compared again.
func TestBrokenListAfterQuietCycles(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("A lamp is broken")
	e.settle()
	var broken atomic.Bool
	lists := e.countLists(&broken)
	e.tick()
	broken.Store(true)
	e.guest(id, "Still broken")
	before := lists.Load()
	r, _ := e.engine.RunCycle(t.Context())
	if got := lists.Load() - before; got != 1 {
		t.Errorf("the cycle of a broken list asked %d lists, want 1", got)
	}
	if !strings.Contains(e.logs.String(), "id is missing") {
		t.Errorf("the broken list was not reported: %s\n%s", r, e.logs)
	}
	broken.Store(false)
	same0 := e.engine.SameLists()
	e.tick()
	if !e.helpdeskHas(id, "Still broken") {
		t.Error("the guest's message did not cross once the list was whole again")
	}
	if e.engine.SameLists() != same0 {
		t.Error("the cycle after a broken list took its lists for the last good ones")
	}
	e.checkExactlyOnce()
}

// TestRefusedIDIsReportedEveryCycle: lists that plan something (here a
// listed id state cannot store, a failure) do not agree with state, and
// are decoded again: every cycle reports the failure, however alike its
// lists and state are.
func TestRefusedIDIsReportedEveryCycle(t *testing.T) {
	e := newEnv(t)
	e.newTicket("A lamp is broken")
	e.settle()
	odd, err := json.Marshal(guestapi.Ticket{ID: badID, Department: "housekeeping", Status: guestapi.StatusNew, CreatedAt: start, UpdatedAt: start})
	if err != nil {
		t.Fatal(err)
	}
	hook := refserver.Match(http.MethodGet, guestapi.TicketsPrefix+"/tickets", func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		var list struct {
			Tickets []json.RawMessage `json:"tickets"`
		}
		if r.URL.Path != guestapi.TicketsPrefix+"/tickets" || json.Unmarshal(rec.Body.Bytes(), &list) != nil {
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		list.Tickets = append(list.Tickets, odd)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	})
	if err := e.ts.Server.SetFaults(refserver.Faults{Hook: hook}); err != nil {
		t.Fatal(err)
	}
	const cycles = 3
	for i := range cycles {
		if r := e.tick(); r.Errors == 0 {
			t.Errorf("cycle %d did not report the listed id state cannot store: %s", i, r)
		}
	}
	if n := strings.Count(e.logs.String(), "cannot be stored"); n < cycles {
		t.Errorf("the id state cannot store was logged %d times in %d cycles", n, cycles)
	}
}
