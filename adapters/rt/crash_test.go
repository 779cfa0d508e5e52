package rt_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/rt"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
)

// The crash test builds the ticketbridge binary, runs each cycle as
// `ticketbridge once` and kills it with SIGKILL at a random moment, while
// the reference server (in this process) and the real RT carry on. Guests
// write and agents answer between the cycles. In the end RT must hold every
// guest message exactly once and the reference server every agent reply
// exactly once.

const (
	crashTickets = 50
	crashCycles  = 24
)

// crash is the crash test's world.
type crash struct {
	t     *testing.T
	r     realRT
	queue string
	ts    *refservertest.TestServer
	bin   string
	dir   string
	rnd   *rand.Rand
	probe *rt.Adapter
	refs  map[string]adapters.Ref // upstream id -> RT ticket, once the bridge made it
	ids   []string
	seq   int
}

// cycle runs `ticketbridge once`, killing it after killAfter when that is
// positive. It reports whether the cycle ran to its end, and how long the
// process ran.
func (c *crash) cycle(killAfter time.Duration) (bool, time.Duration) {
	c.t.Helper()
	cmd := exec.CommandContext(c.t.Context(), c.bin, "once")
	cmd.Env = append(os.Environ(),
		"TICKETBRIDGE_API_URL="+c.ts.URL, "TICKETBRIDGE_API_KEY="+c.ts.Keys.TicketsWrite,
		"TICKETBRIDGE_STATE="+filepath.Join(c.dir, "state.db"), "TICKETBRIDGE_ADAPTER=rt",
		"TICKETBRIDGE_LOG_LEVEL=warn", "TICKETBRIDGE_LOG_FORMAT=text",
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
			// RT goes on with a request whose client was killed. Restarted
			// at once, the bridge can look for a comment RT has not stored
			// yet, and write it again: RT has no idempotency key. The
			// packaged unit restarts after RestartSec=10s; the test waits
			// a few of RT's request times, as that delay does.
			time.Sleep(restartDelay)
			return false, took
		}
	}
	if err != nil {
		c.t.Fatalf("ticketbridge once failed: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "level=ERROR") {
		c.t.Logf("ticketbridge once logged errors:\n%s", out.String())
	}
	return true, took
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

// restartDelay stands for the packaged unit's RestartSec (10 s) after a
// kill: long enough for RT to finish the request the bridge died in.
const restartDelay = 1500 * time.Millisecond

func TestCrashLoop(t *testing.T) {
	r := needRT(t)
	if testing.Short() {
		t.Skip("kills the bridge at random moments over many cycles")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	dir := t.TempDir()
	bin := filepath.Join(dir, "ticketbridge")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "../../cmd/ticketbridge").CombinedOutput(); err != nil {
		t.Fatalf("build ticketbridge: %v\n%s", err, out)
	}
	c := &crash{t: t, r: r, queue: r.queue(t, "crash"), bin: bin, dir: dir,
		ts: refservertest.New(t), rnd: rand.New(rand.NewPCG(seed, 42)), refs: map[string]adapters.Ref{}}
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

	// The kill falls anywhere within the last complete cycle's duration
	// (process start included): at the start, amid creating tickets,
	// mirroring, collecting, sending. The first estimate is a guess at how
	// long creating the 50 tickets takes.
	estimate := 3 * time.Second
	killed := 0
	for i := range crashCycles {
		kill := time.Duration(0)
		if i%6 != 5 { // every sixth cycle runs to its end
			kill = time.Duration(c.rnd.Int64N(int64(estimate)*9/10)) + time.Millisecond
		}
		done, took := c.cycle(kill)
		if done {
			estimate = max(took, 100*time.Millisecond)
		} else {
			killed++
		}
		c.activity()
	}
	t.Logf("%d cycles, %d killed before their end", crashCycles, killed)
	if killed < crashCycles/2 {
		t.Errorf("only %d of %d cycles were killed", killed, crashCycles)
	}

	// Now let it finish: whole cycles until everything arrived, failing at
	// the first duplicate.
	for i := range 20 {
		c.cycle(0)
		if missing := c.check(false); missing == 0 {
			t.Logf("complete after %d whole cycles", i+1)
			c.check(true)
			return
		}
	}
	c.check(true)
	t.Fatal("the bridge did not catch up after the crashes")
}

// check verifies exactly once on both sides: a duplicate fails the test at
// once; what is missing is counted, and fails it only when final.
func (c *crash) check(final bool) int {
	t := c.t
	missing := 0
	lacks := func(format string, args ...any) {
		missing++
		if final {
			t.Errorf(format, args...)
		}
	}
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
		switch {
		case perRequest[id] > 1:
			t.Fatalf("request %s has %d RT tickets, want 1", id, perRequest[id])
		case perRequest[id] == 0:
			lacks("request %s has no RT ticket", id)
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
				t.Fatalf("request %s: the bridge's own post %q echoed into RT %d times", id, m.Body, n)
			case !m.External && n > 1:
				t.Fatalf("request %s: guest message %q is in RT %d times, want once", id, m.Body, n)
			case !m.External && n == 0:
				lacks("request %s: guest message %q is not in RT", id, m.Body)
			case !m.External:
				guestMsgs++
			}
		}
		for _, x := range thread {
			if x.creator != c.r.agentUser {
				continue
			}
			agentMsgs++
			switch n := upBodies[strings.TrimSpace(x.text)]; {
			case n > 1:
				t.Fatalf("request %s: the agent's %q is upstream %d times, want once", id, x.text, n)
			case n == 0:
				lacks("request %s: the agent's %q is not upstream", id, x.text)
			}
		}
	}
	if final {
		t.Logf("checked %d requests: %d guest messages in RT once each, %d agent messages upstream once each", len(c.ids), guestMsgs, agentMsgs)
	}
	return missing
}
