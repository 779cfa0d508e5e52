package freshdesk_test

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/freshdesk"
	"github.com/ticketbridge/ticketbridge/adapters/freshdesk/freshdeskfake"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/internal/looptest"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

// loop is the whole bridge with the freshdesk adapter on the fake helpdesk,
// on the clock of the test's testing/synctest bubble.
type loop struct {
	*looptest.Loop
	t      *testing.T
	fake   *freshdeskfake.Server
	groups freshdesk.Groups
}

// newLoop serves a fake with pages of two and a budget of six requests a
// minute.
func newLoop(t *testing.T) *loop {
	return newLoopWith(t, freshdeskfake.Options{MaxPerPage: 2, RateLimit: 6})
}

// newLoopWith serves a fake of opts, with a group for each of two
// departments.
func newLoopWith(t *testing.T, opts freshdeskfake.Options) *loop {
	opts.APIKey = testKey
	fake := freshdeskfake.New(opts)
	groups := freshdesk.Groups{"housekeeping": fake.AddGroup("Housekeeping"), "maintenance": fake.AddGroup("Maintenance")}
	hc := &http.Client{Transport: testutil.PipeServer(t, fake)}
	l := looptest.New(t, looptest.Options{
		Name: freshdesk.Name, Helpdesk: "Freshdesk",
		// The budget's 429s ask for the rest of the minute: on a schedule
		// of a minute they are sat out within the cycle, not put off.
		Interval: time.Minute,
		Open: func(logger *slog.Logger) (adapters.Helpdesk, error) {
			hd, err := freshdesk.New(freshdesk.Config{Common: saas.Common{URL: adapters.ParseURL(testutil.PipeURL), PageSize: 2}, APIKey: testKey, Groups: groups},
				adapters.Deps{Logger: logger}, freshdesk.Options{HTTP: hc})
			if err != nil {
				return nil, err
			}
			return hd, hd.Check(context.Background())
		},
	})
	return &loop{Loop: l, t: t, fake: fake, groups: groups}
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
	me := l.fake.APIAgentID()
	var posts []looptest.Post
	for _, c := range l.freshdeskTicket(id).Conversations {
		posts = append(posts, looptest.Post{Body: c.BodyText, Bridge: c.UserID == me})
	}
	l.CheckExactlyOnce(id, posts)
}

// TestEndToEnd plays the whole loop: the reference server, the engine and
// the adapter on the fake Freshdesk over in-memory HTTP in a bubble, with pages of two
// and a budget of six requests a minute, which the loop meets often.
func TestEndToEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLoop(t)
		id := l.Request("housekeeping", "Two towels to room 214")
		l.Guest(id, "Could they be blue?")

		r := l.Tick()
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
		if view.Ticket.Status != guestapi.StatusDone {
			t.Errorf("upstream status %s after the agent resolved, want done", view.Ticket.Status)
		}
		if got := l.freshdeskTicket(id).Status; got != freshdeskfake.StatusResolved {
			t.Errorf("Freshdesk status %d after the agent resolved, want it kept", got)
		}

		// The guest answers, which reopens the Freshdesk ticket; then the
		// hotel completes the request upstream.
		l.Guest(id, "Thank you!")
		l.Advance(15 * time.Minute) // the ticket backed off meanwhile
		l.Settle()
		if got := l.freshdeskTicket(id).Status; got != freshdeskfake.StatusOpen {
			t.Errorf("Freshdesk status %d after the guest wrote, want open", got)
		}
		if err := l.Server.SetStatus(id, guestapi.StatusCompleted); err != nil {
			t.Fatal(err)
		}
		l.Advance(15 * time.Minute)
		l.Settle()
		ft = l.freshdeskTicket(id)
		if ft.Status != freshdeskfake.StatusClosed {
			t.Errorf("Freshdesk status %d after upstream completed, want closed", ft.Status)
		}
		view = l.Upstream(id)
		if view.Ticket.Status != guestapi.StatusCompleted {
			t.Errorf("upstream status %s, want completed kept", view.Ticket.Status)
		}
		l.checkExactlyOnce(id)

		// The state file is lost, a day later (the API no longer remembers the
		// Idempotency-Keys): a rescan adopts the ticket and writes nothing
		// twice, on either side.
		conversations, upstream := len(ft.Conversations), len(view.Messages)
		l.Advance(25 * time.Hour)
		l.LoseState()
		l.Settle()
		if got := len(l.freshdeskTicket(id).Conversations); got != conversations {
			t.Errorf("after the state loss Freshdesk holds %d conversations, had %d", got, conversations)
		}
		view = l.Upstream(id)
		if got := len(view.Messages); got != upstream {
			t.Errorf("after the state loss upstream holds %d messages, had %d", got, upstream)
		}
		l.checkExactlyOnce(id)
		if strings.Contains(l.Logs(), "level=ERROR") {
			t.Errorf("errors logged:\n%s", l.Logs())
		}
		if strings.Contains(l.Logs(), testKey) {
			t.Errorf("the API key is in the log")
		}
		if !strings.Contains(l.Logs(), "status=429") {
			t.Errorf("the loop never met Freshdesk's request budget, so it did not exercise waiting out a 429")
		}
	})
}

// TestEndToEndFields changes each field of a request in the hotel's
// console and sees it in Freshdesk after one cycle, once, and never back
// upstream. The fake has no request budget here: a 429 would put the
// update off to a later cycle (TestUpdateWaitsOn429 covers that).
func TestEndToEndFields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLoopWith(t, freshdeskfake.Options{})
		id := l.Request("housekeeping", "Two towels to room 214")
		l.Settle()
		before := len(l.Upstream(id).Messages)
		updated := l.freshdeskTicket(id).UpdatedAt

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
			ft := l.freshdeskTicket(id)
			if ft.GroupID != l.groups["maintenance"] || ft.Subject != "[maintenance] Fix the towel rail in room 214" ||
				!ft.DueBy.Equal(due) || !slices.Contains(ft.Tags, "guest_rating_3") {
				t.Errorf("%s: Freshdesk ticket group %d subject %q due %v tags %q", when, ft.GroupID, ft.Subject, ft.DueBy, ft.Tags)
			}
			ratingNote, _ := adapters.RatingNote(rating)
			commentNote, _ := adapters.CommentNote(comment)
			for _, note := range []string{ratingNote, commentNote} {
				n := 0
				for _, c := range ft.Conversations {
					if strings.Contains(c.BodyText, note) && c.Private {
						n++
					}
				}
				if n != 1 {
					t.Errorf("%s: %d private notes say %q, want 1", when, n, note)
				}
			}
		}
		check("after one cycle")
		if !l.freshdeskTicket(id).UpdatedAt.After(updated) {
			t.Errorf("the Freshdesk ticket was not updated")
		}
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
