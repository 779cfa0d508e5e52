package sync_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/memory"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/state"
)

// The reliability tests (faults, crashes) run a reduced size by default,
// small enough for CI, that still proves their property. The full size is
// asked for with
//
//	TICKETBRIDGE_RELIABILITY=full go test -race -run 'TestReliability' ./sync/
//
// and TICKETBRIDGE_RELIABILITY_SEED=N replays a run (the seed is logged).
const (
	envReliability     = "TICKETBRIDGE_RELIABILITY"
	envReliabilitySeed = "TICKETBRIDGE_RELIABILITY_SEED"
)

// reliabilitySize returns full when TICKETBRIDGE_RELIABILITY=full, else
// reduced.
func reliabilitySize(reduced, full int) int {
	if os.Getenv(envReliability) == "full" {
		return full
	}
	return reduced
}

// reliabilitySeed returns the seed of a reliability run: the one
// TICKETBRIDGE_RELIABILITY_SEED names, else def, so that a run in CI is
// the same every time.
func reliabilitySeed(t testing.TB, def uint64) uint64 {
	t.Helper()
	seed := def
	if v := os.Getenv(envReliabilitySeed); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want an unsigned integer", envReliabilitySeed, v)
		}
		seed = n
	}
	t.Logf("seed %d (replay with %s=%d)", seed, envReliabilitySeed, seed)
	return seed
}

// activity plays the hotel between two cycles on an env: guests write,
// console staff write, agents reply, note and change statuses, the console
// changes statuses, and new requests arrive. Every body is unique, so that
// the final check can count each one on both sides.
type activity struct {
	e     *env
	rnd   *rand.Rand
	seq   int
	ids   []string            // every ticket of Org the test made
	agent map[string][]string // upstream id -> bodies the agents wrote (replies and notes)
	notes map[string]bool     // bodies that are internal notes
	guest int                 // messages written upstream through the console
	// note, when set, is told each act (the simulator's trace).
	note func(format string, args ...any)
	// fields, when set, has each round change fields on both sides too
	// (the simulator's, simfields_test.go).
	fields *simFields
	// commands, when set, has operators pause, resume and resync
	// requests in each round (the simulator's, simcommands_test.go).
	commands *simCommands
}

func (a *activity) noted(format string, args ...any) {
	if a.note != nil {
		a.note(format, args...)
	}
}

func newActivity(e *env, seed uint64) *activity {
	return &activity{e: e, rnd: rand.New(rand.NewPCG(seed, seed^0x5eed)), agent: map[string][]string{}, notes: map[string]bool{}}
}

func (a *activity) newTicket() {
	a.seq++
	id := a.e.newTicket(fmt.Sprintf("request %d: room %d", a.seq, 100+a.rnd.IntN(400)))
	a.noted("  new request %s", id)
	a.ids = append(a.ids, id)
	a.guest++
}

// step does one round of activity.
func (a *activity) step() {
	e := a.e
	if a.rnd.IntN(10) < 3 {
		a.newTicket()
	}
	for range a.rnd.IntN(3) {
		a.seq++
		id := a.ids[a.rnd.IntN(len(a.ids))]
		m := refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, AuthorName: "Guest", Body: fmt.Sprintf("guest message %d", a.seq)}
		if a.rnd.IntN(6) == 0 { // a colleague answers in the console
			m.AuthorType, m.AuthorName, m.Body = guestapi.AuthorStaff, "Reception", fmt.Sprintf("console staff message %d", a.seq)
		}
		if _, err := e.ts.Server.AddMessage(id, m); err != nil {
			e.t.Fatal(err)
		}
		a.noted("  %s on %s: %q", m.AuthorType, id, m.Body)
		a.guest++
	}
	for range a.rnd.IntN(3) {
		a.seq++
		id := a.ids[a.rnd.IntN(len(a.ids))]
		refs := e.backend.Find(id)
		if len(refs) == 0 {
			continue // not mirrored yet
		}
		body := fmt.Sprintf("agent reply %d", a.seq)
		do := e.backend.Reply
		if a.rnd.IntN(3) == 0 {
			body = fmt.Sprintf("agent note %d", a.seq)
			do = e.backend.Note
			a.notes[body] = true
		}
		if _, err := do(refs[0], "Agent", body); err != nil {
			e.t.Fatal(err)
		}
		a.noted("  agent on %s: %q", refs[0], body)
		a.agent[id] = append(a.agent[id], body)
	}
	if a.rnd.IntN(100) < 15 {
		id := a.ids[a.rnd.IntN(len(a.ids))]
		if refs := e.backend.Find(id); len(refs) > 0 {
			words := []string{"open", "working", "solved"}
			word := words[a.rnd.IntN(len(words))]
			if err := e.backend.SetStatus(refs[0], "Agent", word); err != nil {
				e.t.Fatal(err)
			}
			a.noted("  agent sets %s to %s", refs[0], word)
		}
	}
	if a.rnd.IntN(100) < 10 {
		id := a.ids[a.rnd.IntN(len(a.ids))]
		ss := guestapi.SettableStatuses()
		st := ss[a.rnd.IntN(len(ss))]
		if err := e.ts.Server.SetStatus(id, st); err != nil {
			e.t.Fatal(err)
		}
		a.noted("  console sets %s to %s", id, st)
	}
	if a.fields != nil {
		a.fields.step()
	}
	if a.commands != nil {
		a.commands.step()
	}
}

// checkAllDelivered is the end-state promise after the run has quiesced:
// every request of Org has one helpdesk ticket holding every upstream
// message once (checkExactlyOnce), every agent reply and note is upstream
// once with the right visibility and marked as the bridge's, the statuses
// agree, and the journal holds nothing pending, unmarked or refused (a
// status change superseded by a newer upstream one excepted).
func (a *activity) checkAllDelivered() {
	e := a.e
	t := e.t
	t.Helper()
	e.checkExactlyOnce()
	status := memory.DefaultStatusMap()
	for _, id := range a.ids {
		refs := e.backend.Find(id)
		if len(refs) != 1 {
			t.Errorf("ticket %s has %d helpdesk tickets, want 1", id, len(refs))
			continue
		}
		view := e.upstream(id)
		byBody := map[string][]refserver.InternalMessage{}
		for _, m := range view.Messages {
			byBody[m.Body] = append(byBody[m.Body], m)
		}
		for _, body := range a.agent[id] {
			ms := byBody[body]
			if len(ms) != 1 {
				t.Errorf("ticket %s: the agent's %q is upstream %d times, want once", id, body, len(ms))
				continue
			}
			if ms[0].VisibleToGuest == a.notes[body] || !ms[0].External {
				t.Errorf("ticket %s: %q upstream as %+v", id, body, ms[0])
			}
		}
		snap, _ := e.backend.Ticket(refs[0])
		if want := status.Down(view.Ticket.Status); snap.Status != want {
			t.Errorf("ticket %s: helpdesk status %q, upstream %s (want %q)", id, snap.Status, view.Ticket.Status, want)
		}
	}
	st, err := e.store.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.JournalPending != 0 || st.JournalUnmarked != 0 || st.WithErrors != 0 || st.Corrupt != 0 {
		t.Errorf("state after the run: %+v", st)
	}
	if err := e.store.View(t.Context(), func(tx *state.Tx) error {
		failed, err := tx.FailedJournal()
		for _, en := range failed {
			if en.Kind != state.KindStatus || !strings.HasPrefix(en.LastError, "superseded") {
				t.Errorf("journal entry refused: %+v", en)
			}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// settle runs the engine without faults until nothing is left to do:
// first past every backoff and closed interval, then until quiet, then two
// more hours of cycles that must do nothing at all.
func settle(e *env) {
	e.t.Helper()
	e.clock.Advance(2 * time.Hour)
	e.quiesce()
	posts := e.posts()
	e.clock.Advance(2 * time.Hour)
	for range 3 {
		r := e.tick()
		if r.Created+r.Adopted+r.Mirrored+r.StatusDown+r.Events+r.Sent+r.Errors != 0 {
			e.t.Fatalf("a cycle after the run settled did something: %s", r)
		}
	}
	if got := e.posts(); got != posts {
		e.t.Fatalf("cycles after the run settled made %d POSTs", got-posts)
	}
}
