package sync_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// storedFullLists returns the full lists the last cycle's report names,
// as the state stores it: what `ticketbridge status` shows with the
// daemon stopped, and status --json prints.
func storedFullLists(t *testing.T, e *env) []string {
	t.Helper()
	s, err := tbsync.ReadStatus(t.Context(), e.store, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if s.LastCycle == nil {
		t.Fatal("no cycle stored")
	}
	b, err := json.Marshal(s.LastCycle)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		FullLists []struct {
			Status     string `json:"status"`
			Department string `json:"department"`
		} `json:"full_lists"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range r.FullLists {
		out = append(out, l.Status+"/"+l.Department)
	}
	return out
}

// TestFullListHidesOlderRequestsAndSaysSo: the API lists at most the 200
// newest requests of a status and department, without paging. With 250
// open in one department the oldest 50 are not discovered; the cycle's
// report names the full list (stored, so status shows it with the daemon
// stopped), the log says that older requests are not discovered, and
// once newer ones move on the hidden ones are discovered and created, with
// what their guests wrote meanwhile.
func TestFullListHidesOlderRequestsAndSaysSo(t *testing.T) {
	e := newEnv(t)
	ids := make([]string, 250) // ids[0] the newest
	for i := range ids {
		ids[i] = e.ticketIn(guestapi.StatusNew, "busy", fmt.Sprintf("b%d", i), start.Add(-time.Duration(i)*time.Minute))
	}
	for i := range 20 {
		e.ticketIn(guestapi.StatusNew, "calm", fmt.Sprintf("c%d", i), start.Add(-time.Duration(i)*time.Minute))
	}
	oldest := ids[len(ids)-1]
	r := e.cycle()
	if r.Discovered != 220 || r.Created != 220 {
		t.Fatalf("report: %s", r)
	}
	if len(e.backend.Find(oldest)) != 0 {
		t.Fatal("the oldest request of the full list was discovered: the test shows nothing")
	}
	if got := storedFullLists(t, e); len(got) != 1 || got[0] != "new/busy" {
		t.Fatalf("the stored report names the full lists %q, want [new/busy]", got)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, `department \"busy\" in status new holds 200 tickets`) ||
		!strings.Contains(logs, "older ones are not discovered") {
		t.Fatalf("the log does not say that older requests are not discovered:\n%s", logs)
	}
	if strings.Contains(logs, "full-read safety net only") {
		t.Fatalf("the log still says the safety net sees older requests:\n%s", logs)
	}

	// Cycles that list the same queue (some replay the lists of the last)
	// still name the full list.
	for range 4 {
		r := e.tick()
		if len(r.FullLists) != 1 || r.FullLists[0].String() != "new in busy" {
			t.Fatalf("a later cycle's report names the full lists %v, want [new in busy]", r.FullLists)
		}
		if got := storedFullLists(t, e); len(got) != 1 || got[0] != "new/busy" {
			t.Fatalf("a later cycle stored the full lists %q, want [new/busy]", got)
		}
	}
	if e.engine.SameLists() == 0 {
		t.Fatal("no cycle replayed the lists of the last: the test does not cover it")
	}

	// The guest of a hidden request writes; newer requests are closed.
	e.guest(oldest, "still waiting for towels")
	for _, id := range ids[:60] {
		if err := e.ts.Server.SetStatus(id, guestapi.StatusDone); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(time.Minute)
	r = e.tick()
	if r.Discovered != 50 {
		t.Fatalf("after 60 newer requests closed, discovered %d, want the 50 hidden: %s", r.Discovered, r)
	}
	if got := storedFullLists(t, e); len(got) != 0 {
		t.Fatalf("no list is full any more, yet the report names %q", got)
	}
	e.quiesce()
	msgs := e.backend.Messages(e.ref(oldest))
	found := false
	for _, m := range msgs {
		found = found || m.Body == "still waiting for towels"
	}
	if !found {
		t.Fatalf("the guest's message on the request once hidden did not cross: %+v", msgs)
	}
	e.checkExactlyOnce()
}
