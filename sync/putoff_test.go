package sync_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	gosync "sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// busyProxy answers every API request with a 503 asking to come back in
// an hour while it is on, and counts the requests that reach it.
type busyProxy struct {
	next http.RoundTripper
	mu   gosync.Mutex
	on   bool
	seen int
}

func (p *busyProxy) RoundTrip(r *http.Request) (*http.Response, error) {
	p.mu.Lock()
	p.seen++
	on := p.on
	p.mu.Unlock()
	if !on {
		return p.next.RoundTrip(r)
	}
	if r.Body != nil {
		r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Request: r,
		Header: http.Header{"Retry-After": {"3600"}, "Content-Type": {"text/html"}},
		Body:   io.NopCloser(strings.NewReader("<title>Service Unavailable</title>"))}, nil
}

func (p *busyProxy) requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.seen
	p.seen = 0
	return n
}

// TestLongRetryAfterPutsTheAPIOff: a proxy answering 503 with
// Retry-After: 3600 does not park the cycle inside one call for an hour
// (the client's retry waits are real-time sleeps no longer than the
// schedule's interval): the call ends at once, the cycle ends put off
// until then, and the cycles before that make no call to the API, while
// still reading the helpdesk.
func TestLongRetryAfterPutsTheAPIOff(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("towels")
	proxy := &busyProxy{}
	e.wrapRT = func(next http.RoundTripper) http.RoundTripper { proxy.next = next; return proxy }
	e.cycle()
	proxy.requests()

	proxy.mu.Lock()
	proxy.on = true
	proxy.mu.Unlock()
	e.clock.Advance(30 * time.Second)
	until := e.clock.Now().Add(time.Hour)
	rep, err := e.engine.RunCycle(t.Context())
	if err != nil {
		t.Fatalf("a put-off cycle failed: %v\n%s", err, rep)
	}
	if n := proxy.requests(); n != 1 {
		t.Errorf("the API got %d requests, want 1: the hour is not waited for, nor the call repeated", n)
	}
	want := []tbsync.PutOff{{Side: tbsync.SideAPI, Until: until}}
	if rep.Outcome != tbsync.OutcomePutOff || len(rep.PutOff) != 1 || rep.PutOff[0].Side != want[0].Side || !rep.PutOff[0].Until.Equal(until) {
		t.Fatalf("report %s, put off %+v; want outcome %s and %+v", rep, rep.PutOff, tbsync.OutcomePutOff, want)
	}
	if !strings.Contains(rep.String(), "api put off until") || !strings.Contains(rep.PutOff[0].Reason, "503") {
		t.Errorf("report %q, reason %q: want the put-off and the 503 named", rep, rep.PutOff[0].Reason)
	}
	st, err := tbsync.ReadStatus(t.Context(), e.store, e.clock.Now())
	if err != nil || st.LastCycle == nil || len(st.LastCycle.PutOff) != 1 {
		t.Fatalf("status %+v (%v): want the last cycle's put-off", st.LastCycle, err)
	}

	// Before the hour is up no cycle calls the API; the helpdesk's
	// changes are still collected.
	e.backend.Reply(e.ref(id), "Ana", "on its way")
	for i := range 3 {
		if i == 1 {
			e.open() // a restart remembers it too
		}
		r := e.tick()
		if n := proxy.requests(); n != 0 {
			t.Fatalf("a cycle before the hour was up made %d API requests", n)
		}
		if r.Outcome != tbsync.OutcomePutOff || len(r.PutOff) != 1 || !r.PutOff[0].Until.Equal(until) {
			t.Fatalf("report %s, put off %+v: want still put off until %s", r, r.PutOff, until)
		}
	}

	// After it, the API is called again and what waited crosses.
	proxy.mu.Lock()
	proxy.on = false
	proxy.mu.Unlock()
	e.clock.Advance(time.Hour)
	if r := e.cycle(); r.Outcome == tbsync.OutcomePutOff || len(r.PutOff) != 0 || proxy.requests() == 0 {
		t.Fatalf("after the hour: %s, put off %+v", r, r.PutOff)
	}
	e.quiesce()
	if n := e.upstreamCount(id, "on its way"); n != 1 {
		t.Errorf("the agent's reply reached the API %d times, want 1", n)
	}
}

// putOffHelpdesk answers Changes with a helpdesk's long Retry-After while
// on, and counts the calls.
type putOffHelpdesk struct {
	adapters.Helpdesk
	on    bool
	calls int
	until time.Time
}

func (h *putOffHelpdesk) Changes(ctx context.Context, c adapters.Cursor) ([]adapters.Event, adapters.Cursor, error) {
	h.calls++
	if h.on {
		return nil, c, &adapters.HTTPError{Method: "GET", URL: "https://desk.example/api/v2/changes", StatusCode: 503,
			Class: httpretry.Retryable, RetryAfter: time.Hour,
			PutOff: &httpretry.WaitError{Wait: time.Hour, Until: h.until, Max: 30 * time.Second}}
	}
	return h.Helpdesk.Changes(ctx, c)
}

// TestLongRetryAfterPutsTheHelpdeskOff: the same for the helpdesk side:
// the cycle that meets it reports it, and the cycles before the wait is
// up do not read the helpdesk, but still list the API.
func TestLongRetryAfterPutsTheHelpdeskOff(t *testing.T) {
	e := newEnv(t)
	e.newTicket("pillows")
	hd := &putOffHelpdesk{}
	e.wrapHD = func(h adapters.Helpdesk) adapters.Helpdesk { hd.Helpdesk = h; return hd }
	e.cycle()
	hd.on, hd.until, hd.calls = true, e.clock.Now().Add(30*time.Second+time.Hour), 0
	r := e.tick()
	if r.Outcome != tbsync.OutcomePutOff || len(r.PutOff) != 1 || r.PutOff[0].Side != tbsync.SideHelpdesk || !r.PutOff[0].Until.Equal(hd.until) {
		t.Fatalf("report %s, put off %+v: want the helpdesk put off until %s", r, r.PutOff, hd.until)
	}
	hd.calls = 0
	r = e.tick()
	if hd.calls != 0 || r.APIRequests == 0 || !r.Synced {
		t.Errorf("a cycle before the wait was up read the helpdesk %d times, made %d API requests (synced %v)", hd.calls, r.APIRequests, r.Synced)
	}
}

// TestCycleEndsByItsDeadline: a cycle whose call hangs ends when
// TICKETBRIDGE_CYCLE_MAX has passed, as a cycle that ran past its
// deadline (not a crash, nor a hang until the watchdog restarts the
// daemon), and the next cycle runs.
func TestCycleEndsByItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const cycleMax = 20 * time.Minute
		type cycleEnd struct {
			at    time.Duration
			cause error
		}
		var (
			ends  []cycleEnd
			calls int
		)
		begin := time.Now()
		ctx, cancel := context.WithCancel(t.Context())
		s := &tbsync.Scheduler{
			Schedule: cron.Every(time.Minute),
			Deadline: cycleMax,
			Cycle: func(ctx context.Context) (tbsync.Report, error) {
				calls++
				if calls == 1 {
					// A call that does not answer (for longer than any
					// deadline of the test: without one the test fails
					// rather than hang).
					select {
					case <-ctx.Done():
					case <-time.After(10 * cycleMax):
					}
				}
				return tbsync.Report{}, context.Cause(ctx)
			},
			AfterCycle: func(_ tbsync.Report, err error) {
				ends = append(ends, cycleEnd{time.Since(begin), err})
				if len(ends) == 2 {
					cancel()
				}
			},
		}
		if err := s.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if len(ends) != 2 || ends[0].at != cycleMax || !errors.Is(ends[0].cause, tbsync.ErrCycleDeadline) || ends[1].cause != nil {
			t.Fatalf("cycles ended %+v; want the first at %s by its deadline, then one more", ends, cycleMax)
		}
	})
}

// TestCycleDeadlineReported: the engine reports a cycle that ran past its
// deadline as such, and the next cycle syncs.
func TestCycleDeadlineReported(t *testing.T) {
	e := newEnv(t)
	e.newTicket("blanket")
	var hang bool
	e.wrapAPI = func(a tbsync.API) tbsync.API { return &hangingAPI{API: a, hang: &hang} }
	e.open()
	hang = true
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	hangingCancel = func() { cancel(tbsync.ErrCycleDeadline) }
	rep, err := e.engine.RunCycle(ctx)
	if !errors.Is(err, tbsync.ErrCycleDeadline) || !strings.Contains(rep.Fatal, "TICKETBRIDGE_CYCLE_MAX") {
		t.Fatalf("error %v, report %s: want the cycle's deadline named", err, rep)
	}
	hang = false
	if r := e.tick(); !r.Synced {
		t.Fatalf("the cycle after: %s", r)
	}
}

// TestCycleInterrupted: a cycle whose context is cancelled (Ctrl-C,
// SIGTERM, a daemon stopping) while a call waits is interrupted, not
// failed: RunCycle returns ErrInterrupted without a doubled prefix, the
// stored cycle says interrupted, and the next cycle syncs.
func TestCycleInterrupted(t *testing.T) {
	e := newEnv(t)
	e.newTicket("blanket")
	var hang bool
	e.wrapAPI = func(a tbsync.API) tbsync.API { return &hangingAPI{API: a, hang: &hang} }
	e.open()
	hang = true
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	hangingCancel = func() { cancel(nil) }
	rep, err := e.engine.RunCycle(ctx)
	if !errors.Is(err, tbsync.ErrInterrupted) || err.Error() != tbsync.ErrInterrupted.Error() ||
		rep.Outcome != tbsync.OutcomeInterrupted || rep.Fatal != "" || rep.Synced {
		t.Fatalf("error %v, report %s: want an interrupted cycle", err, rep)
	}
	if st, err := tbsync.ReadStatus(t.Context(), e.store, time.Now()); err != nil || st.LastCycle == nil || st.LastCycle.Outcome != tbsync.OutcomeInterrupted {
		t.Fatalf("the stored cycle: %+v, %v", st.LastCycle, err)
	}
	hang = false
	if r := e.tick(); !r.Synced {
		t.Fatalf("the cycle after: %s", r)
	}
}

// hangingCancel is what a hanging call does: it stands for the deadline
// passing while the call waits.
var hangingCancel func()

type hangingAPI struct {
	tbsync.API
	hang *bool
}

func (a *hangingAPI) ListTickets(ctx context.Context, opt guestapi.ListOptions) ([]guestapi.Ticket, error) {
	if *a.hang {
		hangingCancel()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return a.API.ListTickets(ctx, opt)
}
