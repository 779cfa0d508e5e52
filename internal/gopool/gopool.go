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
// the next (the collector halves an idle one now and then), and one left
// idle for the pool's idle time ends.
//
// A nil *Pool runs each function on a new goroutine: the same code serves
// a daemon of one hotel, and tests, unchanged.
package gopool

import (
	"sync/atomic"
	"time"
)

// Pool runs functions on the goroutines it keeps. Make it with [New].
type Pool struct {
	work chan func()
	idle time.Duration
	ran  atomic.Uint64
}

// New returns a pool whose goroutines end after idle without work.
func New(idle time.Duration) *Pool {
	return &Pool{work: make(chan func()), idle: idle}
}

// Go runs f on a goroutine of the pool: one that waits for work, or a new
// one when none waits. It never waits itself. A panic of f is f's to
// recover: one it does not ends the process, as on a goroutine of its own.
func (p *Pool) Go(f func()) {
	if p == nil {
		go f()
		return
	}
	p.ran.Add(1)
	select {
	case p.work <- f:
	default:
		go p.worker(f)
	}
}

// worker runs f, then whatever the pool hands it, until it waits idle
// for the pool's idle time.
func (p *Pool) worker(f func()) {
	t := time.NewTimer(p.idle)
	defer t.Stop()
	for {
		f()
		f = nil // nothing of the last function stays reachable while idle
		t.Reset(p.idle)
		select {
		case f = <-p.work:
		case <-t.C:
			return
		}
	}
}

// Ran returns how many functions the pool was given to run.
func (p *Pool) Ran() uint64 { return p.ran.Load() }
