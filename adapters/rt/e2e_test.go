package rt_test

import (
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/adaptertest"
	"github.com/ticketbridge/ticketbridge/adapters/rt"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/internal/looptest"
)

// rtLoop is the whole bridge of package looptest with the rt adapter on
// the real RT, in a queue of the test's own. RT keeps real time; the fake
// clock starts at the real one so that the engine's "newer change wins"
// compares like with like.
type rtLoop struct {
	*looptest.Loop
	t     *testing.T
	r     realRT
	queue string
	env   map[string]string // further settings of the adapter
}

func newRTLoop(t *testing.T, r realRT, queue string) *rtLoop {
	return newRTLoopEnv(t, r, queue, nil)
}

// newRTLoopEnv is newRTLoop with further TICKETBRIDGE_RT_* settings.
func newRTLoopEnv(t *testing.T, r realRT, queue string, env map[string]string) *rtLoop {
	l := &rtLoop{t: t, r: r, queue: queue, env: env}
	l.Loop = looptest.New(t, looptest.Options{
		Name: rt.Name, Helpdesk: "RT", Clock: refservertest.NewClock(time.Now().UTC()),
		Open: func(logger *slog.Logger) (adapters.Helpdesk, error) { return l.adapter(logger) },
	})
	return l
}

func (l *rtLoop) adapter(logger *slog.Logger) (*rt.Adapter, error) {
	env := map[string]string{"TICKETBRIDGE_RT_QUEUE": l.queue, "TICKETBRIDGE_RT_QUEUES": ""}
	maps.Copy(env, l.env)
	return rt.New(l.t.Context(), l.r.config(l.t, env), adapters.Deps{Logger: logger})
}

// ref returns the RT ticket of upstream ticket id.
func (l *rtLoop) ref(id string) adapters.Ref {
	l.t.Helper()
	a, err := l.adapter(slog.New(slog.DiscardHandler))
	if err != nil {
		l.t.Fatal(err)
	}
	f, ok, err := a.Lookup(l.t.Context(), id)
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

// checkExactlyOnce checks request id against the correspondence and
// comments of its RT ticket; the agent writes as its own RT user.
func (l *rtLoop) checkExactlyOnce(id string) {
	l.t.Helper()
	var posts []looptest.Post
	for _, x := range l.r.agent().thread(l.t, l.ref(id)) {
		posts = append(posts, looptest.Post{Body: strings.TrimSpace(x.text), Bridge: x.creator != l.r.agentUser})
	}
	l.CheckExactlyOnce(id, posts)
}

// TestEndToEnd plays the whole loop: the reference server, the engine and
// the adapter on the real RT, with an agent working in RT as its own user.
func TestEndToEnd(t *testing.T) {
	r := needRT(t)
	l := newRTLoop(t, r, r.queue(t, "e2e"))
	g := r.agent()
	id := l.Request("housekeeping", "Two towels to room 214")
	l.Guest(id, "Could they be blue?")

	rep := l.Tick()
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
	l.Guest(id, "Thank you!")
	if err := l.Server.SetStatus(id, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	l.Advance(15 * time.Minute) // the ticket backed off meanwhile
	l.Settle()
	if st, _ := g.ticket(t, ref); st != "resolved" {
		t.Errorf("RT status %s after upstream done, want resolved", st)
	}
	l.checkExactlyOnce(id)

	// The state file is lost, a day later, so that the API no longer
	// remembers the Idempotency-Keys: only what MarkSent recorded in RT
	// keeps the agent's work from going up twice, and only the markers
	// keep the guest's messages from coming down twice.
	inRT, upstream := len(g.thread(t, ref)), len(view.Messages)
	l.Advance(25 * time.Hour)
	l.LoseState()
	l.Settle()
	if got := len(g.thread(t, ref)); got != inRT {
		t.Errorf("after the state loss RT holds %d messages, had %d", got, inRT)
	}
	view = l.Upstream(id)
	if got := len(view.Messages); got != upstream+1 { // the guest's "Thank you!"
		t.Errorf("after the state loss upstream holds %d messages, want %d", got, upstream+1)
	}
	l.checkExactlyOnce(id)
	logs := l.Logs()
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

// TestEndToEndFields: the hotel changes each field of a request in its
// console, one at a time; each lands in RT within one cycle, its note
// once, and nothing comes back upstream.
func TestEndToEndFields(t *testing.T) {
	r := needRT(t)
	def, mt := r.queue(t, "e2e-fields"), r.queue(t, "e2e-fields-maintenance")
	rating := r.ratingField(t)
	l := newRTLoopEnv(t, r, def, map[string]string{"TICKETBRIDGE_RT_QUEUES": "maintenance=" + mt, "TICKETBRIDGE_RT_RATING_FIELD": rating})
	g := r.agent()
	g.ratingField = rating
	id := l.Request("housekeeping", "Two towels to room 214")
	l.Guest(id, "Could they be blue?")
	l.Settle()
	ref := l.ref(id)
	upstream := len(l.Upstream(id).Messages)

	held := func() adaptertest.HeldFields {
		t.Helper()
		h, err := g.ReadFields(t.Context(), ref)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	count := func(text string) int {
		n := 0
		for _, m := range g.thread(t, ref) {
			n += strings.Count(m.text, text)
		}
		return n
	}
	due := time.Now().UTC().Add(26 * time.Hour).Truncate(time.Second)
	comment := "The guest is allergic to wool."
	four := 4.0
	steps := []struct {
		what  string
		edit  func() error
		check func(h adaptertest.HeldFields) string
	}{
		{"department", func() error { return l.Server.SetDepartment(id, "maintenance") }, func(h adaptertest.HeldFields) string {
			return cmpField("queue", h.Queue, mt)
		}},
		{"description", func() error { return l.Server.SetDescription(id, "Two blue towels to room 214") }, func(h adaptertest.HeldFields) string {
			return cmpField("subject", h.Title, "Two blue towels to room 214")
		}},
		{"due date", func() error { return l.Server.SetDue(id, &due) }, func(h adaptertest.HeldFields) string {
			return cmpField("due", h.Due.String(), due.String())
		}},
		{"comment", func() error { return l.Server.SetComment(id, &comment) }, func(adaptertest.HeldFields) string {
			return cmpField("comment notes", strconv.Itoa(count(comment)), "1")
		}},
		{"rating", func() error { return l.Server.RateTicket(id, &four) }, func(h adaptertest.HeldFields) string {
			if rating != "" && (h.Rating == nil || *h.Rating != 4) {
				return fmt.Sprintf("rating field %v, want 4", h.Rating)
			}
			return cmpField("rating notes", strconv.Itoa(count("Guest rated 4.")), "1")
		}},
		{"due date cleared", func() error { return l.Server.SetDue(id, nil) }, func(h adaptertest.HeldFields) string {
			return cmpField("due", h.Due.String(), time.Time{}.String())
		}},
	}
	for _, s := range steps {
		if err := s.edit(); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		l.Tick()
		if msg := s.check(held()); msg != "" {
			t.Errorf("one cycle after the %s changed upstream, RT holds %s", s.what, msg)
		}
	}
	before, _ := g.history(t, ref)
	l.Settle()
	if after, _ := g.history(t, ref); after != before {
		t.Errorf("cycles after the changes made %d more RT transactions, want none", after-before)
	}
	for _, text := range []string{comment, "Guest rated 4."} {
		if n := count(text); n != 1 {
			t.Errorf("RT holds %d notes saying %q, want 1", n, text)
		}
	}
	if got := len(l.Upstream(id).Messages); got != upstream {
		t.Errorf("upstream holds %d messages after the field changes, had %d: the bridge's notes came back", got, upstream)
	}
	if logs := l.Logs(); strings.Contains(logs, "level=ERROR") || t.Failed() {
		t.Errorf("the bridge's log:\n%s", logs)
	}
}

func cmpField(name, got, want string) string {
	if got == want {
		return ""
	}
	return fmt.Sprintf("%s %q, want %q", name, got, want)
}
