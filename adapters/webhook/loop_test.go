package webhook_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/adapters/webhook/receiver"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// loop is the whole bridge: the reference API in process on a fake clock,
// the engine, the webhook adapter, and the receiver as a process of its
// own. The adapter and the receiver sign with the real clock, which the
// fake one does not touch.
type loop struct {
	t      *testing.T
	clock  *refservertest.Clock
	ts     *refservertest.TestServer
	p      *receiverProcess
	a      *webhook.Adapter
	st     *state.Store
	eng    *tbsync.Engine
	path   string
	logs   *logBuffer
	ticket string
}

func (l *loop) openEngine() {
	l.t.Helper()
	if l.st != nil {
		l.st.Close()
	}
	st, err := state.Open(l.path, state.Options{Now: l.clock.Now})
	if err != nil {
		l.t.Fatal(err)
	}
	l.st = st
	api, err := guestapi.New(guestapi.Config{BaseURL: l.ts.URL, APIKey: l.ts.Keys.TicketsWrite, HTTPClient: l.ts.Client(), Now: l.clock.Now,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	if err != nil {
		l.t.Fatal(err)
	}
	l.eng, err = tbsync.New(tbsync.DefaultConfig(), tbsync.Deps{API: api, Helpdesk: l.a, Store: st, Now: l.clock.Now, Logger: l.logs.logger()})
	if err != nil {
		l.t.Fatal(err)
	}
}

func (l *loop) cycle() tbsync.Report {
	l.t.Helper()
	l.clock.Advance(30 * time.Second)
	rep, err := l.eng.RunCycle(l.t.Context())
	if err != nil || rep.Errors != 0 {
		l.t.Fatalf("cycle: %v\n%+v\nlog:\n%s", err, rep, l.logs)
	}
	return rep
}

// count returns how many deliveries of event the receiver recorded.
func (l *loop) count(event string) int {
	n := 0
	for _, d := range l.p.recorded(l.t) {
		if d.Event == event {
			n++
		}
	}
	return n
}

// upstream returns the bodies of the ticket's messages upstream, with
// how often each is there.
func (l *loop) upstream() (refserver.InternalView, map[string]int) {
	l.t.Helper()
	v, err := l.ts.Server.Ticket(l.ticket)
	if err != nil {
		l.t.Fatal(err)
	}
	n := map[string]int{}
	for _, m := range v.Messages {
		n[m.Body]++
	}
	return v, n
}

// TestEndToEndLoopWithEngine runs guest messages down to the receiver and
// its replies and status change back up to the guest through the engine.
func TestEndToEndLoopWithEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a separate process")
	}
	ctx := t.Context()
	l := &loop{t: t, clock: refservertest.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)), logs: &logBuffer{},
		path: filepath.Join(t.TempDir(), "state.db")}
	l.ts = refservertest.New(t, refservertest.WithClock(l.clock))
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.p = startReceiver(t, buildReceiver(t), "http://"+ln.Addr().String()+webhook.InboundPath)
	l.a, err = webhook.New(ctx, webhook.Config{URL: l.p.url + "hooks", Secret: testSecret, Dir: t.TempDir()},
		webhook.Options{Listener: ln, Logger: l.logs.logger().With("adapter", "webhook")})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer l.a.Close()
	defer func() {
		if l.st != nil {
			l.st.Close()
		}
	}()

	tv, err := l.ts.Server.CreateTicket(l.ts.Org, refserver.NewTicket{Department: "housekeeping", TaskDescription: "Two towels to room 214"})
	if err != nil {
		t.Fatal(err)
	}
	l.ticket = tv.ID
	guest := func(body string) {
		if _, err := l.ts.Server.AddMessage(tv.ID, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, AuthorName: "Ada", Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	guest("Two more towels, please.")

	// Down: the ticket and the guest's message reach the receiver, which
	// answers the message at once; the reply goes up on the next cycle.
	l.openEngine()
	if r := l.cycle(); r.Created != 1 || r.Mirrored != 1 {
		t.Fatalf("first cycle: %+v", r)
	}
	if l.count(webhook.EventTicketCreated) != 1 || l.count(webhook.EventMessageAdded) != 1 {
		t.Fatalf("receiver recorded %+v", l.p.recorded(t))
	}
	if r := l.cycle(); r.Events != 1 || r.Sent != 1 {
		t.Fatalf("reply cycle: %+v", r)
	}
	view, bodies := l.upstream()
	if bodies[receiver.DefaultReplyText] != 1 {
		t.Fatalf("upstream holds the reply %d times, want 1: %+v", bodies[receiver.DefaultReplyText], view.Messages)
	}
	for _, m := range view.Messages {
		if m.Body == receiver.DefaultReplyText && (!m.VisibleToGuest || !m.External || m.AuthorName != receiver.DefaultReplyAuthor) {
			t.Errorf("the reply upstream is %+v; want visible to the guest, external, by %q", m, receiver.DefaultReplyAuthor)
		}
	}

	// The receiver's staff closes the ticket.
	status := mustJSON(t, webhook.InboundEvent{ID: "rx-status-1", Type: webhook.InboundStatus, TicketID: tv.ID, Status: "done", AuthorName: "Anna"})
	if code, ans := post(t, l.a.InboundURL(), testSecret, time.Now(), status); code != 200 {
		t.Fatalf("inbound status: %d %+v", code, ans)
	}
	l.cycle()
	if view, _ := l.upstream(); view.Ticket.Status != guestapi.StatusDone {
		t.Fatalf("upstream status %q, want done", view.Ticket.Status)
	}

	// The guest writes again; the receiver answers again.
	guest("Also a bathrobe, if possible.")
	for range 3 {
		l.cycle()
	}
	_, bodies = l.upstream()
	if bodies[receiver.DefaultReplyText] != 2 {
		t.Fatalf("upstream holds %d replies, want 2 (one per guest message)", bodies[receiver.DefaultReplyText])
	}

	// Nothing echoes: the bridge's own posts and the receiver's own status
	// are not delivered back.
	deliveries := len(l.p.recorded(t))
	if n := l.count(webhook.EventMessageAdded); n != 2 {
		t.Errorf("%d message.added deliveries, want 2 (the guest's; not the bridge's own replies)", n)
	}
	if n := l.count(webhook.EventStatusChanged); n != 0 {
		t.Errorf("%d status.changed deliveries; the receiver's own change came back", n)
	}

	// The bridge's state is lost: the adapter's record lets the engine adopt
	// the ticket without a second ticket.created, message or reply.
	if err := l.st.Close(); err != nil {
		t.Fatal(err)
	}
	l.st = nil
	if err := os.Remove(l.path); err != nil {
		t.Fatal(err)
	}
	l.openEngine()
	for range 4 {
		l.cycle()
	}
	if n := len(l.p.recorded(t)); n != deliveries+1 { // + the ping of the new engine's check
		var events []string
		for _, d := range l.p.recorded(t)[deliveries:] {
			events = append(events, d.Event)
		}
		t.Errorf("after the state was lost the receiver got %s", strings.Join(events, ", "))
	}
	_, after := l.upstream()
	if fmt.Sprint(after) != fmt.Sprint(bodies) {
		t.Errorf("upstream messages changed after the state was lost: %v, before %v", after, bodies)
	}
}
