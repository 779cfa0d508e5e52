package webhook_test

import (
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/adapters/webhook/receiver"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/internal/looptest"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// loop is the whole bridge of package looptest with the webhook adapter,
// and the receiver as a process of its own. The adapter and the receiver
// sign with the real clock, which the fake one does not touch.
type loop struct {
	*looptest.Loop
	t      *testing.T
	p      *receiverProcess
	a      *webhook.Adapter
	ticket string
}

// cycle runs one cycle, which must record no error.
func (l *loop) cycle() tbsync.Report {
	l.t.Helper()
	rep := l.Tick()
	if rep.Errors != 0 {
		l.t.Fatalf("cycle: %+v\nlog:\n%s", rep, l.Logs())
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
	v := l.Upstream(l.ticket)
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
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &loop{t: t, p: startReceiver(t, buildReceiver(t), "http://"+ln.Addr().String()+webhook.InboundPath)}
	dir := t.TempDir()
	// The adapter lives as long as the test: its listener is where the
	// receiver posts. A restart of the engine finds it as it was, as a new
	// adapter on the same directory would.
	l.Loop = looptest.New(t, looptest.Options{
		Name: "webhook", Helpdesk: "the receiver",
		// A fake clock: the receiver is a process of its own, which no
		// testing/synctest bubble can hold.
		Clock: refservertest.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)),
		Open: func(logger *slog.Logger) (adapters.Helpdesk, error) {
			if l.a != nil {
				return l.a, nil
			}
			a, err := webhook.New(ctx, webhook.Config{URL: l.p.url + "hooks", Secret: testSecret, Dir: dir},
				webhook.Options{Listener: ln, Logger: logger})
			if err != nil {
				return nil, err
			}
			if err := a.Start(ctx); err != nil {
				a.Close()
				return nil, err
			}
			t.Cleanup(func() { a.Close() })
			l.a = a
			return a, nil
		},
	})
	l.ticket = l.Request("housekeeping", "Two towels to room 214")
	guest := func(body string) { l.Guest(l.ticket, body) }
	guest("Two more towels, please.")

	// Down: the ticket and the guest's message reach the receiver, which
	// answers the message at once; the reply goes up on the next cycle.
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
	status := mustJSON(t, webhook.InboundEvent{ID: "rx-status-1", Type: webhook.InboundStatus, TicketID: l.ticket, Status: "done", AuthorName: "Anna"})
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
	l.LoseState()
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
