package sync_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	gosync "sync"
)

// The simulator's faults are decided without a shared random stream: each
// call is named by its identity (the side, the operation and what it acts
// on, e.g. "api POST /ops-public-api/v1/tickets/T3/messages key=..."), the
// simulator counts how many times it has seen that identity, and the
// decision for the call is a pure function of (seed, identity, count). Two
// runs of a seed therefore give every call the same fate, whatever order
// goroutines make their calls in; the engine runs with one call in flight
// (TICKETBRIDGE_CONCURRENCY=1), so the order is the same too, and the
// run's trace replays bit for bit.

// simDraw is the fate of one call: a source of numbers private to the
// call, derived from (seed, identity, count).
type simDraw struct {
	id  string // identity#count
	rnd *rand.Rand
}

// chance reports whether an event of probability p happens, taking one
// number from the call's source.
func (d simDraw) chance(p float64) bool { return d.rnd.Float64() < p }

// pick returns the first kind whose cumulative rate covers one number of
// the call's source, or "" for none.
func (d simDraw) pick(kinds []simKind) string {
	u := d.rnd.Float64()
	for _, k := range kinds {
		if u < k.rate {
			return k.name
		}
		u -= k.rate
	}
	return ""
}

// simKind is one kind of fault with its rate.
type simKind struct {
	name string
	rate float64
}

// simMix derives the numbers of a call: FNV-1a over seed and identity and
// count, spread by two rounds of SplitMix64 into a PCG source.
func simMix(seed uint64, identity string, n int) *rand.Rand {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(identity))
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	h.Write(b[:])
	x := h.Sum64()
	a := splitmix(&x)
	c := splitmix(&x)
	return rand.New(rand.NewPCG(a, c))
}

func splitmix(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// simTrace is the record of a run: every call with its fate and outcome,
// every act of the hotel's people, every crash and cycle. Its digest names
// the run: a seed replayed gives the same digest.
type simTrace struct {
	seed  uint64
	mu    gosync.Mutex
	seen  map[string]int
	lines []string
	hash  interface {
		Write([]byte) (int, error)
		Sum([]byte) []byte
	}
}

func newSimTrace(seed uint64) *simTrace {
	return &simTrace{seed: seed, seen: map[string]int{}, hash: sha256.New()}
}

// draw counts one more call of identity and returns its fate.
func (t *simTrace) draw(identity string) simDraw {
	t.mu.Lock()
	t.seen[identity]++
	n := t.seen[identity]
	t.mu.Unlock()
	return simDraw{id: fmt.Sprintf("%s#%d", identity, n), rnd: simMix(t.seed, identity, n)}
}

// log adds a line to the trace.
func (t *simTrace) log(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	t.hash.Write([]byte(line))
	t.hash.Write([]byte{'\n'})
}

// digest returns the hex sha256 of the trace so far.
func (t *simTrace) digest() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return hex.EncodeToString(t.hash.Sum(nil))
}

// tail returns the last n lines of the trace.
func (t *simTrace) tail(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	from := max(0, len(t.lines)-n)
	return strings.Join(t.lines[from:], "\n")
}

// calls returns how many calls were drawn.
func (t *simTrace) calls() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, c := range t.seen {
		n += c
	}
	return n
}
