package rt_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/rt"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/internal/looptest"
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
	kit   *looptest.Crash
	rnd   *rand.Rand
	probe *rt.Adapter
	refs  map[string]adapters.Ref // upstream id -> RT ticket, once the bridge made it
	ids   []string
	seq   int
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
// kill: long enough for RT to finish the request the bridge died in. RT
// goes on with a request whose client was killed; restarted at once, the
// bridge can look for a comment RT has not stored yet, and write it
// again, as RT has no idempotency key.
const restartDelay = 1500 * time.Millisecond

func TestCrashLoop(t *testing.T) {
	r := needRT(t)
	if testing.Short() {
		t.Skip("kills the bridge at random moments over many cycles")
	}
	c := &crash{t: t, r: r, queue: r.queue(t, "crash"), ts: refservertest.New(t), refs: map[string]adapters.Ref{}}
	// The first estimate of a cycle is a guess at how long creating the
	// 50 tickets takes.
	c.kit = looptest.NewCrash(t, looptest.CrashOptions{Estimate: 3 * time.Second, AfterKill: restartDelay, Env: []string{
		"TICKETBRIDGE_API_URL=" + c.ts.URL, "TICKETBRIDGE_API_KEY=" + c.ts.Keys.TicketsWrite,
		"TICKETBRIDGE_STATE=" + filepath.Join(t.TempDir(), "state.db"), "TICKETBRIDGE_ADAPTER=rt",
		"TICKETBRIDGE_RT_QUEUE=" + c.queue, "TICKETBRIDGE_RT_QUEUES="}})
	c.rnd = c.kit.Rand
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
	// The kills fall at the start, amid creating tickets, mirroring,
	// collecting, sending; then whole cycles until everything arrived,
	// failing at the first duplicate.
	c.kit.Run(crashCycles, c.activity)
	c.kit.Finish(20, c.check)
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
