package sync_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/memory"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// The fault mix of TestReliabilityFaults. Upstream, the reference server
// answers 27% of the public requests with a fault and the client's
// transport times out another 3%; on the helpdesk side the memory backend
// fails 12% of the calls before and 10% after applying them, and a
// wrapper times out 8% more (half of them after the call did its work).
var upstreamFaults = refserver.Faults{
	ErrorRate:      0.08, // 500 internal_error
	RateLimitRate:  0.06, // 429 with Retry-After
	RetryAfter:     7 * time.Second,
	DropRate:       0.04, // connection closed without an answer (a reset)
	LostAnswerRate: 0.04, // carried out, then the connection closed
	SlowBodyRate:   0.05, // the answer in pieces with pauses
	SlowBodyDelay:  2 * time.Second,
	LatencyRate:    0.20, // besides the above: a wait before the answer
	Latency:        3 * time.Second,
}

const (
	upstreamTimeoutRate = 0.03
	helpdeskErrorRate   = 0.12
	helpdeskLostRate    = 0.10
	helpdeskTimeoutRate = 0.08
)

// injectedTimeout is what an attempt that ran out of time returns: a
// net.Error whose Timeout is true, as http.Client.Timeout gives.
type injectedTimeout struct{}

func (injectedTimeout) Error() string   { return "injected timeout: no answer in time" }
func (injectedTimeout) Timeout() bool   { return true }
func (injectedTimeout) Temporary() bool { return true }

// roller draws faults from a seeded source; on switches them.
type roller struct {
	mu   gosync.Mutex
	rng  *rand.Rand
	rate float64
	on   atomic.Bool
	n    atomic.Int64 // faults caused
}

func newRoller(seed uint64, rate float64) *roller {
	r := &roller{rng: rand.New(rand.NewPCG(seed, seed^0x7173)), rate: rate}
	r.on.Store(true)
	return r
}

// roll reports whether this call fails and whether it fails after doing
// its work.
func (r *roller) roll() (fire, after bool) {
	r.mu.Lock()
	fire = r.rng.Float64() < r.rate
	after = r.rng.IntN(2) == 0
	r.mu.Unlock()
	if fire = fire && r.on.Load(); fire {
		r.n.Add(1)
	}
	return fire, after
}

// timeoutRT times out a share of the requests: half before they reach the
// server, half after the server carried them out.
type timeoutRT struct {
	base http.RoundTripper
	r    *roller
}

func (t timeoutRT) RoundTrip(req *http.Request) (*http.Response, error) {
	fire, after := t.r.roll()
	if !fire {
		return t.base.RoundTrip(req)
	}
	if !after {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, injectedTimeout{}
	}
	if resp, err := t.base.RoundTrip(req); err == nil {
		resp.Body.Close()
	}
	return nil, injectedTimeout{}
}

// faultyHelpdesk times out a share of the helpdesk calls, before or after
// the call did its work, and counts the backend's injected failures.
type faultyHelpdesk struct {
	adapters.Helpdesk
	r        *roller
	injected *atomic.Int64
}

// call runs do unless a timeout comes first, and loses its answer when
// the timeout comes after it; it reports whether the answer is lost.
func (h faultyHelpdesk) call(op string, do func() error) (lost bool, err error) {
	fire, after := h.r.roll()
	if fire && !after {
		return true, fmt.Errorf("helpdesk %s: %w", op, injectedTimeout{})
	}
	err = do()
	if errors.Is(err, memory.ErrInjected) {
		h.injected.Add(1)
	}
	if fire {
		return true, fmt.Errorf("helpdesk %s: %w", op, injectedTimeout{})
	}
	return false, err
}

func (h faultyHelpdesk) EnsureTicket(ctx context.Context, t adapters.Ticket) (ref adapters.Ref, err error) {
	lost, err := h.call("ensure ticket", func() (err error) { ref, err = h.Helpdesk.EnsureTicket(ctx, t); return })
	if lost {
		return "", err
	}
	return ref, err
}

func (h faultyHelpdesk) Append(ctx context.Context, ref adapters.Ref, msgs []adapters.Message) (out []adapters.Appended, err error) {
	lost, err := h.call("append", func() (err error) { out, err = h.Helpdesk.Append(ctx, ref, msgs); return })
	if lost {
		return nil, err
	}
	return out, err
}

func (h faultyHelpdesk) SetStatus(ctx context.Context, ref adapters.Ref, s guestapi.Status) error {
	_, err := h.call("set status", func() error { return h.Helpdesk.SetStatus(ctx, ref, s) })
	return err
}

func (h faultyHelpdesk) Changes(ctx context.Context, cur adapters.Cursor) (evs []adapters.Event, next adapters.Cursor, err error) {
	lost, err := h.call("changes", func() (err error) { evs, next, err = h.Helpdesk.Changes(ctx, cur); return })
	if lost {
		return nil, cur, err
	}
	return evs, next, err
}

func (h faultyHelpdesk) Lookup(ctx context.Context, id string) (f adapters.Found, ok bool, err error) {
	lost, err := h.call("lookup", func() (err error) { f, ok, err = h.Helpdesk.Lookup(ctx, id); return })
	if lost {
		return adapters.Found{}, false, err
	}
	return f, ok, err
}

func (h faultyHelpdesk) Update(ctx context.Context, ref adapters.Ref, u adapters.FieldUpdate) error {
	_, err := h.call("update", func() error { return h.Helpdesk.(adapters.Updater).Update(ctx, ref, u) })
	return err
}

func (h faultyHelpdesk) MarkSent(ctx context.Context, ref adapters.Ref, eventID, msgID string) error {
	_, err := h.call("mark sent", func() error { return h.Helpdesk.MarkSent(ctx, ref, eventID, msgID) })
	return err
}

// sleepLog records the waits of the API client, which pass on the fake
// clock.
type sleepLog struct {
	mu gosync.Mutex
	ds []time.Duration
}

func (s *sleepLog) add(d time.Duration) {
	s.mu.Lock()
	s.ds = append(s.ds, d)
	s.mu.Unlock()
}

func (s *sleepLog) count(d time.Duration) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, x := range s.ds {
		if x == d {
			n++
		}
	}
	return n
}

func (s *sleepLog) total() (n int, sum time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.ds {
		sum += x
	}
	return len(s.ds), sum
}

// TestReliabilityFaults runs the daemon's scheduler (fake timers, fake
// clock) over many cycles while 30% of the API requests and 30% of the
// helpdesk calls fail in every way the two sides can fail, with guests,
// console staff and agents writing and changing statuses between the
// cycles. The scheduler must never stop and no cycle may panic; once the
// faults stop and the engine has quiesced, every message is on each side
// exactly once, every agent message reached the guest, and the statuses
// agree. 40 cycles by default; 200 with TICKETBRIDGE_RELIABILITY=full.
func TestReliabilityFaults(t *testing.T) {
	cycles := reliabilitySize(40, 200)
	seed := reliabilitySeed(t, 20260302)
	e := newEnv(t)

	// The API side: the server's faults and the transport's timeouts. The
	// client waits on the fake clock, 429s' Retry-After included.
	faults := upstreamFaults
	faults.Seed = seed
	if err := e.ts.Server.SetFaults(faults); err != nil {
		t.Fatal(err)
	}
	upTimeouts := newRoller(seed+1, upstreamTimeoutRate)
	sleeps := &sleepLog{}
	e.wrapAPI = func(tbsync.API) tbsync.API {
		c, err := guestapi.New(guestapi.Config{
			BaseURL: e.ts.URL, APIKey: e.key,
			HTTPClient: &http.Client{Transport: timeoutRT{base: e.ts.Client().Transport, r: upTimeouts}},
			Now:        e.clock.Now,
			Sleep: func(ctx context.Context, d time.Duration) error {
				sleeps.add(d)
				return e.clock.Sleep(ctx, d)
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	// The helpdesk side.
	e.backend.Seed(seed + 2)
	e.backend.Inject(memory.Fault{Rate: helpdeskErrorRate})
	e.backend.Inject(memory.Fault{Rate: helpdeskLostRate / (1 - helpdeskErrorRate), AfterApply: true})
	hdTimeouts := newRoller(seed+3, helpdeskTimeoutRate)
	var hdInjected atomic.Int64
	e.wrapHD = func(h adapters.Helpdesk) adapters.Helpdesk {
		return faultyHelpdesk{Helpdesk: h, r: hdTimeouts, injected: &hdInjected}
	}

	act := newActivity(e, seed+4)
	for range 8 {
		act.newTicket()
	}
	eng := e.open()

	// The scheduler of `ticketbridge run`, its ticks fired by the test.
	timers := &fakeTimers{armed: make(chan chan time.Time, 2)}
	type result struct {
		rep tbsync.Report
		err error
	}
	results := make(chan result)
	var panics atomic.Int64
	s := &tbsync.Scheduler{
		Schedule: eng.Schedule(),
		Cycle: func(ctx context.Context) (rep tbsync.Report, err error) {
			defer func() {
				if v := recover(); v != nil {
					panics.Add(1)
					err = fmt.Errorf("cycle panicked: %v\n%s", v, debug.Stack())
				}
			}()
			return eng.RunCycle(ctx)
		},
		AfterCycle: func(r tbsync.Report, err error) { results <- result{r, err} },
		NewTimer:   timers.newTimer,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runDone := make(chan error, 1)
	go func() { runDone <- s.Run(ctx) }()

	var failedCycles, partialCycles, cycleErrors, apiRequests int
	for i := range cycles {
		if i > 0 {
			select {
			case tick := <-timers.armed:
				tick <- e.clock.Now()
			case err := <-runDone:
				t.Fatalf("the scheduler stopped before cycle %d: %v", i+1, err)
			}
		}
		var r result
		select {
		case r = <-results:
		case err := <-runDone:
			t.Fatalf("the scheduler stopped in cycle %d: %v", i+1, err)
		}
		if r.err != nil {
			failedCycles++
			if strings.Contains(r.err.Error(), "panicked") {
				t.Fatalf("cycle %d: %v", i+1, r.err)
			}
		} else if r.rep.Outcome == tbsync.OutcomePartial {
			partialCycles++
		}
		cycleErrors += r.rep.Errors
		apiRequests += r.rep.APIRequests
		act.step()
		e.clock.Advance(30 * time.Second)
	}
	cancel()
	if err := <-runDone; err != nil {
		t.Fatalf("the scheduler stopped with %v, want nil", err)
	}
	if n := panics.Load(); n != 0 {
		t.Fatalf("%d cycles panicked", n)
	}

	// What the faults did.
	stats := e.ts.Server.Stats()
	public := 0
	for route, byStatus := range stats.Requests {
		if strings.HasPrefix(route, "GET /ops-public-api/") || strings.HasPrefix(route, "POST /ops-public-api/") {
			for _, n := range byStatus {
				public += n
			}
		}
	}
	upFaults := int(upTimeouts.n.Load())
	for kind, n := range stats.Faults {
		if kind != "latency" {
			upFaults += n
		}
	}
	hdCalls := 0
	for _, op := range []memory.Op{memory.OpEnsureTicket, memory.OpAppend, memory.OpSetStatus, memory.OpChanges, memory.OpLookup, memory.OpMarkSent} {
		hdCalls += e.backend.Calls(op)
	}
	hdFaults := int(hdInjected.Load() + hdTimeouts.n.Load())
	nSleeps, slept := sleeps.total()
	kinds := slices.Sorted(func(yield func(string) bool) {
		for k := range stats.Faults {
			if !yield(k) {
				return
			}
		}
	})
	var mix []string
	for _, k := range kinds {
		mix = append(mix, fmt.Sprintf("%s %d", k, stats.Faults[k]))
	}
	mix = append(mix, fmt.Sprintf("timeout %d", upTimeouts.n.Load()))
	t.Logf("%d cycles: %d failed, %d partial, %d ticket or entry errors; %d API calls by the engine", cycles, failedCycles, partialCycles, cycleErrors, apiRequests)
	t.Logf("API: %d requests reached the server or timed out, %d faults (%.0f%%): %s", public+int(upTimeouts.n.Load()), upFaults,
		100*float64(upFaults)/float64(max(1, public+int(upTimeouts.n.Load()))), strings.Join(mix, ", "))
	t.Logf("client waits: %d, %s on the fake clock, %d of them a 429's Retry-After", nSleeps, slept, sleeps.count(upstreamFaults.RetryAfter))
	t.Logf("helpdesk: %d calls, %d faults (%.0f%%): %d injected by the backend (before or after applying), %d timeouts",
		hdCalls, hdFaults, 100*float64(hdFaults)/float64(max(1, hdCalls)), hdInjected.Load(), hdTimeouts.n.Load())
	t.Logf("activity: %d requests, %d messages through the console, %d agent replies and notes", len(act.ids), act.guest, func() int {
		n := 0
		for _, bs := range act.agent {
			n += len(bs)
		}
		return n
	}())

	// The faults really happened: every kind, at about the rates asked.
	for _, k := range []string{"drop", "error", "rate_limit", "lost_answer", "slow_body", "latency"} {
		if stats.Faults[k] == 0 {
			t.Errorf("no %s fault was injected", k)
		}
	}
	if upTimeouts.n.Load() == 0 || hdTimeouts.n.Load() == 0 || hdInjected.Load() == 0 {
		t.Errorf("faults missing: %d API timeouts, %d helpdesk timeouts, %d backend faults", upTimeouts.n.Load(), hdTimeouts.n.Load(), hdInjected.Load())
	}
	if share := float64(upFaults) / float64(max(1, public)); share < 0.2 {
		t.Errorf("only %.0f%% of the API requests failed", 100*share)
	}
	if share := float64(hdFaults) / float64(max(1, hdCalls)); share < 0.2 {
		t.Errorf("only %.0f%% of the helpdesk calls failed", 100*share)
	}
	if sleeps.count(upstreamFaults.RetryAfter) == 0 {
		t.Error("no 429 was waited out through the client's Sleep")
	}
	if cycleErrors == 0 {
		t.Error("no fault reached the engine")
	}

	// Quiet: no faults, then the promise.
	if err := e.ts.Server.SetFaults(refserver.Faults{}); err != nil {
		t.Fatal(err)
	}
	upTimeouts.on.Store(false)
	hdTimeouts.on.Store(false)
	e.backend.ClearFaults()
	settle(e)
	act.checkAllDelivered()
}

// fakeTimers hands the scheduler timers the test fires by hand.
type fakeTimers struct {
	armed chan chan time.Time // each timer the scheduler arms
}

func (f *fakeTimers) newTimer(time.Duration) (<-chan time.Time, func() bool) {
	c := make(chan time.Time, 1)
	f.armed <- c
	return c, func() bool { return true }
}
