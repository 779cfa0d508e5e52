package zammad_test

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
	"github.com/ticketbridge/ticketbridge/adapters/zammad"
	"github.com/ticketbridge/ticketbridge/adapters/zammad/zammadfake"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// loop is the whole bridge on one fake clock: the reference server, the
// engine with its state file, and the zammad adapter on the fake Zammad.
type loop struct {
	t      *testing.T
	clock  *refservertest.Clock
	ts     *refservertest.TestServer
	fake   *zammadfake.Server
	zm     *httptest.Server
	path   string
	store  *state.Store
	engine *tbsync.Engine
	logs   *syncBuffer
}

func newLoop(t *testing.T) *loop {
	clock := refservertest.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	fake := zammadfake.New(zammadfake.Options{
		Token: testToken, Now: clock.Now, Groups: []string{"Users", "Housekeeping"},
		Attributes: []zammadfake.Attribute{{Name: testField, Display: "Guest request"}},
	})
	zm := httptest.NewServer(fake)
	t.Cleanup(zm.Close)
	l := &loop{
		t: t, clock: clock, ts: refservertest.New(t, refservertest.WithClock(clock)), fake: fake, zm: zm,
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
	logger := slog.New(slog.NewTextHandler(l.logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("adapter", zammad.Name)
	hd, err := zammad.New(zammad.Config{URL: l.zm.URL, Token: testToken, Customer: testCustomer, Groups: "housekeeping=Housekeeping"},
		adapters.Deps{Logger: logger}, zammad.Options{
			HTTP: l.zm.Client(),
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

// zammadTicket returns the one Zammad ticket of upstream ticket id.
func (l *loop) zammadTicket(id string) zammadfake.Ticket {
	l.t.Helper()
	var found []zammadfake.Ticket
	for _, t := range l.fake.Tickets() {
		if t.Attributes[testField] == id {
			found = append(found, t)
		}
	}
	if len(found) != 1 {
		l.t.Fatalf("upstream ticket %s has %d Zammad tickets, want 1", id, len(found))
	}
	return found[0]
}

// checkExactlyOnce checks that each upstream message not posted by the
// bridge is in Zammad once, that no bridge post came back, and that each
// agent text is upstream once.
func (l *loop) checkExactlyOnce(id string, agentTexts ...string) {
	l.t.Helper()
	view, err := l.ts.Server.Ticket(id)
	if err != nil {
		l.t.Fatal(err)
	}
	zt := l.zammadTicket(id)
	me := l.fake.APIUserID()
	for _, m := range view.Messages {
		n := 0
		for _, a := range zt.Articles {
			if a.CreatedByID == me && strings.HasSuffix(a.Body, "[ticketbridge message "+m.ID+"]") {
				n++
			}
		}
		switch {
		case m.External && n != 0:
			l.t.Errorf("the bridge's own post %q echoed into Zammad %d times", m.Body, n)
		case !m.External && n != 1:
			l.t.Errorf("upstream message %q is in Zammad %d times, want once", m.Body, n)
		}
	}
	for _, text := range agentTexts {
		n := 0
		for _, m := range view.Messages {
			if m.Body == text {
				n++
			}
		}
		if n != 1 {
			l.t.Errorf("agent text %q is upstream %d times, want once", text, n)
		}
	}
}

// TestEndToEnd plays the whole loop: the reference server, the engine and
// the adapter on the fake Zammad over loopback HTTP.
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
	zt := l.zammadTicket(id)
	if zt.State != "new" || zt.Group != "Housekeeping" || len(zt.Articles) != 2 || !strings.Contains(zt.Articles[1].Body, "Could they be blue?") {
		t.Fatalf("Zammad ticket after the first cycle: %+v", zt)
	}

	// The team answers in Zammad's editor and sets a pending reminder in
	// the same save, then adds an internal note.
	maria := l.fake.AddAgent("Maria Rossi")
	reply, note := "Blue towels are on the way.", "Housekeeping has been told."
	if _, err := l.fake.Update(zt.ID, maria, zammadfake.AgentUpdate{Body: reply, HTML: true, State: "pending reminder"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.fake.Note(zt.ID, maria, note); err != nil {
		t.Fatal(err)
	}
	l.settle()
	view, _ := l.ts.Server.Ticket(id)
	var gotReply, gotNote *refserver.InternalMessage
	for i, m := range view.Messages {
		switch m.Body {
		case reply:
			gotReply = &view.Messages[i]
		case note:
			gotNote = &view.Messages[i]
		}
	}
	if gotReply == nil || !gotReply.VisibleToGuest || gotReply.AuthorName != "Maria Rossi" || gotNote == nil || gotNote.VisibleToGuest {
		t.Fatalf("upstream after the agent's work: reply %+v, note %+v", gotReply, gotNote)
	}
	if view.Ticket.Status != guestapi.StatusInProgress {
		t.Errorf("upstream status %s after the agent's pending reminder, want in_progress", view.Ticket.Status)
	}
	if got := l.zammadTicket(id).State; got != "pending reminder" {
		t.Errorf("the engine overwrote the agent's pending reminder with %s", got)
	}

	// The guest answers (which reopens the ticket), then the hotel closes
	// the request upstream.
	l.guest(id, "Thank you!")
	if err := l.ts.Server.SetStatus(id, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	l.clock.Advance(15 * time.Minute) // the ticket backed off meanwhile
	l.settle()
	zt = l.zammadTicket(id)
	if zt.State != "closed" {
		t.Errorf("Zammad state %s after upstream done, want closed", zt.State)
	}
	l.checkExactlyOnce(id, reply, note)

	// The state file is lost, a day later, so that the API no longer
	// remembers the Idempotency-Keys: only what the adapter finds in Zammad
	// (the attribute, the markers, the delivery notes) keeps anything from
	// being written twice, on either side.
	articles, upstream := len(zt.Articles), len(view.Messages)
	l.clock.Advance(25 * time.Hour)
	l.store.Close()
	l.store = nil
	if err := os.Remove(l.path); err != nil {
		t.Fatal(err)
	}
	l.open()
	l.settle()
	if got := len(l.zammadTicket(id).Articles); got != articles {
		t.Errorf("after the state loss Zammad holds %d articles, had %d", got, articles)
	}
	view, _ = l.ts.Server.Ticket(id)
	if got := len(view.Messages); got != upstream+1 { // the guest's "Thank you!"
		t.Errorf("after the state loss upstream holds %d messages, want %d", got, upstream+1)
	}
	l.checkExactlyOnce(id, reply, note)
	if strings.Contains(l.logs.String(), "level=ERROR") {
		t.Errorf("errors logged:\n%s", l.logs.String())
	}
	if strings.Contains(l.logs.String(), testToken) {
		t.Errorf("the token is in the log")
	}
}
