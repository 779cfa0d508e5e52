package freshdesk_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/freshdesk"
	"github.com/ticketbridge/ticketbridge/adapters/freshdesk/freshdeskfake"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// loop is the whole bridge on one fake clock: the reference server, the
// engine with its state file, and the freshdesk adapter on the fake
// helpdesk.
type loop struct {
	t      *testing.T
	clock  *refservertest.Clock
	ts     *refservertest.TestServer
	fake   *freshdeskfake.Server
	fd     *httptest.Server
	path   string
	store  *state.Store
	engine *tbsync.Engine
	logs   *syncBuffer
}

func newLoop(t *testing.T) *loop {
	clock := refservertest.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	fake := freshdeskfake.New(freshdeskfake.Options{APIKey: testKey, Now: clock.Now, MaxPerPage: 2, RateLimit: 6})
	fd := httptest.NewServer(fake)
	t.Cleanup(fd.Close)
	l := &loop{
		t: t, clock: clock, ts: refservertest.New(t, refservertest.WithClock(clock)), fake: fake, fd: fd,
		path: filepath.Join(t.TempDir(), "state.db"), logs: &syncBuffer{},
	}
	t.Cleanup(func() {
		if l.store != nil {
			l.store.Close()
		}
	})
	return l
}

// open (re)starts the engine on the state file with a fresh adapter.
func (l *loop) open() {
	l.t.Helper()
	if l.store != nil {
		l.store.Close()
	}
	st, err := state.Open(l.path, state.Options{Now: l.clock.Now})
	if err != nil {
		l.t.Fatal(err)
	}
	l.store = st
	api, err := guestapi.New(guestapi.Config{
		BaseURL: l.ts.URL, APIKey: l.ts.Keys.TicketsWrite, HTTPClient: l.ts.Client(), Now: l.clock.Now,
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() },
	})
	if err != nil {
		l.t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(l.logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("adapter", freshdesk.Name)
	hd, err := freshdesk.New(freshdesk.Config{URL: l.fd.URL, APIKey: testKey, PageSize: 2}, adapters.Deps{Logger: logger}, freshdesk.Options{
		HTTP: l.fd.Client(),
		Sleep: func(ctx context.Context, d time.Duration) error {
			l.clock.Advance(d)
			return ctx.Err()
		},
		Now: l.clock.Now,
	})
	if err != nil {
		l.t.Fatal(err)
	}
	if err := hd.Check(context.Background()); err != nil {
		l.t.Fatal(err)
	}
	eng, err := tbsync.New(tbsync.DefaultConfig(), tbsync.Deps{API: api, Helpdesk: hd, Store: st, Logger: logger, Now: l.clock.Now})
	if err != nil {
		l.t.Fatal(err)
	}
	l.engine = eng
}

// tick advances the clock by the schedule's interval and runs a cycle.
func (l *loop) tick() tbsync.Report {
	l.t.Helper()
	l.clock.Advance(30 * time.Second)
	if l.engine == nil {
		l.open()
	}
	rep, err := l.engine.RunCycle(context.Background())
	if err != nil {
		l.t.Fatalf("cycle: %v\n%+v", err, rep)
	}
	return rep
}

// settle runs cycles until three in a row do nothing.
func (l *loop) settle() {
	l.t.Helper()
	quiet := 0
	for range 60 {
		r := l.tick()
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

func (l *loop) guest(id, body string) {
	l.t.Helper()
	if _, err := l.ts.Server.AddMessage(id, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, AuthorName: "Ada Guest", Body: body}); err != nil {
		l.t.Fatal(err)
	}
}

// freshdeskTicket returns the one Freshdesk ticket of upstream ticket id.
func (l *loop) freshdeskTicket(id string) freshdeskfake.Ticket {
	l.t.Helper()
	var found []freshdeskfake.Ticket
	for _, t := range l.fake.Tickets() {
		if t.CustomFields["cf_guest_request_id"] == id {
			found = append(found, t)
		}
	}
	if len(found) != 1 {
		l.t.Fatalf("upstream ticket %s has %d Freshdesk tickets, want 1", id, len(found))
	}
	return found[0]
}

// checkExactlyOnce checks that each upstream message not posted by the
// bridge is in Freshdesk once, that no bridge post came back, and that each
// agent conversation is upstream once.
func (l *loop) checkExactlyOnce(id string) {
	l.t.Helper()
	view, err := l.ts.Server.Ticket(id)
	if err != nil {
		l.t.Fatal(err)
	}
	ft := l.freshdeskTicket(id)
	me := l.fake.APIAgentID()
	upBodies := map[string]int{}
	for _, m := range view.Messages {
		upBodies[m.Body]++
	}
	for _, m := range view.Messages {
		n := 0
		for _, c := range ft.Conversations {
			if c.UserID == me && strings.HasSuffix(c.BodyText, "[ticketbridge message "+m.ID+"]") {
				n++
			}
		}
		switch {
		case m.External && n != 0:
			l.t.Errorf("the bridge's own post %q echoed into Freshdesk %d times", m.Body, n)
		case !m.External && n != 1:
			l.t.Errorf("upstream message %q is in Freshdesk %d times, want once", m.Body, n)
		}
	}
	for _, c := range ft.Conversations {
		if c.UserID != me && upBodies[c.BodyText] != 1 {
			l.t.Errorf("agent conversation %q is upstream %d times, want once", c.BodyText, upBodies[c.BodyText])
		}
	}
}

// TestEndToEnd plays the whole loop: the reference server, the engine and
// the adapter on the fake Freshdesk over loopback HTTP, with pages of two
// and a budget of six requests a minute, which the loop meets often.
func TestEndToEnd(t *testing.T) {
	l := newLoop(t)
	tv, err := l.ts.Server.CreateTicket(l.ts.Org, refserver.NewTicket{Department: "housekeeping", TaskDescription: "Two towels to room 214"})
	if err != nil {
		t.Fatal(err)
	}
	id := tv.ID
	l.guest(id, "Could they be blue?")

	r := l.tick()
	if r.Created != 1 || r.Mirrored != 1 {
		t.Fatalf("first cycle: %+v", r)
	}
	ft := l.freshdeskTicket(id)
	if ft.Status != freshdeskfake.StatusOpen || len(ft.Conversations) != 1 || ft.Conversations[0].Private || !strings.Contains(ft.Conversations[0].BodyText, "Could they be blue?") {
		t.Fatalf("Freshdesk ticket after the first cycle: %+v", ft)
	}

	// The team answers, notes and resolves in Freshdesk.
	maria := l.fake.AddAgent("Maria")
	if _, err := l.fake.Reply(ft.ID, maria, "Blue towels are on the way."); err != nil {
		t.Fatal(err)
	}
	if _, err := l.fake.Note(ft.ID, maria, "Housekeeping has been told.", true); err != nil {
		t.Fatal(err)
	}
	if err := l.fake.SetStatus(ft.ID, maria, freshdeskfake.StatusResolved); err != nil {
		t.Fatal(err)
	}
	l.settle()
	view, _ := l.ts.Server.Ticket(id)
	var reply, note *refserver.InternalMessage
	for i, m := range view.Messages {
		switch m.Body {
		case "Blue towels are on the way.":
			reply = &view.Messages[i]
		case "Housekeeping has been told.":
			note = &view.Messages[i]
		}
	}
	if reply == nil || !reply.VisibleToGuest || reply.AuthorName != "Maria" || note == nil || note.VisibleToGuest {
		t.Fatalf("upstream after the agent's work: reply %+v, note %+v", reply, note)
	}
	if view.Ticket.Status != guestapi.StatusDone {
		t.Errorf("upstream status %s after the agent resolved, want done", view.Ticket.Status)
	}
	if got := l.freshdeskTicket(id).Status; got != freshdeskfake.StatusResolved {
		t.Errorf("Freshdesk status %d after the agent resolved, want it kept", got)
	}

	// The guest answers, which reopens the Freshdesk ticket; then the
	// hotel completes the request upstream.
	l.guest(id, "Thank you!")
	l.clock.Advance(15 * time.Minute) // the ticket backed off meanwhile
	l.settle()
	if got := l.freshdeskTicket(id).Status; got != freshdeskfake.StatusOpen {
		t.Errorf("Freshdesk status %d after the guest wrote, want open", got)
	}
	if err := l.ts.Server.SetStatus(id, guestapi.StatusCompleted); err != nil {
		t.Fatal(err)
	}
	l.clock.Advance(15 * time.Minute)
	l.settle()
	ft = l.freshdeskTicket(id)
	if ft.Status != freshdeskfake.StatusClosed {
		t.Errorf("Freshdesk status %d after upstream completed, want closed", ft.Status)
	}
	view, _ = l.ts.Server.Ticket(id)
	if view.Ticket.Status != guestapi.StatusCompleted {
		t.Errorf("upstream status %s, want completed kept", view.Ticket.Status)
	}
	l.checkExactlyOnce(id)

	// The state file is lost, a day later (the API no longer remembers the
	// Idempotency-Keys): a rescan adopts the ticket and writes nothing
	// twice, on either side.
	conversations, upstream := len(ft.Conversations), len(view.Messages)
	l.clock.Advance(25 * time.Hour)
	l.store.Close()
	l.store = nil
	if err := os.Remove(l.path); err != nil {
		t.Fatal(err)
	}
	l.open()
	l.settle()
	if got := len(l.freshdeskTicket(id).Conversations); got != conversations {
		t.Errorf("after the state loss Freshdesk holds %d conversations, had %d", got, conversations)
	}
	view, _ = l.ts.Server.Ticket(id)
	if got := len(view.Messages); got != upstream {
		t.Errorf("after the state loss upstream holds %d messages, had %d", got, upstream)
	}
	l.checkExactlyOnce(id)
	if strings.Contains(l.logs.String(), "level=ERROR") {
		t.Errorf("errors logged:\n%s", l.logs.String())
	}
	if strings.Contains(l.logs.String(), testKey) {
		t.Errorf("the API key is in the log")
	}
	if !strings.Contains(l.logs.String(), "status=429") {
		t.Errorf("the loop never met Freshdesk's request budget, so it did not exercise waiting out a 429")
	}
}
