package sync_test

import (
	"context"
	"fmt"
	"net/http"
	gosync "sync"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// cutter cancels the cycle's context at the at-th I/O call (HTTP request
// to the API or Helpdesk method): before the call, or after the call did
// its work, in which case its answer is lost and the caller gets an error,
// as when the process dies between a write and its record.
type cutter struct {
	mu     gosync.Mutex
	n, at  int
	after  bool
	fired  bool
	cancel context.CancelFunc
}

// call counts one I/O call around do; it reports whether the call's answer
// must be dropped.
func (c *cutter) call(do func()) (lost bool) {
	c.mu.Lock()
	c.n++
	cut := c.at > 0 && c.n == c.at
	if cut {
		c.fired = true
	}
	cancel := c.cancel
	c.mu.Unlock()
	if cut && !c.after {
		cancel()
	}
	do()
	if cut && c.after {
		cancel()
		return true
	}
	return false
}

func (c *cutter) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

type cutRT struct {
	rt http.RoundTripper
	c  *cutter
}

func (r cutRT) RoundTrip(req *http.Request) (resp *http.Response, err error) {
	if r.c.call(func() { resp, err = r.rt.RoundTrip(req) }) {
		if err == nil {
			resp.Body.Close()
		}
		return nil, context.Canceled
	}
	return resp, err
}

// cutHelpdesk counts and cuts every call of the Helpdesk interface.
type cutHelpdesk struct {
	adapters.Helpdesk
	c *cutter
}

func (h cutHelpdesk) EnsureTicket(ctx context.Context, t adapters.Ticket) (ref adapters.Ref, err error) {
	if h.c.call(func() { ref, err = h.Helpdesk.EnsureTicket(ctx, t) }) {
		return "", context.Canceled
	}
	return
}

func (h cutHelpdesk) Append(ctx context.Context, ref adapters.Ref, msgs []adapters.Message) (out []adapters.Appended, err error) {
	if h.c.call(func() { out, err = h.Helpdesk.Append(ctx, ref, msgs) }) {
		return nil, context.Canceled
	}
	return
}

func (h cutHelpdesk) SetStatus(ctx context.Context, ref adapters.Ref, s guestapi.Status) (err error) {
	if h.c.call(func() { err = h.Helpdesk.SetStatus(ctx, ref, s) }) {
		return context.Canceled
	}
	return
}

func (h cutHelpdesk) Changes(ctx context.Context, cur adapters.Cursor) (evs []adapters.Event, next adapters.Cursor, err error) {
	if h.c.call(func() { evs, next, err = h.Helpdesk.Changes(ctx, cur) }) {
		return nil, cur, context.Canceled
	}
	return
}

func (h cutHelpdesk) Lookup(ctx context.Context, id string) (f adapters.Found, ok bool, err error) {
	if h.c.call(func() { f, ok, err = h.Helpdesk.Lookup(ctx, id) }) {
		return adapters.Found{}, false, context.Canceled
	}
	return
}

func (h cutHelpdesk) MarkSent(ctx context.Context, ref adapters.Ref, eventID, msgID string) (err error) {
	if h.c.call(func() { err = h.Helpdesk.MarkSent(ctx, ref, eventID, msgID) }) {
		return context.Canceled
	}
	return
}

// exactlyOnceScenario imports two tickets, then lets the guest, an agent
// and the console act on both sides, with the cycle cut at the at-th I/O
// call and the engine restarted on the same state file after the cut. It
// returns the number of I/O calls the scripted cycles made.
func exactlyOnceScenario(t *testing.T, at int, after bool) int {
	e := newEnv(t)
	e.cfg.Concurrency = 1 // the same order of calls every run
	cut := &cutter{at: at, after: after}
	e.wrapRT = func(rt http.RoundTripper) http.RoundTripper { return cutRT{rt: rt, c: cut} }
	e.wrapHD = func(h adapters.Helpdesk) adapters.Helpdesk { return cutHelpdesk{Helpdesk: h, c: cut} }
	t1 := e.newTicket("one")
	e.guest(t1, "one, second message")
	t2 := e.newTicket("two")
	e.open()

	step := func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cut.mu.Lock()
		cut.cancel = cancel
		wasFired := cut.fired
		cut.mu.Unlock()
		_, err := e.engine.RunCycle(ctx)
		cut.mu.Lock()
		firedNow := cut.fired && !wasFired
		cut.mu.Unlock()
		if firedNow {
			e.open() // a restart on the same state file
			e.clock.Advance(30 * time.Second)
			e.cycle()
			return
		}
		if err != nil {
			t.Fatalf("uncut cycle: %v", err)
		}
	}

	step()
	e.clock.Advance(time.Minute)
	e.guest(t1, "one, third message")
	e.backend.Reply(e.ref(t1), "Agent", "reply on one")
	e.backend.SetStatus(e.ref(t1), "Agent", "working")
	e.backend.Note(e.ref(t2), "Agent", "note on two")
	e.clock.Advance(time.Minute)
	if err := e.ts.Server.SetStatus(t2, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	step()
	n := cut.calls()

	e.clock.Advance(time.Hour)
	e.quiesce()
	e.checkExactlyOnce()
	if got := e.upstream(t1).Ticket.Status; got != guestapi.StatusInProgress {
		t.Errorf("ticket one upstream status %s, want in_progress", got)
	}
	if snap, _ := e.backend.Ticket(e.ref(t2)); snap.Status != "solved" {
		t.Errorf("ticket two helpdesk status %s, want solved", snap.Status)
	}
	for _, id := range []string{t1, t2} {
		if n := len(e.upstream(id).Messages); n != map[string]int{t1: 4, t2: 2}[id] {
			t.Errorf("ticket %s has %d upstream messages", id, n)
		}
	}
	return n
}

// TestExactlyOnceAtEveryStep stops the engine at every I/O call of the
// cycles in turn, before the call and after it, restarts it on the same
// state and checks that both sides end with every message once.
func TestExactlyOnceAtEveryStep(t *testing.T) {
	total := exactlyOnceScenario(t, 0, false)
	if total < 10 {
		t.Fatalf("the scenario made only %d I/O calls", total)
	}
	for at := 1; at <= total; at++ {
		for _, after := range []bool{false, true} {
			t.Run(fmt.Sprintf("call%d/after=%t", at, after), func(t *testing.T) {
				exactlyOnceScenario(t, at, after)
			})
		}
	}
}
