package sync

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
)

// readAll runs read over due with at most Concurrency reads in flight and
// sends each result to out, which it closes at the end. A read the API
// refused with a 429 halves that bound (it grows back by one after as many
// reads in a row went through), and no read starts before the 429's
// Retry-After has passed. A Retry-After longer than the schedule's interval
// puts the API off (see [PutOff]): the cycle ends, the tickets not read
// stay due, and no cycle calls the API before the wait has passed.
func (c *cycle) readAll(due []state.Ticket, read func(state.Ticket) refreshResult, out chan<- refreshResult) {
	defer close(out)
	limit := c.e.cfg.Concurrency
	done := make(chan refreshResult)
	var (
		next, inFlight, okRun, limited int
		pause                          time.Duration // to wait before the next read starts
	)
	handle := func(r refreshResult) {
		inFlight--
		out <- r
		if r.limited == nil {
			if limit < c.e.cfg.Concurrency {
				if okRun++; okRun >= limit {
					limit, okRun = limit+1, 0
				}
			}
			return
		}
		limited++
		limit, okRun = max(1, limit/2), 0
		wait := c.e.cfg.interval / 4 // a 429 without Retry-After
		var ae *guestapi.Error
		if errors.As(r.limited, &ae) && ae.RetryAfter > 0 {
			wait = ae.RetryAfter
		}
		if wait > c.e.cfg.interval {
			c.putOff(SideAPI, c.e.now().Add(wait), r.limited)
		}
		pause = max(pause, wait)
	}
	for {
		for inFlight < limit && next < len(due) && !c.stopped() {
			if pause > 0 {
				if inFlight > 0 {
					break // let the reads in flight end first
				}
				if c.e.sleep(c.ctx, pause) != nil {
					break
				}
				pause = 0
			}
			t := due[next]
			next++
			inFlight++
			c.e.workers.Go(func() {
				defer carryPanic(func(p *CyclePanic) { done <- refreshResult{t: t, panic: p} })
				done <- read(t)
			})
		}
		if inFlight == 0 {
			break
		}
		handle(<-done)
	}
	for _, t := range due[next:] {
		c.unread(t.ID) // put off: not read in this cycle
	}
	if limited > 0 {
		left := len(due) - next + limited
		c.count(func(r *Report) { r.Throttled += limited })
		c.e.log.LogAttrs(c.ctx, slog.LevelWarn,
			fmt.Sprintf("the API answered %d reads with 429 (too many requests): reads slowed down to %d at once; %d tickets wait for the next cycle", limited, limit, left),
			slog.String("op", "refresh"))
	}
}
