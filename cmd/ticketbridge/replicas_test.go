package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	gosync "sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"

	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/adapters/webhook/receiver"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/state/statetest"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// replicaWorld is hotels on one reference server, each an organisation
// with a helpdesk of its own, served by replicas: processes of the built
// binary sharing a hotels directory and a PostgreSQL state. Each replica
// reaches the reference server through a listener of its own, so the test
// knows which replica sent each API request.
//
// A hotel's helpdesk is a files folder, or, for every other hotel of a
// mixed world, a helpdesk held in this test's memory: a webhook receiver
// that outlives every replica, reached by the webhook adapter, whose
// agents post their replies to the inbound endpoint of whichever replica
// syncs the hotel.
type replicaWorld struct {
	t      *testing.T
	bin    string
	dir    string
	db     string
	ts     *refservertest.TestServer
	rnd    *rand.Rand
	hotels []string
	orgs   map[string]string
	ids    map[string][]string          // hotel -> its requests
	guest  map[string]int               // hotel -> guest messages written
	agent  map[string]map[string]string // hotel -> outbox body -> request
	hooks  map[string]*memoryDesk       // the hotels whose helpdesk is in memory
	seq    int

	lines chan replicaLine // every replica's log, as read
	reps  []*replica
	// env are settings every replica starts with beside the world's.
	env []string
	// observe, when set, sees every line next returns.
	observe func(replicaLine)
	// recent are the last lines next returned, for a hang's report.
	recent []string
}

// memoryDesk is a hotel's helpdesk held in the test's memory: a webhook
// receiver, and the agents' events not yet taken by a replica (the hotel
// was between replicas when they were posted).
type memoryDesk struct {
	rc      *receiver.Receiver
	pending []webhook.InboundEvent
	waited  int // events posted again after no replica took them
}

type replica struct {
	i    int
	url  string
	reqs atomic.Int64 // API requests this replica's listener served
	mu   gosync.Mutex
	at   []time.Time // when each of them arrived
	// slow delays each answer, so that the replica is paused with a
	// cycle in flight.
	slow atomic.Int64 // nanoseconds
	cmd  *exec.Cmd
	done chan struct{} // closed once the process was waited for
	exit error
}

// replicaLine is one JSON log line of a replica.
type replicaLine struct {
	replica int
	Msg     string         `json:"msg"`
	Hotel   string         `json:"hotel"`
	Report  *tbsync.Report `json:"report"`
	Time    time.Time      `json:"time"`
	Replica string         `json:"replica"`
	raw     string
}

func newReplicaWorld(t *testing.T, hotels, replicas int, seed uint64, mixed bool) *replicaWorld {
	t.Helper()
	db := statetest.PostgresURL(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the binary with")
	}
	dir := t.TempDir()
	w := &replicaWorld{t: t, bin: filepath.Join(dir, "ticketbridge"), dir: dir, db: db, ts: refservertest.New(t),
		rnd: rand.New(rand.NewPCG(seed, seed^0x5eed)), orgs: map[string]string{}, ids: map[string][]string{},
		guest: map[string]int{}, agent: map[string]map[string]string{}, hooks: map[string]*memoryDesk{}, lines: make(chan replicaLine, 1<<16)}
	if out, err := exec.CommandContext(t.Context(), goBin, "build", "-o", w.bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build the binary: %v\n%s", err, out)
	}
	if err := os.MkdirAll(filepath.Join(dir, "hotels.d"), 0o700); err != nil {
		t.Fatal(err)
	}
	for i := range hotels {
		name := fmt.Sprintf("hotel-%02d", i)
		w.hotels = append(w.hotels, name)
		org := fmt.Sprintf("org-%02d", i)
		if err := w.ts.Server.AddOrganization(org, "hotel"); err != nil {
			t.Fatal(err)
		}
		k, err := w.ts.Server.IssueKey(org, refserver.KeySpec{Name: "bridge", Platform: refserver.PlatformRead, Tickets: refserver.TicketsWrite})
		if err != nil {
			t.Fatal(err)
		}
		keyFile := filepath.Join(dir, name+".key")
		if err := os.WriteFile(keyFile, []byte(k.Value+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		env := fmt.Sprintf("TICKETBRIDGE_API_KEY_FILE=%s\nTICKETBRIDGE_FILES_DIR=%s\n", keyFile, w.files(name))
		if mixed && i%2 == 1 {
			env = fmt.Sprintf("TICKETBRIDGE_API_KEY_FILE=%s\n%s", keyFile, w.newMemoryDesk(name))
		}
		if err := os.WriteFile(filepath.Join(dir, "hotels.d", name+".env"), []byte(env), 0o600); err != nil {
			t.Fatal(err)
		}
		w.orgs[name] = org
		w.agent[name] = map[string]string{}
		for range 2 {
			w.newTicket(name)
		}
	}
	for i := range replicas {
		r := &replica{i: i}
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
			r.reqs.Add(1)
			r.mu.Lock()
			r.at = append(r.at, time.Now())
			r.mu.Unlock()
			if d := time.Duration(r.slow.Load()); d > 0 {
				time.Sleep(d) // a slow API, not a synchronisation
			}
			w.ts.Server.ServeHTTP(rw, req)
		}))
		t.Cleanup(srv.Close)
		r.url = srv.URL
		w.reps = append(w.reps, r)
	}
	t.Cleanup(func() {
		for _, r := range w.reps {
			if r.cmd != nil && !r.exited() {
				_ = r.cmd.Process.Signal(syscall.SIGCONT)
				_ = r.cmd.Process.Kill()
				<-r.done
			}
		}
	})
	return w
}

func (w *replicaWorld) files(hotel string) string { return filepath.Join(w.dir, "helpdesk", hotel) }

// newMemoryDesk starts the helpdesk of a hotel held in memory and returns
// the lines of the hotel's file that name it. The hotel's inbound endpoint
// has a port of its own, taken by whichever replica syncs the hotel.
func (w *replicaWorld) newMemoryDesk(hotel string) string {
	t := w.t
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	_ = ln.Close()
	secret := "the-webhook-secret-of-long-enough-" + hotel
	rc, err := receiver.New(receiver.Options{Secret: secret, ReplyURL: "http://" + listen + "/events"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	w.hooks[hotel] = &memoryDesk{rc: rc}
	return fmt.Sprintf("TICKETBRIDGE_ADAPTER=webhook\nTICKETBRIDGE_WEBHOOK_URL=%s\nTICKETBRIDGE_WEBHOOK_SECRET=%s\nTICKETBRIDGE_WEBHOOK_DIR=%s\nTICKETBRIDGE_WEBHOOK_LISTEN=%s\n",
		srv.URL, secret, filepath.Join(w.dir, "webhook", hotel), listen)
}

// mirrored reports whether request id of hotel is in its helpdesk.
func (w *replicaWorld) mirrored(hotel, id string) bool {
	if d := w.hooks[hotel]; d != nil {
		_, ok := d.rc.Ticket(id)
		return ok
	}
	return folderOf(w.files(hotel), id) != ""
}

// post has an agent of a hotel held in memory answer: each event goes to
// the inbound endpoint of the replica syncing the hotel, or waits for the
// next post when the hotel is between replicas and the endpoint does not
// answer within wait. It returns the last error of an event left waiting.
func (d *memoryDesk) post(t *testing.T, wait time.Duration, evs ...webhook.InboundEvent) error {
	t.Helper()
	todo := append(d.pending, evs...)
	d.waited += len(d.pending)
	d.pending = nil
	var last error
	for _, ev := range todo {
		ctx, cancel := context.WithTimeout(t.Context(), wait)
		_, err := d.rc.Send(ctx, ev)
		cancel()
		if err != nil {
			d.pending, last = append(d.pending, ev), err
		}
	}
	return last
}

func (w *replicaWorld) newTicket(hotel string) {
	w.t.Helper()
	w.seq++
	tv, err := w.ts.Server.CreateTicket(w.orgs[hotel], refserver.NewTicket{Department: "housekeeping", TaskDescription: fmt.Sprintf("request %d of %s", w.seq, hotel)})
	if err != nil {
		w.t.Fatal(err)
	}
	w.ids[hotel] = append(w.ids[hotel], tv.ID)
	w.guestWrites(hotel, tv.ID)
}

func (w *replicaWorld) guestWrites(hotel, id string) {
	w.t.Helper()
	w.seq++
	w.guest[hotel]++
	if _, err := w.ts.Server.AddMessage(id, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, AuthorName: "Guest", Body: fmt.Sprintf("guest message %d of %s", w.seq, hotel)}); err != nil {
		w.t.Fatal(err)
	}
}

// activity is what guests and agents do: new requests, guest messages,
// agent replies and notes dropped in the outboxes of mirrored requests.
func (w *replicaWorld) activity() {
	w.t.Helper()
	for range 1 + w.rnd.IntN(4) {
		h := w.hotels[w.rnd.IntN(len(w.hotels))]
		switch w.rnd.IntN(5) {
		case 0:
			w.newTicket(h)
		case 1, 2:
			w.guestWrites(h, w.ids[h][w.rnd.IntN(len(w.ids[h]))])
		default:
			id := w.ids[h][w.rnd.IntN(len(w.ids[h]))]
			if !w.mirrored(h, id) {
				continue
			}
			w.seq++
			kind, body := "reply", fmt.Sprintf("agent reply %d of %s", w.seq, h)
			if w.rnd.IntN(3) == 0 {
				kind, body = "note", fmt.Sprintf("agent note %d of %s", w.seq, h)
			}
			w.agent[h][body] = id
			if d := w.hooks[h]; d != nil {
				_ = d.post(w.t, time.Second, webhook.InboundEvent{ID: fmt.Sprintf("agent-%d", w.seq), Type: kind, TicketID: id, Body: body, AuthorName: "Agent"})
				continue
			}
			dropOutbox(w.t, w.files(h), fmt.Sprintf("answer-%d.txt", w.seq), fmt.Sprintf("ticket: %s\nkind: %s\nauthor: Agent\n\n%s\n", id, kind, body))
		}
	}
}

// start starts replica i (again).
func (w *replicaWorld) start(i int) {
	w.t.Helper()
	r := w.reps[i]
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.dir, "TMPDIR=" + w.dir,
		"TICKETBRIDGE_API_URL=" + r.url,
		// Each replica reaches the API through a proxy of its own, to
		// count its requests, so their API addresses differ where real
		// replicas' are one: each takes the hotels' state as moved there.
		"TICKETBRIDGE_ALLOW_MOVE=api",
		"TICKETBRIDGE_STATE=" + w.db,
		"TICKETBRIDGE_HOTELS_DIR=" + filepath.Join(w.dir, "hotels.d"),
		"TICKETBRIDGE_ADAPTER=files",
		"TICKETBRIDGE_FILES_SETTLE=0s",
		"TICKETBRIDGE_SCHEDULE=@every 1s",
		"TICKETBRIDGE_QUIET_MAX=1s",
		"TICKETBRIDGE_CLOSED_INTERVAL=1s",
		"TICKETBRIDGE_LEASE_TTL=2s",
		"TICKETBRIDGE_LOG_FORMAT=json",
		"TICKETBRIDGE_LOG_LEVEL=debug",
	}
	env = append(env, w.env...)
	cmd := exec.Command(w.bin, "run")
	cmd.Env, cmd.Dir = env, w.dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	r.cmd, r.done, r.exit = cmd, make(chan struct{}), nil
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			l := replicaLine{replica: i, raw: sc.Text()}
			if json.Unmarshal(sc.Bytes(), &l) != nil {
				continue
			}
			l.replica, l.raw = i, sc.Text()
			w.lines <- l
		}
		r.exit = cmd.Wait()
		close(r.done)
	}()
}

func (r *replica) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

func (w *replicaWorld) signal(i int, sig syscall.Signal) {
	w.t.Helper()
	if err := w.reps[i].cmd.Process.Signal(sig); err != nil {
		w.t.Fatalf("replica %d: %v: %v", i, sig, err)
	}
}

// pauseOutsideFolders stops replica i (SIGSTOP) just after an answer of
// the API reaches it, at a moment it holds no hotel's helpdesk folder. A
// process stopped while it holds a files helpdesk's lock keeps every other
// process out of that folder until it runs again, as the lock intends, and
// no lease takes a lock over; stopped holding one, the replica runs on to
// its next answer and is stopped there.
func (w *replicaWorld) pauseOutsideFolders(i int) {
	w.t.Helper()
	for {
		w.waitFor(fmt.Sprintf("an API answer to replica %d", i), func(l replicaLine) bool { return l.replica == i && l.Msg == "api request" })
		w.signal(i, syscall.SIGSTOP)
		// Waits until the replica has stopped, and leaves that news for
		// its other waiter.
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_PID, w.reps[i].cmd.Process.Pid, &info, unix.WSTOPPED|unix.WNOWAIT, nil); err != nil {
			w.t.Fatalf("replica %d: wait for its stop: %v", i, err)
		}
		held := ""
		for _, h := range w.hotels {
			if w.hooks[h] == nil && w.folderLocked(h) {
				held = h
			}
		}
		if held == "" {
			return
		}
		w.t.Logf("replica %d stopped holding hotel %s's helpdesk folder; stopping it at its next API answer", i, held)
		w.signal(i, syscall.SIGCONT)
	}
}

// folderLocked says whether a process holds hotel's files helpdesk lock.
func (w *replicaWorld) folderLocked(hotel string) bool {
	f, err := os.Open(filepath.Join(w.files(hotel), ".lock"))
	if err != nil {
		return false // not made yet: nobody holds it
	}
	defer f.Close()
	switch err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); {
	case err == nil:
		return false // closing f releases it
	case errors.Is(err, unix.EWOULDBLOCK):
		return true
	default:
		w.t.Fatalf("lock hotel %s's helpdesk folder: %v", hotel, err)
		return false
	}
}

// kill ends replica i with SIGKILL and waits for it.
func (w *replicaWorld) kill(i int) {
	w.t.Helper()
	w.signal(i, syscall.SIGKILL)
	<-w.reps[i].done
}

// next returns the next log line of any replica; a minute without one
// fails the test.
func (w *replicaWorld) next() replicaLine {
	w.t.Helper()
	select {
	case l := <-w.lines:
		if len(w.recent) == 80 {
			w.recent = w.recent[1:]
		}
		w.recent = append(w.recent, fmt.Sprintf("replica %d: %s", l.replica, l.raw))
		if w.observe != nil {
			w.observe(l)
		}
		return l
	case <-time.After(time.Minute): // a hang's report, not a timing
		w.t.Fatal("no replica wrote a line for a minute")
		return replicaLine{}
	}
}

// patience bounds the waits on the replicas: processes of the built
// binary on the real clock, which no fake clock reaches. It only reports a
// hang (replicas that log on and never get there); on an idle machine
// they get there within seconds, and a busy one may take many times that.
const patience = 5 * time.Minute

// waitFor reads log lines until cond holds for one; it returns that line.
func (w *replicaWorld) waitFor(what string, cond func(replicaLine) bool) replicaLine {
	w.t.Helper()
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		if l := w.next(); cond(l) {
			return l
		}
	}
	w.t.Fatalf("no %s within %s; the last lines read:\n%s", what, patience, strings.Join(w.recent, "\n"))
	return replicaLine{}
}

// settle reads the logs until every hotel had quiet cycles in a row, by
// whichever replica syncs it.
func (w *replicaWorld) settle(n int) {
	w.t.Helper()
	quiet := map[string]int{}
	done := 0
	w.waitFor("quiet cycles of every hotel", func(l replicaLine) bool {
		r := l.Report
		if r == nil || l.Hotel == "" {
			return false
		}
		before := quiet[l.Hotel]
		if r.Outcome == tbsync.OutcomeOK && r.Created+r.Adopted+r.Mirrored+r.StatusDown+r.Events+r.Sent+r.Errors == 0 {
			quiet[l.Hotel]++
		} else {
			quiet[l.Hotel] = 0
		}
		if before < n && quiet[l.Hotel] >= n {
			done++
		} else if before >= n && quiet[l.Hotel] < n {
			done--
		}
		return done == len(w.hotels)
	})
}

// check verifies every hotel's helpdesk and requests: each request in one
// folder of its own hotel's helpdesk, each guest message there once, each
// agent file upstream once on its request, no echo, no other hotel's
// request.
func (w *replicaWorld) check() {
	t := w.t
	t.Helper()
	owner := map[string]string{}
	for h, ids := range w.ids {
		for _, id := range ids {
			owner[id[:8]] = h
		}
	}
	var guests, own, inMemory, waited int
	for _, h := range w.hotels {
		if d := w.hooks[h]; d != nil {
			g, o := w.checkMemoryDesk(h, d, owner)
			guests, own, inMemory, waited = guests+g, own+o, inMemory+o, waited+d.waited
			continue
		}
		des, _ := os.ReadDir(filepath.Join(w.files(h), "tickets"))
		for _, de := range des {
			if strings.HasPrefix(de.Name(), ".") {
				continue
			}
			suffix := de.Name()[max(0, len(de.Name())-8):]
			if o := owner[suffix]; o != h {
				t.Errorf("hotel %s's helpdesk holds %s, a request of %q", h, de.Name(), o)
			}
		}
		for _, id := range w.ids[h] {
			if n := countFolders(w.files(h), id); n != 1 {
				t.Errorf("hotel %s: request %s has %d folders, want 1", h, id, n)
				continue
			}
			tj := readTicketJSON(t, filepath.Join(w.files(h), "tickets", folderOf(w.files(h), id), "ticket.json"))
			inFolder := map[string]int{}
			for _, en := range tj.Thread {
				if en.UpstreamID != "" {
					inFolder[en.UpstreamID]++
				}
			}
			g, o := w.checkRequest(h, id, inFolder)
			guests, own = guests+g, own+o
		}
	}
	agents, written := 0, 0
	for _, h := range w.hotels {
		agents += len(w.agent[h])
		written += w.guest[h]
	}
	t.Logf("%d hotels (%d with a helpdesk in memory), %d requests: %d guest messages in the helpdesks once each (%d written), %d agent answers upstream once each (%d own posts, %d from helpdesks in memory, %d posts waited for a replica)",
		len(w.hotels), len(w.hooks), len(owner), guests, written, agents, own, inMemory, waited)
	if guests != written || own != agents {
		t.Errorf("%d guest messages mirrored of %d written; %d own posts for %d agent answers", guests, written, own, agents)
	}
}

// checkMemoryDesk is check for a hotel whose helpdesk is in memory: each
// of its requests created there once, each guest message delivered once,
// no echo of the bridge's own posts, no other hotel's request, and each
// agent answer upstream once. It returns the guest messages and own posts
// counted.
func (w *replicaWorld) checkMemoryDesk(h string, d *memoryDesk, owner map[string]string) (guests, own int) {
	t := w.t
	t.Helper()
	created := map[string]int{}
	for _, dl := range d.rc.Deliveries() {
		if o := owner[dl.TicketID[:min(8, len(dl.TicketID))]]; dl.TicketID != "" && o != h {
			t.Errorf("hotel %s's helpdesk got %s of %s, a request of %q", h, dl.Event, dl.TicketID, o)
		}
		if dl.Event == webhook.EventTicketCreated {
			created[dl.TicketID]++
		}
	}
	for _, id := range w.ids[h] {
		if created[id] != 1 {
			t.Errorf("hotel %s: request %s created %d times in its helpdesk, want once", h, id, created[id])
		}
		tk, _ := d.rc.Ticket(id)
		delivered := map[string]int{}
		for _, m := range tk.Messages {
			if !m.Own {
				delivered[m.ID]++
			}
		}
		g, o := w.checkRequest(h, id, delivered)
		guests, own = guests+g, own+o
	}
	return guests, own
}

// checkRequest compares request id of hotel h upstream with what its
// helpdesk holds, mirrored counting each upstream message id there: each
// guest message there once, none of the bridge's own posts (no echo), and
// each agent answer upstream once. It returns the guest messages and own
// posts counted.
func (w *replicaWorld) checkRequest(h, id string, mirrored map[string]int) (guests, own int) {
	t := w.t
	t.Helper()
	view, err := w.ts.Server.Ticket(id)
	if err != nil {
		t.Fatal(err)
	}
	up := map[string]int{}
	for _, m := range view.Messages {
		up[m.Body]++
		switch {
		case m.External && mirrored[m.ID] != 0:
			t.Errorf("hotel %s: the bridge's own post %q echoed into the helpdesk", h, m.Body)
		case m.External:
			own++
		case mirrored[m.ID] != 1:
			t.Errorf("hotel %s: guest message %q is in the helpdesk %d times, want once", h, m.Body, mirrored[m.ID])
		default:
			guests++
		}
	}
	for body, tid := range w.agent[h] {
		if tid == id && up[body] != 1 {
			t.Errorf("hotel %s: the agent's %q is upstream %d times, want once", h, body, up[body])
		}
	}
	return guests, own
}

// flush posts the agents' events that waited for their hotel's replica;
// every replica runs by now, so each must be taken (each post retries with
// the receiver's own backoff); patience only reports a hang.
func (w *replicaWorld) flush() {
	w.t.Helper()
	deadline := time.Now().Add(patience)
	for _, h := range w.hotels {
		d := w.hooks[h]
		if d == nil {
			continue
		}
		for {
			err := d.post(w.t, 10*time.Second)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				w.t.Fatalf("hotel %s: the agents' events were not taken within %s: %v", h, patience, err)
			}
		}
	}
}

// stopAll stops every running replica with SIGTERM; each must exit 0.
func (w *replicaWorld) stopAll() {
	w.t.Helper()
	for _, r := range w.reps {
		if r.cmd == nil || r.exited() {
			continue
		}
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		go func() { // keep reading: a full pipe would block the exit
			for {
				select {
				case <-w.lines:
				case <-r.done:
					return
				}
			}
		}()
		<-r.done
		if r.exit != nil {
			w.t.Errorf("replica %d stopped with %v on SIGTERM, want exit status 0", r.i, r.exit)
		}
	}
}

// TestReplicaPausedPastItsLease: a replica that holds every hotel is
// paused (SIGSTOP) past the lease's time to live; another replica takes
// the hotels over and syncs them; when the first one resumes it stops its
// hotels without one more API request, and every message is once on each
// side.
func TestReplicaPausedPastItsLease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs two replicas")
	}
	w := newReplicaWorld(t, 2, 2, 20261123, false)
	w.reps[0].slow.Store(int64(150 * time.Millisecond))
	w.start(0)
	taken := map[string]bool{}
	w.waitFor("replica 0 taking every hotel", func(l replicaLine) bool {
		if l.replica == 0 && strings.HasPrefix(l.Msg, "hotel taken") {
			taken[l.Hotel] = true
		}
		return len(taken) == len(w.hotels)
	})
	w.settle(1)
	// Paused in the middle of a cycle: just after an answer of the slow
	// API, with the cycle's next requests to come.
	for _, h := range w.hotels {
		w.guestWrites(h, w.ids[h][1])
	}
	w.pauseOutsideFolders(0)
	paused := time.Now() // for the log only
	for _, h := range w.hotels {
		w.guestWrites(h, w.ids[h][0])
	}
	w.start(1)
	clear(taken)
	w.waitFor("replica 1 taking every hotel", func(l replicaLine) bool {
		if l.replica == 1 && strings.HasPrefix(l.Msg, "hotel taken") {
			taken[l.Hotel] = true
		}
		return len(taken) == len(w.hotels)
	})
	t.Logf("replica 1 took the hotels %s after replica 0 was paused", time.Since(paused).Round(time.Millisecond))
	w.settle(2)
	// Once resumed, replica 0 may send nothing until it takes a hotel
	// anew: the replicas rebalance, one hotel each, through a handover.
	var retaken time.Time
	w.observe = func(l replicaLine) {
		if l.replica == 0 && strings.HasPrefix(l.Msg, "hotel taken") && retaken.IsZero() {
			retaken = l.Time
		}
	}
	// The machine's one clock orders what follows; it bounds nothing: a
	// request replica 0's listener took after this moment and before
	// replica 0 logged taking a hotel anew is one it sent while it should
	// have stood still, however slowly the machine runs.
	resumed := time.Now()
	w.signal(0, syscall.SIGCONT)
	stopped := map[string]bool{}
	w.waitFor("replica 0 stopping its hotels", func(l replicaLine) bool {
		if l.replica == 0 && strings.HasPrefix(l.Msg, "hotel stopped") {
			stopped[l.Hotel] = true
		}
		if l.replica == 0 && l.Report != nil && l.Report.Synced && retaken.IsZero() {
			t.Errorf("replica 0 synced hotel %s after it resumed: %s", l.Hotel, l.raw)
		}
		return len(stopped) == len(w.hotels)
	})
	for _, h := range w.hotels {
		w.guestWrites(h, w.ids[h][1])
	}
	w.activity()
	w.settle(3) // replica 0 runs meanwhile: its heartbeats, its balance
	r0 := w.reps[0]
	r0.mu.Lock()
	stale := 0
	for _, at := range r0.at {
		if at.After(resumed) && (retaken.IsZero() || at.Before(retaken)) {
			stale++
		}
	}
	r0.mu.Unlock()
	if stale != 0 {
		t.Errorf("replica 0 sent %d API requests after it resumed past its lease and before it took a hotel anew, want none", stale)
	}
	if retaken.IsZero() {
		t.Log("replica 0 took no hotel back before the end")
	} else {
		t.Logf("replica 0 took a hotel back %s after it resumed, by a handover", retaken.Sub(resumed).Round(time.Millisecond))
	}
	w.stopAll()
	w.check()
}

// TestFleetCrash: three replicas share ten hotels, five on files
// helpdesks and five on helpdesks held in the test's memory behind the
// webhook adapter (so that what an HTTP helpdesk was told, and every
// agent's answer posted to whichever replica syncs the hotel, outlives
// the replicas); guests and agents write throughout while replicas are killed with SIGKILL at random
// moments and started again. At the end every message is once on each
// side for every hotel, and no hotel's request is in another's helpdesk.
// 12 kills by default, 60 with TICKETBRIDGE_RELIABILITY=full.
func TestFleetCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills replicas many times")
	}
	kills := 12
	if os.Getenv("TICKETBRIDGE_RELIABILITY") == "full" {
		kills = 60
	}
	const seed = 20261124
	w := newReplicaWorld(t, 10, 3, seed, true)
	for i := range w.reps {
		w.start(i)
	}
	// The takeovers: from each kill to the next "hotel taken" of each
	// hotel whose live lease the killed replica held, by whichever replica.
	var (
		mu       gosync.Mutex
		ids      = map[int]string{}       // replica index -> its id, from its start line
		orphaned = map[string]time.Time{} // hotel -> when its holder was killed
		delays   []time.Duration
		taken    int
		failed   int
	)
	conn, err := pgx.Connect(t.Context(), w.db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	stop := make(chan struct{})
	drained := make(chan struct{})
	// The first lease taken: the leases' table exists from then on, so
	// the query after each kill cannot come before any replica made it.
	firstTaken := make(chan struct{})
	// The logs are read while the test sleeps between kills: a replica
	// blocked on a full pipe would stall.
	go func() {
		defer close(drained)
		for {
			select {
			case <-stop:
				return
			case l := <-w.lines:
				mu.Lock()
				switch {
				case l.Msg == "ticketbridge started":
					ids[l.replica] = l.Replica
				case strings.HasPrefix(l.Msg, "hotel taken"):
					taken++
					if taken == 1 {
						close(firstTaken)
					}
					if k, ok := orphaned[l.Hotel]; ok && l.Time.After(k) {
						delays = append(delays, l.Time.Sub(k))
						delete(orphaned, l.Hotel)
					}
				case l.Report != nil && l.Report.Outcome == tbsync.OutcomeFailed:
					failed++
				}
				mu.Unlock()
			}
		}
	}()
	<-firstTaken // bounded by the suite's -timeout, as every wait here
	start := time.Now()
	for k := range kills {
		// A random moment: the kills are what the test is about, not a
		// synchronisation.
		time.Sleep(time.Duration(w.rnd.Int64N(int64(2500 * time.Millisecond))))
		w.activity()
		i := w.rnd.IntN(len(w.reps))
		w.kill(i)
		killed := time.Now()
		mu.Lock()
		id := ids[i]
		mu.Unlock()
		rows, err := conn.Query(t.Context(), `SELECT hotel FROM ticketbridge_leases WHERE replica = $1 AND expires_at > now()`, id)
		if err != nil {
			t.Fatal(err)
		}
		hs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		for _, h := range hs {
			orphaned[h] = killed
		}
		mu.Unlock()
		if k%3 == 2 {
			w.activity() // while one replica is down
		}
		w.start(i)
	}
	close(stop)
	<-drained
	t.Logf("%d kills over %s (seed %d): %d hotels taken, %d cycles failed (a replica killed or its lease lost mid-cycle)",
		kills, time.Since(start).Round(time.Second), seed, taken, failed)
	// Every hotel a killed replica held is taken over once its lease
	// expires, eventually: by the time every hotel had quiet cycles.
	w.observe = func(l replicaLine) {
		if !strings.HasPrefix(l.Msg, "hotel taken") {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if k, ok := orphaned[l.Hotel]; ok && l.Time.After(k) {
			delays = append(delays, l.Time.Sub(k))
			delete(orphaned, l.Hotel)
		}
	}
	w.activity()
	w.flush()
	w.settle(3)
	mu.Lock()
	if len(orphaned) != 0 {
		t.Errorf("hotels a killed replica held were not taken over: %v", slices.Sorted(maps.Keys(orphaned)))
	}
	if len(delays) == 0 {
		t.Error("no takeover after a kill was seen: the test measured nothing")
	} else {
		// For the reader only: the bound is the lease's, not the
		// machine's (5/8 of the time to live and three ticks).
		slices.Sort(delays)
		t.Logf("takeovers of a killed replica's hotels: %d, median %s, slowest %s (TICKETBRIDGE_LEASE_TTL 2s)",
			len(delays), delays[len(delays)/2].Round(time.Millisecond), delays[len(delays)-1].Round(time.Millisecond))
	}
	mu.Unlock()
	w.stopAll()
	w.check()
}
