package sync_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// settle runs cycles until every ticket is quiet for longer than
// TICKETBRIDGE_QUIET_MAX, as after a long run.
func (e *env) settle() {
	e.t.Helper()
	e.quiesce()
	e.clock.Advance(e.cfg.QuietMax + time.Minute)
	e.cycle()
	e.tick()
}

// helpdeskHas reports whether the helpdesk ticket of id holds a message
// with body.
func (e *env) helpdeskHas(id, body string) bool {
	for _, m := range e.backend.Messages(e.ref(id)) {
		if m.Body == body {
			return true
		}
	}
	return false
}

// TestChangesOnQuietTicketsCrossInOneCycle: a guest message and a console
// status change on open requests quiet for longer than QUIET_MAX reach the
// helpdesk in the next cycle, each request in assigned, in_progress or new;
// and a quiet cycle costs the lists and the full-read share, not a read
// per ticket.
func TestChangesOnQuietTicketsCrossInOneCycle(t *testing.T) {
	e := newEnv(t)
	const n = 60
	var ids []string
	for i := range n {
		ids = append(ids, e.newTicket(fmt.Sprintf("request %d", i)))
	}
	e.cycle()
	e.clock.Advance(time.Second) // a change moves updated_at past the stored one
	statuses := []guestapi.Status{guestapi.StatusNew, guestapi.StatusAssigned, guestapi.StatusInProgress}
	hdStatus := map[guestapi.Status]string{guestapi.StatusNew: "new", guestapi.StatusAssigned: "open", guestapi.StatusInProgress: "working", guestapi.StatusCancelled: "cancelled"}
	for i, id := range ids {
		if err := e.ts.Server.SetStatus(id, statuses[i%3]); err != nil {
			t.Fatal(err)
		}
	}
	e.settle()

	// Quiet cycles: one list (the queue fits in one), plus the tickets
	// whose full-read slot came: n * 30 s / 10 min on average.
	reqs := 0
	const quiet = 40
	for range quiet {
		r := e.tick()
		if r.Refreshed > 0 && r.Signalled > 0 {
			t.Fatalf("a quiet cycle read tickets a list showed changed: %s", r)
		}
		reqs += r.APIRequests
	}
	perCycle := float64(reqs) / quiet
	limit := 1 + float64(n)*30/600 + 1
	if perCycle > limit {
		t.Errorf("a quiet cycle makes %.1f API requests on average, want at most %.1f (one list + the full-read share + 1)", perCycle, limit)
	}

	for i, id := range ids {
		e.guest(id, "late message "+id)
		if i%2 == 0 {
			if err := e.ts.Server.SetStatus(id, guestapi.StatusCancelled); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := e.tick()
	if r.Signalled != n {
		t.Errorf("the lists showed %d tickets changed, want %d: %s", r.Signalled, n, r)
	}
	for i, id := range ids {
		if !e.helpdeskHas(id, "late message "+id) {
			t.Errorf("ticket %s: the guest's message did not cross in one cycle", id)
		}
		want := statuses[i%3]
		if i%2 == 0 {
			want = guestapi.StatusCancelled
		}
		if snap, _ := e.backend.Ticket(e.ref(id)); snap.Status != hdStatus[want] {
			got := snap.Status
			t.Errorf("ticket %s: helpdesk status %s after one cycle, want %s", id, got, hdStatus[want])
		}
	}
	e.checkExactlyOnce()
}

// TestFullListsStillShowEveryChange: more than 200 requests in one status
// and department. The lists show the newest 200; a change on any of the
// others still crosses within the full-read interval, through reads
// spread over the cycles rather than in one burst.
func TestFullListsStillShowEveryChange(t *testing.T) {
	e := newEnv(t)
	e.cfg.Backfill = tbsync.Backfill{guestapi.StatusAssigned}
	var ids []string
	for i := range 260 {
		tv, err := e.ts.Server.CreateTicket(e.ts.Org, refserver.NewTicket{
			Department: "busy", Status: guestapi.StatusAssigned, TaskDescription: fmt.Sprintf("r%d", i),
			CreatedAt: start.Add(-time.Duration(260-i) * time.Minute),
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tv.ID)
	}
	e.cycle() // imports the newest 200: the lists show no more
	if !strings.Contains(e.logs.String(), `department \"busy\" in status assigned holds 200 tickets`) {
		t.Fatalf("no warning about the full department list:\n%s", e.logs)
	}
	// The 60 oldest are imported by hand, as an earlier, shorter queue did.
	for _, id := range ids[:60] {
		if err := e.ts.Server.SetStatus(id, guestapi.StatusNew); err != nil {
			t.Fatal(err)
		}
	}
	e.tick()
	for _, id := range ids[:60] {
		if err := e.ts.Server.SetStatus(id, guestapi.StatusAssigned); err != nil {
			t.Fatal(err)
		}
	}
	e.settle()
	if got := len(e.backend.Tickets()); got != 260 {
		t.Fatalf("%d helpdesk tickets, want 260", got)
	}

	// Every request gets a message; the oldest 60 are beyond every list.
	for _, id := range ids {
		e.guest(id, "late message "+id)
	}
	maxReads := 0
	interval := 10 * time.Minute
	for elapsed := time.Duration(0); elapsed <= interval; elapsed += 30 * time.Second {
		r := e.tick()
		if elapsed > 0 {
			maxReads = max(maxReads, r.Refreshed)
		}
	}
	for _, id := range ids {
		if !e.helpdeskHas(id, "late message "+id) {
			t.Errorf("ticket %s: the guest's message did not cross within the full-read interval", id)
		}
	}
	warned := 0
	for _, line := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "holds 200 tickets") {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("the full department list was warned about %d times in %s of cycles, want once an hour", warned, 10*time.Minute+e.cfg.QuietMax)
	}
	// 260 tickets over 20 cycles: 13 a cycle on average; slots are a hash,
	// so allow some unevenness, but no burst.
	if maxReads > 40 {
		t.Errorf("a cycle read %d tickets: the full reads come in bursts", maxReads)
	}
	e.checkExactlyOnce()
}

// TestMessagesThatDoNotMoveUpdatedAt: a service that never moves
// updated_at on a new message. Every message still crosses within the
// full-read interval; the first read that finds one shortens the interval
// (logged once, in the report, the status and the metric's source), and
// later messages cross within the shorter interval.
func TestMessagesThatDoNotMoveUpdatedAt(t *testing.T) {
	e := newEnv(t, refservertest.WithOptions(refserver.Options{MessagesKeepUpdatedAt: true}))
	var ids []string
	for i := range 20 {
		ids = append(ids, e.newTicket(fmt.Sprintf("request %d", i)))
	}
	e.cycle()
	e.settle()
	for _, id := range ids {
		e.guest(id, "unsignalled "+id)
	}
	unsignalled := 0
	for elapsed := time.Duration(0); elapsed <= 10*time.Minute; elapsed += 30 * time.Second {
		unsignalled += e.tick().Unsignalled
	}
	for _, id := range ids {
		if !e.helpdeskHas(id, "unsignalled "+id) {
			t.Errorf("ticket %s: the message did not cross within the full-read interval", id)
		}
	}
	if unsignalled != len(ids) {
		t.Errorf("%d reads counted as finding an unsignalled change, want %d", unsignalled, len(ids))
	}
	st, err := tbsync.ReadStatus(t.Context(), e.store, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if st.FullRead == nil || !st.FullRead.Shortened() || st.FullRead.Effective != 150*time.Second {
		t.Fatalf("full-read interval after %d unsignalled changes: %+v, want it shortened to a quarter (2m30s)", unsignalled, st.FullRead)
	}
	if !strings.Contains(st.FullRead.String(), "shortened from 10m0s") {
		t.Errorf("status does not say why: %s", st.FullRead)
	}
	if got := strings.Count(e.logs.String(), "the API did not move updated_at"); got != 2 {
		t.Errorf("%d warnings about the shortened interval, want 2 (10m to 5m to 2m30s; then only counted)", got)
	}

	// Now messages cross within the shorter interval.
	for _, id := range ids {
		e.guest(id, "second "+id)
	}
	for elapsed := time.Duration(0); elapsed <= 150*time.Second; elapsed += 30 * time.Second {
		e.tick()
	}
	for _, id := range ids {
		if !e.helpdeskHas(id, "second "+id) {
			t.Errorf("ticket %s: the second message did not cross within the shortened interval", id)
		}
	}

	// A restart keeps the shortened interval; a new configured value
	// starts over from it.
	e.open()
	e.tick()
	if st, _ := tbsync.ReadStatus(t.Context(), e.store, e.clock.Now()); st.FullRead == nil || st.FullRead.Effective != 150*time.Second {
		t.Errorf("after a restart: %+v", st.FullRead)
	}
	e.cfg.FullReadInterval = 20 * time.Minute
	e.open()
	e.tick()
	if st, _ := tbsync.ReadStatus(t.Context(), e.store, e.clock.Now()); st.FullRead == nil || st.FullRead.Effective != 20*time.Minute {
		t.Errorf("after a new TICKETBRIDGE_FULL_READ_INTERVAL: %+v", st.FullRead)
	}
	e.checkExactlyOnce()
}

// TestClosedRequestSeenInOneCycle: a guest writing on a closed request,
// retired long ago, is seen in the next cycle while the request is among
// the newest of its status and department.
func TestClosedRequestSeenInOneCycle(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("closed one")
	e.cycle()
	if err := e.ts.Server.SetStatus(id, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	e.tick()
	e.clock.Advance(e.cfg.ClosedGrace + time.Hour)
	e.cycle()
	e.clock.Advance(2 * time.Hour)
	e.cycle()
	if st, _ := tbsync.ReadTicket(t.Context(), e.store, id); !st.Retired {
		t.Fatalf("ticket not retired: %+v", st.TicketStatus)
	}
	e.guest(id, "I left my charger in the room")
	e.tick()
	if !e.helpdeskHas(id, "I left my charger in the room") {
		t.Fatal("a guest message on a retired request did not cross in one cycle")
	}
}

// TestRateLimitedReadsSlowDown: the API answers reads with 429. The cycle
// does not fail, the tickets not read stay due and are read in later
// cycles, and every message crosses once.
func TestRateLimitedReadsSlowDown(t *testing.T) {
	e := newEnv(t, refservertest.WithOptions(refserver.Options{TicketRateLimit: refserver.RateLimit{Requests: 12, Window: time.Minute}}))
	var ids []string
	for i := range 30 {
		ids = append(ids, e.newTicket(fmt.Sprintf("request %d", i)))
	}
	throttled := 0
	for range 20 {
		r := e.tick()
		if r.Outcome == tbsync.OutcomeFailed {
			t.Fatalf("a rate-limited cycle failed: %s", r)
		}
		throttled += r.Throttled
	}
	if throttled == 0 {
		t.Fatal("no read was rate limited: the test does not test")
	}
	if !strings.Contains(e.logs.String(), "429 (too many requests): reads slowed down") {
		t.Errorf("no log line about the slow-down:\n%s", e.logs)
	}
	for i, id := range ids {
		if len(e.backend.Find(id)) != 1 || !e.helpdeskHas(id, fmt.Sprintf("first message of request %d", i)) {
			t.Errorf("ticket %s not imported with its message", id)
		}
	}
	e.checkExactlyOnce()
}

// refusingHelpdesk refuses the credentials on every write while refuse is
// set, as a helpdesk does after its token was revoked, and counts the
// calls.
type refusingHelpdesk struct {
	adapters.Helpdesk
	refuse atomic.Bool
	calls  atomic.Int64
}

func (h *refusingHelpdesk) Append(ctx context.Context, ref adapters.Ref, msgs []adapters.Message) ([]adapters.Appended, error) {
	if h.refuse.Load() {
		h.calls.Add(1)
		return nil, fmt.Errorf("POST /tickets/%s/comments: HTTP 401: %w", ref, adapters.ErrAuth)
	}
	return h.Helpdesk.Append(ctx, ref, msgs)
}

// TestHelpdeskRefusedStopsTheCycle: a helpdesk that refuses the
// credentials stops the cycle with one clear error after its first
// refusal, instead of failing every ticket in turn; nothing is lost, and
// the next cycle with good credentials carries everything.
func TestHelpdeskRefusedStopsTheCycle(t *testing.T) {
	e := newEnv(t)
	hd := &refusingHelpdesk{}
	e.wrapHD = func(h adapters.Helpdesk) adapters.Helpdesk { hd.Helpdesk = h; return hd }
	var ids []string
	for i := range 12 {
		ids = append(ids, e.newTicket(fmt.Sprintf("request %d", i)))
	}
	e.cycle()
	e.clock.Advance(time.Second)
	for _, id := range ids {
		e.guest(id, "while the token was revoked "+id)
	}
	hd.refuse.Store(true)
	e.clock.Advance(30 * time.Second)
	r, err := e.engine.RunCycle(context.Background())
	if !errors.Is(err, tbsync.ErrHelpdeskRefused) || !errors.Is(err, adapters.ErrAuth) || r.Outcome != tbsync.OutcomeFailed {
		t.Fatalf("cycle with refused credentials: %v, %s", err, r)
	}
	if n := hd.calls.Load(); n > int64(e.cfg.Concurrency) {
		t.Errorf("%d appends tried after the first refusal, want at most the %d in flight", n, e.cfg.Concurrency)
	}
	if r.Errors > e.cfg.Concurrency {
		t.Errorf("%d ticket errors: every ticket failed in turn", r.Errors)
	}
	st, err := tbsync.ReadTicket(t.Context(), e.store, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if st.Attempts != 0 {
		t.Errorf("a ticket was backed off for the helpdesk's refusal: %+v", st.TicketStatus)
	}
	hd.refuse.Store(false)
	e.tick()
	for _, id := range ids {
		if !e.helpdeskHas(id, "while the token was revoked "+id) {
			t.Errorf("ticket %s: message lost", id)
		}
	}
	e.checkExactlyOnce()
}

// TestClosedListsAskOnlyLiveDepartments: closed lists grow with time. A
// full list of a closed status is asked again only for the departments
// whose tickets are not all retired, so a department of old, retired
// requests costs no list per cycle; a guest writing on a closed request of
// a live department is still seen in one cycle, although the request is
// not among the newest of its status.
func TestClosedListsAskOnlyLiveDepartments(t *testing.T) {
	e := newEnv(t)
	e.cfg.Backfill = tbsync.Backfill{guestapi.StatusDone}
	mk := func(dept string, created time.Time) string {
		tv, err := e.ts.Server.CreateTicket(e.ts.Org, refserver.NewTicket{Department: dept, Status: guestapi.StatusDone, TaskDescription: dept, CreatedAt: created})
		if err != nil {
			t.Fatal(err)
		}
		return tv.ID
	}
	live := mk("spa", start.Add(-300*time.Hour)) // the oldest: beyond the newest 200 of done
	for i := range 230 {
		mk("archive", start.Add(-time.Duration(230-i)*time.Hour))
	}
	mk("spa", start.Add(-time.Minute)) // the newest: the list names spa
	e.cycle()
	if len(e.backend.Find(live)) != 1 {
		t.Fatal("the backfill did not import the oldest done request of its department")
	}
	e.cfg.Backfill = nil // done is no longer imported: its lists need no department of the list
	e.open()
	// Everything closes its grace; then spa gets a fresh closed request.
	e.clock.Advance(e.cfg.ClosedGrace + time.Hour)
	e.cycle()
	e.clock.Advance(e.cfg.RetiredInterval + time.Hour)
	e.cycle()
	fresh := mk("spa", time.Time{})
	e.tick()
	if len(e.backend.Find(fresh)) != 1 {
		t.Fatal("a request closed since the start was not imported")
	}
	before := e.ts.Server.Stats().Requests["GET "+refserver.BasePath+"/tickets"][200]
	e.tick()
	lists := e.ts.Server.Stats().Requests["GET "+refserver.BasePath+"/tickets"][200] - before
	// new, assigned, in_progress, completed, confirmed, cancelled: one
	// each; done: full, then spa only (archive is all retired).
	if lists != 8 {
		t.Errorf("a cycle made %d list requests, want 8: the closed list is asked per live department only", lists)
	}
	e.clock.Advance(time.Second)
	e.guest(live, "I forgot my book at the spa")
	e.tick()
	if !e.helpdeskHas(live, "I forgot my book at the spa") {
		t.Error("a guest message on a closed request of a live department did not cross in one cycle")
	}
}

// holdingHelpdesk holds every status change while hold is set, as Zendesk
// does while a field required on solve is empty.
type holdingHelpdesk struct {
	adapters.Helpdesk
	hold  atomic.Bool
	tries atomic.Int64
}

func (h *holdingHelpdesk) SetStatus(ctx context.Context, ref adapters.Ref, s guestapi.Status) error {
	if h.hold.Load() {
		h.tries.Add(1)
		return &adapters.HeldError{Ref: ref, Op: "set status " + string(s), Need: "the field Room number is required on solve"}
	}
	return h.Helpdesk.SetStatus(ctx, ref, s)
}

// TestHeldStatusGoesThroughOnceReleased: a status the helpdesk holds is
// counted, shown on the ticket, tried again every few minutes rather than
// on a growing backoff, and set once the helpdesk lets it through.
func TestHeldStatusGoesThroughOnceReleased(t *testing.T) {
	e := newEnv(t)
	hd := &holdingHelpdesk{}
	e.wrapHD = func(h adapters.Helpdesk) adapters.Helpdesk { hd.Helpdesk = h; return hd }
	id := e.newTicket("towels")
	e.cycle()
	hd.hold.Store(true)
	e.clock.Advance(time.Second)
	if err := e.ts.Server.SetStatus(id, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	if r := e.tick(); r.Held != 1 {
		t.Fatalf("held changes in the report: %s", r)
	}
	st, _ := tbsync.ReadTicket(t.Context(), e.store, id)
	if st.DueReason != tbsync.DueHeld || !strings.Contains(st.LastError, "Room number is required") {
		t.Fatalf("the held change is not shown on the ticket: %+v", st.TicketStatus)
	}
	for range 30 { // 15 minutes
		e.tick()
	}
	if n := hd.tries.Load(); n < 3 || n > 5 {
		t.Errorf("%d tries in 15 minutes, want one every 5", n)
	}
	hd.hold.Store(false)
	for range 11 {
		e.tick()
	}
	if snap, _ := e.backend.Ticket(e.ref(id)); snap.Status != "solved" {
		t.Fatalf("helpdesk status %q after the hold was lifted, want solved", snap.Status)
	}
}

// limitedReads answers GET /tickets/{id} with 429 while on is set.
type limitedReads struct {
	tbsync.API
	on atomic.Bool
}

func (l *limitedReads) GetTicket(ctx context.Context, id string) (*guestapi.Thread, error) {
	if l.on.Load() {
		return nil, fmt.Errorf("get ticket: %w", &guestapi.Error{StatusCode: 429, Code: guestapi.CodeRateLimited, RetryAfter: time.Second})
	}
	return l.API.GetTicket(ctx, id)
}

// TestStatusWaitsForAReadWhenRateLimited: the agent changed the status,
// then the console, and the read that decides which is newer is answered
// with 429. The helpdesk's older change must wait for a read rather than
// overwrite the console's newer one.
func TestStatusWaitsForAReadWhenRateLimited(t *testing.T) {
	e := newEnv(t)
	api := &limitedReads{}
	e.wrapAPI = func(a tbsync.API) tbsync.API { api.API = a; return api }
	id := e.newTicket("towels")
	e.cycle()
	e.clock.Advance(time.Minute)
	e.backend.SetStatus(e.ref(id), "Agent", "working")
	e.clock.Advance(time.Second)
	if err := e.ts.Server.SetStatus(id, guestapi.StatusCancelled); err != nil {
		t.Fatal(err)
	}
	api.on.Store(true)
	if r := e.tick(); r.Throttled == 0 || r.Sent != 0 {
		t.Fatalf("a cycle whose read was refused with 429 sent the helpdesk's status: %s", r)
	}
	if got := e.upstream(id).Ticket.Status; got != guestapi.StatusCancelled {
		t.Fatalf("upstream %s after the throttled cycle, want cancelled", got)
	}
	api.on.Store(false)
	e.tick()
	e.quiesce()
	if got := e.upstream(id).Ticket.Status; got != guestapi.StatusCancelled {
		t.Errorf("upstream %s, want cancelled: the console's change is the newer", got)
	}
	if snap, _ := e.backend.Ticket(e.ref(id)); snap.Status != "cancelled" {
		t.Errorf("helpdesk %s, want cancelled", snap.Status)
	}
}

// TestOpenTicketClosedBeyondTheClosedLists: the console closes an old open
// request in a department whose closed list is full of newer ones. The
// request leaves the whole list of its open status, which is enough to read
// it in the next cycle, although no list shows it in its new status.
func TestOpenTicketClosedBeyondTheClosedLists(t *testing.T) {
	e := newEnv(t)
	old, err := e.ts.Server.CreateTicket(e.ts.Org, refserver.NewTicket{Department: "hk", TaskDescription: "old", CreatedAt: start.Add(-500 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 210 {
		if _, err := e.ts.Server.CreateTicket(e.ts.Org, refserver.NewTicket{Department: "hk", Status: guestapi.StatusCompleted,
			TaskDescription: fmt.Sprintf("done %d", i), CreatedAt: start.Add(-time.Duration(210-i) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	e.cycle()
	e.settle()
	e.clock.Advance(time.Second)
	if err := e.ts.Server.SetStatus(old.ID, guestapi.StatusCompleted); err != nil {
		t.Fatal(err)
	}
	e.tick()
	if snap, _ := e.backend.Ticket(e.ref(old.ID)); snap.Status != "solved" {
		t.Fatalf("helpdesk status %q one cycle after the console closed it, want solved", snap.Status)
	}
	if st, _ := tbsync.ReadTicket(t.Context(), e.store, old.ID); st.UpstreamStatus != "completed" {
		t.Fatalf("state: %+v", st.TicketStatus)
	}
}
