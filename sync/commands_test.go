package sync_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// command applies an operator's command at the clock's time.
func (e *env) command(name, id string) tbsync.Done {
	e.t.Helper()
	d, err := tbsync.Apply(e.t.Context(), e.store, tbsync.Command{Name: name, Ticket: id, Who: "cli:mara"}, e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// TestPauseCrossesNothingAndResumeLosesNothing: while a request is paused,
// nothing of it crosses: the guest's message and the console's status
// stay upstream, the agent's reply and status stay in the helpdesk
// (journaled, pending), the other requests go on. Resumed, it is read and
// reconciled at the next cycle: each message crosses once, and the newer
// status change wins, as when both sides change between two cycles.
func TestPauseCrossesNothingAndResumeLosesNothing(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("paused")
	other := e.newTicket("goes on")
	e.quiesce()
	ref := e.ref(id)

	d := e.command(tbsync.CommandPause, id)
	if d.Ticket.Paused.IsZero() || d.Ticket.PausedBy != "cli:mara" {
		t.Fatalf("paused record: %+v", d.Ticket)
	}
	if _, err := tbsync.Apply(t.Context(), e.store, tbsync.Command{Name: tbsync.CommandPause, Ticket: id}, e.clock.Now()); !errors.Is(err, tbsync.ErrNotActionable) {
		t.Errorf("pausing a paused request: %v, want ErrNotActionable", err)
	}
	before, _ := e.backend.Ticket(ref)
	posts := e.posts()

	e.clock.Advance(time.Minute)
	const guestBody, replyBody, otherBody = "Still no towels.", "On their way.", "And soap, please."
	e.guest(id, guestBody)
	if err := e.ts.Server.SetStatus(id, guestapi.StatusAssigned); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	if _, err := e.backend.Reply(ref, "Ana", replyBody); err != nil {
		t.Fatal(err)
	}
	if err := e.backend.SetStatus(ref, "Ana", "working"); err != nil { // the newer change
		t.Fatal(err)
	}
	e.guest(other, otherBody)
	for range 5 {
		e.tick()
	}
	if !e.helpdeskHas(other, otherBody) {
		t.Error("the request not paused was not mirrored")
	}
	if got, _ := e.backend.Ticket(ref); len(got.Messages) != len(before.Messages)+1 || got.Status != "working" {
		t.Errorf("paused helpdesk ticket changed: %d messages (want %d), status %s", len(got.Messages), len(before.Messages)+1, got.Status)
	}
	if e.posts() != posts || e.upstreamHas(id, replyBody) {
		t.Errorf("something was sent upstream for the paused request (%d posts, %d before)", e.posts(), posts)
	}
	if en := entry(t, e.store, id, replyBody); en.State != state.Pending {
		t.Errorf("the agent's reply while paused: %+v, want journaled and pending", en)
	}

	e.clock.Advance(time.Minute)
	if d := e.command(tbsync.CommandResume, id); !d.Ticket.Paused.IsZero() || d.Ticket.PausedBy != "" || !d.Ticket.ReconcileSoon {
		t.Fatalf("resumed record: %+v", d.Ticket)
	}
	e.tick()
	if !e.helpdeskHas(id, guestBody) || !e.upstreamHas(id, replyBody) {
		t.Errorf("after resume: guest's message in the helpdesk %v, agent's reply upstream %v", e.helpdeskHas(id, guestBody), e.upstreamHas(id, replyBody))
	}
	e.quiesce()
	if got := e.upstream(id).Ticket.Status; got != guestapi.StatusInProgress {
		t.Errorf("upstream status %s, want in_progress (the agent's newer change)", got)
	}
	if got := e.hdStatus(id); got != "working" {
		t.Errorf("helpdesk status %s, want working", got)
	}
	if _, err := tbsync.Apply(t.Context(), e.store, tbsync.Command{Name: tbsync.CommandResume, Ticket: id}, e.clock.Now()); !errors.Is(err, tbsync.ErrNotActionable) {
		t.Errorf("resuming a request not paused: %v, want ErrNotActionable", err)
	}
	e.checkExactlyOnce()
}

// TestPausedRequestIsNeitherCreatedNorRead: a request paused before its
// helpdesk ticket was made is not made, not read and not looked up until
// it is resumed; then it is made once.
func TestPausedRequestIsNeitherCreatedNorRead(t *testing.T) {
	e := newEnv(t)
	e.open()
	id := e.newTicket("not yet")
	e.editTicket0(id)
	e.command(tbsync.CommandPause, id)
	for range 3 {
		e.tick()
	}
	if refs := e.backend.Find(id); len(refs) != 0 {
		t.Fatalf("a paused request got helpdesk tickets %v", refs)
	}
	if n := e.ts.Server.Stats().Requests["GET /ops-public-api/v1/tickets/{id}"][http.StatusOK]; n != 0 {
		t.Errorf("a paused request was read %d times", n)
	}
	e.command(tbsync.CommandResume, id)
	e.quiesce()
	if refs := e.backend.Find(id); len(refs) != 1 {
		t.Fatalf("after resume, %d helpdesk tickets, want 1", len(refs))
	}
	e.checkExactlyOnce()
}

// editTicket0 stores ticket id as discover would before its first read:
// tracked, not yet in the helpdesk.
func (e *env) editTicket0(id string) {
	e.t.Helper()
	if err := e.store.Update(e.t.Context(), func(tx *state.Tx) error {
		return tx.PutTicket(state.Ticket{ID: id, Department: "housekeeping", NextDue: e.clock.Now(), DueReason: tbsync.DueNew})
	}); err != nil {
		e.t.Fatal(err)
	}
}

// TestPausedQuietCycleWritesNothing: a request paused, then changed
// upstream, leaves the cycles quiet: once the first has run, a cycle
// that reads nothing commits nothing, as without the pause.
func TestPausedQuietCycleWritesNothing(t *testing.T) {
	e := newQuietEnv(t)
	id := e.newTicket("paused")
	e.quiesce()
	e.command(tbsync.CommandPause, id)
	e.clock.Advance(time.Second)
	e.guest(id, "are you there?")
	if err := e.ts.Server.SetStatus(id, guestapi.StatusAssigned); err != nil {
		t.Fatal(err)
	}
	e.cycle()
	e.checkQuietCycles("a paused request changed upstream")
}

// checkQuietCycles runs five cycles a second apart and checks that each
// one that reads nothing commits nothing, and that three or more of them
// are such; what names the request the cycles leave alone.
func (e *env) checkQuietCycles(what string) {
	e.t.Helper()
	quiet := 0
	for range 5 {
		e.clock.Advance(time.Second)
		before := e.store.Commits()
		r := e.cycle()
		if r.Refreshed != 0 || len(r.Reconcile) != 0 {
			continue
		}
		quiet++
		if n := e.store.Commits() - before; n != 0 {
			e.t.Errorf("a quiet cycle with %s committed %d writes, want none: %s", what, n, r)
		}
	}
	if quiet < 3 {
		e.t.Fatalf("only %d quiet cycles of five", quiet)
	}
}

// TestResyncRequeuesAndReconciles: resync reads and reconciles the
// request at the next cycle and puts its refused reply back to pending,
// which then goes out once; a skipped entry stays set aside.
func TestResyncRequeuesAndReconciles(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("resync")
	e.quiesce()
	ref := e.ref(id)
	const refused, skipped = "Refused once.", "Set aside."
	e.ts.Server.SetHook(refserver.Match(http.MethodPost, postPrefix, refuse400))
	e.backend.Reply(ref, "Ana", refused)
	e.backend.Reply(ref, "Ana", skipped)
	e.tick()
	e.ts.Server.SetHook(nil)
	sk := entry(t, e.store, id, skipped)
	if _, err := tbsync.SkipEntry(t.Context(), e.store, sk.EventID, "mara", "sent by phone"); err != nil {
		t.Fatal(err)
	}
	// A change the lists and the feed both missed: the helpdesk's status
	// moved without an event.
	if err := e.backend.SetStatusUnreported(ref, "working"); err != nil {
		t.Fatal(err)
	}
	e.tick()
	if en := entry(t, e.store, id, refused); en.State != state.Failed {
		t.Fatalf("refused entry before resync: %+v", en)
	}

	d := e.command(tbsync.CommandResync, id)
	if len(d.Requeued) != 1 || d.Requeued[0].Payload.Body != refused {
		t.Errorf("requeued %+v, want the refused reply alone", d.Requeued)
	}
	if !d.Ticket.ReconcileSoon || d.Ticket.NextDue.After(e.clock.Now()) {
		t.Errorf("resynced record: %+v", d.Ticket)
	}
	rep := e.tick()
	if rep.Reconcile[tbsync.ReconcileCarriedUp] != 1 {
		t.Errorf("reconcile outcomes %v, want the helpdesk's status carried up", rep.Reconcile)
	}
	e.quiesce()
	if n := e.upstreamCount(id, refused); n != 1 {
		t.Errorf("refused reply upstream %d times after resync, want 1", n)
	}
	if n := e.upstreamCount(id, skipped); n != 0 {
		t.Errorf("skipped reply sent %d times", n)
	}
	if got := e.upstream(id).Ticket.Status; got != guestapi.StatusInProgress {
		t.Errorf("upstream status %s, want in_progress", got)
	}
	e.command(tbsync.CommandPause, id)
	if _, err := tbsync.Apply(t.Context(), e.store, tbsync.Command{Name: tbsync.CommandResync, Ticket: id}, e.clock.Now()); !errors.Is(err, tbsync.ErrNotActionable) {
		t.Errorf("resync of a paused request: %v, want ErrNotActionable", err)
	}
}

// TestCommandErrors: an unknown request, an unknown command.
func TestCommandErrors(t *testing.T) {
	e := newEnv(t)
	e.open()
	for _, c := range []struct {
		cmd  tbsync.Command
		want error
	}{
		{tbsync.Command{Name: tbsync.CommandPause, Ticket: "f5e1c1aa-0000-4000-8000-000000000000"}, tbsync.ErrNoSuchTicket},
		{tbsync.Command{Name: tbsync.CommandResync, Ticket: "a/b"}, tbsync.ErrNoSuchTicket},
		{tbsync.Command{Name: "frobnicate", Ticket: "x"}, tbsync.ErrUnknownCommand},
	} {
		if _, err := tbsync.Apply(t.Context(), e.store, c.cmd, e.clock.Now()); !errors.Is(err, c.want) {
			t.Errorf("%+v: %v, want %v", c.cmd, err, c.want)
		}
	}
}

// appendHook runs hook before each Append.
type appendHook struct {
	adapters.Helpdesk
	hook func()
}

func (h appendHook) Append(ctx context.Context, ref adapters.Ref, msgs []adapters.Message) ([]adapters.Appended, error) {
	h.hook()
	return h.Helpdesk.Append(ctx, ref, msgs)
}

// Connect passes a connect through to the wrapped helpdesk.
func (h appendHook) Connect(ctx context.Context, ref adapters.Ref, t adapters.Ticket) error {
	return h.Helpdesk.(adapters.Connector).Connect(ctx, ref, t)
}

// TestPauseDuringACycleHolds: a pause applied while a cycle is reading
// the request (the daemon runs cycles while an operator acts) is kept:
// what the cycle then stores of the request leaves the pause as it is,
// and the next cycles cross nothing; a resume during a cycle holds too.
func TestPauseDuringACycleHolds(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("paused mid-cycle")
	e.quiesce()
	var cmd string
	e.wrapHD = func(h adapters.Helpdesk) adapters.Helpdesk {
		return appendHook{Helpdesk: h, hook: func() {
			if cmd != "" {
				e.command(cmd, id)
				cmd = ""
			}
		}}
	}
	e.open()
	cmd = tbsync.CommandPause
	e.guest(id, "first, while the pause comes")
	e.tick()
	if cmd != "" {
		t.Fatal("the cycle appended nothing: the pause was not applied during it")
	}
	if tk := e.stateTicket(id); tk.Paused.IsZero() {
		t.Fatalf("a pause applied during a cycle was lost: %+v", tk)
	}
	const later = "second, while paused"
	e.guest(id, later)
	e.tick()
	e.tick()
	if e.helpdeskHas(id, later) {
		t.Error("a message crossed after the pause")
	}
	e.command(tbsync.CommandResume, id)
	e.quiesce()
	if !e.helpdeskHas(id, later) {
		t.Error("the message written while paused did not cross after the resume")
	}
}

// TestCommandsAreAudited: each command appends one entry to the request's
// audit trail, with the operator's name, in its own transaction; a
// refused one appends nothing.
func TestCommandsAreAudited(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("audited")
	e.quiesce()
	for _, name := range []string{tbsync.CommandPause, tbsync.CommandResume, tbsync.CommandResync} {
		e.command(name, id)
	}
	if _, err := tbsync.Apply(t.Context(), e.store, tbsync.Command{Name: tbsync.CommandResume, Ticket: id, Who: "cli:mara"}, e.clock.Now()); !errors.Is(err, tbsync.ErrNotActionable) {
		t.Fatalf("resume of a request not paused: %v", err)
	}
	var got []string
	if err := e.store.View(t.Context(), func(tx *state.Tx) error {
		trail, err := tx.AuditTrail(id)
		for _, a := range trail {
			if a.Cause == state.AuditOperator {
				got = append(got, a.Kind+" by "+a.Operator)
			}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"pause by cli:mara", "resume by cli:mara", "resync by cli:mara"}
	if !slices.Equal(got, want) {
		t.Errorf("the trail's commands: %q, want %q", got, want)
	}
}

// TestAnswerForEveryAction: each action has its sentence, one a resync
// counts or not, and an unknown word none (a link cannot put text on the
// status page through it).
func TestAnswerForEveryAction(t *testing.T) {
	for _, a := range []string{"read now", "retry", "skip", tbsync.CommandPause, tbsync.CommandResume, tbsync.CommandResync, tbsync.CommandUnlink, tbsync.CommandConnect} {
		if tbsync.Answer(a, 0) == "" {
			t.Errorf("no answer for %q", a)
		}
	}
	if got := tbsync.Answer(tbsync.CommandResync, 3); !strings.Contains(got, "3 of its entries") {
		t.Errorf("resync of 3 entries: %q", got)
	}
	if got := tbsync.Answer(tbsync.CommandResync, -1); strings.Contains(got, "-1") || !strings.Contains(got, "its entries") {
		t.Errorf("resync not counted: %q", got)
	}
	if got := tbsync.Answer("<b>hello</b>", 0); got != "" {
		t.Errorf("an unknown action answered %q", got)
	}
}
