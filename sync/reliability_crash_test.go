package sync_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// TestReliabilityCrash builds the ticketbridge binary and runs `ticketbridge
// run` (files adapter, one cycle a second) against a reference server in
// this process, killing it with SIGKILL at random moments: after a random
// delay within a cycle's length, after a random number of its log lines
// (each an I/O step), or at a random moment after a completed cycle.
// Between two starts guests write through the console and agents drop
// replies and notes into the outbox. After every kill the state file must
// open and be readable by its owner only, and no log line may hold the API
// key; after the last start the daemon runs until it is quiet and stops on
// SIGTERM. Then the helpdesk folder must hold every request once and
// every guest message once (the bridge's own posts never), and the API
// every agent reply and note once. 15 restarts by default; 100 with
// TICKETBRIDGE_RELIABILITY=full.
//
// Unlike adapters/rt's crash test (one cycle per child against a real RT),
// this one kills the daemon as shipped, scheduler included, and needs
// nothing but the Go toolchain.
func TestReliabilityCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills it many times")
	}
	restarts := reliabilitySize(15, 100)
	seed := reliabilitySeed(t, 20260303)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the binary with")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ticketbridge")
	build := exec.CommandContext(t.Context(), goBin, "build", "-o", bin, "github.com/ticketbridge/ticketbridge/cmd/ticketbridge")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the binary: %v\n%s", err, out)
	}

	c := &crashWorld{
		t: t, bin: bin, dir: dir, rnd: rand.New(rand.NewPCG(seed, seed^0xc4a5)),
		ts:    refservertest.New(t),
		files: filepath.Join(dir, "helpdesk"),
		state: filepath.Join(dir, "state.db"),
		agent: map[string]string{},
	}
	keyFile := filepath.Join(dir, "api-key")
	if err := os.WriteFile(keyFile, []byte(c.ts.Keys.TicketsWrite+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir,
		"TICKETBRIDGE_API_URL=" + c.ts.URL,
		"TICKETBRIDGE_API_KEY_FILE=" + keyFile,
		"TICKETBRIDGE_STATE=" + c.state,
		"TICKETBRIDGE_ADAPTER=files",
		"TICKETBRIDGE_FILES_DIR=" + c.files,
		"TICKETBRIDGE_FILES_SETTLE=0s",
		"TICKETBRIDGE_SCHEDULE=@every 1s",
		"TICKETBRIDGE_QUIET_MAX=1s",
		"TICKETBRIDGE_CLOSED_INTERVAL=1s",
		"TICKETBRIDGE_LOG_FORMAT=json",
		"TICKETBRIDGE_LOG_LEVEL=debug",
	}
	for range 30 {
		c.newTicket()
	}

	// The kill falls within what the last complete first cycle took: its
	// duration from the start of the process, or its number of log lines.
	estimate, lines := 500*time.Millisecond, 100
	var killedMidCycle, killedLater int
	for i := range restarts {
		d := c.start()
		var killed bool
		switch i % 4 {
		case 0, 1: // a random moment of the first cycle
			killed = d.killAfter(time.Duration(c.rnd.Int64N(int64(estimate))) + time.Millisecond)
		case 2: // after a random I/O step of the first cycle
			killed = d.killAtLine(1 + c.rnd.IntN(lines))
		case 3: // a random moment after a complete cycle
			killed = d.killAfterCycle(time.Duration(c.rnd.Int64N(int64(1500 * time.Millisecond))))
		}
		if d.firstCycle > 0 {
			estimate, lines = max(d.firstCycle, 50*time.Millisecond), max(d.firstCycleLines, 10)
		}
		if !killed {
			t.Fatalf("restart %d: the daemon exited by itself: %v\n%s", i+1, d.exit, d.tail())
		}
		if d.cycles == 0 {
			killedMidCycle++
		} else {
			killedLater++
		}
		c.checkStateOpens()
		c.activity()
	}
	t.Logf("%d restarts: %d killed before their first cycle ended, %d later", restarts, killedMidCycle, killedLater)
	if killedMidCycle < restarts/3 {
		t.Errorf("only %d of %d kills fell before the first cycle ended", killedMidCycle, restarts)
	}

	// The last start runs until four cycles in a row have nothing to do,
	// and stops cleanly on SIGTERM.
	d := c.start()
	if !d.untilQuiet(4) {
		t.Fatalf("the daemon exited before it settled: %v\n%s", d.exit, d.tail())
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if d.drain(); d.exit != nil {
		t.Fatalf("the daemon stopped with %v on SIGTERM, want exit status 0\n%s", d.exit, d.tail())
	}
	c.checkStateOpens()
	if fi, err := os.Stat(c.state + ".status.json"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("status snapshot: %v, want mode 0600", fi)
	}
	c.check()
}

// crashWorld is the crash test's hotel: the reference server, the
// helpdesk folder, the state file and the binary.
type crashWorld struct {
	t     *testing.T
	bin   string
	dir   string
	env   []string
	rnd   *rand.Rand
	ts    *refservertest.TestServer
	files string
	state string
	ids   []string
	agent map[string]string // body -> upstream ticket id, of every outbox file
	seq   int
	msgs  int
}

func (c *crashWorld) newTicket() {
	c.t.Helper()
	c.seq++
	tv, err := c.ts.Server.CreateTicket(c.ts.Org, refserver.NewTicket{Department: "housekeeping", TaskDescription: fmt.Sprintf("request %d", c.seq)})
	if err != nil {
		c.t.Fatal(err)
	}
	c.ids = append(c.ids, tv.ID)
	c.guest(tv.ID)
}

func (c *crashWorld) guest(id string) {
	c.t.Helper()
	c.seq++
	c.msgs++
	if _, err := c.ts.Server.AddMessage(id, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, AuthorName: "Guest", Body: fmt.Sprintf("guest message %d", c.seq)}); err != nil {
		c.t.Fatal(err)
	}
}

// activity is what guests and agents do while the daemon is down.
func (c *crashWorld) activity() {
	c.t.Helper()
	if c.rnd.IntN(10) < 3 {
		c.newTicket()
	}
	for range 1 + c.rnd.IntN(3) {
		c.guest(c.ids[c.rnd.IntN(len(c.ids))])
	}
	held := c.folders()
	for range c.rnd.IntN(3) {
		id := c.ids[c.rnd.IntN(len(c.ids))]
		if len(held[id]) == 0 {
			continue // not mirrored yet
		}
		c.seq++
		kind, body := "reply", fmt.Sprintf("agent reply %d", c.seq)
		if c.rnd.IntN(3) == 0 {
			kind, body = "note", fmt.Sprintf("agent note %d", c.seq)
		}
		c.agent[body] = id
		name := filepath.Join(c.files, "outbox", fmt.Sprintf("answer-%d.txt", c.seq))
		text := fmt.Sprintf("ticket: %s\nkind: %s\nauthor: Agent\n\n%s\n", id, kind, body)
		if err := os.WriteFile(name+".tmp", []byte(text), 0o600); err != nil {
			c.t.Fatal(err)
		}
		if err := os.Rename(name+".tmp", name); err != nil {
			c.t.Fatal(err)
		}
	}
}

// folderTicket is the part of a ticket folder's ticket.json the test reads.
type folderTicket struct {
	UpstreamID string `json:"upstream_id"`
	Thread     []struct {
		Kind       string `json:"kind"`
		Source     string `json:"source"`
		UpstreamID string `json:"upstream_id"`
		EventID    string `json:"event_id"`
		Public     bool   `json:"public"`
		Body       string `json:"body"`
	} `json:"thread"`
}

// folders reads the ticket.json of every ticket folder, by upstream id.
func (c *crashWorld) folders() map[string][]folderTicket {
	c.t.Helper()
	paths, err := filepath.Glob(filepath.Join(c.files, "tickets", "*", "ticket.json"))
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[string][]folderTicket{}
	for _, p := range paths {
		if strings.HasPrefix(filepath.Base(filepath.Dir(p)), ".") {
			continue // a folder a kill left half made, never renamed into place
		}
		b, err := os.ReadFile(p)
		if err != nil {
			c.t.Fatal(err)
		}
		var ft folderTicket
		if err := json.Unmarshal(b, &ft); err != nil {
			c.t.Fatalf("%s: %v", p, err)
		}
		out[ft.UpstreamID] = append(out[ft.UpstreamID], ft)
	}
	return out
}

// checkStateOpens opens the state file as the next start will, reads all
// of it, and checks that only its owner may read it.
func (c *crashWorld) checkStateOpens() {
	c.t.Helper()
	fi, err := os.Stat(c.state)
	if errors.Is(err, os.ErrNotExist) {
		return // killed before it was made
	}
	if err != nil {
		c.t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		c.t.Errorf("state file mode %v, want 0600", perm)
	}
	st, err := state.Open(c.t.Context(), c.state, state.Options{ReadOnly: true, LockTimeout: 5 * time.Second})
	if err != nil {
		c.t.Fatalf("the state file does not open after a kill: %v", err)
	}
	defer st.Close()
	s, err := st.Stats(c.t.Context())
	if err != nil || s.Corrupt != 0 {
		c.t.Fatalf("the state file after a kill: %+v, %v", s, err)
	}
	if err := st.View(c.t.Context(), func(tx *state.Tx) error {
		return tx.ForEachTicket(func(state.Ticket) error { return nil })
	}); err != nil {
		c.t.Fatalf("read the state file after a kill: %v", err)
	}
}

// check verifies the promise at the end.
func (c *crashWorld) check() {
	t := c.t
	t.Helper()
	held := c.folders()
	guestMsgs, own := 0, 0
	for _, id := range c.ids {
		fts := held[id]
		if len(fts) != 1 {
			t.Errorf("request %s has %d helpdesk folders, want 1", id, len(fts))
			continue
		}
		ft := fts[0]
		inFolder := map[string]int{}
		outbox := map[string]int{}
		for _, en := range ft.Thread {
			if en.UpstreamID != "" {
				inFolder[en.UpstreamID]++
			}
			if en.Source == "outbox" {
				outbox[en.Body]++
			}
		}
		view, err := c.ts.Server.Ticket(id)
		if err != nil {
			t.Fatal(err)
		}
		upBodies := map[string][]refserver.InternalMessage{}
		for _, m := range view.Messages {
			upBodies[m.Body] = append(upBodies[m.Body], m)
			switch {
			case m.External && inFolder[m.ID] != 0:
				t.Errorf("request %s: the bridge's own post %q echoed into the folder %d times", id, m.Body, inFolder[m.ID])
			case m.External:
				own++
			case inFolder[m.ID] != 1:
				t.Errorf("request %s: guest message %q is in the folder %d times, want once", id, m.Body, inFolder[m.ID])
			default:
				guestMsgs++
			}
		}
		for body, tid := range c.agent {
			if tid != id {
				continue
			}
			if n := outbox[body]; n != 1 {
				t.Errorf("request %s: the outbox file %q is in the thread %d times, want once", id, body, n)
			}
			ms := upBodies[body]
			if len(ms) != 1 || !ms[0].External || ms[0].VisibleToGuest != strings.HasPrefix(body, "agent reply") {
				t.Errorf("request %s: the agent's %q is upstream as %+v, want once", id, body, ms)
			}
		}
	}
	for _, sub := range []string{"", "failed"} {
		left, err := filepath.Glob(filepath.Join(c.files, "outbox", sub, "answer-*"))
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 0 {
			t.Errorf("outbox files left in outbox/%s: %v", sub, left)
		}
	}
	st, err := state.Open(c.t.Context(), c.state, state.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := st.Stats(c.t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if s.JournalPending != 0 || s.JournalFailed != 0 || s.JournalUnmarked != 0 || s.WithErrors != 0 {
		t.Errorf("state at the end: %+v", s)
	}
	t.Logf("checked %d requests: %d guest messages in the folder once each (%d written), %d agent files upstream once each (%d own posts)",
		len(c.ids), guestMsgs, c.msgs, len(c.agent), own)
	if guestMsgs != c.msgs || own != len(c.agent) {
		t.Errorf("%d guest messages mirrored of %d written; %d own posts for %d agent files", guestMsgs, c.msgs, own, len(c.agent))
	}
}

// daemon is one start of `ticketbridge run`.
type daemon struct {
	t     *testing.T
	cmd   *exec.Cmd
	begin time.Time
	lines chan daemonLine // closed at EOF
	key   string          // the API key, which no line may hold
	exit  error           // Wait's result, once drained
	last  []string        // the last lines, for failure messages

	cycles          int           // complete cycles seen
	firstCycle      time.Duration // from the start to the end of the first cycle
	firstCycleLines int           // log lines up to the end of the first cycle
	seen            int           // log lines seen
}

type daemonLine struct {
	at     time.Time
	raw    string
	report *tbsync.Report // set on a cycle's "cycle details" line
}

func (c *crashWorld) start() *daemon {
	c.t.Helper()
	cmd := exec.CommandContext(c.t.Context(), c.bin, "run")
	cmd.Env = c.env
	cmd.Dir = c.dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	d := &daemon{t: c.t, cmd: cmd, lines: make(chan daemonLine, 1<<16), begin: time.Now(), key: c.ts.Keys.TicketsWrite}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			l := daemonLine{at: time.Now(), raw: sc.Text()}
			var rec struct {
				Msg    string          `json:"msg"`
				Report json.RawMessage `json:"report"`
			}
			if json.Unmarshal([]byte(l.raw), &rec) == nil && rec.Msg == "cycle details" {
				var r tbsync.Report
				if json.Unmarshal(rec.Report, &r) == nil {
					l.report = &r
				}
			}
			d.lines <- l
		}
		close(d.lines)
	}()
	return d
}

// next returns the next log line; ok is false once the daemon has exited
// and every line was read. A daemon silent for a minute fails the test.
func (d *daemon) next() (daemonLine, bool) {
	select {
	case l, ok := <-d.lines:
		if !ok {
			return l, false
		}
		d.seen++
		if strings.Contains(l.raw, d.key) {
			d.t.Errorf("the daemon logged the API key")
		}
		d.last = append(d.last, l.raw)
		if len(d.last) > 40 {
			d.last = d.last[1:]
		}
		if l.report != nil {
			d.cycles++
			if d.cycles == 1 {
				d.firstCycle, d.firstCycleLines = l.at.Sub(d.begin), d.seen
			}
			if l.report.Outcome == tbsync.OutcomeFailed {
				d.t.Errorf("a cycle failed: %s", l.report.Fatal)
			}
		}
		return l, true
	case <-time.After(time.Minute): // a hang's report, not a timing
		d.t.Fatalf("the daemon wrote nothing for a minute\n%s", d.tail())
		return daemonLine{}, false
	}
}

// drain reads the remaining lines and waits for the process.
func (d *daemon) drain() {
	for {
		if _, ok := d.next(); !ok {
			break
		}
	}
	d.exit = d.cmd.Wait()
}

func (d *daemon) kill() { _ = d.cmd.Process.Signal(syscall.SIGKILL) }

// killed drains the daemon and reports whether SIGKILL ended it.
func (d *daemon) killed() bool {
	d.drain()
	var ee *exec.ExitError
	if errors.As(d.exit, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true
		}
	}
	return false
}

func (d *daemon) killAfter(delay time.Duration) bool {
	timer := time.AfterFunc(delay, d.kill)
	defer timer.Stop()
	return d.killed()
}

func (d *daemon) killAtLine(n int) bool {
	for range n {
		if _, ok := d.next(); !ok {
			return d.killed()
		}
	}
	d.kill()
	return d.killed()
}

func (d *daemon) killAfterCycle(delay time.Duration) bool {
	for d.cycles == 0 {
		if _, ok := d.next(); !ok {
			return d.killed()
		}
	}
	return d.killAfter(delay)
}

// untilQuiet reads the log until n cycles in a row did nothing; it
// reports false when the daemon exited first.
func (d *daemon) untilQuiet(n int) bool {
	quiet := 0
	for quiet < n {
		l, ok := d.next()
		if !ok {
			d.exit = d.cmd.Wait()
			return false
		}
		if r := l.report; r != nil {
			if r.Created+r.Adopted+r.Mirrored+r.StatusDown+r.Events+r.Sent+r.Errors == 0 {
				quiet++
			} else {
				quiet = 0
			}
		}
	}
	return true
}

func (d *daemon) tail() string { return strings.Join(d.last, "\n") }
