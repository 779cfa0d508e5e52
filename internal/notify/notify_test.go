package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/hmacsig"
	"github.com/ticketbridge/ticketbridge/internal/notify"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

const secret = "0123456789abcdef0123456789abcdef-whsec"

// got is one request a receiver took.
type got struct {
	method, path string
	header       http.Header
	body         []byte
}

// receiver records every request; fail, when set, answers its status
// for the paths it lists.
type receiver struct {
	mu   sync.Mutex
	reqs []got
	fail map[string]int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.reqs = append(r.reqs, got{req.Method, req.URL.Path, req.Header.Clone(), body})
	status := r.fail[req.URL.Path]
	r.mu.Unlock()
	if status != 0 {
		w.WriteHeader(status)
		_, _ = w.Write([]byte("no such hook " + req.URL.String()))
		return
	}
	w.WriteHeader(http.StatusOK)
}

// at returns the requests to path.
func (r *receiver) at(path string) []got {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []got
	for _, g := range r.reqs {
		if g.path == path {
			out = append(out, g)
		}
	}
	return out
}

// env is a notifier running in a bubble, its targets on rec.
type env struct {
	n   *notify.Notifier
	rec *receiver
	j   *notify.MemJournal
}

func poster(t *testing.T, rec *receiver) *notify.Poster {
	return &notify.Poster{HTTP: &http.Client{Transport: testutil.PipeServer(t, rec), Timeout: 10 * time.Second},
		Retrier: notifyRetrier()}
}

func targets(t *testing.T, p *notify.Poster, list string) []notify.Target {
	t.Helper()
	ts, err := notify.ParseTargets(list, notify.ParseOptions{Var: "TEST", HTTP: p})
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// start runs a notifier of o with the operators' targets list on a new
// receiver; the bubble ends it.
func start(t *testing.T, o notify.Options, list string) *env {
	rec := &receiver{fail: map[string]int{}}
	p := poster(t, rec)
	o.Operators = targets(t, p, list)
	if o.Journal == nil {
		o.Journal = &notify.MemJournal{}
	}
	e := &env{n: notify.New(o), rec: rec, j: o.Journal.(*notify.MemJournal)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.n.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// titles are the titles of the webhook notices at /hook.
func titles(t *testing.T, rec *receiver) []string {
	t.Helper()
	var out []string
	for _, g := range rec.at("/hook") {
		var wn notify.WebhookNotice
		must(t, json.Unmarshal(g.body, &wn))
		out = append(out, string(wn.Phase)+": "+wn.Title)
	}
	return out
}

// Each condition fires after its delay, repeats each Repeat while it
// holds (reported each cycle), and resolves once.
func TestConditionsFireRepeatResolve(t *testing.T) {
	cases := []struct {
		kind  notify.Kind
		delay time.Duration
	}{
		{notify.CyclesFailing, 15 * time.Minute},
		{notify.KeyRefused, 0},
		{notify.Undeliverable, 0},
		{notify.RequestError, time.Hour},
		{notify.Deadline, 0},
	}
	for _, c := range cases {
		t.Run(string(c.kind), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := start(t, notify.Options{GroupWindow: -1}, "webhook+http://:"+secret+"@127.0.0.1/hook")
				ctx := context.Background()
				k := notify.Key{Hotel: "a", Kind: c.kind}
				cond := notify.Condition{Key: k, Cause: "the API answered 503", Fix: "wait for the API"}
				begin := time.Now()
				cycle := func() { must(t, e.n.Set(ctx, cond)); synctest.Wait() }
				// Report each minute for 2h30 past the delay.
				for time.Since(begin) <= c.delay+150*time.Minute {
					cycle()
					if time.Since(begin) < c.delay && len(titles(t, e.rec)) != 0 {
						t.Fatalf("fired after %s, before its delay of %s", time.Since(begin), c.delay)
					}
					time.Sleep(time.Minute)
				}
				got := titles(t, e.rec)
				// fired at the delay, repeated at +1h and +2h.
				if len(got) != 3 || !strings.HasPrefix(got[0], "fired") || !strings.HasPrefix(got[1], "repeated") || !strings.HasPrefix(got[2], "repeated") {
					t.Fatalf("notices = %q, want fired and two repeats", got)
				}
				must(t, e.n.Clear(ctx, k))
				must(t, e.n.Clear(ctx, k))
				synctest.Wait()
				got = titles(t, e.rec)
				if len(got) != 4 || !strings.HasPrefix(got[3], "resolved: Back to normal") {
					t.Fatalf("notices = %q, want one resolution", got)
				}
				if all := e.j.All(); len(all) != 0 {
					t.Fatalf("journal keeps %+v after the resolution was sent", all)
				}
			})
		})
	}
}

// A condition that ends before its delay sends nothing at all.
func TestShortConditionSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, notify.Options{GroupWindow: -1}, "webhook+http://:"+secret+"@127.0.0.1/hook")
		k := notify.Key{Hotel: "a", Kind: notify.CyclesFailing}
		must(t, e.n.Set(t.Context(), notify.Condition{Key: k}))
		time.Sleep(10 * time.Minute)
		must(t, e.n.Reconcile(t.Context(), "a", []notify.Kind{notify.CyclesFailing}, nil))
		synctest.Wait()
		if got := titles(t, e.rec); len(got) != 0 {
			t.Fatalf("notices = %q, want none", got)
		}
	})
}

// The API down for three hotels within the window is one notice naming
// them; its recovery is one notice too.
func TestSharedCauseIsOneNotice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, notify.Options{}, "webhook+http://:"+secret+"@127.0.0.1/hook")
		for _, h := range []string{"c", "a", "b"} {
			must(t, e.n.Set(t.Context(), notify.Condition{Key: notify.Key{Hotel: h, Kind: notify.KeyRefused}, Cause: "401 from the API"}))
			time.Sleep(10 * time.Second)
		}
		must(t, e.n.Set(t.Context(), notify.Condition{Key: notify.Key{Hotel: "d", Kind: notify.KeyRefused}, Cause: "another cause"}))
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		got := e.rec.at("/hook")
		if len(got) != 2 {
			t.Fatalf("%d notices, want 2 (one for a, b, c; one for d)", len(got))
		}
		var wn notify.WebhookNotice
		must(t, json.Unmarshal(got[0].body, &wn))
		if strings.Join(wn.Hotels, ",") != "a,b,c" || !strings.Contains(wn.Title, "3 hotels (a, b, c)") {
			t.Fatalf("grouped notice = %+v", wn)
		}
		for _, h := range []string{"a", "b", "c", "d"} {
			must(t, e.n.Clear(t.Context(), notify.Key{Hotel: h, Kind: notify.KeyRefused}))
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if n := len(e.rec.at("/hook")); n != 4 {
			t.Fatalf("%d notices after the recovery, want 4", n)
		}
	})
}

// Two replicas sharing a journal that both see the condition send each
// notice once.
func TestReplicasSendOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := &notify.MemJournal{}
		a := start(t, notify.Options{GroupWindow: -1, Journal: j}, "webhook+http://:"+secret+"@127.0.0.1/hook")
		b := start(t, notify.Options{GroupWindow: -1, Journal: j}, "webhook+http://:"+secret+"@127.0.0.1/hook")
		k := notify.Key{Hotel: "a", Kind: notify.KeyRefused}
		for range 90 {
			var wg sync.WaitGroup
			for _, e := range []*env{a, b} {
				wg.Go(func() { must(t, e.n.Set(t.Context(), notify.Condition{Key: k})) })
			}
			wg.Wait()
			time.Sleep(time.Minute)
		}
		must(t, b.n.Clear(t.Context(), k))
		must(t, a.n.Clear(t.Context(), k))
		synctest.Wait()
		total := len(a.rec.at("/hook")) + len(b.rec.at("/hook"))
		if total != 3 { // fired, repeated at +1h, resolved
			t.Fatalf("%d notices from two replicas, want 3", total)
		}
	})
}

// A process killed between recording a notice and marking it sent
// leaves it pending; the next one sends it, once, after ClaimTimeout.
func TestKilledSenderRepeatsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := &notify.MemJournal{}
		rec := &receiver{}
		// The killed process: it recorded the notice, and never ran.
		dead := notify.New(notify.Options{Journal: j, GroupWindow: -1, Operators: targets(t, poster(t, rec), "webhook+http://:"+secret+"@127.0.0.1/hook")})
		k := notify.Key{Hotel: "a", Kind: notify.Undeliverable, Subject: "request r-1"}
		must(t, dead.Set(t.Context(), notify.Condition{Key: k}))
		next := start(t, notify.Options{Journal: j, GroupWindow: -1}, "webhook+http://:"+secret+"@127.0.0.1/hook")
		synctest.Wait()
		if n := len(next.rec.at("/hook")); n != 0 {
			t.Fatalf("sent %d at once, while the claim is fresh", n)
		}
		time.Sleep(notify.DefaultClaimTimeout + time.Second)
		synctest.Wait()
		time.Sleep(3 * notify.DefaultClaimTimeout)
		synctest.Wait()
		if n := len(next.rec.at("/hook")); n != 1 {
			t.Fatalf("sent %d, want the lost notice once", n)
		}
		must(t, next.n.Set(t.Context(), notify.Condition{Key: k}))
		synctest.Wait()
		if n := len(next.rec.at("/hook")); n != 1 {
			t.Fatalf("sent %d, want no repeat before Repeat", n)
		}
	})
}

// Deadlines go to the support targets; the rest to the operators'.
func TestSupportTargets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &receiver{}
		p := poster(t, rec)
		n := notify.New(notify.Options{GroupWindow: -1,
			Operators: targets(t, p, "ntfy+http://127.0.0.1/ops"), Support: targets(t, p, "ntfy+http://127.0.0.1/support")})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go n.Run(ctx)
		must(t, n.Set(ctx, notify.Condition{Key: notify.Key{Hotel: "a", Kind: notify.Deadline, Subject: "request r-9"}}))
		must(t, n.Set(ctx, notify.Condition{Key: notify.Key{Hotel: "a", Kind: notify.KeyRefused}}))
		synctest.Wait()
		if len(rec.at("/support")) != 1 || len(rec.at("/ops")) != 1 {
			t.Fatalf("support %d, ops %d notices; want one each", len(rec.at("/support")), len(rec.at("/ops")))
		}
		cancel()
		synctest.Wait()
	})
}

func TestWebhookSigned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, notify.Options{GroupWindow: -1, StatusURL: "https://bridge.example.com/"}, "webhook+http://:"+secret+"@127.0.0.1/hook")
		must(t, e.n.Set(t.Context(), notify.Condition{Key: notify.Key{Hotel: "a", Kind: notify.KeyRefused}, Cause: "401", Fix: "renew the key"}))
		synctest.Wait()
		g := e.rec.at("/hook")[0]
		if err := hmacsig.Verify(secret, g.header.Get(hmacsig.HeaderTimestamp), g.header.Get(hmacsig.HeaderSignature), g.body, time.Now(), 0); err != nil {
			t.Fatalf("signature: %v", err)
		}
		var wn notify.WebhookNotice
		must(t, json.Unmarshal(g.body, &wn))
		if wn.Type != "notice" || wn.Fix != "renew the key" || wn.StatusURL != "https://bridge.example.com/" || g.header.Get("Authorization") != "" {
			t.Fatalf("notice %+v, headers %v", wn, g.header)
		}
	})
}

// Open lists a hotel's open episodes from memory: those written here, and
// after a restart those the first Reconcile read; a resolved one leaves.
func TestOpenFromMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := &notify.MemJournal{}
		e := start(t, notify.Options{GroupWindow: -1, Journal: j}, "webhook+http://:"+secret+"@127.0.0.1/hook")
		k := notify.Key{Hotel: "a", Kind: notify.KeyRefused}
		must(t, e.n.Set(t.Context(), notify.Condition{Key: k, Cause: "401"}))
		if got := e.n.Open("a"); len(got) != 1 || got[0].Key != k || got[0].Cause != "401" {
			t.Fatalf("Open = %+v, want the episode set", got)
		}
		if got := e.n.Open("b"); len(got) != 0 {
			t.Fatalf("Open of another hotel = %+v", got)
		}
		next := start(t, notify.Options{GroupWindow: -1, Journal: j}, "webhook+http://:"+secret+"@127.0.0.1/hook")
		if got := next.n.Open("a"); len(got) != 0 {
			t.Fatalf("a new notifier knows %+v before it reconciled", got)
		}
		must(t, next.n.Reconcile(t.Context(), "a", []notify.Kind{notify.CyclesFailing}, nil))
		if got := next.n.Open("a"); len(got) != 1 || got[0].Key != k {
			t.Fatalf("Open after a reconcile = %+v, want the episode a previous run left", got)
		}
		must(t, next.n.Clear(t.Context(), k))
		if got := next.n.Open("a"); len(got) != 0 {
			t.Fatalf("Open after the clear = %+v", got)
		}
		synctest.Wait()
	})
}

// stall answers no request until release is closed: a target that
// hangs while the process shuts down.
type stall struct{ got, release chan struct{} }

func (s stall) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.got <- struct{}{}
	select {
	case <-r.Context().Done():
	case <-s.release:
	}
}

// A notice in flight when its process stops stays pending; the next
// process sends it once, whatever the hotel's cycles report meanwhile:
// a cause whose words change from cycle to cycle (an error with a
// number in it) updates the episode without deciding another notice.
func TestInFlightAtShutdownSentOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := &notify.MemJournal{}
		hang := stall{got: make(chan struct{}, 1), release: make(chan struct{})}
		p := &notify.Poster{HTTP: &http.Client{Transport: testutil.PipeServer(t, hang), Timeout: time.Hour}, Retrier: notifyRetrier()}
		first := notify.New(notify.Options{Journal: j, GroupWindow: -1, Operators: targets(t, p, "webhook+http://:"+secret+"@127.0.0.1/hook")})
		ctx, stop := context.WithCancel(context.Background())
		ended := make(chan struct{})
		go func() { defer close(ended); first.Run(ctx) }()
		k := notify.Key{Hotel: "a", Kind: notify.KeyRefused}
		kinds := []notify.Kind{notify.CyclesFailing, notify.KeyRefused}
		must(t, first.Reconcile(ctx, "a", kinds, []notify.Condition{{Key: k, Cause: "the API answered 401 (try 1)"}}))
		<-hang.got // the notice is on its way
		stop()     // the daemon stops
		<-ended
		close(hang.release)

		next := start(t, notify.Options{Journal: j}, "webhook+http://:"+secret+"@127.0.0.1/hook")
		for i := range 4 * int(notify.DefaultClaimTimeout/(30*time.Second)) {
			cause := fmt.Sprintf("the API answered 401 (try %d)", i+2)
			must(t, next.n.Reconcile(t.Context(), "a", kinds, []notify.Condition{{Key: k, Cause: cause}}))
			time.Sleep(30 * time.Second)
			synctest.Wait()
		}
		if got := titles(t, next.rec); len(got) != 1 {
			t.Fatalf("notices after the restart = %q, want the one left in flight, once", got)
		}
	})
}
