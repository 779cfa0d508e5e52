package email

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/adaptertest"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/internal/looptest"
)

// posts returns the thread of request id in the department's mailbox as
// looptest counts posts: the bridge's messages with the marker of the
// upstream message they mirror, and the agent's replies and notes with
// the text the bridge carries of them.
func posts(t *testing.T, g *agent, id string) []looptest.Post {
	t.Helper()
	rootID, _, _, dept := g.root(adapters.Ref(id))
	user, _, _ := strings.Cut(dept, "@")
	var out []looptest.Post
	for _, m := range g.mails(user) {
		switch {
		case m.Header.Get(hTicket) == id && m.Header.Get(hKind) == kindMessage:
			out = append(out, looptest.Post{Bridge: true,
				Body: strings.TrimSpace(m.Body) + "\n" + adapters.Marker{Kind: adapters.MarkerMessage, ID: m.Header.Get(hMessage)}.Line()})
		case m.Header.Get(hTicket) == "" && strings.Contains(m.Header.Get("References"), rootID):
			text := strings.TrimSpace(m.Body)
			if strings.HasPrefix(text, "#status") {
				continue
			}
			text = strings.TrimSpace(strings.TrimPrefix(text, "#note"))
			out = append(out, looptest.Post{Body: text})
		}
	}
	return out
}

// TestEndToEnd plays the whole loop in process: the reference server, the
// engine, and the adapter on the in-process mail system, with an agent
// answering from a mail client; then the state file is lost a day later,
// when the API no longer remembers its Idempotency-Keys, and nothing is
// mailed or posted twice.
func TestEndToEnd(t *testing.T) {
	b, sys := memBackend(t)
	g := &agent{b: b, t: t, addr: "agent@" + b.domain}
	l := looptest.New(t, looptest.Options{
		Name: Name, Helpdesk: "the mailbox", Clock: refservertest.NewClock(time.Now().UTC()),
		Open: func(logger *slog.Logger) (adapters.Helpdesk, error) {
			return New(b.config(), adapters.Deps{Logger: logger})
		},
	})
	id := l.Request("housekeeping", "Two towels to room 214")
	l.Guest(id, "Could they be blue?")
	if rep := l.Tick(); rep.Created != 1 || rep.Mirrored != 1 {
		t.Fatalf("first cycle: %+v", rep)
	}
	ref := adapters.Ref(id)
	if err := g.Reply(t.Context(), ref, "Anna (housekeeping)", "Blue towels are on the way."); err != nil {
		t.Fatal(err)
	}
	if err := g.Note(t.Context(), ref, "Anna (housekeeping)", "Housekeeping has been told."); err != nil {
		t.Fatal(err)
	}
	if err := g.SetStatus(t.Context(), ref, "Anna (housekeeping)", "in progress"); err != nil {
		t.Fatal(err)
	}
	l.Settle()
	view := l.Upstream(id)
	var reply, note *refserver.InternalMessage
	for i, m := range view.Messages {
		switch m.Body {
		case "Blue towels are on the way.":
			reply = &view.Messages[i]
		case "Housekeeping has been told.":
			note = &view.Messages[i]
		}
	}
	if reply == nil || !reply.VisibleToGuest || reply.AuthorName != "Anna (housekeeping)" || note == nil || note.VisibleToGuest {
		t.Fatalf("upstream after the agent's mails: reply %+v, note %+v", reply, note)
	}
	if view.Ticket.Status != guestapi.StatusInProgress {
		t.Errorf("upstream status %s after the agent's #status in progress", view.Ticket.Status)
	}

	// The guest answers: the message follows in the thread.
	l.Guest(id, "Thank you!")
	l.Advance(15 * time.Minute)
	l.Settle()
	snap, err := g.Read(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if n := countText(snap.Messages, "Thank you!"); n != 1 {
		t.Errorf("the guest's next message is %d times in the thread, want once", n)
	}
	l.CheckExactlyOnce(id, posts(t, g, id))

	// The state file is lost a day later.
	mailed, upstream := sys.Taken(), len(l.Upstream(id).Messages)
	l.Advance(25 * time.Hour)
	l.LoseState()
	l.Settle()
	if got := sys.Taken(); got != mailed {
		t.Errorf("after the state loss the bridge mailed %d more mails", got-mailed)
	}
	if got := len(l.Upstream(id).Messages); got != upstream {
		t.Errorf("after the state loss upstream holds %d messages, had %d", got, upstream)
	}
	l.CheckExactlyOnce(id, posts(t, g, id))
	if logs := l.Logs(); strings.Contains(logs, "level=ERROR") || strings.Contains(logs, testKey) || strings.Contains(logs, b.password("bridge")) {
		t.Errorf("errors or secrets logged:\n%s", logs)
	}
}

func countText(msgs []adaptertest.SnapshotMessage, s string) int {
	n := 0
	for _, m := range msgs {
		if strings.Contains(m.Text, s) {
			n++
		}
	}
	return n
}

// TestBounceIsTheRequestsError plays a bounce through the engine: the
// department's mail of a request comes back undelivered. The request
// shows the bounce's reason as its error in the bridge's state, its
// thread's mail waits rather than bouncing again at every retry, and once
// the team deletes the bounce from the set-aside folder the waiting mail
// goes out, once.
func TestBounceIsTheRequestsError(t *testing.T) {
	b, sys := memBackend(t)
	l := looptest.New(t, looptest.Options{
		Name: Name, Helpdesk: "the mailbox", Clock: refservertest.NewClock(time.Now().UTC()),
		Open: func(logger *slog.Logger) (adapters.Helpdesk, error) {
			return New(b.config(), adapters.Deps{Logger: logger})
		},
	})
	id := l.Request("housekeeping", "A spare key for room 9")
	if rep := l.Tick(); rep.Created != 1 {
		t.Fatalf("first cycle: %+v", rep)
	}
	a := b.open(t, nil)
	defer a.Close()
	if err := sys.Deliver("bridge@hotel.test", dsnOf(a, adapters.Ref(id), "dsn.e2e")); err != nil {
		t.Fatal(err)
	}
	l.Guest(id, "Is it on its way?")
	mailed := sys.Taken()
	for range 12 {
		l.Tick()
	}
	if got := sys.Taken(); got != mailed {
		t.Errorf("the bridge mailed %d mails into a thread whose mail bounces", got-mailed)
	}
	var errText string
	for _, ts := range l.Status().Tickets {
		if ts.ID == id {
			errText = ts.LastError
		}
	}
	if !strings.Contains(errText, "came back") || !strings.Contains(errText, "5.1.1") {
		t.Fatalf("the request's error is %q; want the bounce and its reason", errText)
	}

	// The team fixed the address and deletes the bounce.
	c := b.imapDial(t, "bridge")
	if _, err := c.Select(DefaultSetAsideFolder, nil).Wait(); err != nil {
		t.Fatal(err)
	}
	if err := c.Store(imap.SeqSetNum(1), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagDeleted}}, nil).Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Expunge().Close(); err != nil {
		t.Fatal(err)
	}
	_ = c.Logout().Wait()
	l.Advance(time.Hour)
	l.Settle()
	if got := sys.Taken(); got != mailed+1 {
		t.Errorf("after the bounce was deleted the bridge mailed %d mails, want the guest's message once", got-mailed)
	}
	for _, ts := range l.Status().Tickets {
		if ts.ID == id && ts.LastError != "" {
			t.Errorf("the request's error after the bounce was deleted: %q", ts.LastError)
		}
	}
}
