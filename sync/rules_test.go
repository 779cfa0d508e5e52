package sync_test

import (
	"context"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// movingAPI stands in for the hotel's console moving a request to another
// department (the reference server cannot yet): the lists and reads show
// a moved request in its new department, updated when it moved.
type movingAPI struct {
	tbsync.API
	mu    gosync.Mutex
	moves map[string]movedTo
}

type movedTo struct {
	dept string
	at   time.Time
}

func (m *movingAPI) move(id, dept string, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.moves == nil {
		m.moves = map[string]movedTo{}
	}
	m.moves[id] = movedTo{dept, at}
}

func (m *movingAPI) moved(id string) (movedTo, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mv, ok := m.moves[id]
	return mv, ok
}

// ListTickets shows each moved request in its new department. The lists
// of these tests are one list of the whole queue; a department's list
// only drops the requests moved out of it.
func (m *movingAPI) ListTickets(ctx context.Context, opt guestapi.ListOptions) ([]guestapi.Ticket, error) {
	ts, err := m.API.ListTickets(ctx, opt)
	out := ts[:0]
	for _, t := range ts {
		if mv, ok := m.moved(t.ID); ok {
			t.Department = mv.dept
			if mv.at.After(t.UpdatedAt) {
				t.UpdatedAt = mv.at
			}
		}
		if opt.Department == "" || t.Department == opt.Department {
			out = append(out, t)
		}
	}
	return out, err
}

func (m *movingAPI) GetTicket(ctx context.Context, id string) (*guestapi.Thread, error) {
	th, err := m.API.GetTicket(ctx, id)
	if err != nil {
		return th, err
	}
	if mv, ok := m.moved(id); ok {
		th.Ticket.Department = mv.dept
		if mv.at.After(th.Ticket.UpdatedAt) {
			th.Ticket.UpdatedAt = mv.at
		}
	}
	return th, nil
}

// rulesEnv is an env whose engines see requests moved by moves.
func rulesEnv(t *testing.T) (*env, *movingAPI) {
	e := newEnv(t)
	m := &movingAPI{}
	e.wrapAPI = func(a tbsync.API) tbsync.API { m.API = a; return m }
	return e, m
}

// request creates a request of department dept and origin o, with one
// guest message.
func (e *env) requestIn(dept string, o guestapi.Origin, desc string) string {
	e.t.Helper()
	tv, err := e.ts.Server.CreateTicket(e.ts.Org, refserver.NewTicket{Department: dept, Origin: o, TaskDescription: desc})
	if err != nil {
		e.t.Fatal(err)
	}
	e.guest(tv.ID, "first message of "+desc)
	return tv.ID
}

// upstreamHas reports whether ticket id's thread holds a message of body.
func (e *env) upstreamHas(id, body string) bool {
	e.t.Helper()
	return slices.ContainsFunc(e.upstream(id).Messages, func(m refserver.InternalMessage) bool { return m.Body == body })
}

func loadRules(t *testing.T, vars map[string]string) (tbsync.Config, error) {
	t.Helper()
	return tbsync.LoadConfig(context.Background(), envconfig.MapLookuper(vars))
}

// TestRulesConfig: the rules are read once, when the configuration is;
// each error names the variable at fault; a dimension takes one of its
// two variables; the old TICKETBRIDGE_NOTES_UPSTREAM still works alone,
// and set with TICKETBRIDGE_UPSTREAM is an error naming both.
func TestRulesConfig(t *testing.T) {
	c, err := loadRules(t, map[string]string{
		"TICKETBRIDGE_EXCLUDE_DEPARTMENTS": " maintenance, ,engineering ",
		"TICKETBRIDGE_INCLUDE_ORIGINS":     "Guest,staff",
		"TICKETBRIDGE_UPSTREAM":            "status",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.ExcludeDepartments, tbsync.Departments{"maintenance", "engineering"}) ||
		!slices.Equal(c.IncludeOrigins, tbsync.Origins{guestapi.OriginGuest, guestapi.OriginStaff}) ||
		c.Upstream.Notes || !c.Upstream.Status {
		t.Fatalf("read: %+v", c)
	}
	if got, want := tbsync.RulesText(c), "leave out requests of department maintenance, engineering; requests of origins other than guest, staff; upstream: replies, status"; got != want {
		t.Errorf("RulesText: %q, want %q", got, want)
	}
	if got, want := tbsync.RulesText(tbsync.DefaultConfig()), "nothing left out; upstream: replies, notes, status"; got != want {
		t.Errorf("RulesText of the defaults: %q, want %q", got, want)
	}

	for _, tc := range []struct {
		vars map[string]string
		want []string // in the error
	}{
		{map[string]string{"TICKETBRIDGE_INCLUDE_ORIGINS": "guest,robot"}, []string{`TICKETBRIDGE_INCLUDE_ORIGINS="guest,robot"`, `unknown origin "robot"`}},
		{map[string]string{"TICKETBRIDGE_EXCLUDE_ORIGINS": "internal,internal"}, []string{"TICKETBRIDGE_EXCLUDE_ORIGINS", "twice"}},
		{map[string]string{"TICKETBRIDGE_INCLUDE_DEPARTMENTS": "front desk"}, []string{"TICKETBRIDGE_INCLUDE_DEPARTMENTS", `"front desk"`}},
		{map[string]string{"TICKETBRIDGE_EXCLUDE_DEPARTMENTS": "spa,spa"}, []string{"TICKETBRIDGE_EXCLUDE_DEPARTMENTS", `department "spa" twice`}},
		{map[string]string{"TICKETBRIDGE_INCLUDE_DEPARTMENTS": "spa", "TICKETBRIDGE_EXCLUDE_DEPARTMENTS": "gym"}, []string{"TICKETBRIDGE_INCLUDE_DEPARTMENTS and TICKETBRIDGE_EXCLUDE_DEPARTMENTS are both set"}},
		{map[string]string{"TICKETBRIDGE_INCLUDE_ORIGINS": "guest", "TICKETBRIDGE_EXCLUDE_ORIGINS": "internal"}, []string{"TICKETBRIDGE_INCLUDE_ORIGINS and TICKETBRIDGE_EXCLUDE_ORIGINS are both set"}},
		{map[string]string{"TICKETBRIDGE_UPSTREAM": "notes,replies"}, []string{`TICKETBRIDGE_UPSTREAM="notes,replies"`, "replies always go"}},
		{map[string]string{"TICKETBRIDGE_UPSTREAM": "notes,statuses"}, []string{`TICKETBRIDGE_UPSTREAM="notes,statuses"`, `unknown item "statuses"`}},
		{map[string]string{"TICKETBRIDGE_UPSTREAM": ""}, []string{`TICKETBRIDGE_UPSTREAM=""`, "is empty"}},
		{map[string]string{"TICKETBRIDGE_UPSTREAM": "none,notes"}, []string{"TICKETBRIDGE_UPSTREAM", "none alone"}},
		{map[string]string{"TICKETBRIDGE_NOTES_UPSTREAM": "maybe"}, []string{`TICKETBRIDGE_NOTES_UPSTREAM="maybe"`}},
		{map[string]string{"TICKETBRIDGE_UPSTREAM": "notes,status", "TICKETBRIDGE_NOTES_UPSTREAM": "true"}, []string{"TICKETBRIDGE_UPSTREAM and TICKETBRIDGE_NOTES_UPSTREAM are both set"}},
	} {
		_, err := loadRules(t, tc.vars)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %v, want it to contain %s", tc.vars, err, w)
			}
		}
	}

	// The old variable alone: notes off, status still up.
	c, err = loadRules(t, map[string]string{"TICKETBRIDGE_NOTES_UPSTREAM": "false"})
	if err != nil || c.Upstream.IsSet() || c.NotesUpstream != tbsync.NotesOff {
		t.Fatalf("the old variable: %+v, %v", c, err)
	}
	if got, want := tbsync.RulesText(c), "nothing left out; upstream: replies, status"; got != want {
		t.Errorf("RulesText of the old variable: %q, want %q", got, want)
	}
	if c, err = loadRules(t, map[string]string{"TICKETBRIDGE_UPSTREAM": " NONE "}); err != nil || c.Upstream.String() != "none" {
		t.Errorf("none: %v, %v", c.Upstream, err)
	}
}

// TestRulesLeaveOutNeverCreated: a request a rule leaves out, by
// department or by origin, is never created in the helpdesk; the report
// counts it under its rule; the others are mirrored as ever.
func TestRulesLeaveOutNeverCreated(t *testing.T) {
	e, _ := rulesEnv(t)
	e.cfg.ExcludeDepartments = tbsync.Departments{"maintenance"}
	e.cfg.ExcludeOrigins = tbsync.Origins{guestapi.OriginInternal}
	kept := e.requestIn("housekeeping", guestapi.OriginGuest, "towels")
	byDept := e.requestIn("maintenance", guestapi.OriginGuest, "dripping tap")
	byOrigin := e.requestIn("housekeeping", guestapi.OriginInternal, "deep clean of floor 3")
	both := e.requestIn("maintenance", guestapi.OriginInternal, "boiler service")
	r := e.cycle()
	if r.Created != 1 || len(e.backend.Find(kept)) != 1 {
		t.Fatalf("first cycle: %s", r)
	}
	for _, id := range []string{byDept, byOrigin, both} {
		if n := len(e.backend.Find(id)); n != 0 {
			t.Errorf("request %s left out by a rule has %d helpdesk tickets", id, n)
		}
	}
	want := []tbsync.LeftOut{
		{Variable: "TICKETBRIDGE_EXCLUDE_DEPARTMENTS", Department: "maintenance", NotCreated: 2},
		{Variable: "TICKETBRIDGE_EXCLUDE_ORIGINS", Origin: guestapi.OriginInternal, NotCreated: 1},
	}
	if !slices.Equal(r.LeftOut, want) {
		t.Fatalf("left out: %+v, want %+v", r.LeftOut, want)
	}
	if s := r.String(); !strings.Contains(s, `left out by the rules: department "maintenance" (TICKETBRIDGE_EXCLUDE_DEPARTMENTS): 2 not created; origin "internal" (TICKETBRIDGE_EXCLUDE_ORIGINS): 1 not created`) {
		t.Errorf("the cycle's line does not say what the rules left out: %s", s)
	}
	// Later cycles, and the guests writing, change nothing of it.
	e.guest(byDept, "still dripping")
	e.quiesce()
	r = e.tick()
	if !slices.Equal(r.LeftOut, want) || len(e.backend.Find(byDept)) != 0 {
		t.Fatalf("later: %s; %+v", r, r.LeftOut)
	}
	// An include rule leaves out the others, "" (no department) too.
	e.cfg = testConfig()
	e.cfg.IncludeDepartments = tbsync.Departments{"front_desk", "housekeeping"}
	e.cfg.IncludeOrigins = tbsync.Origins{guestapi.OriginGuest}
	e.open()
	spa := e.requestIn("spa", guestapi.OriginGuest, "massage at 5")
	staff := e.requestIn("front_desk", guestapi.OriginStaff, "wake-up call")
	desk := e.requestIn("front_desk", guestapi.OriginGuest, "late check-out")
	r = e.tick()
	if r.Created != 1 || len(e.backend.Find(desk)) != 1 || len(e.backend.Find(spa))+len(e.backend.Find(staff)) != 0 {
		t.Fatalf("include rules: %s", r)
	}
	want = []tbsync.LeftOut{
		{Variable: "TICKETBRIDGE_INCLUDE_DEPARTMENTS", Department: "maintenance", NotCreated: 2},
		{Variable: "TICKETBRIDGE_INCLUDE_DEPARTMENTS", Department: "spa", NotCreated: 1},
		{Variable: "TICKETBRIDGE_INCLUDE_ORIGINS", Origin: guestapi.OriginInternal, NotCreated: 1},
		{Variable: "TICKETBRIDGE_INCLUDE_ORIGINS", Origin: guestapi.OriginStaff, NotCreated: 1},
	}
	if !slices.Equal(r.LeftOut, want) {
		t.Fatalf("left out by include rules: %+v, want %+v", r.LeftOut, want)
	}
}

// TestRulesChangedKeepsWhatAgentsWrite: a request the helpdesk holds from
// before a rule left it out stays there, and is no longer updated from
// upstream; what agents write on it still goes upstream: replies, notes
// and status.
func TestRulesChangedKeepsWhatAgentsWrite(t *testing.T) {
	e, _ := rulesEnv(t)
	id := e.requestIn("maintenance", guestapi.OriginGuest, "dripping tap")
	e.quiesce()
	ref := e.ref(id)
	held := len(e.backend.Messages(ref))

	e.cfg.ExcludeDepartments = tbsync.Departments{"maintenance"}
	e.open() // the rule is set, as after a restart
	e.guest(id, "it is worse now")
	if err := e.ts.Server.SetStatus(id, guestapi.StatusAssigned); err != nil {
		t.Fatal(err)
	}
	r := e.tick()
	want := []tbsync.LeftOut{{Variable: "TICKETBRIDGE_EXCLUDE_DEPARTMENTS", Department: "maintenance", NotUpdated: 1}}
	if !slices.Equal(r.LeftOut, want) {
		t.Fatalf("left out: %+v, want %+v", r.LeftOut, want)
	}
	if r.Refreshed != 1 || r.Mirrored != 0 || r.StatusDown != 0 || len(e.backend.Messages(ref)) != held {
		t.Fatalf("a request left out was updated in the helpdesk: %s", r)
	}
	if tk, _ := e.backend.Ticket(ref); tk.Status != "new" {
		t.Errorf("helpdesk status %s, want new as it was", tk.Status)
	}
	if _, err := e.backend.Reply(ref, "Agent", "a plumber is on the way"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.backend.Note(ref, "Agent", "call the plumber"); err != nil {
		t.Fatal(err)
	}
	if err := e.backend.SetStatus(ref, "Agent", "working"); err != nil {
		t.Fatal(err)
	}
	r = e.tick()
	if r.Sent != 3 || r.Mirrored != 0 || r.Errors != 0 {
		t.Fatalf("the agents' writes on a request left out: %s", r)
	}
	if !e.upstreamHas(id, "a plumber is on the way") || !e.upstreamHas(id, "call the plumber") || e.upstream(id).Ticket.Status != guestapi.StatusInProgress {
		t.Fatal("what the agents wrote did not all reach the request")
	}
	e.quiesce()
	if e.helpdeskHas(id, "it is worse now") {
		t.Fatal("the guest's message on a request left out reached the helpdesk")
	}
}

// TestRulesMoveOutAndIn: a request moved into a department left out
// stays in the helpdesk, no longer updated, its agents' writes still
// going up; moved back, it is brought up to date. A request the helpdesk
// never held, moved out of a department left out, is created then.
func TestRulesMoveOutAndIn(t *testing.T) {
	e, m := rulesEnv(t)
	e.cfg.ExcludeDepartments = tbsync.Departments{"maintenance"}
	id := e.requestIn("housekeeping", guestapi.OriginGuest, "towels")
	e.quiesce()
	ref := e.ref(id)

	// Out: moved to maintenance.
	e.clock.Advance(time.Minute)
	m.move(id, "maintenance", e.clock.Now())
	r := e.tick()
	want := []tbsync.LeftOut{{Variable: "TICKETBRIDGE_EXCLUDE_DEPARTMENTS", Department: "maintenance", NotUpdated: 1}}
	if !slices.Equal(r.LeftOut, want) || r.Signalled != 1 {
		t.Fatalf("moved out: %s; %+v", r, r.LeftOut)
	}
	e.guest(id, "the towel rail is loose too")
	if err := e.ts.Server.SetStatus(id, guestapi.StatusAssigned); err != nil {
		t.Fatal(err)
	}
	if _, err := e.backend.Reply(ref, "Agent", "maintenance will come by"); err != nil {
		t.Fatal(err)
	}
	e.quiesce()
	if e.helpdeskHas(id, "the towel rail is loose too") {
		t.Fatal("a request moved out was updated in the helpdesk")
	}
	if tk, _ := e.backend.Ticket(ref); tk.Status != "new" {
		t.Errorf("helpdesk status %s, want new as it was", tk.Status)
	}
	if !e.upstreamHas(id, "maintenance will come by") {
		t.Fatal("the agent's reply on a request moved out did not go up")
	}

	// In: moved back to housekeeping, it catches up at once.
	e.clock.Advance(time.Minute)
	m.move(id, "housekeeping", e.clock.Now())
	r = e.tick()
	if len(r.LeftOut) != 0 || r.Mirrored != 1 || r.StatusDown != 1 {
		t.Fatalf("moved back in: %s; %+v", r, r.LeftOut)
	}
	if !e.helpdeskHas(id, "the towel rail is loose too") {
		t.Fatal("the guest's message written while left out did not reach the helpdesk")
	}
	if tk, _ := e.backend.Ticket(ref); tk.Status != "open" {
		t.Errorf("helpdesk status %s, want assigned", tk.Status)
	}

	// A request created in maintenance, never in the helpdesk, moved in.
	other := e.requestIn("maintenance", guestapi.OriginGuest, "broken lamp")
	r = e.tick()
	if r.Created != 0 || len(e.backend.Find(other)) != 0 {
		t.Fatalf("a request of maintenance was created: %s", r)
	}
	e.clock.Advance(time.Minute)
	m.move(other, "housekeeping", e.clock.Now())
	r = e.tick()
	if r.Created != 1 || len(e.backend.Find(other)) != 1 || len(r.LeftOut) != 0 {
		t.Fatalf("a request moved in was not created: %s; %+v", r, r.LeftOut)
	}
	if !e.helpdeskHas(other, "first message of broken lamp") {
		t.Fatal("the request moved in lacks its thread")
	}
	e.quiesce()
	e.checkExactlyOnce()
}

// TestRulesUpstreamDirection: TICKETBRIDGE_UPSTREAM=none sends replies
// only. An agent's status stays in the helpdesk, neither sent up nor set
// back, until the next upstream change, which is set there.
func TestRulesUpstreamDirection(t *testing.T) {
	e := newEnv(t)
	var err error
	if e.cfg.Upstream, err = tbsync.ParseUpstream("none"); err != nil {
		t.Fatal(err)
	}
	e.cfg.ReconcileInterval = 10 * time.Minute // reconciles, too, leave the agent's status alone
	id := e.newTicket("towels")
	e.quiesce()
	ref := e.ref(id)
	if _, err := e.backend.Reply(ref, "Agent", "on the way"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.backend.Note(ref, "Agent", "room 214 again"); err != nil {
		t.Fatal(err)
	}
	if err := e.backend.SetStatus(ref, "Agent", "working"); err != nil {
		t.Fatal(err)
	}
	r := e.tick()
	if r.Sent != 1 || r.Skipped != 2 || r.Errors != 0 {
		t.Fatalf("replies only: %s", r)
	}
	if !e.upstreamHas(id, "on the way") || e.upstreamHas(id, "room 214 again") || e.upstream(id).Ticket.Status != guestapi.StatusNew {
		t.Fatal("something besides the reply went up, or the reply did not")
	}
	for range 3 {
		e.clock.Advance(10 * time.Minute) // reconciles and full reads come
		e.cycle()
	}
	if tk, _ := e.backend.Ticket(ref); tk.Status != "working" {
		t.Fatalf("the agent's status was set back to %s", tk.Status)
	}
	if e.upstream(id).Ticket.Status != guestapi.StatusNew {
		t.Fatal("the agent's status went up")
	}
	// The next upstream change is set in the helpdesk.
	if err := e.ts.Server.SetStatus(id, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	e.quiesce()
	if tk, _ := e.backend.Ticket(ref); tk.Status != "solved" {
		t.Fatalf("helpdesk status %s after the upstream change, want done", tk.Status)
	}
}

// TestRulesOldNotesVariable: an install that sets only the old
// TICKETBRIDGE_NOTES_UPSTREAM=false keeps its notes in the helpdesk and
// still sends replies and status up.
func TestRulesOldNotesVariable(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("towels")
	e.quiesce()
	ref := e.ref(id)
	cfg, err := loadRules(t, map[string]string{"TICKETBRIDGE_NOTES_UPSTREAM": "false"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Concurrency = e.cfg.Concurrency
	e.cfg = cfg
	e.open()
	if _, err := e.backend.Note(ref, "Agent", "room 214 again"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.backend.Reply(ref, "Agent", "on the way"); err != nil {
		t.Fatal(err)
	}
	if err := e.backend.SetStatus(ref, "Agent", "working"); err != nil {
		t.Fatal(err)
	}
	r := e.tick()
	if r.Sent != 2 || r.Skipped != 1 || r.Errors != 0 {
		t.Fatalf("notes off by the old variable: %s", r)
	}
	if e.upstreamHas(id, "room 214 again") || !e.upstreamHas(id, "on the way") || e.upstream(id).Ticket.Status != guestapi.StatusInProgress {
		t.Fatal("the old variable did not keep the note, or stopped the reply or the status")
	}
}

// TestRulesQuietCyclesStayQuiet: with requests left out, both those the
// helpdesk never held and one it holds from before the rule, a quiet
// cycle after a quiet one commits nothing, and its report still counts
// what the rules leave out (from the lists the last cycle decoded).
func TestRulesQuietCyclesStayQuiet(t *testing.T) {
	e := newQuietEnv(t)
	held := e.requestIn("maintenance", guestapi.OriginGuest, "dripping tap")
	e.requestIn("housekeeping", guestapi.OriginGuest, "towels")
	e.quiesce()
	e.cfg.ExcludeDepartments = tbsync.Departments{"maintenance"}
	e.cfg.ExcludeOrigins = tbsync.Origins{guestapi.OriginInternal}
	e.open()
	e.requestIn("maintenance", guestapi.OriginGuest, "boiler")
	e.requestIn("front_desk", guestapi.OriginInternal, "count the cash")
	e.quiesce()
	want := []tbsync.LeftOut{
		{Variable: "TICKETBRIDGE_EXCLUDE_DEPARTMENTS", Department: "maintenance", NotCreated: 1, NotUpdated: 1},
		{Variable: "TICKETBRIDGE_EXCLUDE_ORIGINS", Origin: guestapi.OriginInternal, NotCreated: 1},
	}
	checked, prevQuiet := 0, false
	for range 10 {
		e.clock.Advance(time.Second)
		before := e.store.Commits()
		r := e.cycle()
		if !slices.Equal(r.LeftOut, want) {
			t.Fatalf("left out: %+v, want %+v", r.LeftOut, want)
		}
		quiet := r.Refreshed == 0 && len(r.Reconcile) == 0
		if quiet && prevQuiet {
			checked++
			if n := e.store.Commits() - before; n != 0 {
				t.Errorf("a quiet cycle after a quiet one committed %d writes, want none: %s", n, r)
			}
		}
		prevQuiet = quiet
	}
	if checked < 2 {
		t.Fatalf("only %d quiet cycles after a quiet one, of ten", checked)
	}
	if len(e.backend.Find(held)) != 1 {
		t.Fatal("the request held from before the rule left the helpdesk")
	}
}

// TestRulesLeftOutFieldsNotReadEachCycle: a request left out whose fields
// change on the platform is read once for the change, as any change, and
// not again at every cycle for fields the bridge will not carry.
func TestRulesLeftOutFieldsNotReadEachCycle(t *testing.T) {
	e, _ := rulesEnv(t)
	id := e.requestIn("maintenance", guestapi.OriginGuest, "dripping tap")
	e.quiesce()
	e.cfg.ExcludeDepartments = tbsync.Departments{"maintenance"}
	e.open()
	if err := e.ts.Server.SetDescription(id, "dripping tap in room 12"); err != nil {
		t.Fatal(err)
	}
	e.tick() // reads the change
	// The request is read as any tracked one is, at its due times (its
	// full-read and reconcile slots, which its random id places, may fall
	// in these cycles), never each cycle, and nothing of it is carried.
	reads := 0
	for i := range 6 {
		r := e.tick()
		if r.FieldsUpdated != 0 {
			t.Fatalf("cycle %d after the change: %s, want nothing carried of a request left out", i+1, r)
		}
		reads += r.Refreshed
	}
	if reads > 2 {
		t.Fatalf("a request left out was read %d times in 6 cycles after its change, want at most its two slots' reads", reads)
	}
}
