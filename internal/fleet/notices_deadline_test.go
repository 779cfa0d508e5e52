package fleet

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/notify"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// recordTarget is a notify.Target that keeps what it is sent.
type recordTarget struct {
	name string
	mu   gosync.Mutex
	got  []notify.Notice
}

func (r *recordTarget) Send(_ context.Context, n notify.Notice) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, n)
	return nil
}

func (r *recordTarget) String() string { return "webhook " + r.name }

// take returns the notices sent since the last call.
func (r *recordTarget) take() []notify.Notice {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.got
	r.got = nil
	return out
}

// TestDeadlineWarning: a request whose deadline comes within
// TICKETBRIDGE_NOTIFY_DEADLINE_WARN_BEFORE, unanswered, is warned about
// once, to the support team's targets only, repeated at the set rate;
// it resolves once when an agent answers publicly, and fires again when
// the guest writes after that answer; it resolves when the deadline
// moves later, and when the request closes. A quiet watcher reads the
// requests again when the earliest warning begins.
func TestDeadlineWarning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		st, err := state.Open(ctx, filepath.Join(t.TempDir(), "state.db"), state.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = st.Close() }()
		ops, support := &recordTarget{name: "ops"}, &recordTarget{name: "support"}
		ns := NewNotices(config.Notify{StatusURL: "https://bridge.example.com/", Settings: notify.Settings{
			Config:    notify.Config{Repeat: time.Hour, CyclesFailingAfter: 15 * time.Minute, RequestErrorAfter: time.Hour, DeadlineWarnBefore: time.Hour, PingPer: "process"},
			Operators: []notify.Target{ops}, Support: []notify.Target{support},
		}}, slog.New(slog.DiscardHandler))
		var wg gosync.WaitGroup
		ns.run(ctx, &wg)
		defer wg.Wait()
		defer cancel()
		ns.j.add("north", st)
		hn := &hotelNotices{ns: ns, hotel: "north", store: st, log: slog.New(slog.DiscardHandler)}

		t0 := time.Now()
		tk := state.Ticket{ID: "5f3a9c1e-late-checkout", Ref: "42", UpstreamStatus: "new",
			Carried: state.Fields{At: t0, Title: "Late checkout, room 12", Due: t0.Add(3 * time.Hour)}}
		put := func(change func(*state.Ticket)) {
			t.Helper()
			change(&tk)
			if err := st.Update(ctx, func(tx *state.Tx) error { return tx.PutTicket(tk) }); err != nil {
				t.Fatal(err)
			}
			hn.cycleChanged(sync.Report{TouchedCount: 1})
		}
		cycle := func() []notify.Notice {
			t.Helper()
			hn.reconcile(ctx)
			synctest.Wait()
			if got := ops.take(); len(got) != 0 {
				t.Fatalf("the operators' target got %d notices: %q", len(got), got[0].Title())
			}
			return support.take()
		}
		want := func(got []notify.Notice, phase notify.Phase) notify.Notice {
			t.Helper()
			if len(got) != 1 || got[0].Phase != phase || got[0].Kind != notify.Deadline {
				var titles []string
				for _, n := range got {
					titles = append(titles, n.Title())
				}
				t.Fatalf("support got %q, want one %s deadline notice", titles, phase)
			}
			return got[0]
		}
		none := func(got []notify.Notice, when string) {
			t.Helper()
			if len(got) != 0 {
				t.Fatalf("%s: support got %q, want nothing", when, got[0].Title())
			}
		}
		put(func(*state.Ticket) {})

		none(cycle(), "three hours before the deadline")
		if !hn.nextDeadline.Equal(t0.Add(2 * time.Hour)) {
			t.Fatalf("next look at the deadlines %v, want when the warning begins, %v", hn.nextDeadline, t0.Add(2*time.Hour))
		}
		time.Sleep(time.Hour)
		none(cycle(), "two hours before")

		time.Sleep(time.Hour) // an hour before: the warning begins
		n := want(cycle(), notify.Fired)
		text := n.Text()
		for _, s := range []string{"hotel north", "5f3a9c1e", "Late checkout, room 12", tk.Carried.Due.UTC().Format("2006-01-02 15:04 UTC"), "Status page: https://bridge.example.com/"} {
			if !strings.Contains(text, s) {
				t.Errorf("the notice does not say %q:\n%s", s, text)
			}
		}
		time.Sleep(30 * time.Minute)
		none(cycle(), "half an hour after it fired")
		time.Sleep(30 * time.Minute) // the deadline passes
		want(cycle(), notify.Repeated)

		time.Sleep(time.Minute)
		put(func(tk *state.Ticket) { tk.NoteAnswered(time.Now()) })
		want(cycle(), notify.Resolved)
		none(cycle(), "answered")

		time.Sleep(time.Minute)
		put(func(tk *state.Ticket) { tk.NoteGuestWrote(time.Now()) })
		want(cycle(), notify.Fired)

		put(func(tk *state.Ticket) { tk.Carried.Due = time.Now().Add(5 * time.Hour) })
		want(cycle(), notify.Resolved)

		put(func(tk *state.Ticket) { tk.Carried.Due = time.Now().Add(30 * time.Minute) })
		want(cycle(), notify.Fired)
		put(func(tk *state.Ticket) { tk.ClosedAt, tk.UpstreamStatus = time.Now(), "done" })
		want(cycle(), notify.Resolved)
		none(cycle(), "closed")
	})
}
