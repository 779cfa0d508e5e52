package sync_test

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/files"
	"github.com/ticketbridge/ticketbridge/adapters/memory"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// start is the fake clock's first reading in every test.
var start = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// env is one hotel: a reference server, a helpdesk, a state file and an
// engine, all on one fake clock.
type env struct {
	// advise is the engine's Deps.Advise; nil for none.
	advise  func(error) error
	t       testing.TB
	clock   *refservertest.Clock
	ts      *refservertest.TestServer
	backend *memory.Backend
	hd      adapters.Helpdesk // the adapter of the current engine
	path    string            // the state file
	store   *state.Store
	engine  *tbsync.Engine
	cfg     tbsync.Config
	key     string
	logs    *testutil.Buffer

	// wrapAPI and wrapHD, when set, wrap the two sides of every engine
	// made after they are set.
	// filesDir, when set, makes open use the files adapter in it instead
	// of the memory helpdesk.
	filesDir string

	wrapAPI func(tbsync.API) tbsync.API
	wrapHD  func(adapters.Helpdesk) adapters.Helpdesk
	wrapRT  func(http.RoundTripper) http.RoundTripper
	// imports, when set, is the engines' Deps.Imports.
	imports *tbsync.Imports
	// serves, when set, is the engines' Deps.Serves.
	serves *tbsync.Serves
}

func testConfig() tbsync.Config {
	c := tbsync.DefaultConfig()
	c.Concurrency = 3
	return c
}

func newEnv(t testing.TB, opts ...refservertest.Option) *env {
	t.Helper()
	clock := refservertest.NewClock(start)
	ts := refservertest.New(t, append([]refservertest.Option{refservertest.WithClock(clock)}, opts...)...)
	b := memory.NewBackend()
	b.SetClock(clock.Now)
	e := &env{
		t: t, clock: clock, ts: ts, backend: b,
		path: filepath.Join(t.TempDir(), "state.db"),
		cfg:  testConfig(),
		key:  ts.Keys.TicketsWrite,
		logs: &testutil.Buffer{},
	}
	t.Cleanup(func() {
		if e.store != nil {
			e.store.Close()
		}
	})
	return e
}

// client returns an API client with key on the fake clock; retries do not
// wait.
func (e *env) client(key string) *guestapi.Client {
	hc := e.ts.Client()
	if e.wrapRT != nil {
		hc = &http.Client{Transport: e.wrapRT(hc.Transport)}
	}
	c, err := guestapi.New(guestapi.Config{
		BaseURL: e.ts.URL, APIKey: key, HTTPClient: hc, Now: e.clock.Now,
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() },
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// open (re)makes the engine on the state file, as a restart does.
func (e *env) open() *tbsync.Engine {
	e.t.Helper()
	if e.store != nil {
		e.store.Close()
	}
	st, err := state.Open(e.t.Context(), e.path, state.Options{Now: e.clock.Now})
	if err != nil {
		e.t.Fatal(err)
	}
	e.store = st
	var api tbsync.API = e.client(e.key)
	if e.wrapAPI != nil {
		api = e.wrapAPI(api)
	}
	var hd adapters.Helpdesk = memory.New(e.backend, memory.Options{})
	if e.filesDir != "" {
		if e.hd != nil {
			e.hd.Close()
		}
		fa, err := files.New(context.Background(), files.Options{Dir: e.filesDir})
		if err != nil {
			e.t.Fatal(err)
		}
		hd = fa
		e.t.Cleanup(func() { fa.Close() })
	}
	if e.wrapHD != nil {
		hd = e.wrapHD(hd)
	}
	e.hd = hd
	logger := slog.New(slog.DiscardHandler)
	if e.logs != nil { // nil: no log kept
		logger = slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("adapter", hd.Name())
	}
	eng, err := tbsync.New(e.cfg, tbsync.Deps{API: api, Helpdesk: hd, Store: st, Logger: logger, Now: e.clock.Now,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }, Imports: e.imports, Advise: e.advise, Serves: e.serves})
	if err != nil {
		e.t.Fatal(err)
	}
	e.engine = eng
	return eng
}

// cycle runs one cycle and fails the test when it fails.
func (e *env) cycle() tbsync.Report {
	e.t.Helper()
	if e.engine == nil {
		e.open()
	}
	rep, err := e.engine.RunCycle(context.Background())
	if err != nil {
		e.t.Fatalf("cycle: %v\n%s", err, rep)
	}
	return rep
}

// tick advances the clock by the schedule's interval and runs a cycle.
func (e *env) tick() tbsync.Report {
	e.t.Helper()
	e.clock.Advance(30 * time.Second)
	return e.cycle()
}

// quiesce runs cycles, a day of them at most, until one does nothing.
func (e *env) quiesce() {
	e.t.Helper()
	for i := 0; i < 50; i++ {
		r := e.tick()
		if r.Created+r.Adopted+r.Mirrored+r.StatusDown+r.Events+r.Sent+r.Errors == 0 && i > 2 {
			return
		}
	}
	e.t.Fatal("no quiet cycle after 50")
}

// newTicket creates a ticket in Org with one guest message.
func (e *env) newTicket(desc string) string {
	e.t.Helper()
	tv, err := e.ts.Server.CreateTicket(e.ts.Org, refserver.NewTicket{Department: "housekeeping", TaskDescription: desc})
	if err != nil {
		e.t.Fatal(err)
	}
	e.guest(tv.ID, "first message of "+desc)
	return tv.ID
}

// guest writes as the guest.
func (e *env) guest(id, body string) string {
	e.t.Helper()
	m, err := e.ts.Server.AddMessage(id, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, AuthorName: "Guest", Body: body})
	if err != nil {
		e.t.Fatal(err)
	}
	return m.ID
}

// ref returns the one helpdesk ticket of upstream ticket id.
func (e *env) ref(id string) adapters.Ref {
	e.t.Helper()
	refs := e.backend.Find(id)
	if len(refs) != 1 {
		e.t.Fatalf("ticket %s has %d helpdesk tickets, want 1", id, len(refs))
	}
	return refs[0]
}

// upstream returns the console's view of a ticket.
func (e *env) upstream(id string) refserver.InternalView {
	e.t.Helper()
	v, err := e.ts.Server.Ticket(id)
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}

// posts counts the POSTs the server answered.
func (e *env) posts() int {
	n := 0
	for route, byStatus := range e.ts.Server.Stats().Requests {
		if len(route) > 5 && route[:5] == "POST " && route != "POST /api-auth/token" {
			for _, c := range byStatus {
				n += c
			}
		}
	}
	return n
}

// checkExactlyOnce checks that every upstream message of Org is in its
// helpdesk ticket once (except the bridge's own posts, which are not
// there at all), that every agent message is upstream once, and that no
// ticket has two helpdesk tickets.
func (e *env) checkExactlyOnce() {
	e.t.Helper()
	for _, tv := range e.ts.Server.Tickets(e.ts.Org) {
		refs := e.backend.Find(tv.ID)
		if len(refs) > 1 {
			e.t.Errorf("ticket %s: %d helpdesk tickets", tv.ID, len(refs))
		}
		if len(refs) == 0 {
			continue
		}
		view := e.upstream(tv.ID)
		hdMsgs := e.backend.Messages(refs[0])
		upCount := map[string]int{}
		bodies := map[string]int{}
		for _, m := range view.Messages {
			upCount[m.ID]++
			bodies[m.Body]++
		}
		held := map[string]int{}
		for _, m := range hdMsgs {
			if m.ByBridge && m.UpstreamID == "" {
				continue // the bridge's own note (a rating, a console comment)
			}
			if m.UpstreamID != "" {
				held[m.UpstreamID]++
				continue
			}
			// An agent message: upstream exactly once.
			if bodies[m.Body] != 1 {
				e.t.Errorf("ticket %s: agent message %q is upstream %d times", tv.ID, m.Body, bodies[m.Body])
			}
		}
		for _, m := range view.Messages {
			switch {
			case m.External:
				if held[m.ID] != 0 {
					e.t.Errorf("ticket %s: the bridge's own post %q echoed into the helpdesk %d times", tv.ID, m.Body, held[m.ID])
				}
			case held[m.ID] != 1:
				e.t.Errorf("ticket %s: upstream message %q is in the helpdesk %d times", tv.ID, m.Body, held[m.ID])
			}
		}
	}
}
