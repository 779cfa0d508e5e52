package zendesk_test

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
	"github.com/ticketbridge/ticketbridge/adapters/zendesk"
	"github.com/ticketbridge/ticketbridge/adapters/zendesk/zendeskfake"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// loop is the whole bridge on one fake clock: the reference server, the
// engine with its state file, and the zendesk adapter on the fake account.
type loop struct {
	t      *testing.T
	clock  *refservertest.Clock
	ts     *refservertest.TestServer
	fake   *zendeskfake.Server
	zd     *httptest.Server
	path   string
	store  *state.Store
	engine *tbsync.Engine
	logs   *syncBuffer
}

func newLoop(t *testing.T) *loop {
	clock := refservertest.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	fake := zendeskfake.New(zendeskfake.Options{Email: testEmail, Token: testToken, Now: clock.Now})
	zd := httptest.NewServer(fake)
	t.Cleanup(zd.Close)
	l := &loop{
		t: t, clock: clock, ts: refservertest.New(t, refservertest.WithClock(clock)), fake: fake, zd: zd,
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
	logger := slog.New(slog.NewTextHandler(l.logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("adapter", zendesk.Name)
	hd, err := zendesk.New(zendesk.Config{URL: l.zd.URL, Email: testEmail, Token: testToken}, adapters.Deps{Logger: logger}, zendesk.Options{
		HTTP: l.zd.Client(),
		Sleep: func(ctx context.Context, d time.Duration) error {
			l.clock.Advance(d)
			return ctx.Err()
		},
		Now: l.clock.Now,
	})
	if err != nil {
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

// zendeskTicket returns the one Zendesk ticket of upstream ticket id.
func (l *loop) zendeskTicket(id string) zendeskfake.Ticket {
	l.t.Helper()
	var found []zendeskfake.Ticket
	for _, t := range l.fake.Tickets() {
		if t.ExternalID == "ticketbridge:"+id {
			found = append(found, t)
		}
	}
	if len(found) != 1 {
		l.t.Fatalf("upstream ticket %s has %d Zendesk tickets, want 1", id, len(found))
	}
	return found[0]
}

// checkExactlyOnce checks that each upstream message not posted by the
// bridge is in Zendesk once, that no bridge post came back, and that each
// agent comment is upstream once.
func (l *loop) checkExactlyOnce(id string) {
	l.t.Helper()
	view, err := l.ts.Server.Ticket(id)
	if err != nil {
		l.t.Fatal(err)
	}
	zt := l.zendeskTicket(id)
	me := l.fake.APIUserID()
	upBodies := map[string]int{}
	for _, m := range view.Messages {
		upBodies[m.Body]++
	}
	for _, m := range view.Messages {
		n := 0
		for _, c := range zt.Comments {
			if c.AuthorID == me && strings.HasSuffix(c.Body, "[ticketbridge message "+m.ID+"]") {
				n++
			}
		}
		switch {
		case m.External && n != 0:
			l.t.Errorf("the bridge's own post %q echoed into Zendesk %d times", m.Body, n)
		case !m.External && n != 1:
			l.t.Errorf("upstream message %q is in Zendesk %d times, want once", m.Body, n)
		}
	}
	for _, c := range zt.Comments {
		if c.AuthorID != me && upBodies[c.Body] != 1 {
			l.t.Errorf("agent comment %q is upstream %d times, want once", c.Body, upBodies[c.Body])
		}
	}
}

// TestEndToEnd plays the whole loop: the reference server, the engine and
// the adapter on the fake Zendesk account over loopback HTTP.
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
	zt := l.zendeskTicket(id)
	if zt.Status != "new" || len(zt.Comments) != 2 || !strings.Contains(zt.Comments[1].Body, "Could they be blue?") {
		t.Fatalf("Zendesk ticket after the first cycle: %+v", zt)
	}

	// The team answers in Zendesk; a minute later the export shows it.
	maria := l.fake.AddAgent("Maria")
	if _, err := l.fake.Update(zt.ID, maria, zendeskfake.AgentUpdate{Body: "Blue towels are on the way.", Public: true, Status: "pending"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.fake.Note(zt.ID, maria, "Housekeeping has been told."); err != nil {
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
	if view.Ticket.Status != guestapi.StatusInProgress {
		t.Errorf("upstream status %s after the agent's pending, want in_progress", view.Ticket.Status)
	}
	if got := l.zendeskTicket(id).Status; got != "pending" {
		t.Errorf("the engine overwrote the agent's pending with %s", got)
	}

	// The guest answers, the hotel closes the request upstream.
	l.guest(id, "Thank you!")
	if err := l.ts.Server.SetStatus(id, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	l.clock.Advance(15 * time.Minute) // the ticket backed off meanwhile
	l.settle()
	zt = l.zendeskTicket(id)
	if zt.Status != "solved" {
		t.Errorf("Zendesk status %s after upstream done, want solved", zt.Status)
	}
	l.checkExactlyOnce(id)

	// The state file is lost: a rescan adopts the ticket and writes
	// nothing twice, on either side.
	// A day later, so that the API no longer remembers the
	// Idempotency-Keys: only what MarkSent recorded in Zendesk keeps the
	// agent's work from going up twice.
	comments, upstream := len(zt.Comments), len(view.Messages)
	l.clock.Advance(25 * time.Hour)
	l.store.Close()
	l.store = nil
	if err := os.Remove(l.path); err != nil {
		t.Fatal(err)
	}
	l.open()
	l.settle()
	if got := len(l.zendeskTicket(id).Comments); got != comments {
		t.Errorf("after the state loss Zendesk holds %d comments, had %d", got, comments)
	}
	view, _ = l.ts.Server.Ticket(id)
	if got := len(view.Messages); got != upstream+1 { // the guest's "Thank you!"
		t.Errorf("after the state loss upstream holds %d messages, want %d", got, upstream+1)
	}
	l.checkExactlyOnce(id)
	if strings.Contains(l.logs.String(), "level=ERROR") {
		t.Errorf("errors logged:\n%s", l.logs.String())
	}
	if strings.Contains(l.logs.String(), testToken) {
		t.Errorf("the token is in the log")
	}
}
