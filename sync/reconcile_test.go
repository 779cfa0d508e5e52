package sync_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/memory"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// reconcileInterval is the tests' TICKETBRIDGE_RECONCILE_INTERVAL.
const reconcileInterval = 10 * time.Minute

func newReconcileEnv(t *testing.T) *env {
	e := newEnv(t)
	e.cfg.ReconcileInterval = reconcileInterval
	return e
}

// toSlot advances the clock by a whole reconcile interval: every open
// ticket's reconcile slot has come.
func (e *env) toSlot() { e.clock.Advance(reconcileInterval) }

// stateTicket returns the engine's record of ticket id.
func (e *env) stateTicket(id string) state.Ticket {
	e.t.Helper()
	var t state.Ticket
	if err := e.store.View(e.t.Context(), func(tx *state.Tx) error {
		var err error
		t, _, err = tx.Ticket(id)
		return err
	}); err != nil {
		e.t.Fatal(err)
	}
	return t
}

// editTicket changes the engine's record of ticket id, as a path that
// went wrong would have left it.
func (e *env) editTicket(id string, fn func(t *state.Ticket)) {
	e.t.Helper()
	if err := e.store.Update(e.t.Context(), func(tx *state.Tx) error {
		t, _, err := tx.Ticket(id)
		if err != nil {
			return err
		}
		fn(&t)
		return tx.PutTicket(t)
	}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) hdStatus(id string) string {
	e.t.Helper()
	tk, _ := e.backend.Ticket(e.ref(id))
	return tk.Status
}

// TestReconcileCarriesMissedHelpdeskStatusUp: an agent's status change the
// helpdesk's feed skipped (a cursor past a late commit) reaches the guest
// request at the ticket's next reconcile, once.
func TestReconcileCarriesMissedHelpdeskStatusUp(t *testing.T) {
	e := newReconcileEnv(t)
	id := e.newTicket("towels")
	e.cycle()
	if got := e.stateTicket(id).AgreedStatus; got != string(guestapi.StatusNew) {
		t.Fatalf("agreed status after the import: %q, want new", got)
	}
	e.clock.Advance(time.Second) // the agent acts after the import
	if err := e.backend.SetStatusUnreported(e.ref(id), "working"); err != nil {
		t.Fatal(err)
	}
	e.toSlot()
	r := e.cycle()
	if got := e.upstream(id).Ticket.Status; got != guestapi.StatusInProgress {
		t.Fatalf("after a reconcile the guest request is %s, want in_progress: %s", got, r)
	}
	if r.Reconcile[tbsync.ReconcileCarriedUp] != 1 {
		t.Errorf("reconcile counts %v, want one carried_up", r.Reconcile)
	}
	st := e.stateTicket(id)
	if st.AgreedStatus != string(guestapi.StatusInProgress) || st.LastReconcile != tbsync.ReconcileCarriedUp || st.ReconciledAt.IsZero() {
		t.Errorf("state after the reconcile: agreed %q, last %q at %s", st.AgreedStatus, st.LastReconcile, st.ReconciledAt)
	}
	posts := e.posts()
	e.toSlot()
	if r := e.cycle(); r.Reconcile[tbsync.ReconcileInSync] != 1 || e.posts() != posts {
		t.Errorf("the next reconcile: %v, %d more posts", r.Reconcile, e.posts()-posts)
	}
}

// TestReconcileKeepsAChangeOfTheImportsSecond: an agent's status change
// stamped in the second the bridge recorded the agreement (the ticket's
// import) may have come after it, and is carried up, never overwritten
// with the agreed status. Before, a tie was taken for the bridge's own
// crossed write, and the agent's change was lost.
func TestReconcileKeepsAChangeOfTheImportsSecond(t *testing.T) {
	e := newReconcileEnv(t)
	id := e.newTicket("towels")
	e.cycle()
	if err := e.backend.SetStatusUnreported(e.ref(id), "working"); err != nil { // the same instant as the import
		t.Fatal(err)
	}
	e.toSlot()
	r := e.cycle()
	if got := e.hdStatus(id); got != "working" {
		t.Errorf("the reconcile overwrote the agent's working with %s: %v", got, r.Reconcile)
	}
	if got := e.upstream(id).Ticket.Status; got != guestapi.StatusInProgress {
		t.Errorf("after a reconcile the guest request is %s, want in_progress: %v", got, r.Reconcile)
	}
}

// TestReconcileCarriesMissedAPIStatusDown: an upstream status change the
// engine took for carried (its record says both sides show it) reaches
// the helpdesk at the next reconcile.
func TestReconcileCarriesMissedAPIStatusDown(t *testing.T) {
	e := newReconcileEnv(t)
	id := e.newTicket("minibar")
	e.cycle()
	if err := e.ts.Server.SetStatus(id, guestapi.StatusAssigned); err != nil {
		t.Fatal(err)
	}
	up := e.upstream(id)
	e.editTicket(id, func(t *state.Ticket) {
		t.UpstreamStatus, t.HelpdeskStatus, t.UpstreamUpdatedAt = string(guestapi.StatusAssigned), string(guestapi.StatusAssigned), up.Ticket.UpdatedAt
	})
	e.toSlot()
	r := e.cycle()
	if got := e.hdStatus(id); got != "open" {
		t.Fatalf("after a reconcile the helpdesk shows %q, want open: %s", got, r)
	}
	if r.Reconcile[tbsync.ReconcileCarriedDown] != 1 {
		t.Errorf("reconcile counts %v, want one carried_down", r.Reconcile)
	}
}

// TestReconcileBothMovedAlike: both sides moved to the same status; it is
// recorded as agreed and nothing is written.
func TestReconcileBothMovedAlike(t *testing.T) {
	e := newReconcileEnv(t)
	id := e.newTicket("spa")
	e.cycle()
	e.toSlot()
	if err := e.ts.Server.SetStatus(id, guestapi.StatusInProgress); err != nil {
		t.Fatal(err)
	}
	if err := e.backend.SetStatusUnreported(e.ref(id), "working"); err != nil {
		t.Fatal(err)
	}
	sets, posts := e.backend.Calls(memory.OpSetStatus), e.posts()
	r := e.cycle()
	if r.Reconcile[tbsync.ReconcileAgreed] != 1 {
		t.Errorf("reconcile counts %v, want one agreed", r.Reconcile)
	}
	if e.backend.Calls(memory.OpSetStatus) != sets || e.posts() != posts {
		t.Errorf("a write for a status both sides show: %d helpdesk, %d upstream", e.backend.Calls(memory.OpSetStatus)-sets, e.posts()-posts)
	}
	if got := e.stateTicket(id).AgreedStatus; got != string(guestapi.StatusInProgress) {
		t.Errorf("agreed status %q, want in_progress", got)
	}
}

// TestReconcileConflictLaterWins: both sides moved to different statuses;
// the later change wins, the conflict is counted, logged and noted on the
// helpdesk ticket, once.
func TestReconcileConflictLaterWins(t *testing.T) {
	e := newReconcileEnv(t)
	hdLater := e.newTicket("helpdesk later")
	upLater := e.newTicket("upstream later")
	e.cycle()
	e.toSlot()
	if err := e.ts.Server.SetStatus(hdLater, guestapi.StatusAssigned); err != nil {
		t.Fatal(err)
	}
	if err := e.backend.SetStatusUnreported(e.ref(upLater), "working"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	if err := e.backend.SetStatusUnreported(e.ref(hdLater), "working"); err != nil {
		t.Fatal(err)
	}
	if err := e.ts.Server.SetStatus(upLater, guestapi.StatusCancelled); err != nil {
		t.Fatal(err)
	}
	r := e.cycle()
	if r.Reconcile[tbsync.ReconcileConflict] != 2 {
		t.Fatalf("reconcile counts %v, want two conflicts: %s", r.Reconcile, r)
	}
	if got := e.upstream(hdLater).Ticket.Status; got != guestapi.StatusInProgress {
		t.Errorf("helpdesk's later change: the guest request is %s, want in_progress", got)
	}
	if got := e.hdStatus(hdLater); got != "working" {
		t.Errorf("helpdesk's later change: the helpdesk shows %q, want working", got)
	}
	if got := e.hdStatus(upLater); got != "cancelled" {
		t.Errorf("upstream's later change: the helpdesk shows %q, want cancelled", got)
	}
	if !strings.Contains(e.logs.String(), "status conflict") {
		t.Error("the conflict is not logged")
	}
	for _, id := range []string{hdLater, upLater} {
		notes := 0
		for _, m := range e.backend.Messages(e.ref(id)) {
			if strings.Contains(m.Body, "Status conflict") && !m.Public {
				notes++
			}
		}
		if notes != 1 {
			t.Errorf("ticket %s: %d conflict notes, want 1", id, notes)
		}
	}
	e.toSlot()
	if r := e.cycle(); r.Reconcile[tbsync.ReconcileConflict] != 0 {
		t.Errorf("the conflict came back: %v", r.Reconcile)
	}
	e.checkExactlyOnce()
}

// TestReconcileAfterLostAnswer: a helpdesk write whose answer was lost
// makes the ticket reconciled in the next cycle, not at its slot.
func TestReconcileAfterLostAnswer(t *testing.T) {
	e := newReconcileEnv(t)
	id := e.newTicket("pillow")
	e.cycle()
	if err := e.ts.Server.SetStatus(id, guestapi.StatusAssigned); err != nil {
		t.Fatal(err)
	}
	e.backend.Inject(memory.Fault{Op: memory.OpSetStatus, Nth: 1, AfterApply: true})
	r := e.tick()
	if r.Errors != 1 || !e.stateTicket(id).ReconcileSoon {
		t.Fatalf("the lost answer: %s, reconcile soon %v", r, e.stateTicket(id).ReconcileSoon)
	}
	r = e.tick()
	if n := r.Reconcile[tbsync.ReconcileAgreed]; n != 1 {
		t.Fatalf("the next cycle's reconciles %v, want one agreed: %s", r.Reconcile, r)
	}
	if st := e.stateTicket(id); st.ReconcileSoon || st.AgreedStatus != string(guestapi.StatusAssigned) {
		t.Errorf("after the reconcile: %+v", st)
	}
}

// TestReconcileAppendsMissingMessageOnce: an upstream message the engine
// took for mirrored but the helpdesk does not hold is appended at the
// next reconcile, and never twice.
func TestReconcileAppendsMissingMessageOnce(t *testing.T) {
	e := newReconcileEnv(t)
	id := e.newTicket("lamp")
	e.cycle()
	e.clock.Advance(time.Minute)
	msg := e.guest(id, "the lamp flickers")
	if err := e.store.Update(t.Context(), func(tx *state.Tx) error { return tx.PutMirrored(id, msg, "lost", e.clock.Now(), state.MessageInfo{}) }); err != nil {
		t.Fatal(err)
	}
	e.toSlot()
	r := e.cycle()
	if r.Reconcile[tbsync.ReconcileAppended] != 1 || !e.helpdeskHas(id, "the lamp flickers") {
		t.Fatalf("after a reconcile: %v", r.Reconcile)
	}
	for range 3 {
		e.toSlot()
		if r := e.cycle(); r.Reconcile[tbsync.ReconcileAppended] != 0 {
			t.Fatalf("appended again: %v", r.Reconcile)
		}
	}
	e.checkExactlyOnce()
}

// TestReconcileJournalsMissedHelpdeskReply: an agent's reply the feed
// skipped, which Lookup lists, goes upstream once.
func TestReconcileJournalsMissedHelpdeskReply(t *testing.T) {
	e := newReconcileEnv(t)
	id := e.newTicket("breakfast")
	e.cycle()
	if _, err := e.backend.Reply(e.ref(id), "Anna", "on its way"); err != nil {
		t.Fatal(err)
	}
	// The feed moves past the reply without reporting it.
	name := e.hd.Name()
	if err := e.store.Update(t.Context(), func(tx *state.Tx) error { return tx.SetCursor(name, "1000") }); err != nil {
		t.Fatal(err)
	}
	e.toSlot()
	r := e.cycle()
	if r.Reconcile[tbsync.ReconcileJournaled] != 1 || e.upstreamCount(id, "on its way") != 1 {
		t.Fatalf("after a reconcile: %v, upstream %d times", r.Reconcile, e.upstreamCount(id, "on its way"))
	}
	e.toSlot()
	e.cycle()
	if e.upstreamCount(id, "on its way") != 1 {
		t.Fatal("sent twice")
	}
}

// hiddenFeed is a helpdesk whose change feed leaves out the events whose
// body holds body while hide is set, as a feed does whose cursor moved
// past a reply committed late; Lookup still lists them. It counts in
// reported how often the feed reported one.
type hiddenFeed struct {
	adapters.Helpdesk
	f *feedFilter
}

type feedFilter struct {
	body     string
	hide     bool
	reported int
}

func (h hiddenFeed) Changes(ctx context.Context, cur adapters.Cursor) ([]adapters.Event, adapters.Cursor, error) {
	evs, next, err := h.Helpdesk.Changes(ctx, cur)
	evs = slices.DeleteFunc(evs, func(ev adapters.Event) bool {
		if !strings.Contains(ev.Body, h.f.body) {
			return false
		}
		if !h.f.hide {
			h.f.reported++
		}
		return h.f.hide
	})
	return evs, next, err
}

// TestReconcileCarriesReplyTheFeedHid: on a real adapter (the files
// helpdesk), an agent's reply that Changes never reported reaches the
// guest once at the ticket's reconcile, and not again when Changes reports
// it later.
func TestReconcileCarriesReplyTheFeedHid(t *testing.T) {
	e := newReconcileEnv(t)
	e.filesDir = filepath.Join(t.TempDir(), "helpdesk")
	const reply = "Two pillows are on their way."
	feed := &feedFilter{body: reply, hide: true}
	e.wrapHD = func(h adapters.Helpdesk) adapters.Helpdesk { return hiddenFeed{Helpdesk: h, f: feed} }
	id := e.newTicket("extra pillows")
	e.cycle()
	folder := readFolder(t, e.filesDir, id).Folder

	e.clock.Advance(time.Minute)
	p := filepath.Join(e.filesDir, "outbox", "reply.txt")
	if err := os.WriteFile(p, []byte("ticket: "+folder+"\nkind: reply\nauthor: Maria\n\n"+reply+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The ticket's reconcile slot follows from its id, which the
	// reference server draws: it may come in this tick already. Only a
	// reconcile can carry the hidden reply, so the cycle that carried it
	// must say it journaled it.
	r := e.tick()
	if e.upstreamCount(id, reply) == 0 {
		e.toSlot()
		r = e.cycle()
	}
	if n := e.upstreamCount(id, reply); n != 1 || r.Reconcile[tbsync.ReconcileJournaled] != 1 {
		t.Fatalf("after the ticket's reconcile the reply is upstream %d times, want 1; reconcile %v", n, r.Reconcile)
	}

	// The feed reports it at last: read again from the beginning.
	feed.hide = false
	if err := e.store.Update(t.Context(), func(tx *state.Tx) error { return tx.SetCursor(e.hd.Name(), "") }); err != nil {
		t.Fatal(err)
	}
	e.quiesce()
	e.toSlot()
	e.cycle()
	if feed.reported == 0 {
		t.Fatal("the feed read from the beginning never reported the reply")
	}
	if n := e.upstreamCount(id, reply); n != 1 {
		t.Fatalf("after the feed reported the reply, it is upstream %d times, want 1", n)
	}
}
