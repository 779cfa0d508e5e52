package sync_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// refuse400 answers 400 without doing anything: a refusal for good.
func refuse400(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write([]byte(`{"error":"invalid_request","message":"injected"}`))
}

const postPrefix = "/ops-public-api/v1/tickets/"

// upstreamCount counts the upstream messages of ticket id with body.
func (e *env) upstreamCount(id, body string) int {
	n := 0
	for _, m := range e.upstream(id).Messages {
		if m.Body == body {
			n++
		}
	}
	return n
}

// TestRetryRefusedEntrySentOnce: an entry refused for good stays refused
// until an operator retries it; then it is sent once, with its own
// Idempotency-Key, and never again.
func TestRetryRefusedEntrySentOnce(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("towels")
	e.cycle()
	const body = "Fresh towels are on their way."
	e.backend.Reply(e.ref(id), "Ana", body)
	e.ts.Server.SetHook(refserver.Match(http.MethodPost, postPrefix, refuse400))
	e.tick()
	en := entry(t, e.store, id, body)
	if en.State != state.Failed {
		t.Fatalf("entry after a 400: %+v", en)
	}
	e.ts.Server.SetHook(nil)
	e.clock.Advance(time.Hour)
	e.tick()
	if n := e.upstreamCount(id, body); n != 0 {
		t.Fatalf("a refused entry was sent %d times without a retry", n)
	}

	got, err := tbsync.RetryEntry(t.Context(), e.store, en.EventID, "ops", e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got.State != state.Pending || got.IdempotencyKey != en.IdempotencyKey || got.Attempts != en.Attempts {
		t.Fatalf("retried entry %+v; want pending with key %s and %d attempts", got, en.IdempotencyKey, en.Attempts)
	}
	if r := e.tick(); r.Sent != 1 {
		t.Fatalf("cycle after the retry: %s", r)
	}
	e.quiesce()
	if n := e.upstreamCount(id, body); n != 1 {
		t.Fatalf("the guest got the retried reply %d times, want 1", n)
	}
	if en := entry(t, e.store, id, body); en.State != state.Sent {
		t.Fatalf("entry after the retry: %+v", en)
	}
	if _, err := tbsync.RetryEntry(t.Context(), e.store, en.EventID, "ops", e.clock.Now()); !errors.Is(err, tbsync.ErrNotActionable) {
		t.Errorf("retry of a sent entry: %v, want ErrNotActionable", err)
	}
	e.checkExactlyOnce()
}

// TestRetryAfterLostAnswerSentOnce: the API stored the reply but its answer
// was lost; the entry backs off. A retry resends it with the same key, so
// the guest still sees it once.
func TestRetryAfterLostAnswerSentOnce(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("taxi")
	e.cycle()
	const body = "Your taxi is booked for 7:00."
	e.backend.Reply(e.ref(id), "Ana", body)
	e.ts.Server.SetHook(refserver.Match(http.MethodPost, postPrefix, loseAnswer))
	e.tick()
	e.ts.Server.SetHook(nil)
	en := entry(t, e.store, id, body)
	if en.State != state.Pending || !en.NextAttempt.After(e.clock.Now()) {
		t.Fatalf("entry after a lost answer: %+v", en)
	}
	if n := e.upstreamCount(id, body); n != 1 {
		t.Fatalf("the server holds the reply %d times before the retry", n)
	}
	if _, err := tbsync.RetryEntry(t.Context(), e.store, en.EventID, "ops", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	e.cycle() // no clock advance: the retry makes it due now
	if en := entry(t, e.store, id, body); en.State != state.Sent {
		t.Fatalf("entry after the retry: %+v", en)
	}
	e.quiesce()
	if n := e.upstreamCount(id, body); n != 1 {
		t.Fatalf("the guest got the reply %d times, want 1", n)
	}
	e.checkExactlyOnce()
}

// TestSkippedEntryNeverSent: an entry backing off is skipped; it is never
// sent, stays in the journal with who and why, and is not journaled anew.
func TestSkippedEntryNeverSent(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("noise")
	e.cycle()
	const body = "We moved you to a quieter room."
	e.backend.Reply(e.ref(id), "Ana", body)
	e.ts.Server.SetHook(refserver.Match(http.MethodPost, postPrefix, fail500))
	e.tick()
	e.ts.Server.SetHook(nil)
	en := entry(t, e.store, id, body)
	if _, err := tbsync.SkipEntry(t.Context(), e.store, en.EventID, "ops", ""); err == nil {
		t.Fatal("a skip without a reason was accepted")
	}
	got, err := tbsync.SkipEntry(t.Context(), e.store, en.EventID, "ops", "sent by phone instead")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != state.Abandoned || got.LastError != "abandoned by ops: sent by phone instead" {
		t.Fatalf("skipped entry %+v", got)
	}
	for range 5 {
		e.clock.Advance(time.Hour)
		e.tick()
	}
	if n := e.upstreamCount(id, body); n != 0 {
		t.Fatalf("a skipped reply reached the guest %d times", n)
	}
	if en := entry(t, e.store, id, body); en.State != state.Abandoned {
		t.Fatalf("skipped entry became %+v", en)
	}
	if _, err := tbsync.SkipEntry(t.Context(), e.store, "no-such-event", "ops", "x"); !errors.Is(err, tbsync.ErrNoSuchEntry) {
		t.Errorf("skip of an unknown event: %v, want ErrNoSuchEntry", err)
	}
}

// skipDuringPost skips the entry while its POST is in flight and the API
// then fails: the engine must not put it back to pending.
type skipDuringPost struct {
	tbsync.API
	skip func()
}

func (s skipDuringPost) PostMessage(ctx context.Context, id string, m guestapi.NewMessage, key string) (guestapi.PostMessageResult, error) {
	s.skip()
	return guestapi.PostMessageResult{}, &guestapi.Error{StatusCode: http.StatusServiceUnavailable, Code: "unavailable", Message: "injected"}
}

func TestSkipDuringCycleStaysSkipped(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("minibar")
	e.cycle()
	const body = "The minibar was refilled."
	e.backend.Reply(e.ref(id), "Ana", body)
	skipped := false
	e.wrapAPI = func(a tbsync.API) tbsync.API {
		return skipDuringPost{API: a, skip: func() {
			var en state.Entry
			e.store.View(t.Context(), func(tx *state.Tx) error {
				es, err := tx.PendingJournal()
				if len(es) > 0 {
					en = es[0]
				}
				return err
			})
			if _, err := tbsync.SkipEntry(t.Context(), e.store, en.EventID, "ops", "not needed"); err != nil {
				t.Error(err)
			}
			skipped = true
		}}
	}
	e.open()
	e.tick()
	if !skipped {
		t.Fatal("no post was made")
	}
	if en := entry(t, e.store, id, body); en.State != state.Abandoned {
		t.Fatalf("the cycle overwrote a skip made during its post: %+v", en)
	}
}

// TestReadNow: a quiet ticket an operator asks to read is read by the next
// cycle.
func TestReadNow(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("lamp")
	e.cycle()
	e.quiesce()
	// The ticket's full-read slot, placed by a hash of its random id, may
	// fall within the next minute: let it pass. (Flush stores the next
	// read of a read that found nothing, which the engine keeps in memory.)
	due := func() time.Time {
		t.Helper()
		if err := e.engine.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		return ticketState(t, e.store, id).NextDue
	}
	for i := 0; !due().After(e.clock.Now().Add(time.Minute)); i++ {
		if i == 10 {
			t.Fatalf("ticket stays due soon: %+v", ticketState(t, e.store, id))
		}
		e.tick()
	}
	if r := e.tick(); r.Refreshed != 0 {
		t.Fatalf("a quiet ticket was read: %s", r)
	}
	tk, err := tbsync.ReadNow(t.Context(), e.store, id, "ops", e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if tk.DueReason != tbsync.DueAsked {
		t.Errorf("due reason %q", tk.DueReason)
	}
	if r := e.tick(); r.Refreshed != 1 {
		t.Fatalf("the asked ticket was not read: %s", r)
	}
	if _, err := tbsync.ReadNow(t.Context(), e.store, "nope", "ops", e.clock.Now()); !errors.Is(err, tbsync.ErrNoSuchTicket) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("read now of an unknown ticket: %v", err)
	}
}
