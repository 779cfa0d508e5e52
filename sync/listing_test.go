package sync_test

import (
	"context"
	"fmt"
	gosync "sync"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// overlapList holds the first department list until a second one has
// started, and counts the department lists.
type overlapList struct {
	tbsync.API
	mu      gosync.Mutex
	started int
	second  chan struct{}
}

func (a *overlapList) ListTickets(ctx context.Context, opt guestapi.ListOptions) ([]guestapi.Ticket, error) {
	if opt.Department != "" {
		a.mu.Lock()
		a.started++
		n := a.started
		a.mu.Unlock()
		switch n {
		case 1:
			select {
			case <-a.second:
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Minute): // a hang's report, not a timing
				return nil, fmt.Errorf("no second department list started while the first was in flight")
			}
		case 2:
			close(a.second)
		}
	}
	return a.API.ListTickets(ctx, opt)
}

// TestDepartmentListsGoOutTogether: when a status's list is full, its
// department lists go out Concurrency at a time, not one after the other
// (at a hosted API's latency, one after the other they were most of a
// large hotel's cycle), and every ticket is imported.
func TestDepartmentListsGoOutTogether(t *testing.T) {
	e := newEnv(t)
	e.cfg.Concurrency = 4
	const n = 230 // more than a list shows
	for i := range n {
		e.ticketIn(guestapi.StatusNew, fmt.Sprintf("dept%d", i%3), fmt.Sprintf("request %d", i), start.Add(-time.Duration(n-i)*time.Second))
	}
	api := &overlapList{second: make(chan struct{})}
	e.wrapAPI = func(a tbsync.API) tbsync.API { api.API = a; return api }
	r := e.cycle()
	if r.Errors != 0 {
		t.Fatalf("the first cycle: %s", r)
	}
	if api.started < 2 {
		t.Fatalf("%d department lists, want one per department of the full list", api.started)
	}
	if r.Created != n {
		t.Errorf("the first cycle created %d tickets, want %d: %s", r.Created, n, r)
	}
}
