// Package looptest is the scaffolding of an adapter's end-to-end test: the
// whole bridge on one clock, with the reference guest API in process on
// in-memory connections, the sync engine on a state file in the test's
// temporary directory, and the adapter under test on whatever backend the
// test serves it.
//
// The clock is the runtime's for a loop made in a testing/synctest bubble,
// where [Loop.Advance] sleeps: a fake helpdesk that keeps the runtime's
// time, served on in-memory connections (testutil.PipeServer), moves with
// the bridge. A loop whose helpdesk keeps real time in another process (a
// Request Tracker, the webhook receiver), which no bubble can hold, runs
// on a fake clock instead ([Options.Clock]).
//
// A test builds a [Loop] with [New], giving it how to open a fresh adapter
// on its backend, then plays its story: [Loop.Request] and [Loop.Guest]
// write as the hotel and the guest through the reference server's console,
// [Loop.Tick] runs one cycle, [Loop.Advance] lets time pass,
// [Loop.Command] pauses, resumes or resyncs a request,
// [Loop.Settle] runs cycles until the loop is quiet, [Loop.LoseState]
// deletes the state file and restarts the engine, and
// [Loop.CheckExactlyOnce] checks that nothing was written twice on either
// side.
//
// A crash test uses [Crash] instead: the ticketbridge binary, each cycle
// a process of its own killed with SIGKILL at moments drawn from a logged
// seed, against a helpdesk in another process.
//
// It is not a fake of any helpdesk and makes no assertion about one: the
// test keeps its fake, acts as the support team on it, and checks what the
// helpdesk holds itself, handing the kit only the posts it found. It is not
// the adapter contract either; that is package adaptertest, which knows
// nothing of the engine.
//
// It is a test kit: only tests import it. It may import the engine (sync),
// the state, package adapters, the guest API with its reference server and
// that server's test kit, and the internal plumbing, but no part of the
// daemon. It lives under internal/, not under adapters/, so that no adapter
// package depends on the engine; the adapters' tests import it.
package looptest

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// Interval is how far [Loop.Tick] advances the clock before a cycle, the
// schedule's interval.
const Interval = 30 * time.Second

// org is the organisation of the reference server's tickets.
const org = refservertest.Org

// Options says what the loop runs.
type Options struct {
	// Name is the adapter's name, logged with every line as "adapter".
	Name string
	// Helpdesk is the helpdesk's name in failure messages ("Zendesk").
	Helpdesk string
	// Clock is the fake clock of a loop whose helpdesk keeps real time
	// outside the test's process; start it at the real time. Nil means
	// the runtime's clock, and then the loop must be made in a
	// testing/synctest bubble, where [Loop.Advance]'s sleep takes no time.
	Clock *refservertest.Clock
	// Interval is the schedule's interval, how far [Loop.Tick] advances
	// the clock; zero means [Interval]. A helpdesk asking for a longer
	// wait than it is put off (sync.PutOff): a fake whose rate limit asks
	// for a minute runs on a schedule of a minute to sit it out.
	Interval time.Duration
	// Open opens a fresh adapter on the test's backend, logging to logger.
	// The loop calls it each time it (re)starts the engine, so that a
	// restart keeps nothing in the adapter's memory either.
	Open func(logger *slog.Logger) (adapters.Helpdesk, error)
}

// Loop is the whole bridge of one test. Its fields are for the test's own
// assertions; the engine is restarted by the loop only.
type Loop struct {
	// Server is the reference guest API, served to the engine on
	// in-memory connections.
	Server *refserver.Server

	clock *refservertest.Clock // nil: the runtime's
	api   *http.Client
	key   string

	t      *testing.T
	opts   Options
	path   string
	store  *state.Store
	engine *tbsync.Engine
	logs   *testutil.Buffer
}

// New returns the loop of t; the engine starts at the first [Loop.Tick].
func New(t *testing.T, opts Options) *Loop {
	t.Helper()
	if opts.Open == nil {
		t.Fatal("looptest: Options.Open is nil")
	}
	if opts.Interval <= 0 {
		opts.Interval = Interval
	}
	l := &Loop{clock: opts.Clock, t: t, opts: opts, path: filepath.Join(t.TempDir(), "state.db"), logs: &testutil.Buffer{}}
	var ro refserver.Options
	if l.clock != nil {
		ro.Now, ro.Sleep = l.clock.Now, l.clock.Sleep
	}
	l.Server = refserver.New(ro)
	if err := l.Server.AddOrganization(org, "hotel"); err != nil {
		t.Fatalf("looptest: %v", err)
	}
	k, err := l.Server.IssueKey(org, refserver.KeySpec{Name: "tickets-write", Platform: refserver.PlatformRead, Tickets: refserver.TicketsWrite})
	if err != nil {
		t.Fatalf("looptest: %v", err)
	}
	l.key = k.Value
	l.api = &http.Client{Transport: testutil.PipeServer(t, l.Server)}
	t.Cleanup(func() {
		if l.store != nil {
			l.store.Close()
		}
	})
	return l
}

// open (re)starts the engine on the state file with a fresh adapter.
func (l *Loop) open() {
	l.t.Helper()
	if l.store != nil {
		l.store.Close()
	}
	st, err := state.Open(l.t.Context(), l.path, state.Options{Now: l.now()})
	if err != nil {
		l.t.Fatal(err)
	}
	l.store = st
	api, err := guestapi.New(guestapi.Config{
		BaseURL: testutil.PipeURL, APIKey: l.key, HTTPClient: l.api, Now: l.now(),
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() },
	})
	if err != nil {
		l.t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(l.logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("adapter", l.opts.Name)
	hd, err := l.opts.Open(logger)
	if err != nil {
		l.t.Fatal(err)
	}
	cfg := tbsync.DefaultConfig()
	cfg.Schedule = tbsync.Every(l.opts.Interval)
	eng, err := tbsync.New(cfg, tbsync.Deps{API: api, Helpdesk: hd, Store: st, Logger: logger, Now: l.now()})
	if err != nil {
		l.t.Fatal(err)
	}
	l.engine = eng
}

// now is the clock of the engine, its state and the reference server.
func (l *Loop) now() func() time.Time {
	if l.clock == nil {
		return time.Now
	}
	return l.clock.Now
}

// Advance lets d pass: it sleeps on the runtime's clock (in a bubble, at
// once), or advances the fake one.
func (l *Loop) Advance(d time.Duration) {
	if l.clock == nil {
		time.Sleep(d)
		return
	}
	l.clock.Advance(d)
}

// Tick advances the clock by the interval ([Options.Interval]) and runs a cycle, starting the
// engine if it is not running. A cycle that fails fails the test.
func (l *Loop) Tick() tbsync.Report {
	l.t.Helper()
	l.Advance(l.opts.Interval)
	if l.engine == nil {
		l.open()
	}
	rep, err := l.engine.RunCycle(context.Background())
	if err != nil {
		l.t.Fatalf("cycle: %v\n%+v", err, rep)
	}
	return rep
}

// Command applies an operator's command (tbsync.Apply: pause, resume,
// resync, unlink) on request id, as the command line does, starting the engine
// if it is not running. A refusal fails the test.
func (l *Loop) Command(name, id string) tbsync.Done {
	l.t.Helper()
	return l.apply(tbsync.Command{Name: name, Ticket: id})
}

// Connect applies an operator's connect of request id to helpdesk ticket
// ref, as Command does.
func (l *Loop) Connect(id, ref string) tbsync.Done {
	l.t.Helper()
	return l.apply(tbsync.Command{Name: tbsync.CommandConnect, Ticket: id, Ref: ref})
}

func (l *Loop) apply(cmd tbsync.Command) tbsync.Done {
	l.t.Helper()
	if l.engine == nil {
		l.open()
	}
	cmd.Who = "cli:looptest"
	d, err := tbsync.Apply(context.Background(), l.store, cmd, l.now()())
	if err != nil {
		l.t.Fatalf("looptest: %v", err)
	}
	return d
}

// Settle runs cycles until three in a row do nothing, and fails the test
// if sixty do not get there.
func (l *Loop) Settle() {
	l.t.Helper()
	quiet := 0
	for range 60 {
		r := l.Tick()
		if r.Created+r.Adopted+r.Mirrored+r.StatusDown+r.Events+r.Sent+r.Errors == 0 {
			quiet++
			if quiet == 3 {
				return
			}
		} else {
			quiet = 0
		}
	}
	l.t.Fatal("no three quiet cycles in 60")
}

// LoseState deletes the state file and restarts the engine on an empty one
// with a fresh adapter, as after a lost disk.
func (l *Loop) LoseState() {
	l.t.Helper()
	if l.store != nil {
		l.store.Close()
		l.store = nil
	}
	if err := os.Remove(l.path); err != nil {
		l.t.Fatal(err)
	}
	l.open()
}

// Request creates a guest request upstream, as the hotel's console does,
// and returns its id.
func (l *Loop) Request(department, description string) string {
	l.t.Helper()
	tv, err := l.Server.CreateTicket(org, refserver.NewTicket{Department: department, TaskDescription: description})
	if err != nil {
		l.t.Fatal(err)
	}
	return tv.ID
}

// Guest writes body into request id as the guest.
func (l *Loop) Guest(id, body string) {
	l.t.Helper()
	if _, err := l.Server.AddMessage(id, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, AuthorName: "Ada Guest", Body: body}); err != nil {
		l.t.Fatal(err)
	}
}

// Upstream returns request id as the reference server holds it.
func (l *Loop) Upstream(id string) refserver.InternalView {
	l.t.Helper()
	view, err := l.Server.Ticket(id)
	if err != nil {
		l.t.Fatal(err)
	}
	return view
}

// Logs returns everything the engine and the adapter logged so far.
func (l *Loop) Logs() string { return l.logs.String() }

// Status returns what `ticketbridge status` shows of the loop's state,
// the engine started if it was not.
func (l *Loop) Status() tbsync.Status {
	l.t.Helper()
	if l.engine == nil {
		l.open()
	}
	s, err := tbsync.ReadStatus(l.t.Context(), l.store, l.now()())
	if err != nil {
		l.t.Fatal(err)
	}
	return s
}

// Post is one post of the helpdesk ticket, as the test found it.
type Post struct {
	Body string
	// Bridge is whether the bridge wrote it; otherwise an agent did.
	Bridge bool
}

// CheckExactlyOnce checks request id against the posts of its helpdesk
// ticket: each upstream message not posted by the bridge is among the
// bridge's posts once (by its "[ticketbridge message ID]" marker), no
// post of the bridge came back into the helpdesk, and each agent post is
// upstream once (by its body, which must be the text upstream holds).
func (l *Loop) CheckExactlyOnce(id string, posts []Post) {
	l.t.Helper()
	view := l.Upstream(id)
	upBodies := map[string]int{}
	for _, m := range view.Messages {
		upBodies[m.Body]++
	}
	for _, m := range view.Messages {
		n := 0
		for _, p := range posts {
			if p.Bridge && strings.HasSuffix(p.Body, "[ticketbridge message "+m.ID+"]") {
				n++
			}
		}
		switch {
		case m.External && n != 0:
			l.t.Errorf("the bridge's own post %q echoed into %s %d times", m.Body, l.opts.Helpdesk, n)
		case !m.External && n != 1:
			l.t.Errorf("upstream message %q is in %s %d times, want once", m.Body, l.opts.Helpdesk, n)
		}
	}
	for _, p := range posts {
		if !p.Bridge && upBodies[p.Body] != 1 {
			l.t.Errorf("agent post %q is upstream %d times, want once", p.Body, upBodies[p.Body])
		}
	}
}
