package zendesk_test

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
	"github.com/ticketbridge/ticketbridge/adapters/zendesk"
	"github.com/ticketbridge/ticketbridge/adapters/zendesk/zendeskfake"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/internal/looptest"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

// loop is the whole bridge with the zendesk adapter on the fake account,
// on the clock of the test's testing/synctest bubble.
type loop struct {
	*looptest.Loop
	t      *testing.T
	fake   *zendeskfake.Server
	groups zendesk.Groups
}

func newLoop(t *testing.T) *loop {
	fake := zendeskfake.New(zendeskfake.Options{Email: testEmail, Token: testToken, TicketFields: []zendeskfake.Field{dueField}})
	groups := zendesk.Groups{"housekeeping": fake.AddGroup("Housekeeping"), "maintenance": fake.AddGroup("Maintenance")}
	hc := &http.Client{Transport: testutil.PipeServer(t, fake)}
	l := looptest.New(t, looptest.Options{
		Name: zendesk.Name, Helpdesk: "Zendesk",
		Open: func(logger *slog.Logger) (adapters.Helpdesk, error) {
			return zendesk.New(zendesk.Config{Common: saas.Common{URL: adapters.ParseURL(testutil.PipeURL)}, Email: testEmail, Token: testToken,
				Groups: groups, DueField: dueField.ID},
				adapters.Deps{Logger: logger}, zendesk.Options{HTTP: hc})
		},
	})
	return &loop{Loop: l, t: t, fake: fake, groups: groups}
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
	me := l.fake.APIUserID()
	var posts []looptest.Post
	for _, c := range l.zendeskTicket(id).Comments {
		posts = append(posts, looptest.Post{Body: c.Body, Bridge: c.AuthorID == me})
	}
	l.CheckExactlyOnce(id, posts)
}

// TestEndToEnd plays the whole loop: the reference server, the engine and
// the adapter on the fake Zendesk account, over in-memory HTTP in a
// testing/synctest bubble.
func TestEndToEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLoop(t)
		id := l.Request("housekeeping", "Two towels to room 214")
		l.Guest(id, "Could they be blue?")

		r := l.Tick()
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
		l.Guest(id, "Thank you!")
		if err := l.Server.SetStatus(id, guestapi.StatusDone); err != nil {
			t.Fatal(err)
		}
		l.Advance(15 * time.Minute) // the ticket backed off meanwhile
		l.Settle()
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
		l.Advance(25 * time.Hour)
		l.LoseState()
		l.Settle()
		if got := len(l.zendeskTicket(id).Comments); got != comments {
			t.Errorf("after the state loss Zendesk holds %d comments, had %d", got, comments)
		}
		view = l.Upstream(id)
		if got := len(view.Messages); got != upstream+1 { // the guest's "Thank you!"
			t.Errorf("after the state loss upstream holds %d messages, want %d", got, upstream+1)
		}
		l.checkExactlyOnce(id)
		if strings.Contains(l.Logs(), "level=ERROR") {
			t.Errorf("errors logged:\n%s", l.Logs())
		}
		if strings.Contains(l.Logs(), testToken) {
			t.Errorf("the token is in the log")
		}
	})
}

// TestEndToEndFields changes each field of a request in the hotel's
// console and sees it in Zendesk after one cycle, once, and never back
// upstream.
func TestEndToEndFields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLoop(t)
		id := l.Request("housekeeping", "Two towels to room 214")
		l.Settle()
		before := len(l.Upstream(id).Messages)

		due := time.Date(2026, 6, 2, 15, 0, 0, 0, time.UTC)
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
			zt := l.zendeskTicket(id)
			if zt.GroupID != l.groups["maintenance"] || zt.Subject != "[maintenance] Fix the towel rail in room 214" ||
				zt.Fields[dueField.ID] != "2026-06-02" || !slices.Contains(zt.Tags, "guest_rating_3") {
				t.Errorf("%s: Zendesk ticket group %d subject %q due %q tags %q", when, zt.GroupID, zt.Subject, zt.Fields[dueField.ID], zt.Tags)
			}
			ratingNote, _ := adapters.RatingNote(rating)
			commentNote, _ := adapters.CommentNote(comment)
			for _, note := range []string{ratingNote, commentNote} {
				n := 0
				for _, c := range zt.Comments {
					if strings.Contains(c.Body, note) && !c.Public {
						n++
					}
				}
				if n != 1 {
					t.Errorf("%s: %d internal notes say %q, want 1", when, n, note)
				}
			}
		}
		check("after one cycle")
		l.Settle()
		check("after the loop settled")
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
