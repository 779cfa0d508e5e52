package sync

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/ticketbridge/ticketbridge/guestapi"
)

// countingAPI counts the calls made through it, those that succeeded and
// those the API refused with 429, and puts the API off for the cycle in
// flight when a call says to come back later (see [PutOff]).
type countingAPI struct {
	API
	n       atomic.Int64
	ok      atomic.Int64
	limited atomic.Int64
	cycle   atomic.Pointer[cycle] // the cycle in flight, nil between cycles
}

// done counts a call that returned err.
func (a *countingAPI) done(err error) {
	if c := a.cycle.Load(); c != nil && err != nil {
		c.putOffBy(SideAPI, err)
	}
	switch {
	case err == nil:
		a.ok.Add(1)
	case errors.Is(err, guestapi.ErrRateLimited):
		a.limited.Add(1)
	}
}

func (a *countingAPI) ListTickets(ctx context.Context, opt guestapi.ListOptions) ([]guestapi.Ticket, error) {
	a.n.Add(1)
	r, err := a.API.ListTickets(ctx, opt)
	a.done(err)
	return r, err
}

// ListTicketsRaw lists through the API's rawLister. A call that fails is
// counted done; one that answers is counted done by the caller, once it
// has decoded the answer or found it unchanged (see fetchList).
func (a *countingAPI) ListTicketsRaw(ctx context.Context, opt guestapi.ListOptions) (*guestapi.RawList, error) {
	a.n.Add(1)
	r, err := a.API.(rawLister).ListTicketsRaw(ctx, opt)
	if err != nil {
		a.done(err)
	}
	return r, err
}

func (a *countingAPI) GetTicket(ctx context.Context, id string) (*guestapi.Thread, error) {
	a.n.Add(1)
	r, err := a.API.GetTicket(ctx, id)
	a.done(err)
	return r, err
}

func (a *countingAPI) PostMessage(ctx context.Context, id string, m guestapi.NewMessage, key string) (guestapi.PostMessageResult, error) {
	a.n.Add(1)
	r, err := a.API.PostMessage(ctx, id, m, key)
	a.done(err)
	return r, err
}

func (a *countingAPI) SetStatus(ctx context.Context, id string, s guestapi.Status, key string) (guestapi.SetStatusResult, error) {
	a.n.Add(1)
	r, err := a.API.SetStatus(ctx, id, s, key)
	a.done(err)
	return r, err
}
