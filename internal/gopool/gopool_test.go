package gopool

import (
	"bytes"
	"runtime"
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

// goid returns the id of the calling goroutine, from its stack's header.
func goid() int {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf = bytes.TrimPrefix(buf, []byte("goroutine "))
	id, err := strconv.Atoi(string(buf[:bytes.IndexByte(buf, ' ')]))
	if err != nil {
		panic(err)
	}
	return id
}

// on runs f on p and returns the id of the goroutine it ran on, once it
// returned.
func on(p *Pool, f func()) int {
	id := make(chan int)
	p.Go(func() {
		f()
		id <- goid()
	})
	return <-id
}

// TestPoolKeepsItsGoroutines: a function after another runs on the
// goroutine the first ran on; one that comes while the other runs does
// not wait for it; a goroutine left idle for the idle time ends, and the
// next function gets a new one. (A bubble ends only once each of its
// goroutines did: the test waits the idle time out at its end.)
func TestPoolKeepsItsGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(time.Minute)
		first := on(p, func() {})
		synctest.Wait() // the worker waits for work
		if again := on(p, func() {}); again != first {
			t.Errorf("the second function ran on goroutine %d, want the first's, %d", again, first)
		}

		// One blocks; the next runs meanwhile, on a goroutine of its own.
		release, started := make(chan struct{}), make(chan int)
		synctest.Wait()
		p.Go(func() {
			started <- goid()
			<-release
		})
		blocked := <-started
		if other := on(p, func() {}); other == blocked {
			t.Error("a function ran on the goroutine of one still running")
		}
		close(release)

		synctest.Wait()
		time.Sleep(time.Minute) // idle: every worker ends
		synctest.Wait()
		if later := on(p, func() {}); later == first || later == blocked {
			t.Errorf("after the idle time a function ran on a kept goroutine (%d)", later)
		}
		if n := p.Ran(); n != 5 {
			t.Errorf("Ran() = %d after five functions", n)
		}
		time.Sleep(time.Minute) // the bubble ends once every goroutine did
	})
}

// TestPoolLetsABurstsGoroutinesEnd: after a burst of ten functions at
// once, a steady load of one at a time runs on one goroutine, the one
// that waited least, and the nine others end after the idle time; handed
// round them all, the work would keep every one of them, and its stack.
func TestPoolLetsABurstsGoroutinesEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(time.Minute)
		release := make(chan struct{})
		for range 10 {
			p.Go(func() { <-release })
		}
		synctest.Wait()
		close(release)
		synctest.Wait()
		if n := p.waiting(); n != 10 {
			t.Fatalf("%d goroutines wait after the burst, want 10", n)
		}
		ids := map[int]bool{}
		for range 12 { // two minutes, a function every 10 s
			ids[on(p, func() {})] = true
			time.Sleep(10 * time.Second)
		}
		if len(ids) != 1 {
			t.Errorf("one function at a time ran on %d goroutines, want 1", len(ids))
		}
		if n := p.waiting(); n != 1 {
			t.Errorf("%d goroutines wait two minutes after the burst, want the 1 in use", n)
		}
		time.Sleep(time.Minute)
	})
}

// waiting returns how many of p's goroutines wait for work.
func (p *Pool) waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// TestNilPoolStartsAGoroutine: a nil pool runs each function on a new
// goroutine.
func TestNilPoolStartsAGoroutine(t *testing.T) {
	var p *Pool
	if on(p, func() {}) == goid() {
		t.Error("a nil pool ran the function on the caller's goroutine")
	}
}

// deep needs about n KB of stack.
//
//go:noinline
func deep(n int) byte {
	var frame [1000]byte
	frame[n%len(frame)] = byte(n)
	if n == 0 {
		return frame[0]
	}
	return deep(n-1) + frame[n%len(frame)]
}

// BenchmarkDeepFunction runs a function that needs 24 KB of stack, beside
// 2,000 parked goroutines of a small stack each (a fleet's hotels), on a
// new goroutine each time and on a pool's.
func BenchmarkDeepFunction(b *testing.B) {
	park := make(chan struct{})
	defer close(park)
	for range 2000 {
		go func() { <-park }()
	}
	runtime.GC() // the runtime's average stack in use: a new goroutine starts at it
	for _, c := range []struct {
		name string
		p    *Pool
	}{{"new", nil}, {"pool", New(time.Minute)}} {
		b.Run(c.name, func(b *testing.B) {
			done := make(chan struct{})
			for b.Loop() {
				c.p.Go(func() {
					deep(24)
					done <- struct{}{}
				})
				<-done
			}
		})
	}
}
