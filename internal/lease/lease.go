package lease

// This file holds what the leases share: the parts of the time to live,
// a running hotel's lease (Owned) and its guard, and how the hotels are
// spread over the replicas (Assign).

import (
	"cmp"
	"context"
	"errors"
	"hash/fnv"
	"os"
	"slices"
	"strings"
	gosync "sync"
	"time"

	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/state"
)

// The time to live splits as follows: a lease lives Life of it in the
// database from its last renewal, and replicas renew every Tick of it.
// A free hotel is taken by the replica it belongs to at its next tick; one
// free for leaseOrphan ticks (its replica died too, or has not seen the
// change yet) by any replica. A killed replica's hotels are thus free at
// most Life after its last renewal, and taken at most 1+leaseOrphan
// ticks later: 5/8 + 3/10 of the time to live, within it.
const (
	leaseLifeNum, leaseLifeDen = 5, 8 // Life = ttl * 5/8
	leaseTickDen               = 10   // Tick = ttl / 10
	leaseOrphan                = 2    // ticks a free hotel waits for its replica
)

// TakeBatch is the most hotels a keeper takes in one round (one
// statement). Taking is one statement whatever its size, so the bound is
// not the database's: it keeps a replica that starts a moment before the
// others, and sees every hotel as its own, from taking them all before
// it sees the others' heartbeats; the hotels it took beyond its share are
// handed over only after their first cycle, an import. At a tick of
// 0.8 s (the default time to live) it takes 80 hotels a second: the
// survivors of a replica of 500 take them over in about two seconds
// after the leases lapse.
const TakeBatch = 64

// Life and Tick return the parts of ttl: how long a lease lives in the
// database from its last renewal, and how often replicas renew.
func Life(ttl time.Duration) time.Duration { return ttl * leaseLifeNum / leaseLifeDen }
func Tick(ttl time.Duration) time.Duration { return ttl / leaseTickDen }

// NewReplicaID names this process among the replicas: the host, for the
// person reading the lease table, and a random part, unique per start.
func NewReplicaID() string {
	return thisHost() + "-" + uuid.NewString()[:8]
}

// thisHost is the host part of the replica ids this process makes.
func thisHost() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "replica"
	}
	if len(host) > 40 {
		host = host[:40]
	}
	return host
}

// HostOf returns the host part of a replica id made by NewReplicaID, or ""
// when id is not of that form.
func HostOf(id string) string {
	i := strings.LastIndexByte(id, '-')
	if i <= 0 || len(id)-i-1 != 8 {
		return ""
	}
	for _, c := range id[i+1:] {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return ""
		}
	}
	return id[:i]
}

// MadeHere reports whether the replica id was made on this host.
func MadeHere(id string) bool { return HostOf(id) == thisHost() }

// Owned is a running hotel's lease: while its view lasts the hotel may
// act; when the view ends without a renewal, the hotel stops at once.
type Owned struct {
	// keeper renews the lease.
	keeper *Keeper
	clock  Clock
	mu     gosync.Mutex
	lease  state.Lease
	timer  Timer
}

func newOwned(k *Keeper, c Clock, l state.Lease) *Owned {
	return &Owned{keeper: k, clock: c, lease: l}
}

// Keeper returns the keeper that renews the lease.
func (hl *Owned) Keeper() *Keeper { return hl.keeper }

// Valid reports whether the hotel may still act.
func (hl *Owned) Valid() bool {
	hl.mu.Lock()
	defer hl.mu.Unlock()
	return hl.lease.Valid(hl.clock.Now())
}

// Get returns the lease as last renewed.
func (hl *Owned) Get() state.Lease {
	hl.mu.Lock()
	defer hl.mu.Unlock()
	return hl.lease
}

// extend moves the view's end to until, and the timer with it.
func (hl *Owned) extend(until time.Time) {
	hl.mu.Lock()
	defer hl.mu.Unlock()
	hl.lease.Until = until
	if hl.timer != nil {
		hl.timer.Reset(until.Sub(hl.clock.Now()))
	}
}

// End ends the view at once: the hotel's requests are refused from now.
func (hl *Owned) End() {
	hl.mu.Lock()
	defer hl.mu.Unlock()
	hl.lease.Until = time.Time{}
}

// ExpireWith arms the timer that calls lost when the view ends, in
// place of the one armed before (a hotel restarted under its lease).
func (hl *Owned) ExpireWith(lost func()) {
	hl.mu.Lock()
	defer hl.mu.Unlock()
	if hl.timer != nil {
		hl.timer.Stop()
	}
	hl.timer = hl.clock.AfterFunc(hl.lease.Until.Sub(hl.clock.Now()), lost)
}

// StopTimer disarms the timer ExpireWith armed.
func (hl *Owned) StopTimer() {
	hl.mu.Lock()
	defer hl.mu.Unlock()
	if hl.timer != nil {
		hl.timer.Stop()
	}
}

// ErrEnded is the error of a request a hotel tries after its lease ended.
var ErrEnded = errors.New("this replica's lease of the hotel ended: another replica may sync it now")

// Guard returns the guard of the clients of a hotel held under hl (see
// httpx.Chain.Guard and adapters.Deps.Guard): once the lease's view ended
// it ends the hotel's context with cause and refuses with it, so that a replica that
// was paused or cut off sends nothing more for the hotel, to the API or
// the helpdesk, even in the moment before the view's timer stops the
// hotel; and the cycle sees its own end, not a failing request to record.
func Guard(hl *Owned, end context.CancelCauseFunc, cause error) func() error {
	return func() error {
		if hl.Valid() {
			return nil
		}
		end(cause)
		return cause
	}
}

// Assign spreads hotels over replicas evenly: their loads differ by one at
// most. Each hotel goes to the first replica with room in an order drawn
// from a hash of the hotel and the replica (rendezvous hashing with
// bounded loads): first with room up to the lower share, then the hotels
// left over go one to a replica. Every replica computes the same answer
// from the same names, and a replica joining or leaving moves few hotels
// besides its own share (measured: at most three times it). The hash is
// FNV-1a of the hotel, a zero byte and the replica: replicas of different
// versions must agree, so it never changes.
//
// A keeper calls it every tick over all its database's hotels, so its
// work is per call, not per hotel: one hasher, one buffer and one order
// serve every hotel.
func Assign(hotels, replicas []string) map[string]string {
	out := make(map[string]string, len(hotels))
	if len(replicas) == 0 {
		return out
	}
	hs := slices.Sorted(slices.Values(hotels))
	floor := len(hs) / len(replicas)
	load := make(map[string]int, len(replicas))
	type rank struct {
		replica string
		score   uint64
	}
	ranks := make([]rank, len(replicas))
	f := fnv.New64a()
	var buf []byte
	// order returns the replicas in h's order, in ranks: valid until the
	// next call.
	order := func(h string) []rank {
		for i, r := range replicas {
			buf = append(append(append(buf[:0], h...), 0), r...)
			f.Reset()
			_, _ = f.Write(buf)
			ranks[i] = rank{r, f.Sum64()}
		}
		slices.SortFunc(ranks, func(a, b rank) int {
			if c := cmp.Compare(b.score, a.score); c != 0 {
				return c
			}
			return cmp.Compare(a.replica, b.replica)
		})
		return ranks
	}
	// Once every replica has the lower share, the rest get one each.
	for _, limit := range []int{floor, floor + 1} {
		for _, h := range hs {
			if _, done := out[h]; done {
				continue
			}
			for _, r := range order(h) {
				if load[r.replica] < limit {
					out[h] = r.replica
					load[r.replica]++
					break
				}
			}
		}
	}
	return out
}

// Orphan reports whether a hotel's lease has been free long enough for
// any replica to take it: the replica it belongs to did not, in
// leaseOrphan ticks (it died as well, or is about to be seen dead). A
// hotel no replica ever held waits for its own. The hotel moves to its
// replica later by a handover.
func Orphan(h state.Owner, ttl time.Duration) bool {
	return h.Hotel != "" && !h.Live && h.Free >= leaseOrphan*Tick(ttl)
}

// ElsewhereReason says, for /readyz and the log, where a hotel is synced
// when not here.
func ElsewhereReason(h state.Owner, ok bool) string {
	if ok && h.Live {
		return "synced by replica " + h.Replica
	}
	return "waiting for a replica to take its lease"
}
