package sync_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

func (e *env) ticketIn(status guestapi.Status, dept, desc string, created time.Time) string {
	e.t.Helper()
	tv, err := e.ts.Server.CreateTicket(e.ts.Org, refserver.NewTicket{Department: dept, Status: status, TaskDescription: desc, CreatedAt: created})
	if err != nil {
		e.t.Fatal(err)
	}
	return tv.ID
}

// TestBackfillOnFirstStartOnly: the first start imports new tickets and
// those of TICKETBRIDGE_BACKFILL's statuses; later, the lists of every
// status catch a ticket that left new between two polls on the next cycle,
// and leave old ones alone.
func TestBackfillOnFirstStartOnly(t *testing.T) {
	e := newEnv(t)
	e.cfg.Backfill = tbsync.Backfill{guestapi.StatusAssigned}
	old := start.Add(-48 * time.Hour)
	fresh := e.ticketIn(guestapi.StatusNew, "housekeeping", "new one", old)
	assigned := e.ticketIn(guestapi.StatusAssigned, "housekeeping", "assigned one", old)
	done := e.ticketIn(guestapi.StatusDone, "housekeeping", "done one", old)
	progress := e.ticketIn(guestapi.StatusInProgress, "front_desk", "in progress one", old)
	r := e.cycle()
	if r.Created != 2 {
		t.Fatalf("first start: %s", r)
	}
	for id, want := range map[string]int{fresh: 1, assigned: 1, done: 0, progress: 0} {
		if got := len(e.backend.Find(id)); got != want {
			t.Errorf("ticket %s: %d helpdesk tickets, want %d", id, got, want)
		}
	}
	// A ticket made after the start that left new before a poll saw it.
	e.clock.Advance(time.Minute)
	quick := e.ticketIn(guestapi.StatusNew, "spa", "quick one", time.Time{})
	if err := e.ts.Server.SetStatus(quick, guestapi.StatusInProgress); err != nil {
		t.Fatal(err)
	}
	r = e.tick()
	if len(e.backend.Find(quick)) != 1 {
		t.Fatalf("the lists did not catch the ticket that left new: %s", r)
	}
	e.clock.Advance(10 * time.Minute)
	e.tick()
	if len(e.backend.Find(done)) != 0 || len(e.backend.Find(progress)) != 0 {
		t.Fatal("the lists imported tickets older than the first start")
	}
}

// TestDiscoverPartitionsFullLists: a list reaching the API's limit of 200
// is asked again per department, so no ticket is missed; a department list
// still at the limit is logged as a warning.
func TestDiscoverPartitionsFullLists(t *testing.T) {
	e := newEnv(t)
	for i := range 230 {
		e.ticketIn(guestapi.StatusNew, fmt.Sprintf("d%d", i%3), fmt.Sprintf("t%d", i), start.Add(-time.Duration(i)*time.Minute))
	}
	for i := range 205 {
		e.ticketIn(guestapi.StatusNew, "busy", fmt.Sprintf("b%d", i), start.Add(-time.Duration(i)*time.Minute))
	}
	r := e.cycle()
	if r.Discovered != 430 || r.Created != 430 { // 230 + the 200 newest of busy
		t.Fatalf("report: %s", r)
	}
	if !strings.Contains(e.logs.String(), "imported 430/430 tickets") {
		t.Fatal("no progress line while importing")
	}
	if !strings.Contains(e.logs.String(), `department \"busy\" in status new holds 200 tickets`) {
		t.Fatalf("no warning about the full department list:\n%s", e.logs)
	}
}

// TestKeyRefusedStopsTheCycle: a 401 stops every write of the cycle, fails
// it with one clear error, and the next cycle with a good key goes on.
func TestKeyRefusedStopsTheCycle(t *testing.T) {
	e := newEnv(t)
	a := e.newTicket("a")
	b := e.newTicket("b")
	e.cycle()
	e.clock.Advance(time.Minute)
	e.guest(a, "to a")
	e.guest(b, "to b")
	e.backend.Reply(e.ref(a), "Agent", "reply on a")
	e.key = e.ts.Keys.Revoked
	// The daemon advises from the table of fixes; here a stand-in.
	const fix = "; fix: write the key to TICKETBRIDGE_API_KEY_FILE"
	e.advise = func(err error) error {
		if errors.Is(err, tbsync.ErrKeyRefused) {
			return fmt.Errorf("%w%s", err, fix)
		}
		return err
	}
	e.open()
	hd0 := len(e.backend.Messages(e.ref(a))) + len(e.backend.Messages(e.ref(b)))
	posts := e.posts()
	for range 2 {
		e.clock.Advance(time.Minute)
		rep, err := e.engine.RunCycle(context.Background())
		if !errors.Is(err, tbsync.ErrKeyRefused) || !errors.Is(err, guestapi.ErrUnauthorized) || rep.Outcome != tbsync.OutcomeFailed {
			t.Fatalf("cycle with a revoked key: %v, %s", err, rep)
		}
		if !strings.HasSuffix(err.Error(), fix) || !strings.HasSuffix(rep.Fatal, fix) {
			t.Fatalf("the error or the report does not say what to do: %v; %s", err, rep.Fatal)
		}
	}
	said := 0
	for _, l := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(l, "level=ERROR") && strings.Contains(l, fix) {
			said++
		}
	}
	if said != 2 {
		t.Fatalf("%d error lines say what to do for two failed cycles, want 2:\n%s", said, e.logs)
	}
	e.advise = nil
	if got := strings.Count(e.logs.String(), "level=ERROR"); got != 2 {
		t.Fatalf("%d error lines for two failed cycles, want 2:\n%s", got, e.logs)
	}
	if hd := len(e.backend.Messages(e.ref(a))) + len(e.backend.Messages(e.ref(b))); hd != hd0 || e.posts() != posts {
		t.Fatal("a cycle with a refused key wrote something")
	}
	e.key = e.ts.Keys.TicketsWrite
	e.open()
	e.tick()
	e.checkExactlyOnce()
}

// TestKeyRefusedMidCycle: a 401 on one ticket's read stops the reads and
// writes after it.
func TestKeyRefusedMidCycle(t *testing.T) {
	e := newEnv(t)
	e.cfg.Concurrency = 1
	ids := []string{e.newTicket("a"), e.newTicket("b"), e.newTicket("c")}
	sortStrings(ids)
	e.ts.Server.SetHook(refserver.Match(http.MethodGet, "/ops-public-api/v1/tickets/"+ids[1], func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":"unauthorized","message":"revoked"}`))
	}))
	_, err := e.open().RunCycle(context.Background())
	if !errors.Is(err, tbsync.ErrKeyRefused) {
		t.Fatalf("cycle: %v", err)
	}
	if len(e.backend.Find(ids[0])) != 1 || len(e.backend.Find(ids[2])) != 0 {
		t.Fatal("work after the 401 went on, or work before it was lost")
	}
	if tk := ticketState(t, e.store, ids[1]); tk.LastError != "" || tk.Attempts != 0 {
		t.Fatalf("a refused key was recorded as the ticket's fault: %+v", tk)
	}
}

// appendEnds is a helpdesk whose Append ends the cycle's context (as a
// replica's lease guard does) and returns an error that does not say so.
type appendEnds struct {
	adapters.Helpdesk
	end func()
}

func (h appendEnds) Append(context.Context, adapters.Ref, []adapters.Message) ([]adapters.Appended, error) {
	h.end()
	return nil, errors.New("the helpdesk call was refused")
}

// TestErrorAfterTheEndIsNotTheTicketsFault: an error that comes once the
// cycle's context has ended is the cycle's end, whatever the adapter
// made of it: it is not recorded on the ticket, which keeps no backoff.
func TestErrorAfterTheEndIsNotTheTicketsFault(t *testing.T) {
	e := newEnv(t)
	a := e.newTicket("a")
	e.cycle()
	e.clock.Advance(time.Minute)
	e.guest(a, "a second message")
	ctx, end := context.WithCancelCause(context.Background())
	e.wrapHD = func(h adapters.Helpdesk) adapters.Helpdesk {
		return appendEnds{Helpdesk: h, end: func() { end(errors.New("the lease ended")) }}
	}
	_, _ = e.open().RunCycle(ctx)
	if tk := ticketState(t, e.store, a); tk.LastError != "" || tk.Attempts != 0 {
		t.Fatalf("an error after the cycle's end was recorded as the ticket's fault: %+v", tk)
	}
	e.wrapHD = nil
	e.open()
	e.tick()
	e.checkExactlyOnce()
}

// TestMissingRightNamesIt: a key that may only read gets 403 on the first
// post; the cycle fails naming the right, and the entry stays pending.
func TestMissingRightNamesIt(t *testing.T) {
	e := newEnv(t)
	e.key = e.ts.Keys.TicketsRead
	id := e.newTicket("read only")
	e.cycle()
	e.backend.Reply(e.ref(id), "Agent", "cannot go up")
	e.clock.Advance(time.Minute)
	_, err := e.engine.RunCycle(context.Background())
	if !errors.Is(err, tbsync.ErrMissingRight) || !strings.Contains(err.Error(), "tickets:write") {
		t.Fatalf("cycle: %v", err)
	}
	if en := entry(t, e.store, id, "cannot go up"); en.State != state.Pending || en.Attempts != 0 {
		t.Fatalf("entry: %+v", en)
	}
}

// TestStatusNewerChangeWins: when both sides changed the status, the later
// change is kept on both.
func TestStatusNewerChangeWins(t *testing.T) {
	e := newEnv(t)
	a := e.newTicket("helpdesk first")
	b := e.newTicket("upstream first")
	e.cycle()
	e.clock.Advance(time.Minute)

	// a: the agent, then the console later: upstream wins.
	e.backend.SetStatus(e.ref(a), "Agent", "working")
	e.clock.Advance(time.Second)
	e.ts.Server.SetStatus(a, guestapi.StatusCancelled)
	// b: the console, then the agent later: the helpdesk wins.
	e.ts.Server.SetStatus(b, guestapi.StatusAssigned)
	e.clock.Advance(time.Second)
	e.backend.SetStatus(e.ref(b), "Agent", "solved")

	e.tick()
	e.quiesce()
	if got := e.upstream(a).Ticket.Status; got != guestapi.StatusCancelled {
		t.Errorf("a upstream %s, want cancelled", got)
	}
	if snap, _ := e.backend.Ticket(e.ref(a)); snap.Status != "cancelled" {
		t.Errorf("a helpdesk %s, want cancelled", snap.Status)
	}
	if en := entry(t, e.store, a, "in_progress"); en.State != state.Failed || !strings.Contains(en.LastError, "superseded") {
		t.Errorf("a's helpdesk change: %+v", en)
	}
	if got := e.upstream(b).Ticket.Status; got != guestapi.StatusDone {
		t.Errorf("b upstream %s, want done", got)
	}
	if snap, _ := e.backend.Ticket(e.ref(b)); snap.Status != "solved" {
		t.Errorf("b helpdesk %s, want solved", snap.Status)
	}
}

// TestStatusGuestMessageDoesNotMakeUpstreamNewer: the console changed the
// status, then the agent, then the guest wrote (which moves updated_at):
// the agent's change is the newer and wins.
func TestStatusGuestMessageDoesNotMakeUpstreamNewer(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("towels")
	e.cycle()
	e.clock.Advance(time.Minute)
	e.ts.Server.SetStatus(id, guestapi.StatusAssigned)
	e.clock.Advance(time.Second)
	e.backend.SetStatus(e.ref(id), "Agent", "solved")
	e.clock.Advance(time.Second)
	e.guest(id, "thanks!")

	e.tick()
	e.quiesce()
	if got := e.upstream(id).Ticket.Status; got != guestapi.StatusDone {
		t.Errorf("upstream %s, want done", got)
	}
	if snap, _ := e.backend.Ticket(e.ref(id)); snap.Status != "solved" {
		t.Errorf("helpdesk %s, want solved", snap.Status)
	}
}

// TestNotFoundNeverDeletes: a tracked ticket the API answers 404 for is
// backed off with its error; nothing is deleted or closed.
func TestNotFoundNeverDeletes(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("vanishing")
	e.cycle()
	e.ts.Server.SetHook(refserver.Match(http.MethodGet, "/ops-public-api/v1/tickets/"+id, func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":"not_found"}`))
	}))
	for range 4 {
		e.clock.Advance(time.Hour)
		e.cycle()
	}
	tk := ticketState(t, e.store, id)
	if !strings.Contains(tk.LastError, "404") || tk.Attempts == 0 || tk.Ref == "" {
		t.Fatalf("ticket after 404s: %+v", tk)
	}
	snap, _ := e.backend.Ticket(e.ref(id))
	if snap.Status != "new" || len(snap.Messages) != 1 {
		t.Fatalf("the helpdesk ticket changed: %+v", snap)
	}
}

// TestStateOfAnotherAdapterRefused: a state file made with one adapter is
// refused with another, naming both.
func TestStateOfAnotherAdapterRefused(t *testing.T) {
	e := newEnv(t)
	e.newTicket("x")
	e.cycle()
	e.wrapHD = func(h adapters.Helpdesk) adapters.Helpdesk { return renamed{h} }
	_, err := e.open().RunCycle(context.Background())
	if !errors.Is(err, tbsync.ErrAdapterMismatch) || !strings.Contains(err.Error(), `"memory"`) || !strings.Contains(err.Error(), `"other"`) {
		t.Fatalf("cycle: %v", err)
	}
}

type renamed struct{ adapters.Helpdesk }

func (renamed) Name() string { return "other" }

// TestCheckerRunsAtStart: an adapter that can check its helpdesk is checked
// before the first cycle, and a failed check fails the cycle.
func TestCheckerRunsAtStart(t *testing.T) {
	e := newEnv(t)
	e.newTicket("x")
	checks := 0
	e.wrapHD = func(h adapters.Helpdesk) adapters.Helpdesk {
		return checking{Helpdesk: h, check: func() error { checks++; return errors.New("helpdesk says no") }}
	}
	_, err := e.open().RunCycle(context.Background())
	if err == nil || !strings.Contains(err.Error(), "helpdesk says no") || checks != 1 {
		t.Fatalf("cycle: %v (checks %d)", err, checks)
	}
	if len(e.backend.Tickets()) != 0 {
		t.Fatal("the cycle went on after the failed check")
	}
}

type checking struct {
	adapters.Helpdesk
	check func() error
}

func (c checking) Check(context.Context) error { return c.check() }
