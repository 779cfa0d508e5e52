// Package testutil holds the small helpers that tests across the module
// share: a buffer that concurrent loggers may write to while a test reads
// it, a fake clock, an HTTP server on in-memory connections for tests in a
// testing/synctest bubble, reading a Prometheus scrape, and a benchmark's
// size from the environment (EnvInt). It is for tests and test fakes only;
// no code the daemon runs imports it. Its own tests check a rule of the
// whole module: no non-test Go file past 800 lines (TestNoLongFiles).
package testutil

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"
)

// Buffer is a bytes.Buffer safe for concurrent use: the writer of a log
// handler that the code under test logs to from its goroutines while the
// test reads what was logged.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Clock is a fake clock: Now returns the time set, Advance and Set move it,
// and Sleep moves it by the duration asked and returns at once, recording
// the wait. It is safe for concurrent use.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Sleep records d, advances the clock by d and returns at once; when ctx
// has ended it returns ctx's error and leaves the clock alone.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	if err := ctx.Err(); err != nil {
		return err
	}
	c.now = c.now.Add(d)
	return nil
}

// Sleeps returns the waits Sleep was asked for, in order.
func (c *Clock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sleeps)
}
