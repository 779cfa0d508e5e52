package lease

import (
	"context"
	"errors"
	"log/slog"
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
