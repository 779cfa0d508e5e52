package fleet

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/files"
	"github.com/ticketbridge/ticketbridge/internal/lease/leasetest"
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
