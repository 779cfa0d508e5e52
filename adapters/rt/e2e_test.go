package rt_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/rt"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// rtLoop is the whole bridge against the real RT: the reference server on
// a fake clock, the engine with its state file, and the rt adapter in a
// queue of the test's own. RT keeps real time; the fake clock starts at
// the real one so that the engine's "newer change wins" compares like with
// like.
type rtLoop struct {
	t      *testing.T
	r      realRT
	queue  string
	clock  *refservertest.Clock
	ts     *refservertest.TestServer
	path   string
	store  *state.Store
	engine *tbsync.Engine
	logs   *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newRTLoop(t *testing.T, r realRT, queue string) *rtLoop {
	clock := refservertest.NewClock(time.Now().UTC())
	l := &rtLoop{t: t, r: r, queue: queue, clock: clock, ts: refservertest.New(t, refservertest.WithClock(clock)),
		path: filepath.Join(t.TempDir(), "state.db"), logs: &syncBuffer{}}
	t.Cleanup(func() {
		if l.store != nil {
			l.store.Close()
		}
	})
	return l
}

func (l *rtLoop) adapter() *rt.Adapter {
	l.t.Helper()
	logger := slog.New(slog.NewTextHandler(l.logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("adapter", rt.Name)
	a, err := rt.New(l.t.Context(), l.r.config(l.t, map[string]string{"TICKETBRIDGE_RT_QUEUE": l.queue, "TICKETBRIDGE_RT_QUEUES": ""}), adapters.Deps{Logger: logger})
	if err != nil {
		l.t.Fatal(err)
	}
	return a
}

// open (re)starts the engine on the state file with a fresh adapter.
func (l *rtLoop) open() {
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
	logger := slog.New(slog.NewTextHandler(l.logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("adapter", rt.Name)
	eng, err := tbsync.New(tbsync.DefaultConfig(), tbsync.Deps{API: api, Helpdesk: l.adapter(), Store: st, Logger: logger, Now: l.clock.Now})
	if err != nil {
		l.t.Fatal(err)
	}
	if err := eng.Check(l.t.Context()); err != nil {
		l.t.Fatalf("engine check: %v", err)
	}
	l.engine = eng
}

// tick advances the clock by the schedule's interval and runs a cycle.
func (l *rtLoop) tick() tbsync.Report {
	l.t.Helper()
	l.clock.Advance(30 * time.Second)
	if l.engine == nil {
		l.open()
	}
	rep, err := l.engine.RunCycle(l.t.Context())
	if err != nil {
		l.t.Fatalf("cycle: %v\n%+v", err, rep)
	}
	return rep
}

// settle runs cycles until three in a row do nothing.
func (l *rtLoop) settle() {
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

func (l *rtLoop) guest(id, body string) {
	l.t.Helper()
	if _, err := l.ts.Server.AddMessage(id, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, AuthorName: "Ada Guest", Body: body}); err != nil {
		l.t.Fatal(err)
	}
}

// ref returns the RT ticket of upstream ticket id.
func (l *rtLoop) ref(id string) adapters.Ref {
	l.t.Helper()
	f, ok, err := l.adapter().Lookup(l.t.Context(), id)
	if err != nil || !ok {
		l.t.Fatalf("Lookup(%s) = %v, %v", id, ok, err)
	}
	return f.Ref
}

// rtMessage is a correspondence or comment as RT holds it.
type rtMessage struct {
	creator, kind, text string
}

// thread reads an RT ticket's correspondence and comments.
func (g *agent) thread(t testing.TB, ref adapters.Ref) []rtMessage {
	t.Helper()
	var hist struct {
		Items []struct {
			ID      string `json:"id"`
			Type    string `json:"Type"`
			Kind    string `json:"type"`
			Creator struct {
				ID string `json:"id"`
			}
		}
	}
	q := url.Values{"fields": {"Type,Creator"}, "per_page": {"100"}, "orderby": {"id"}}
	if err := g.do(t.Context(), http.MethodGet, "/ticket/"+string(ref)+"/history", q, nil, &hist); err != nil {
		t.Fatal(err)
	}
	var out []rtMessage
	for _, h := range hist.Items {
		if h.Type != "Correspond" && h.Type != "Comment" {
			continue
		}
		var atts struct {
			Items []struct{ ContentType, Content string }
		}
		if err := g.do(t.Context(), http.MethodGet, "/transaction/"+h.ID+"/attachments", url.Values{"fields": {"ContentType,Content"}}, nil, &atts); err != nil {
			t.Fatal(err)
		}
		m := rtMessage{creator: h.Creator.ID, kind: h.Type}
		for _, a := range atts.Items {
			if strings.HasPrefix(a.ContentType, "text/") && m.text == "" {
				m.text = a.Content
			}
		}
		out = append(out, m)
	}
	return out
}

// checkExactlyOnce checks that each upstream message not posted by the
// bridge is in RT once, that no bridge post came back into RT, and that
// each agent message in RT is upstream once.
func (l *rtLoop) checkExactlyOnce(id string) {
	l.t.Helper()
	view, err := l.ts.Server.Ticket(id)
	if err != nil {
		l.t.Fatal(err)
	}
	thread := l.r.agent().thread(l.t, l.ref(id))
	upBodies := map[string]int{}
	for _, m := range view.Messages {
		upBodies[m.Body]++
	}
	for _, m := range view.Messages {
		n := 0
		for _, x := range thread {
			if strings.HasSuffix(strings.TrimSpace(x.text), "[ticketbridge message "+m.ID+"]") {
				n++
			}
		}
		switch {
		case m.External && n != 0:
			l.t.Errorf("ticket %s: the bridge's own post %q echoed into RT %d times", id, m.Body, n)
		case !m.External && n != 1:
			l.t.Errorf("ticket %s: upstream message %q is in RT %d times, want once", id, m.Body, n)
		}
	}
	for _, x := range thread {
		if x.creator == l.r.agentUser && upBodies[strings.TrimSpace(x.text)] != 1 {
			l.t.Errorf("ticket %s: the agent's %s %q is upstream %d times, want once", id, x.kind, x.text, upBodies[strings.TrimSpace(x.text)])
		}
	}
}

// TestEndToEnd plays the whole loop: the reference server, the engine and
// the adapter on the real RT, with an agent working in RT as its own user.
func TestEndToEnd(t *testing.T) {
	r := needRT(t)
	l := newRTLoop(t, r, r.queue(t, "e2e"))
	g := r.agent()
	tv, err := l.ts.Server.CreateTicket(l.ts.Org, refserver.NewTicket{Department: "housekeeping", TaskDescription: "Two towels to room 214"})
	if err != nil {
		t.Fatal(err)
	}
	id := tv.ID
	l.guest(id, "Could they be blue?")

	rep := l.tick()
	if rep.Created != 1 || rep.Mirrored != 1 {
		t.Fatalf("first cycle: %+v", rep)
	}
	ref := l.ref(id)
	st, q := g.ticket(t, ref)
	thread := g.thread(t, ref)
	if st != "new" || q != l.queue || len(thread) != 1 || !strings.Contains(thread[0].text, "Could they be blue?") || thread[0].kind != "Correspond" {
		t.Fatalf("RT ticket after the first cycle: %s in %s, %+v", st, q, thread)
	}

	// The team answers in RT.
	if err := g.Reply(t.Context(), ref, "", "Blue towels are on the way."); err != nil {
		t.Fatal(err)
	}
	if err := g.Note(t.Context(), ref, "", "Housekeeping has been told."); err != nil {
		t.Fatal(err)
	}
	if err := g.SetStatus(t.Context(), ref, "", "stalled"); err != nil {
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
	if reply == nil || !reply.VisibleToGuest || reply.AuthorName != "Alex Agent" || note == nil || note.VisibleToGuest {
		t.Fatalf("upstream after the agent's work: reply %+v, note %+v", reply, note)
	}
	if view.Ticket.Status != guestapi.StatusInProgress {
		t.Errorf("upstream status %s after the agent's stalled, want in_progress", view.Ticket.Status)
	}
	if st, _ := g.ticket(t, ref); st != "stalled" {
		t.Errorf("the engine overwrote the agent's stalled with %s", st)
	}

	// The guest answers, the hotel closes the request upstream.
	l.guest(id, "Thank you!")
	if err := l.ts.Server.SetStatus(id, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	l.clock.Advance(15 * time.Minute) // the ticket backed off meanwhile
	l.settle()
	if st, _ := g.ticket(t, ref); st != "resolved" {
		t.Errorf("RT status %s after upstream done, want resolved", st)
	}
	l.checkExactlyOnce(id)

	// The state file is lost, a day later, so that the API no longer
	// remembers the Idempotency-Keys: only what MarkSent recorded in RT
	// keeps the agent's work from going up twice, and only the markers
	// keep the guest's messages from coming down twice.
	inRT, upstream := len(g.thread(t, ref)), len(view.Messages)
	l.clock.Advance(25 * time.Hour)
	l.store.Close()
	l.store = nil
	if err := os.Remove(l.path); err != nil {
		t.Fatal(err)
	}
	l.open()
	l.settle()
	if got := len(g.thread(t, ref)); got != inRT {
		t.Errorf("after the state loss RT holds %d messages, had %d", got, inRT)
	}
	view, _ = l.ts.Server.Ticket(id)
	if got := len(view.Messages); got != upstream+1 { // the guest's "Thank you!"
		t.Errorf("after the state loss upstream holds %d messages, want %d", got, upstream+1)
	}
	l.checkExactlyOnce(id)
	logs := l.logs.String()
	if strings.Contains(logs, "level=ERROR") {
		t.Errorf("errors logged:\n%s", logs)
	}
	for _, secret := range []string{r.env["TICKETBRIDGE_RT_TOKEN"], r.env["TICKETBRIDGE_RT_PASSWORD"]} {
		if secret != "" && strings.Contains(logs, secret) {
			t.Errorf("an RT credential is in the log")
		}
	}
	if t.Failed() {
		t.Logf("the bridge's log:\n%s", logs)
	}
}
