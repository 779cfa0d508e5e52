package fleet

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/files"
	"github.com/ticketbridge/ticketbridge/internal/lease/leasetest"
	"github.com/ticketbridge/ticketbridge/internal/notify"
)

// panicking is a files helpdesk whose EnsureTicket panics, as a bbolt
// page or an adapter's bug can, the first time only.
type panicking struct {
	adapters.Helpdesk
	left     *atomic.Int32
	panicked chan<- struct{}
}

func (p panicking) EnsureTicket(ctx context.Context, t adapters.Ticket) (adapters.Ref, error) {
	if p.left.Add(-1) >= 0 {
		p.panicked <- struct{}{}
		panic("a damaged page")
	}
	return p.Helpdesk.EnsureTicket(ctx, t)
}

// TestHotelPanicFailsAlone: a panic in one hotel's cycle is recovered in
// that hotel's goroutine: the hotel is listed as failing and counted,
// the other hotels go on syncing, and the hotel starts again after its
// backoff and syncs.
func TestHotelPanicFailsAlone(t *testing.T) {
	fx := newFleetFixture(t)
	clock := leasetest.NewClock()
	fx.clock = clock
	var left atomic.Int32
	left.Store(1)
	panicked := make(chan struct{}, 1)
	fx.registry = adapters.Registry{files.Name: func(ctx context.Context, deps adapters.Deps) (adapters.Helpdesk, error) {
		hd, err := files.Factory(ctx, deps)
		if err != nil {
			return nil, err
		}
		if dir, _ := deps.Env.Lookup("TICKETBRIDGE_FILES_DIR"); strings.HasSuffix(dir, "/bad") {
			return panicking{Helpdesk: hd, left: &left, panicked: panicked}, nil
		}
		return hd, nil
	}}
	for _, n := range []string{"alpha", "bad", "beta"} {
		fx.WriteHotel(n, nil)
		fx.Ticket(n, "towels for "+n)
	}
	fx.start()
	fx.WaitCycles("alpha", "beta")
	<-panicked
	clock.AwaitTimer() // the hotel waits for its backoff
	if ok, body := fx.tel.Readiness(time.Now()); ok || !strings.Contains(body, "panicked: a damaged page") {
		t.Errorf("/readyz after bad's panic: %v\n%s", ok, body)
	}
	if _, body := fx.tel.Readiness(time.Now()); !strings.Contains(body, "hotel alpha: ready") {
		t.Errorf("/readyz after bad's panic does not say alpha is ready:\n%s", body)
	}
	if got := metricLine(t, fx, `ticketbridge_hotel_panics_total{hotel="bad"}`); got != "1" {
		t.Errorf("ticketbridge_hotel_panics_total{hotel=\"bad\"} = %q, want 1", got)
	}

	// The others go on.
	fx.Ticket("alpha", "a late checkout")
	if _, err := fx.running()["alpha"].bridge().Engine().RunCycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := fx.Folders("alpha"); len(got) != 2 {
		t.Errorf("alpha's helpdesk holds %v after bad's panic, want two tickets", got)
	}

	// After its backoff the hotel starts again and syncs.
	clock.Advance(startBackoff)
	if c := fx.WaitCycles("bad")["bad"]; c.Err != nil {
		t.Errorf("bad's cycle after its restart: %v", c.Err)
	}
	if got := fx.Folders("bad"); len(got) != 1 {
		t.Errorf("bad's helpdesk holds %v after its restart, want its ticket", got)
	}
	if ok, body := fx.tel.Readiness(time.Now()); !ok {
		t.Errorf("/readyz after bad's restart:\n%s", body)
	}
}

// metricLine returns the value of series on the fleet's /metrics.
func metricLine(t *testing.T, fx *fleetFixture, series string) string {
	t.Helper()
	resp, err := http.Get("http://" + fx.tel.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			return v
		}
	}
	return ""
}

// TestNoticeWatcherPerRun: each run of a hotel has one watcher of its
// conditions, which ends with the run: a hotel that panics and starts
// again three times leaves no watcher of its earlier runs (each one held
// a goroutine, and a state closed under it), and none is left once the
// fleet stopped.
func TestNoticeWatcherPerRun(t *testing.T) {
	fx := newFleetFixture(t)
	clock := leasetest.NewClock()
	fx.clock = clock
	const panics = 3
	var left atomic.Int32
	left.Store(panics)
	panicked := make(chan struct{}, 1)
	fx.registry = adapters.Registry{files.Name: func(ctx context.Context, deps adapters.Deps) (adapters.Helpdesk, error) {
		hd, err := files.Factory(ctx, deps)
		if err != nil {
			return nil, err
		}
		if dir, _ := deps.Env.Lookup("TICKETBRIDGE_FILES_DIR"); strings.HasSuffix(dir, "/bad") {
			return panicking{Helpdesk: hd, left: &left, panicked: panicked}, nil
		}
		return hd, nil
	}}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	defer recv.Close()
	ns := testNotices(t, notify.Config{URLs: "ntfy+" + recv.URL + "/ops", Repeat: time.Hour,
		CyclesFailingAfter: 15 * time.Minute, RequestErrorAfter: time.Hour, PingInterval: time.Minute, PingPer: "process"})
	fx.notices = ns
	t.Cleanup(func() { // after the fixture's, which stops the fleet
		if n := ns.watchers.Load(); n != 0 {
			t.Errorf("%d watchers left after the fleet stopped, want none", n)
		}
	})
	for _, n := range []string{"alpha", "bad", "beta"} {
		fx.WriteHotel(n, nil)
		fx.Ticket(n, "towels for "+n)
	}
	fx.start()
	fx.WaitCycles("alpha", "beta")
	for range panics {
		<-panicked
		clock.AwaitTimer() // the hotel waits for its backoff
		clock.Advance(startBackoff)
	}
	if c := fx.WaitCycles("bad")["bad"]; c.Err != nil {
		t.Errorf("bad's cycle after its restarts: %v", c.Err)
	}
	if n := ns.watchers.Load(); n != 3 {
		t.Errorf("%d watchers for 3 hotels after %d restarts, want 3", n, panics)
	}
}
