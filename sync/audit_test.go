package sync_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/memory"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// trail returns ticket id's audit trail.
func (e *env) trail(id string) []state.Audit {
	e.t.Helper()
	got, err := e.store.AuditTrail(e.t.Context(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

// line says an audit entry in a few words, for comparing trails.
func line(a state.Audit) string {
	s := a.Direction + " " + a.Kind
	if a.Status != "" {
		s += "=" + a.Status
	}
	if len(a.Fields) > 0 {
		s += "=" + strings.Join(a.Fields, ",")
	}
	s += ": " + a.Outcome + " (" + a.Cause
	if a.Operator != "" {
		s += " by " + a.Operator
	}
	return s + ")"
}

// lines returns the lines of the entries of trail from index from on.
func lines(trail []state.Audit, from int) []string {
	var out []string
	for _, a := range trail[from:] {
		out = append(out, line(a))
	}
	return out
}

func wantLines(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got %s\nwant %s", what, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

// TestAuditRecordsEachCrossing: every kind of crossing lands in the
// request's trail once, in order, with its cause, the ids of both sides,
// the Idempotency-Key of what went up and the engine's time; and never a
// message's text nor the API key.
func TestAuditRecordsEachCrossing(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("towels")
	e.cycle()
	ref := e.ref(id)
	tr := e.trail(id)
	wantLines(t, "the import", lines(tr, 0),
		"to helpdesk ticket: ok (list change)",
		"to helpdesk message: ok (list change)")
	if a := tr[1]; a.Ref != string(ref) || a.MessageID == "" || a.EventID == "" || !a.At.Equal(e.clock.Now()) {
		t.Errorf("the message's entry: %+v; want both ids, ref %s, at %s", a, ref, e.clock.Now())
	}

	n := len(tr)
	guestText := "The towels are still not here, room 12"
	e.guest(id, guestText)
	e.clock.Advance(11 * time.Minute) // past the full read of the ticket: a message need not move updated_at
	e.quiesce()
	tr = e.trail(id)
	// Read by the full read or the reconcile, whichever came first.
	if got := lines(tr, n); len(got) != 1 || !strings.HasPrefix(got[0], "to helpdesk message: ok (") {
		t.Errorf("a guest message: %v; want its message mirrored", got)
	}

	n = len(tr)
	replyText := "On their way now, sorry for the wait"
	e.backend.Reply(ref, "Ana", replyText)
	e.quiesce()
	tr = e.trail(id)
	wantLines(t, "a staff reply", lines(tr, n), "to platform reply: ok (helpdesk change)")
	en := entry(t, e.store, id, replyText)
	if a := tr[n]; a.IdempotencyKey != en.IdempotencyKey || a.EventID != en.EventID || a.MessageID != en.UpstreamMessageID || a.MessageID == "" {
		t.Errorf("the reply's entry %+v; want the journal's key %s, event %s and message %s", a, en.IdempotencyKey, en.EventID, en.UpstreamMessageID)
	}

	n = len(tr)
	if err := e.backend.SetStatus(ref, "Ana", "working"); err != nil {
		t.Fatal(err)
	}
	e.quiesce()
	tr = e.trail(id)
	wantLines(t, "a helpdesk status", lines(tr, n), "to platform status=in_progress: ok (helpdesk change)")

	n = len(tr)
	if err := e.ts.Server.SetStatus(id, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	if err := e.ts.Server.SetDepartment(id, "maintenance"); err != nil {
		t.Fatal(err)
	}
	e.quiesce()
	tr = e.trail(id)
	wantLines(t, "a status and a department upstream", lines(tr, n),
		"to helpdesk status=done: ok (list change)",
		"to helpdesk fields=department: ok (list change)")

	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{guestText, replyText, "first message of towels", e.key} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the trail holds %q:\n%s", secret, b)
		}
	}
}

// TestAuditRefusedRetriedSkipped: what the API refuses for good, what
// fails for now, and what operators do about it are in the trail, with
// the operator's name.
func TestAuditRefusedRetriedSkipped(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("pillow")
	e.cycle()
	ref := e.ref(id)
	n := len(e.trail(id))

	const body = "A firmer pillow is on its way."
	e.backend.Reply(ref, "Ana", body)
	e.ts.Server.SetHook(refserver.Match(http.MethodPost, postPrefix, refuse400))
	e.tick()
	e.ts.Server.SetHook(refserver.Match(http.MethodPost, postPrefix, func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	en := entry(t, e.store, id, body)
	if _, err := tbsync.RetryEntry(t.Context(), e.store, en.EventID, "ana", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	e.tick()
	if _, err := tbsync.SkipEntry(t.Context(), e.store, en.EventID, "ben", "answered by phone"); err != nil {
		t.Fatal(err)
	}
	if _, err := tbsync.ReadNow(t.Context(), e.store, id, "ana", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	tr := e.trail(id)
	wantLines(t, "refused, retried, failing, skipped", lines(tr, n),
		"to platform reply: refused (helpdesk change)",
		"to platform retry: ok (operator command by ana)",
		"to platform reply: retrying (helpdesk change)",
		"to platform skip: abandoned (operator command by ben)",
		" read now: ok (operator command by ana)")
	if d := tr[n].Detail; !strings.Contains(d, "400") {
		t.Errorf("the refusal's detail %q does not say what the API answered", d)
	}
	if d := tr[n+3].Detail; d != "answered by phone" {
		t.Errorf("the skip's detail %q, want its reason", d)
	}
}

// TestAuditQuietCyclesWriteNothing: once a hotel is quiet, its cycles
// append nothing to any trail and commit nothing.
func TestAuditQuietCyclesWriteNothing(t *testing.T) {
	e := newEnv(t)
	ids := []string{e.newTicket("a"), e.newTicket("b")}
	e.quiesce()
	before := map[string]int{}
	for _, id := range ids {
		before[id] = len(e.trail(id))
	}
	commits := e.store.Commits()
	for range 5 {
		e.tick()
	}
	if c := e.store.Commits() - commits; c != 0 {
		t.Errorf("quiet cycles committed %d times", c)
	}
	for _, id := range ids {
		if n := len(e.trail(id)); n != before[id] {
			t.Errorf("quiet cycles appended %d entries to %s's trail", n-before[id], id)
		}
	}
}

// TestAuditPrunedAfterItsDays: entries older than TICKETBRIDGE_AUDIT_DAYS
// are deleted by the first cycle report stored a day later, with no
// commit of their own (the cycle commits as often as with the trails
// kept forever); 0 keeps them.
func TestAuditPrunedAfterItsDays(t *testing.T) {
	commitsOf := map[int]int64{}
	for _, days := range []int{0, 2} {
		e := newEnv(t)
		e.cfg.AuditDays = days
		id := e.newTicket("lamp")
		e.quiesce()
		n := len(e.trail(id))
		if n == 0 {
			t.Fatal("no trail")
		}
		e.clock.Advance(4 * 24 * time.Hour)
		e.guest(id, "the lamp again")
		commits := e.store.Commits()
		e.tick()
		commitsOf[days] = e.store.Commits() - commits
		got := e.trail(id)
		if days == 0 {
			if len(got) != n+1 {
				t.Errorf("kept forever: %d entries, want %d", len(got), n+1)
			}
			continue
		}
		if len(got) != 1 || got[0].Kind != "message" || !got[0].At.Equal(e.clock.Now()) {
			t.Errorf("after the prune: %v; want the new message's entry alone", lines(got, 0))
		}
	}
	if commitsOf[2] != commitsOf[0] {
		t.Errorf("the cycle that pruned committed %d times, %d with nothing to prune", commitsOf[2], commitsOf[0])
	}
}

// TestAuditHelpdeskFailuresAndAdoption: a write the helpdesk fails is in
// the trail as retrying, with the error, and then as ok when it went
// through; a ticket the helpdesk had already (a lost state file) is
// found, not made again, and says so.
func TestAuditHelpdeskFailuresAndAdoption(t *testing.T) {
	e := newEnv(t)
	e.backend.Inject(memory.Fault{Op: memory.OpEnsureTicket, Nth: 1})
	id := e.newTicket("kettle")
	e.cycle()
	e.quiesce()
	got := lines(e.trail(id), 0)
	want := []string{"to helpdesk ticket: retrying (list change)", "to helpdesk ticket: ok ("}
	if len(got) < 3 || got[0] != want[0] || !strings.HasPrefix(got[1], want[1]) {
		t.Fatalf("a failed create, then the create: %v", got)
	}
	if d := e.trail(id)[0].Detail; !strings.Contains(d, memory.ErrInjected.Error()) {
		t.Errorf("the failure's detail %q lacks the error", d)
	}

	// A lost state file: the ticket is found by Lookup.
	e.store.Close()
	e.store = nil
	if err := os.Remove(e.path); err != nil {
		t.Fatal(err)
	}
	e.open()
	e.cycle()
	// What state no longer says was carried is carried again.
	wantLines(t, "after a lost state", lines(e.trail(id), 0),
		"to helpdesk ticket: nothing to send (list change)",
		"to helpdesk status=new: ok (list change)",
		"to helpdesk fields=department,title,due,rating,comment: ok (list change)")
}

// TestAuditSupersededStatus: a helpdesk status change that a newer one
// upstream overrides is in the trail as abandoned, with why, beside the
// upstream status set in the helpdesk.
func TestAuditSupersededStatus(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("helpdesk first")
	e.cycle()
	n := len(e.trail(id))
	e.clock.Advance(time.Minute)
	e.backend.SetStatus(e.ref(id), "Agent", "working")
	e.clock.Advance(time.Second)
	if err := e.ts.Server.SetStatus(id, guestapi.StatusCancelled); err != nil {
		t.Fatal(err)
	}
	e.tick()
	e.quiesce()
	tr := e.trail(id)
	got := lines(tr, n)
	var abandoned *state.Audit
	for i, a := range tr[n:] {
		if a.Outcome == state.AuditAbandoned {
			abandoned = &tr[n+i]
		}
	}
	if abandoned == nil || abandoned.Kind != state.KindStatus || abandoned.Status != "in_progress" || abandoned.IdempotencyKey == "" ||
		!strings.HasPrefix(abandoned.Detail, "superseded") || !strings.Contains(strings.Join(got, "\n"), "to helpdesk status=cancelled: ok") {
		t.Errorf("the trail of a superseded change: %v", got)
	}
}
