package lease

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
)

// oneDB is a database's leases of one hotel, as a Single's keeper uses
// them.
type oneDB struct {
	me string // the replica of the Single under test

	mu         gosync.Mutex
	holder     string // the replica holding the hotel; "" when free
	fence      int64
	heartbeats int
	renewals   int
	lose, fail bool // Renew reports the lease lost, or fails
	left       bool
}

func (db *oneDB) Heartbeat(context.Context) ([]string, []state.Owner, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.heartbeats++
	if db.holder != "" && db.holder != db.me {
		return []string{db.me, db.holder}, []state.Owner{{Hotel: state.DefaultHotel, Replica: db.holder, Fence: db.fence, Live: true}}, nil
	}
	return []string{db.me}, nil, nil
}

func (db *oneDB) Take(_ context.Context, hotels []string) ([]state.Lease, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.holder != "" && db.holder != db.me {
		return nil, nil
	}
	db.holder = db.me
	db.fence++
	return []state.Lease{{Hotel: hotels[0], Fence: db.fence, Until: time.Now().Add(Life(time.Second))}}, nil
}

func (db *oneDB) Acquire(ctx context.Context, hotel string) (state.Lease, bool, error) {
	taken, err := db.Take(ctx, []string{hotel})
	if len(taken) == 0 {
		return state.Lease{}, false, err
	}
	return taken[0], true, err
}

func (db *oneDB) Owner(_ context.Context, hotel string) (state.Owner, bool, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	return state.Owner{Hotel: hotel, Replica: db.holder, Fence: db.fence, Live: db.holder != ""}, db.holder != "", nil
}

func (db *oneDB) Renew(_ context.Context, leases []state.Lease) (state.Renewal, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.renewals++
	switch {
	case len(leases) == 0:
		return state.Renewal{}, nil
	case db.fail:
		return state.Renewal{}, errors.New("database out of reach")
	case db.lose:
		db.holder = "another"
		return state.Renewal{Lost: []string{leases[0].Hotel}}, nil
	}
	return state.Renewal{Until: time.Now().Add(Life(time.Second))}, nil
}

func (db *oneDB) Release(context.Context, state.Lease) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.holder == db.me {
		db.holder = ""
	}
	return nil
}

func (db *oneDB) Leave(ctx context.Context) error {
	db.mu.Lock()
	db.left = true
	db.mu.Unlock()
	return db.Release(ctx, state.Lease{})
}

func (db *oneDB) Quit(context.Context) error { return nil }
func (db *oneDB) Close() error               { return nil }

// counts returns the heartbeats and renewals so far.
func (db *oneDB) counts() (heartbeats, renewals int) {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.heartbeats, db.renewals
}

func (db *oneDB) set(f func(db *oneDB)) {
	db.mu.Lock()
	defer db.mu.Unlock()
	f(db)
}

// logBuffer is a log written by the keepers' goroutines.
type logBuffer struct {
	mu gosync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// oneTTL is the tests' lease time. They run in synctest bubbles: each
// time.Sleep below advances the bubble's fake clock once every goroutine
// of the keeper is durably blocked, so a sleep is a step of the fake
// clock, never a wait on the machine's.
const oneTTL = time.Second

// TestTakeRenewsOnAKeeper: a command's lease (Take) is renewed by a keeper
// of its own, every tick, without heartbeats; a renewal that finds it
// lost calls lost once, and Close leaves the database. Taken while a live
// replica holds it, Take returns that replica's hold and leaves.
func TestTakeRenewsOnAKeeper(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := slog.New(slog.DiscardHandler)
		db := &oneDB{me: "cmd"}
		var lost atomic.Int32
		sl, _, err := take(t.Context(), db, "postgres://db", state.DefaultHotel, "cmd", oneTTL, log, func() { lost.Add(1) })
		if err != nil || sl == nil {
			t.Fatalf("take: %v, %v", sl, err)
		}
		time.Sleep(3*Tick(oneTTL) + Tick(oneTTL)/2)
		synctest.Wait()
		if hb, rn := db.counts(); hb != 0 || rn < 3 {
			t.Errorf("after three ticks: %d heartbeats and %d renewals; want none and at least 3", hb, rn)
		}
		if !sl.Owned().Valid() || lost.Load() != 0 {
			t.Fatalf("renewed lease: valid %t, lost %d times", sl.Owned().Valid(), lost.Load())
		}
		db.set(func(db *oneDB) { db.lose = true })
		time.Sleep(Tick(oneTTL))
		synctest.Wait()
		time.Sleep(oneTTL) // the view's timer, stopped by the renewal, calls nothing more
		synctest.Wait()
		if n := lost.Load(); n != 1 || sl.Owned().Valid() {
			t.Errorf("lease lost at a renewal: lost called %d times, valid %t; want once, not valid", n, sl.Owned().Valid())
		}
		sl.Close()
		if !db.left {
			t.Error("Close did not leave the database")
		}

		held := &oneDB{me: "cmd2", holder: "daemon"}
		sl, h, err := take(t.Context(), held, "postgres://db", state.DefaultHotel, "cmd2", oneTTL, log, func() {})
		if err != nil || sl != nil || h.Replica != "daemon" || !h.Live {
			t.Errorf("take beside a live holder: %v, %+v, %v; want no lease and the holder", sl, h, err)
		}
		if !held.left {
			t.Error("a refused take did not leave the database")
		}
	})
}

// TestStandByWaitsForTheHolder: a daemon of one hotel stands by, with
// heartbeats, while another replica holds the lease, saying so once;
// takes it at the tick after that replica let it go; and calls lost once
// when the view ends without a renewal.
func TestStandByWaitsForTheHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logBuffer{}
		log := slog.New(slog.NewTextHandler(logs, nil))
		db := &oneDB{me: "b", holder: "a"}
		var lost atomic.Int32
		got := make(chan *Single, 1)
		go func() {
			sl, err := standBy(t.Context(), db, "postgres://db", state.DefaultHotel, "b", oneTTL, log, func() { lost.Add(1) })
			if err != nil {
				t.Errorf("standBy: %v", err)
			}
			got <- sl
		}()
		time.Sleep(3 * Tick(oneTTL))
		synctest.Wait()
		if len(got) != 0 {
			t.Fatal("StandBy took the lease while another replica holds it")
		}
		if n := strings.Count(logs.String(), "standing by: replica a syncs hotel"); n != 1 {
			t.Errorf("standing by said %d times, want once:\n%s", n, logs)
		}
		db.set(func(db *oneDB) { db.holder = "" })
		time.Sleep(Tick(oneTTL))
		synctest.Wait()
		if len(got) != 1 {
			t.Fatal("StandBy did not take the lease its holder let go")
		}
		sl := <-got
		if !strings.Contains(logs.String(), "this daemon holds the lease of hotel default now") {
			t.Errorf("no line says the daemon holds the lease:\n%s", logs)
		}
		if hb, _ := db.counts(); hb < 4 {
			t.Errorf("%d heartbeats, want one a tick", hb)
		}
		db.set(func(db *oneDB) { db.fail = true })
		time.Sleep(oneTTL)
		synctest.Wait()
		if n := lost.Load(); n != 1 || sl.Owned().Valid() {
			t.Errorf("renewals failing past the view: lost called %d times, valid %t; want once, not valid", n, sl.Owned().Valid())
		}
		sl.Close()
	})
}

// TestStandByStopped: a daemon stopped while it stands by returns its
// context's error and leaves the database.
func TestStandByStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := &oneDB{me: "b", holder: "a"}
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(2*Tick(oneTTL), cancel)
		sl, err := standBy(ctx, db, "postgres://db", state.DefaultHotel, "b", oneTTL, slog.New(slog.DiscardHandler), func() {})
		if sl != nil || !errors.Is(err, context.Canceled) {
			t.Errorf("standBy stopped: %v, %v; want context.Canceled", sl, err)
		}
		if !db.left {
			t.Error("a daemon stopped standing by did not leave the database")
		}
	})
}
