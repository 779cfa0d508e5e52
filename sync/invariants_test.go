package sync_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/memory"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// loseAnswer carries the request out and closes the connection without an
// answer: the caller cannot know it succeeded.
func loseAnswer(w http.ResponseWriter, r *http.Request, next http.Handler) {
	next.ServeHTTP(httptest.NewRecorder(), r)
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		conn.Close()
		return
	}
	panic(http.ErrAbortHandler)
}

// fail500 answers 500 internal_error without doing anything.
func fail500(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusInternalServerError)
	w.Write([]byte(`{"error":"internal_error","message":"injected"}`))
}

// entry returns the journal entry of ticket id that sends body (a reply or
// note) or sets status body.
func entry(t testing.TB, st *state.Store, id, body string) state.Entry {
	t.Helper()
	var found []state.Entry
	err := st.View(t.Context(), func(tx *state.Tx) error {
		es, err := tx.JournalForTicket(id)
		for _, en := range es {
			if en.Payload.Body == body || en.Payload.Status == body {
				found = append(found, en)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 {
		t.Fatalf("%d journal entries of ticket %s send %q, want 1", len(found), id, body)
	}
	return found[0]
}

func ticketState(t testing.TB, st *state.Store, id string) state.Ticket {
	t.Helper()
	var tk state.Ticket
	err := st.View(t.Context(), func(tx *state.Tx) error {
		var ok bool
		var err error
		tk, ok, err = tx.Ticket(id)
		if err == nil && !ok {
			err = errors.New("no ticket " + id)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func mirrored(t testing.TB, st *state.Store, id string) map[string]state.MirroredMessage {
	t.Helper()
	var m map[string]state.MirroredMessage
	if err := st.View(t.Context(), func(tx *state.Tx) error {
		var err error
		m, err = tx.Mirrored(id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestInvariant1NothingLost: a message is marked synced only after its
// receiver confirmed it, so failures on either side delay it, never drop it.
func TestInvariant1NothingLost(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("lamp broken")
	e.cycle()
	ref := e.ref(id)

	// Down: the helpdesk refuses the append; the message is not marked.
	e.clock.Advance(time.Minute)
	msgID := e.guest(id, "still broken")
	e.backend.Inject(memory.Fault{Op: memory.OpAppend, Nth: 1})
	r := e.tick()
	if r.Errors != 1 {
		t.Fatalf("failing append: %s", r)
	}
	if _, ok := mirrored(t, e.store, id)[msgID]; ok {
		t.Fatal("a message the helpdesk refused is marked mirrored")
	}
	e.clock.Advance(time.Hour) // past the ticket's backoff
	e.tick()
	if _, ok := mirrored(t, e.store, id)[msgID]; !ok {
		t.Fatal("the message was not mirrored after the helpdesk recovered")
	}

	// Up: the API fails every attempt; the entry stays pending.
	if _, err := e.backend.Reply(ref, "Jonas", "A technician is on the way."); err != nil {
		t.Fatal(err)
	}
	e.ts.Server.SetHook(refserver.Match(http.MethodPost, "/ops-public-api/v1/tickets/", fail500))
	r = e.tick()
	if r.Events != 1 || r.Sent != 0 || r.Errors == 0 {
		t.Fatalf("failing post: %s", r)
	}
	if en := entry(t, e.store, id, "A technician is on the way."); en.State != state.Pending || en.Attempts != 1 || en.LastError == "" || !en.NextAttempt.After(e.clock.Now()) {
		t.Fatalf("entry after a failed post: %+v", en)
	}
	e.ts.Server.SetHook(nil)
	e.clock.Advance(time.Hour)
	e.tick()
	if en := entry(t, e.store, id, "A technician is on the way."); en.State != state.Sent || en.UpstreamMessageID == "" {
		t.Fatalf("entry after recovery: %+v", en)
	}

	// The cursor: an event on a ticket that cannot be adopted (the lookup
	// fails) is not passed over.
	other := e.newTicket("second")
	otherHD := memory.New(e.backend, memory.Options{})
	oref, err := otherHD.EnsureTicket(context.Background(), adapters.Ticket{UpstreamID: other, TaskDescription: "second", Status: guestapi.StatusNew})
	if err != nil {
		t.Fatal(err)
	}
	e.backend.Reply(oref, "Jonas", "made before the bridge saw the ticket")
	e.backend.Inject(memory.Fault{Op: memory.OpLookup, Nth: 1, Times: 100})
	e.ts.Server.SetHook(refserver.Match(http.MethodGet, "/ops-public-api/v1/tickets/"+other, fail500))
	e.tick()
	var cursorBefore string
	e.store.View(t.Context(), func(tx *state.Tx) error { cursorBefore, _ = tx.Cursor("memory"); return nil })
	e.backend.ClearFaults()
	e.ts.Server.SetHook(nil)
	e.clock.Advance(time.Hour)
	e.tick()
	e.tick()
	if en := entry(t, e.store, other, "made before the bridge saw the ticket"); en.State != state.Sent {
		t.Fatalf("event held back by a failed lookup: %+v (cursor before %q)", en, cursorBefore)
	}
	e.quiesce()
	e.checkExactlyOnce()
}

// TestInvariant2NoDuplicateToGuest: every upstream write carries the
// Idempotency-Key derived from the event, journaled before the request, and
// a retry after a lost answer or a restart reuses it.
func TestInvariant2NoDuplicateToGuest(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("late checkout")
	e.cycle()
	ref := e.ref(id)
	e.backend.Reply(ref, "Front desk", "Checkout at 14:00 is fine.")
	if err := e.backend.SetStatus(ref, "Front desk", "solved"); err != nil {
		t.Fatal(err)
	}

	// Every attempt's answer is lost: the server did the work each time.
	e.ts.Server.SetHook(refserver.Match(http.MethodPost, "/ops-public-api/v1/tickets/", loseAnswer))
	r := e.tick()
	if r.Sent != 0 {
		t.Fatalf("sent although every answer was lost: %s", r)
	}
	e.ts.Server.SetHook(nil)

	// A restart: a new engine on the same state file resends.
	e.open()
	e.clock.Advance(time.Hour)
	e.tick()
	e.quiesce()

	view := e.upstream(id)
	n := 0
	for _, m := range view.Messages {
		if m.Body == "Checkout at 14:00 is fine." {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the guest got the reply %d times", n)
	}
	if view.Ticket.Status != guestapi.StatusDone {
		t.Fatalf("status %s, want done", view.Ticket.Status)
	}

	// Every POST carried the derived key; all attempts of one event the
	// same one.
	en := entry(t, e.store, id, "Checkout at 14:00 is fine.")
	want := tbsync.IdempotencyKey("memory", ref, en.EventID)
	if en.IdempotencyKey != want {
		t.Fatalf("journaled key %s, want %s", en.IdempotencyKey, want)
	}
	keys := map[string]int{}
	for _, rq := range e.ts.Server.Requests() {
		if rq.Method == http.MethodPost && strings.HasPrefix(rq.Path, "/ops-public-api/") {
			if rq.IdempotencyKey == "" {
				t.Fatalf("POST %s without an Idempotency-Key", rq.Path)
			}
			keys[rq.IdempotencyKey]++
		}
	}
	if len(keys) != 2 || keys[want] < 2 {
		t.Fatalf("keys used: %v (want 2 keys, %s at least twice)", keys, want)
	}
}

// TestInvariant3NoDuplicateInHelpdesk: a helpdesk write applied but
// answered with an error, and a restart after it, create no second ticket
// and no second comment.
func TestInvariant3NoDuplicateInHelpdesk(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("pool heating")
	e.guest(id, "and the sauna")
	e.backend.Inject(memory.Fault{Op: memory.OpEnsureTicket, Nth: 1, AfterApply: true})
	e.backend.Inject(memory.Fault{Op: memory.OpAppend, Nth: 1, AfterApply: true})
	r := e.cycle()
	if r.Errors == 0 {
		t.Fatalf("faults did not fire: %s", r)
	}
	e.open() // restart
	e.clock.Advance(time.Hour)
	e.tick()
	e.guest(id, "one more")
	e.backend.Inject(memory.Fault{Op: memory.OpAppend, Nth: 1, AfterApply: true})
	e.tick()
	e.open()
	e.clock.Advance(time.Hour)
	e.quiesce()
	if got := len(e.backend.Find(id)); got != 1 {
		t.Fatalf("%d helpdesk tickets, want 1", got)
	}
	if got := len(e.backend.Messages(e.ref(id))); got != 3 {
		t.Fatalf("%d helpdesk messages, want 3", got)
	}
	e.checkExactlyOnce()
}

// TestInvariant4NoEcho: the bridge's own posts never come back into the
// helpdesk, also when the answer of the post was lost and the next refresh
// sees the message before its id is known.
func TestInvariant4NoEcho(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("extra pillow")
	e.cycle()
	ref := e.ref(id)
	e.backend.Reply(ref, "Housekeeping", "On its way!")
	e.backend.Note(ref, "Housekeeping", "Firm pillow, from store B.")

	e.ts.Server.SetHook(refserver.Match(http.MethodPost, "/ops-public-api/v1/tickets/", loseAnswer))
	e.tick() // the posts exist upstream; the bridge does not know their ids
	e.ts.Server.SetHook(nil)
	e.open()
	e.clock.Advance(time.Hour)
	for range 5 {
		e.tick()
	}
	e.quiesce()
	msgs := e.backend.Messages(ref)
	if len(msgs) != 3 { // the guest's first message and the two agent messages
		for _, m := range msgs {
			t.Logf("%+v", m)
		}
		t.Fatalf("helpdesk holds %d messages, want 3", len(msgs))
	}
	for _, m := range msgs {
		if m.ByBridge && m.AuthorType == guestapi.AuthorStaff {
			t.Fatalf("own post echoed: %+v", m)
		}
	}
	// Status set by the bridge in the helpdesk does not bounce back up.
	e.ts.Server.SetStatus(id, guestapi.StatusInProgress)
	e.clock.Advance(time.Hour)
	posts := e.posts()
	e.tick()
	e.tick()
	if got := e.posts(); got != posts {
		t.Fatalf("an upstream status change made %d POSTs", got-posts)
	}
	e.checkExactlyOnce()
}

// TestInvariant5OtherOrganisation: the key decides the organisation; the
// other organisation's tickets are never listed, read or written, even when
// the helpdesk holds a ticket that claims one of them: that ticket is not
// this hotel's, and its events are not journaled (see notours.go).
func TestInvariant5OtherOrganisation(t *testing.T) {
	e := newEnv(t)
	mine := e.newTicket("mine")
	foreign, err := e.ts.Server.CreateTicket(e.ts.OtherOrg, refserver.NewTicket{Department: "front_desk", TaskDescription: "foreign"})
	if err != nil {
		t.Fatal(err)
	}
	e.guest(foreign.ID, "a guest of the other organisation")
	e.cycle()
	if len(e.backend.Find(foreign.ID)) != 0 {
		t.Fatal("the other organisation's ticket reached the helpdesk")
	}
	// A helpdesk ticket claiming the foreign ticket, and an agent reply on it.
	hd := memory.New(e.backend, memory.Options{})
	fref, err := hd.EnsureTicket(context.Background(), adapters.Ticket{UpstreamID: foreign.ID, TaskDescription: "forged", Status: guestapi.StatusNew})
	if err != nil {
		t.Fatal(err)
	}
	e.backend.Reply(fref, "Agent", "should never arrive")
	e.backend.SetStatus(fref, "Agent", "solved")
	for range 4 {
		e.tick()
	}
	v := e.upstream(foreign.ID)
	if len(v.Messages) != 1 || v.Ticket.Status != guestapi.StatusNew {
		t.Fatalf("the other organisation's ticket was touched: %+v", v)
	}
	// The API shows the ticket not to this hotel (404): its events are
	// not journaled, and nothing is listed as failing.
	err = e.store.View(t.Context(), func(tx *state.Tx) error {
		es, err := tx.JournalForTicket(foreign.ID)
		if len(es) != 0 {
			t.Errorf("entries journaled on a foreign ticket: %+v", es)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if s, js := e.statusJSON(); s.Counts.NotOurs != 1 || s.Counts.Failing+s.Counts.Failed+s.Counts.Pending != 0 {
		t.Errorf("status after events on a foreign ticket:\n%s", js)
	}
	if len(e.backend.Messages(e.ref(mine))) != 1 {
		t.Fatal("own ticket not synced")
	}
}

// TestInvariant6NoSecretInLogs: a full run at debug level, with failures
// on both sides and a refused key, never writes the API key or a
// credential the adapter holds to the log, the state file, an error, a
// report or the status snapshot.
func TestInvariant6NoSecretInLogs(t *testing.T) {
	const hdSecret = "hd-password-9f8e7d6c"
	e := newEnv(t)
	e.wrapHD = func(h adapters.Helpdesk) adapters.Helpdesk { return &secretHelpdesk{Helpdesk: h, secret: hdSecret} }
	id := e.newTicket("secret test")
	e.cycle()
	ref := e.ref(id)
	e.backend.Reply(ref, "Agent", "a reply")
	e.backend.Inject(memory.Fault{Op: memory.OpMarkSent, Nth: 1})
	e.backend.Inject(memory.Fault{Op: memory.OpAppend, Nth: 1})
	e.ts.Server.SetHook(refserver.Match(http.MethodPost, "/ops-public-api/v1/tickets/", fail500))
	e.clock.Advance(time.Minute)
	e.guest(id, "more")
	var texts []string
	r := e.tick()
	texts = append(texts, r.String(), fmt.Sprint(r.LogValue()))
	e.ts.Server.SetHook(nil)
	e.clock.Advance(time.Hour)
	e.quiesce()
	// A revoked key: the cycle fails, the key still does not show.
	e.key = e.ts.Keys.Revoked
	e.open()
	r, err := e.engine.RunCycle(context.Background())
	if err == nil {
		t.Fatal("a revoked key went through")
	}
	texts = append(texts, err.Error(), r.String())
	snap, err := tbsync.ReadStatus(t.Context(), e.store, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(snap)
	texts = append(texts, string(js))
	e.store.Close()
	e.store = nil
	raw, err := os.ReadFile(e.path)
	if err != nil {
		t.Fatal(err)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, "level=DEBUG") || !strings.Contains(logs, "level=WARN") {
		t.Fatal("no debug or warning lines logged: the test checks nothing")
	}
	texts = append(texts, logs, string(raw))
	for _, secret := range []string{e.ts.Keys.TicketsWrite, e.ts.Keys.Revoked, hdSecret} {
		for _, text := range texts {
			if strings.Contains(text, secret) {
				t.Errorf("a secret appears in %.80q...", text)
			}
		}
	}
}

// secretHelpdesk holds a credential, as a real adapter does; nothing the
// engine writes may carry it.
type secretHelpdesk struct {
	adapters.Helpdesk
	secret string
}

// TestInvariant7StateLost: after the state file is deleted the next cycle
// finds every helpdesk ticket, message and delivery through Lookup and
// duplicates nothing on either side, also once the API has forgotten the
// Idempotency-Keys.
func TestInvariant7StateLost(t *testing.T) {
	e := newEnv(t)
	a := e.newTicket("a")
	b := e.newTicket("b")
	e.cycle()
	e.backend.Reply(e.ref(a), "Agent", "reply on a")
	e.backend.Note(e.ref(b), "Agent", "note on b")
	e.backend.SetStatus(e.ref(b), "Agent", "working")
	e.tick()
	e.quiesce()
	posts := e.posts()

	e.store.Close()
	e.store = nil
	if err := os.Remove(e.path); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(48 * time.Hour) // the server's idempotency keys have expired
	e.open()
	r := e.cycle()
	if r.Created != 0 || r.Adopted != 2 || r.Mirrored != 0 || r.Sent != 0 || r.Errors != 0 {
		t.Fatalf("cycle after the state was lost: %s", r)
	}
	e.quiesce()
	if got := e.posts(); got != posts {
		t.Fatalf("the lost state cost %d POSTs", got-posts)
	}
	e.checkExactlyOnce()
	// And the bridge still works both ways.
	e.guest(a, "after the loss")
	e.backend.Reply(e.ref(b), "Agent", "after the loss too")
	e.tick()
	e.quiesce()
	e.checkExactlyOnce()
}

// TestInvariant8BadTicketIsolated: one ticket whose read fails and one
// whose append fails do not stop the others; each error is recorded on its
// ticket with a backoff, and both recover.
func TestInvariant8BadTicketIsolated(t *testing.T) {
	e := newEnv(t)
	e.cfg.Concurrency = 1 // a known order: by ticket id
	ids := []string{e.newTicket("t1"), e.newTicket("t2"), e.newTicket("t3"), e.newTicket("t4")}
	sortStrings(ids)
	badRead, badAppend := ids[0], ids[2]
	e.ts.Server.SetHook(refserver.Match(http.MethodGet, "/ops-public-api/v1/tickets/"+badRead, fail500))
	// Appends: ids[1] is the first, ids[2] the second.
	e.backend.Inject(memory.Fault{Op: memory.OpAppend, Nth: 2, Permanent: true})
	r := e.cycle()
	if r.Errors != 2 || r.Outcome != tbsync.OutcomePartial {
		t.Fatalf("report: %s", r)
	}
	for _, id := range []string{ids[1], ids[3]} {
		if len(e.backend.Find(id)) != 1 || len(e.backend.Messages(e.ref(id))) != 1 {
			t.Fatalf("ticket %s not synced", id)
		}
	}
	for _, id := range []string{badRead, badAppend} {
		tk := ticketState(t, e.store, id)
		if tk.LastError == "" || tk.Attempts != 1 || !tk.NextDue.After(e.clock.Now()) || tk.DueReason != tbsync.DueRetry {
			t.Fatalf("bad ticket %s: %+v", id, tk)
		}
	}
	e.ts.Server.SetHook(nil)
	e.clock.Advance(time.Hour)
	e.tick()
	for _, id := range ids {
		if tk := ticketState(t, e.store, id); tk.LastError != "" {
			t.Fatalf("ticket %s did not recover: %+v", id, tk)
		}
	}
	e.checkExactlyOnce()
}

var sortMu gosync.Mutex

func sortStrings(s []string) {
	sortMu.Lock()
	defer sortMu.Unlock()
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
