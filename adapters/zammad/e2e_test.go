package zammad_test

import (
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/adapters/zammad"
	"github.com/ticketbridge/ticketbridge/adapters/zammad/zammadfake"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/internal/looptest"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

// loop is the whole bridge with the zammad adapter on the fake Zammad, on
// the clock of the test's testing/synctest bubble.
type loop struct {
	*looptest.Loop
	t    *testing.T
	fake *zammadfake.Server
}

func newLoop(t *testing.T) *loop {
	fake := zammadfake.New(zammadfake.Options{
		Token: testToken, Groups: []string{"Users", "Housekeeping", "Technical Service"},
		Attributes: []zammadfake.Attribute{{Name: testField, Display: "Guest request"}, dueAttribute},
	})
	hc := &http.Client{Transport: testutil.PipeServer(t, fake)}
	l := looptest.New(t, looptest.Options{
		Name: zammad.Name, Helpdesk: "Zammad",
		Open: func(logger *slog.Logger) (adapters.Helpdesk, error) {
			return zammad.New(zammad.Config{Common: saas.Common{URL: adapters.ParseURL(testutil.PipeURL)}, Token: testToken, Customer: testCustomer,
				Groups: zammad.Groups{"housekeeping": "Housekeeping", "maintenance": "Technical Service"}, DueAttribute: testDue},
				adapters.Deps{Logger: logger}, zammad.Options{HTTP: hc})
		},
	})
	return &loop{Loop: l, t: t, fake: fake}
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
// agent text is upstream once. The agent's articles are not compared by
// body, which Zammad holds as HTML: the test names their texts instead.
func (l *loop) checkExactlyOnce(id string, agentTexts ...string) {
	l.t.Helper()
	me := l.fake.APIUserID()
	var posts []looptest.Post
	for _, a := range l.zammadTicket(id).Articles {
		if a.CreatedByID == me {
			posts = append(posts, looptest.Post{Body: a.Body, Bridge: true})
		}
	}
	for _, text := range agentTexts {
		posts = append(posts, looptest.Post{Body: text})
	}
	l.CheckExactlyOnce(id, posts)
}

// TestEndToEnd plays the whole loop: the reference server, the engine and
// the adapter on the fake Zammad, over in-memory HTTP in a bubble.
func TestEndToEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLoop(t)
		id := l.Request("housekeeping", "Two towels to room 214")
		l.Guest(id, "Could they be blue?")

		r := l.Tick()
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
		l.Settle()
		view := l.Upstream(id)
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
		l.Guest(id, "Thank you!")
		if err := l.Server.SetStatus(id, guestapi.StatusDone); err != nil {
			t.Fatal(err)
		}
		l.Advance(15 * time.Minute) // the ticket backed off meanwhile
		l.Settle()
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
		l.Advance(25 * time.Hour)
		l.LoseState()
		l.Settle()
		if got := len(l.zammadTicket(id).Articles); got != articles {
			t.Errorf("after the state loss Zammad holds %d articles, had %d", got, articles)
		}
		view = l.Upstream(id)
		if got := len(view.Messages); got != upstream+1 { // the guest's "Thank you!"
			t.Errorf("after the state loss upstream holds %d messages, want %d", got, upstream+1)
		}
		l.checkExactlyOnce(id, reply, note)
		if strings.Contains(l.Logs(), "level=ERROR") {
			t.Errorf("errors logged:\n%s", l.Logs())
		}
		if strings.Contains(l.Logs(), testToken) {
			t.Errorf("the token is in the log")
		}
	})
}

// TestEndToEndFields changes each field of a request in the hotel's
// console and sees it in Zammad after one cycle, once, and never back
// upstream, also after the bridge's state is lost.
func TestEndToEndFields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLoop(t)
		id := l.Request("housekeeping", "Two towels to room 214")
		l.Settle()
		before := len(l.Upstream(id).Messages)
		history := len(l.fake.History(l.zammadTicket(id).ID))

		due := time.Now().Add(30 * time.Hour).Truncate(time.Second)
		rating, comment := 3.0, "VIP guest, handle first."
		for _, err := range []error{
			l.Server.SetDepartment(id, "maintenance"),
			l.Server.SetDescription(id, "Fix the towel rail in room 214"),
			l.Server.SetDue(id, &due),
			l.Server.SetComment(id, &comment),
			l.Server.RateTicket(id, &rating),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		if r := l.Tick(); r.FieldsUpdated != 1 {
			t.Errorf("the cycle after the edits updated the fields of %d tickets, want 1: %+v", r.FieldsUpdated, r)
		}
		check := func(when string) {
			t.Helper()
			zt := l.zammadTicket(id)
			if zt.Group != "Technical Service" || zt.Title != "[maintenance] Fix the towel rail in room 214" ||
				zt.Attributes[testDue] != due.UTC().Format("2006-01-02T15:04:05.000Z") || !slices.Contains(zt.Tags, "guest_rating_3") {
				t.Errorf("%s: Zammad ticket group %q title %q due %q tags %q", when, zt.Group, zt.Title, zt.Attributes[testDue], zt.Tags)
			}
			ratingNote, _ := adapters.RatingNote(rating)
			commentNote, _ := adapters.CommentNote(comment)
			for _, note := range []string{ratingNote, commentNote} {
				n := 0
				for _, a := range zt.Articles {
					if strings.Contains(a.Body, note) && a.Internal {
						n++
					}
				}
				if n != 1 {
					t.Errorf("%s: %d internal notes say %q, want 1", when, n, note)
				}
			}
		}
		check("after one cycle")
		changes := len(l.fake.History(l.zammadTicket(id).ID)) - history
		l.Settle()
		check("after the loop settled")
		if got := len(l.fake.History(l.zammadTicket(id).ID)) - history; got != changes {
			t.Errorf("the ticket's history grew by %d entries after the cycle that carried the fields, want none", got-changes)
		}
		if got := len(l.Upstream(id).Messages); got != before {
			t.Errorf("upstream holds %d messages after the field updates, had %d: the bridge's own writes came back", got, before)
		}
		l.LoseState()
		l.Settle()
		check("after a lost state")
		if strings.Contains(l.Logs(), "level=ERROR") {
			t.Errorf("errors logged:\n%s", l.Logs())
		}
	})
}
