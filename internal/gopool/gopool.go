// Package gopool runs functions on goroutines that outlive them, so that
// the stacks they grew are grown once, not once a function.
//
// A goroutine starts with a small stack (the runtime picks the average it
// last saw in use) and copies it to one twice the size each time a call
// needs more. A daemon of thousands of hotels keeps thousands of idle
// goroutines of about a kilobyte, one a hotel, so a new goroutine starts
// at the smallest size, and each cycle's goroutines (the cycle, its reads
// of the API, the work after it) grew theirs to 16 or 32 KB, three or four
// copies each, hundreds of times a second: 4 % of the daemon's CPU at
// 2,000 hotels. A pool's goroutine keeps its stack from one function to
// the next (the collector halves an idle one now and then); the pool
// hands work to the goroutine that waited least, and one left idle for
// the pool's idle time ends.
//
// A nil *Pool runs each function on a new goroutine: the same code serves
// a daemon of one hotel, and tests, unchanged. A test in a synctest bubble
// makes its pool inside the bubble (a goroutine belongs to the bubble it
// was started in) and waits the idle time out before the bubble ends.
// A panic's trace names the pool's Go as the goroutine's creator, under
// whichever caller first started that goroutine.
package gopool

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Pool runs functions on the goroutines it keeps. Make it with [New].
//
// The goroutine that waited least is handed the next function: a burst
// (every hotel's first cycle at once) leaves more goroutines than the
// steady load needs, and handing work round them all would keep every
// one alive, with the stack it grew; last in, first out leaves the spare
// ones idle, and they end.
type Pool struct {
	idleFor time.Duration
	mu      sync.Mutex
	idle    []*worker // waiting for work, the last the most recent
	ran     atomic.Uint64
}

// worker is one goroutine of a pool: work hands it its next function.
type worker struct{ work chan func() }

// New returns a pool whose goroutines end after idle without work.
func New(idle time.Duration) *Pool {
	return &Pool{idleFor: idle}
}

// Go runs f on a goroutine of the pool: the one that waited least, or a
// new one when none waits. It never waits itself. A panic of f is f's to
// recover: one it does not ends the process, as on a goroutine of its own.
func (p *Pool) Go(f func()) {
	if p == nil {
		go f()
		return
	}
	p.ran.Add(1)
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.work <- f // room for one: it never blocks
		return
	}
	p.mu.Unlock()
	go p.run(&worker{work: make(chan func(), 1)}, f)
}

// run runs f, then whatever the pool hands w, until w waits idle for the
// pool's idle time.
func (p *Pool) run(w *worker, f func()) {
	t := time.NewTimer(p.idleFor)
	defer t.Stop()
	for {
		f()
		f = nil // nothing of the last function stays reachable while idle
		p.mu.Lock()
		p.idle = append(p.idle, w)
		p.mu.Unlock()
		t.Reset(p.idleFor)
		select {
		case f = <-w.work:
		case <-t.C:
			p.mu.Lock()
			i := slices.Index(p.idle, w)
			if i >= 0 {
				p.idle = slices.Delete(p.idle, i, i+1)
			}
			p.mu.Unlock()
			if i >= 0 {
				return
			}
			f = <-w.work // Go took w meanwhile: its function is on its way
		}
	}
}

// Ran returns how many functions the pool was given to run (0 for a nil
// pool, which keeps no count).
func (p *Pool) Ran() uint64 {
	if p == nil {
		return 0
	}
	return p.ran.Load()
}
