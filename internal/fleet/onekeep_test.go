package fleet

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/lease"
	"github.com/ticketbridge/ticketbridge/internal/statuspage"
	"github.com/ticketbridge/ticketbridge/state"
)

// TestOneHotelReloadKeepsItsStateFile: a reload of a daemon of one hotel
// whose key file changed restarts the hotel on the state it has open. A
// command run next to the daemon meanwhile (status, check, retry, skip,
// once, state backup) must still find the file locked: had the daemon
// let it go, the command would take the lock, and the restarted hotel,
// unable to open its state, would end the daemon.
func TestOneHotelReloadKeepsItsStateFile(t *testing.T) {
	fx := newFleetFixture(t)
	fx.WriteHotel("alpha", nil)
	fx.Ticket("alpha", "towels")
	opts := fx.oneOptions(t.Context(), "alpha", slog.New(slog.DiscardHandler))
	opts.AfterCycle = fx.AfterCycle
	var hw *heldWire
	f := startOne(t, opts, func(f *Fleet) { hw = holdWirings(f, false) })
	fx.WaitCycles("alpha")
	path := opts.Daemon.State
	// What `ticketbridge status` does next to the daemon. The lock is
	// either held or not: the wait only bounds how long Open tries.
	held := func() bool {
		st, err := state.OpenAt(t.Context(), path, state.Options{ReadOnly: true, LockTimeout: 100 * time.Millisecond})
		if err == nil {
			st.Close()
			return false
		}
		if !errors.Is(err, state.ErrLocked) {
			t.Fatalf("open the state next to the daemon: %v", err)
		}
		return true
	}
	if !held() {
		t.Fatal("the running daemon does not hold its state file")
	}
	fx.rotateKey("alpha")
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	<-hw.entered // the first wiring's
	<-hw.entered // the restart's: its previous run has closed
	if !held() {
		t.Error("across a reload the daemon let its state file go: a command could take it, and the daemon would stop")
	}
	hw.next <- struct{}{}
}

// TestOneHotelStoppedWhileOpeningItsDatabase: SIGTERM while a daemon of
// one hotel on PostgreSQL is still connecting to its database (slow to
// answer at boot) ends the connect with the context's error. That is the
// stop's, not the daemon's failure: reported as one, the daemon would
// exit with status 1 and its unit be marked failed.
func TestOneHotelStoppedWhileOpeningItsDatabase(t *testing.T) {
	fx := newFleetFixture(t)
	fx.WriteHotel("alpha", map[string]string{"TICKETBRIDGE_STATE": okDB})
	opts := fx.oneOptions(t.Context(), "alpha", slog.New(slog.DiscardHandler))
	connecting := make(chan struct{})
	connectEnded := make(chan struct{})
	opts.OpenLeases = func(ctx context.Context, _, _ string, _ time.Duration) (lease.DB, error) {
		close(connecting)
		<-ctx.Done() // a connect that has not answered yet
		defer close(connectEnded)
		return nil, ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := opts.Telemetry.Start(ctx, nil, nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	f := New(ctx, opts)
	defer func() { _ = opts.Telemetry.Stop() }()
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	<-connecting
	cancel() // SIGTERM
	<-connectEnded
	_ = f.Stop() // waits for the keeper, which reports what its open gave
	select {
	case err := <-f.Failed():
		t.Errorf("a stop while connecting is reported as the daemon's failure: %v", err)
	default:
	}
}

// TestOneHotelPageAcrossAReload: the status page of a daemon of one hotel
// while a reload restarts its hotel (a key file changed) stays up, on the
// state the restart keeps open: it does not answer 503 until the
// restarted hotel shows its own.
func TestOneHotelPageAcrossAReload(t *testing.T) {
	fx := newFleetFixture(t)
	fx.WriteHotel("alpha", nil)
	fx.Ticket("alpha", "towels")
	opts := fx.oneOptions(t.Context(), "alpha", slog.New(slog.DiscardHandler))
	opts.AfterCycle = fx.AfterCycle
	page, err := statuspage.New(statuspage.Options{One: true, Hotels: opts.Telemetry.PageHotels, Listen: "127.0.0.1:0", AllowedHosts: []string{"localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://localhost/", nil))
		return rec.Code, rec.Body.String()
	}
	var hw *heldWire
	f := startOne(t, opts, func(f *Fleet) { hw = holdWirings(f, false) })
	fx.WaitCycles("alpha")
	if code, body := get(); code != http.StatusOK {
		t.Fatalf("before the reload: %d\n%s", code, body)
	}
	fx.rotateKey("alpha")
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	<-hw.entered
	<-hw.entered // the restart is being wired
	if code, body := get(); code != http.StatusOK {
		t.Errorf("while the hotel restarts: %d\n%s", code, body)
	}
	hw.next <- struct{}{}
}
