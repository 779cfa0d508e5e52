// Package leasetest holds what tests of the leases share: a lease.Clock
// that moves only when the test advances it. It is for tests only.
package leasetest

import (
	"slices"
	gosync "sync"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/lease"
)

// Clock is a lease.Clock that moves only when the test advances it.
type Clock struct {
	mu gosync.Mutex
	// armed is broadcast whenever a timer is armed (see AwaitTimer).
	armed   *gosync.Cond
	now     time.Time
	tickers []*fakeTicker
	timers  []*fakeTimer
}

// NewClock starts at the present: the views of leases a real database
// gives (counted on the real clock) last as long on it, while it stands
// still.
func NewClock() *Clock {
	c := &Clock{now: time.Now()}
	c.armed = gosync.NewCond(&c.mu)
	return c
}

// AwaitTimer waits until a timer is armed and has not fired, so that a
// test advances the clock past a wait the code under test began.
func (c *Clock) AwaitTimer() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for !slices.ContainsFunc(c.timers, func(t *fakeTimer) bool { return t.active }) {
		c.armed.Wait()
	}
}

// Armed returns how many timers are armed and have not fired.
func (c *Clock) Armed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if t.active {
			n++
		}
	}
	return n
}

type fakeTicker struct {
	c       chan time.Time
	every   time.Duration
	next    time.Time
	stopped bool
}

type fakeTimer struct {
	c      *Clock
	at     time.Time
	f      func()
	active bool
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTicker returns a ticker that ticks when Advance passes its times.
func (c *Clock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTicker{c: make(chan time.Time, 1), every: d, next: c.now.Add(d)}
	c.tickers = append(c.tickers, t)
	return t.c, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		t.stopped = true
	}
}

// AfterFunc calls f in a goroutine of its own once Advance passed d.
func (c *Clock) AfterFunc(d time.Duration, f func()) lease.Timer {
	t := &fakeTimer{c: c, f: f}
	t.Reset(d)
	c.mu.Lock()
	c.timers = append(c.timers, t)
	c.armed.Broadcast()
	c.mu.Unlock()
	return t
}

// Advance moves the clock by d: the tickers due tick (a tick the reader
// has not taken yet is dropped, as time.Ticker does), the timers due fire.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	for _, t := range c.tickers {
		for !t.stopped && !t.next.After(c.now) {
			select {
			case t.c <- t.next:
			default:
			}
			t.next = t.next.Add(t.every)
		}
	}
	var fire []func()
	for _, t := range c.timers {
		if t.active && !t.at.After(c.now) {
			t.active = false
			fire = append(fire, t.f)
		}
	}
	c.mu.Unlock()
	for _, f := range fire {
		go f()
	}
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.active = false
	return was
}

// Reset arms the timer d from now; d <= 0 fires it at once, as
// time.AfterFunc does.
func (t *fakeTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	was := t.active
	if d <= 0 {
		t.active = false
		t.c.mu.Unlock()
		go t.f()
		return was
	}
	t.at, t.active = t.c.now.Add(d), true
	t.c.armed.Broadcast()
	t.c.mu.Unlock()
	return was
}
