package rt_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/rt"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// The crash test runs each cycle of the bridge in a process of its own (this
// test binary, re-run as TestCrashChild) and kills it with SIGKILL at a
// random moment, while the reference server (in this process) and the real
// RT carry on. Guests write and agents answer between the cycles. In the
// end RT must hold every guest message exactly once and the reference
// server every agent reply exactly once.

const (
	crashTickets = 50
	crashCycles  = 24
)

// Variables between the crash test and its child.
const (
	envChild  = "TICKETBRIDGE_RT_CRASH_CHILD"
	envState  = "TICKETBRIDGE_RT_CRASH_STATE"
	envAPI    = "TICKETBRIDGE_RT_CRASH_API"
	envKey    = "TICKETBRIDGE_RT_CRASH_KEY"
	envNow    = "TICKETBRIDGE_RT_CRASH_NOW"
	envReport = "TICKETBRIDGE_RT_CRASH_REPORT"
)

// TestCrashChild is one cycle of the bridge when the crash test runs this
// binary as its child; otherwise it does nothing.
func TestCrashChild(t *testing.T) {
	if os.Getenv(envChild) != "1" {
		t.Skip("the crash test's child process; runs only under TestCrashLoop")
	}
	base, err := strconv.ParseInt(os.Getenv(envNow), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	now := func() time.Time { return time.Unix(0, base).Add(time.Since(start)).UTC() }
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("adapter", rt.Name)
	st, err := state.Open(os.Getenv(envState), state.Options{Now: now, LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	api, err := guestapi.New(guestapi.Config{BaseURL: os.Getenv(envAPI), APIKey: os.Getenv(envKey), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := rt.LoadConfig(t.Context(), envLookup{})
	if err != nil {
		t.Fatal(err)
	}
	hd, err := rt.New(t.Context(), cfg, adapters.Deps{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := tbsync.New(tbsync.DefaultConfig(), tbsync.Deps{API: api, Helpdesk: hd, Store: st, Logger: logger, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := eng.RunCycle(t.Context())
	if err != nil {
		t.Fatalf("cycle: %v", err)
	}
	b, _ := json.Marshal(rep)
	if err := os.WriteFile(os.Getenv(envReport), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

type envLookup struct{}

func (envLookup) Lookup(k string) (string, bool) { return os.LookupEnv(k) }

// crash is the crash test's world.
type crash struct {
	t     *testing.T
	r     realRT
	queue string
	clock *refservertest.Clock
	ts    *refservertest.TestServer
	dir   string
	rnd   *rand.Rand
	probe *rt.Adapter
	refs  map[string]adapters.Ref // upstream id -> RT ticket, once the bridge made it
	ids   []string
	seq   int
}

// cycle runs one cycle in a child process, killing it after killAfter
// when that is positive. It returns the report (nil when killed) and how
// long the process ran.
func (c *crash) cycle(killAfter time.Duration) (*tbsync.Report, time.Duration) {
	c.t.Helper()
	report := filepath.Join(c.dir, "report.json")
	_ = os.Remove(report)
	cmd := exec.CommandContext(c.t.Context(), os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		envChild+"=1", envState+"="+filepath.Join(c.dir, "state.db"), envAPI+"="+c.ts.URL, envKey+"="+c.ts.Keys.TicketsWrite,
		envNow+"="+strconv.FormatInt(c.clock.Now().UnixNano(), 10), envReport+"="+report,
		"TICKETBRIDGE_RT_QUEUE="+c.queue, "TICKETBRIDGE_RT_QUEUES=")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	if killAfter > 0 {
		timer := time.AfterFunc(killAfter, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
		defer timer.Stop()
	}
	err := cmd.Wait()
	took := time.Since(begin)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return nil, took
		}
	}
	if err != nil {
		c.t.Fatalf("the bridge's cycle failed: %v\n%s", err, out.String())
	}
	b, err := os.ReadFile(report)
	if err != nil {
		c.t.Fatalf("read the cycle's report: %v\n%s", err, out.String())
	}
	var rep tbsync.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		c.t.Fatal(err)
	}
	if rep.Errors > 0 {
		c.t.Logf("cycle with errors: %+v", rep.Failures)
	}
	return &rep, took
}

// activity is what guests and agents do between two cycles.
func (c *crash) activity() {
	c.t.Helper()
	for range 5 {
		c.seq++
		id := c.ids[c.rnd.IntN(len(c.ids))]
		body := fmt.Sprintf("Guest message %d: could I have %d more pillows?", c.seq, c.rnd.IntN(5)+1)
		if _, err := c.ts.Server.AddMessage(id, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, AuthorName: "Ada Guest", Body: body}); err != nil {
			c.t.Fatal(err)
		}
	}
	g := c.r.agent()
	for range 3 {
		c.seq++
		ref, ok := c.ref(c.ids[c.rnd.IntN(len(c.ids))])
		if !ok {
			continue
		}
		body := fmt.Sprintf("Agent answer %d: on its way.", c.seq)
		do := g.Reply
		if c.rnd.IntN(3) == 0 {
			body = fmt.Sprintf("Agent note %d: told housekeeping.", c.seq)
			do = g.Note
		}
		if err := do(c.t.Context(), ref, "", body); err != nil {
			c.t.Fatal(err)
		}
	}
}

// ref returns the RT ticket the bridge made for id, if it did yet.
func (c *crash) ref(id string) (adapters.Ref, bool) {
	c.t.Helper()
	if ref, ok := c.refs[id]; ok {
		return ref, true
	}
	f, ok, err := c.probe.Lookup(c.t.Context(), id)
	if err != nil {
		c.t.Fatal(err)
	}
	if ok {
		c.refs[id] = f.Ref
	}
	return f.Ref, ok
}

func TestCrashLoop(t *testing.T) {
	r := needRT(t)
	if testing.Short() {
		t.Skip("kills the bridge at random moments over many cycles")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	clock := refservertest.NewClock(time.Now().UTC())
	c := &crash{t: t, r: r, queue: r.queue(t, "crash"), clock: clock, dir: t.TempDir(),
		ts: refservertest.New(t, refservertest.WithClock(clock)), rnd: rand.New(rand.NewPCG(seed, 42)), refs: map[string]adapters.Ref{}}
	c.probe = r.open(t, map[string]string{"TICKETBRIDGE_RT_QUEUE": c.queue, "TICKETBRIDGE_RT_QUEUES": ""})
	for i := range crashTickets {
		tv, err := c.ts.Server.CreateTicket(c.ts.Org, refserver.NewTicket{Department: "housekeeping", TaskDescription: fmt.Sprintf("Request %d: pillows for room %d", i, 100+i)})
		if err != nil {
			t.Fatal(err)
		}
		c.ids = append(c.ids, tv.ID)
		if _, err := c.ts.Server.AddMessage(tv.ID, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, AuthorName: "Ada Guest", Body: fmt.Sprintf("First message of request %d.", i)}); err != nil {
			t.Fatal(err)
		}
	}

	// The kill falls anywhere within the last complete cycle's duration:
	// at the start, amid creating tickets, mirroring, collecting, sending.
	// The first estimate is a guess at how long creating the 50 tickets
	// takes.
	estimate := 3 * time.Second
	killed := 0
	for i := range crashCycles {
		c.clock.Advance(30 * time.Second)
		if i%6 == 5 {
			c.clock.Advance(20 * time.Minute) // quiet tickets come due again
		}
		kill := time.Duration(0)
		if i%4 != 3 { // every fourth cycle runs to its end
			kill = time.Duration(c.rnd.Int64N(int64(estimate))) + time.Millisecond
		}
		rep, took := c.cycle(kill)
		if rep == nil {
			killed++
		} else {
			estimate = max(took, 100*time.Millisecond)
		}
		c.activity()
	}
	t.Logf("%d cycles, %d killed before their end", crashCycles, killed)
	if killed < crashCycles/2 {
		t.Errorf("only %d of %d cycles were killed", killed, crashCycles)
	}

	// Now let it finish: cycles to their end until nothing is left.
	quiet := 0
	for range 40 {
		c.clock.Advance(31 * time.Minute)
		rep, _ := c.cycle(0)
		if rep.Created+rep.Adopted+rep.Mirrored+rep.StatusDown+rep.Events+rep.Sent+rep.Errors == 0 {
			if quiet++; quiet == 3 {
				break
			}
		} else {
			quiet = 0
		}
	}
	if quiet < 3 {
		t.Fatal("the bridge did not settle after the crashes")
	}
	c.check()
}

// check verifies exactly once on both sides.
func (c *crash) check() {
	t := c.t
	g := c.r.agent()
	// One RT ticket per request.
	var found struct {
		Items []struct {
			ID           string `json:"id"`
			CustomFields []struct {
				Name   string   `json:"name"`
				Values []string `json:"values"`
			}
		}
	}
	q := url.Values{"query": {"Queue = '" + c.queue + "'"}, "fields": {"CustomFields"}, "per_page": {"100"}}
	if err := g.do(t.Context(), http.MethodGet, "/tickets", q, nil, &found); err != nil {
		t.Fatal(err)
	}
	perRequest := map[string]int{}
	for _, it := range found.Items {
		for _, cf := range it.CustomFields {
			if cf.Name == rt.DefaultIDField {
				for _, v := range cf.Values {
					perRequest[v]++
				}
			}
		}
	}
	guestMsgs, agentMsgs := 0, 0
	for _, id := range c.ids {
		if perRequest[id] != 1 {
			t.Errorf("request %s has %d RT tickets, want 1", id, perRequest[id])
			continue
		}
		ref, _ := c.ref(id)
		view, err := c.ts.Server.Ticket(id)
		if err != nil {
			t.Fatal(err)
		}
		thread := g.thread(t, ref)
		upBodies := map[string]int{}
		for _, m := range view.Messages {
			upBodies[m.Body]++
		}
		for _, m := range view.Messages {
			n := 0
			for _, x := range thread {
				if strings.HasSuffix(strings.TrimSpace(x.text), "[ticketbridge message "+m.ID+"]") {
					n++
				}
			}
			switch {
			case m.External && n != 0:
				t.Errorf("request %s: the bridge's own post %q echoed into RT %d times", id, m.Body, n)
			case !m.External && n != 1:
				t.Errorf("request %s: guest message %q is in RT %d times, want once", id, m.Body, n)
			case !m.External:
				guestMsgs++
			}
		}
		for _, x := range thread {
			if x.creator != c.r.agentUser {
				continue
			}
			agentMsgs++
			if n := upBodies[strings.TrimSpace(x.text)]; n != 1 {
				t.Errorf("request %s: the agent's %q is upstream %d times, want once", id, x.text, n)
			}
		}
	}
	t.Logf("checked %d requests: %d guest messages in RT once each, %d agent messages upstream once each", len(c.ids), guestMsgs, agentMsgs)
}
