package sync_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// The simulator's operators: between cycles and at any call, they pause a
// request, resume a paused one, or resync one (sync.Apply), each drawn
// from a generator of its own so that the rest of the activity draws as
// it did before. A paused request must cross nothing once a cycle has
// ended since its pause (one in flight may still carry what it read
// before): what the bridge wrote on each side of it is the same when it
// is resumed. Before the run's end every paused request is resumed, and
// the end check (checkAllDelivered) then finds nothing lost.

// Shares of the rounds of activity in which an operator acts.
const (
	simPauseRate  = 0.12
	simResumeRate = 0.15
	simResyncRate = 0.08
)

type simCommands struct {
	a   *activity
	rnd *rand.Rand
	// paused are the requests paused, each with what the bridge had
	// written of it on both sides at the end of the first cycle after its
	// pause (nil until that cycle ended).
	paused map[string]*bridgeWrites
	counts map[string]int // commands applied, by name
}

// bridgeWrites is what the bridge wrote of one request: in the helpdesk
// (messages mirrored, notes of its own) and upstream (posts, status
// changes through the API).
type bridgeWrites struct{ helpdesk, upstream int }

func (w bridgeWrites) String() string {
	return fmt.Sprintf("%d in the helpdesk, %d upstream", w.helpdesk, w.upstream)
}

func newSimCommands(a *activity, seed uint64) *simCommands {
	return &simCommands{a: a, rnd: rand.New(rand.NewPCG(seed, seed^0xc0ffee)), paused: map[string]*bridgeWrites{}, counts: map[string]int{}}
}

// step is one round of the operators.
func (c *simCommands) step() {
	ids := c.a.ids
	if c.rnd.Float64() < simPauseRate {
		c.apply(tbsync.CommandPause, ids[c.rnd.IntN(len(ids))])
	}
	if c.rnd.Float64() < simResumeRate && len(c.paused) > 0 {
		ps := c.pausedIDs()
		c.apply(tbsync.CommandResume, ps[c.rnd.IntN(len(ps))])
	}
	if c.rnd.Float64() < simResyncRate {
		c.apply(tbsync.CommandResync, ids[c.rnd.IntN(len(ids))])
	}
}

func (c *simCommands) pausedIDs() []string {
	ps := make([]string, 0, len(c.paused))
	for id := range c.paused {
		ps = append(ps, id)
	}
	slices.Sort(ps)
	return ps
}

// apply applies a command; a request not tracked yet, or one in the
// wrong state for it, is refused, as for an operator.
func (c *simCommands) apply(name, id string) {
	e := c.a.e
	if name == tbsync.CommandResume {
		c.checkCrossedNothing(id)
	}
	_, err := tbsync.Apply(context.Background(), e.store, tbsync.Command{Name: name, Ticket: id, Who: "sim"}, e.clock.Now())
	_, paused := c.paused[id]
	switch {
	case errors.Is(err, tbsync.ErrNotActionable) && paused == (name == tbsync.CommandResume):
		// Resuming a request paused, or pausing or resyncing one not.
		e.t.Errorf("%s %s refused, though the request is%s paused as far as the operators know: %v", name, id, map[bool]string{true: "", false: " not"}[paused], err)
		return
	case errors.Is(err, tbsync.ErrNoSuchTicket), errors.Is(err, tbsync.ErrNotActionable):
		c.a.noted("  operator %s %s: refused: %v", name, id, err)
		return
	case err != nil:
		e.t.Fatalf("%s %s: %v", name, id, err)
	}
	c.a.noted("  operator %s %s", name, id)
	c.counts[name]++
	switch name {
	case tbsync.CommandPause:
		c.paused[id] = nil
	case tbsync.CommandResume:
		delete(c.paused, id)
	}
}

// cycleEnded notes, for each request paused before the cycle that just
// ended, what the bridge had written of it: from here on it must not
// change until the request is resumed.
func (c *simCommands) cycleEnded() {
	for _, id := range c.pausedIDs() {
		if c.paused[id] == nil {
			w := c.writes(id)
			c.paused[id] = &w
		}
	}
}

// writes counts what the bridge wrote of request id on both sides.
func (c *simCommands) writes(id string) bridgeWrites {
	e := c.a.e
	var w bridgeWrites
	if refs := e.backend.Find(id); len(refs) > 0 {
		for _, m := range e.backend.Messages(refs[0]) {
			if m.ByBridge || m.UpstreamID != "" {
				w.helpdesk++
			}
		}
	}
	view := e.upstream(id)
	for _, m := range view.Messages {
		if m.External {
			w.upstream++
		}
	}
	for _, op := range view.Operations {
		if op.Source == "api" {
			w.upstream++
		}
	}
	return w
}

// checkCrossedNothing fails the run when the bridge wrote anything of
// paused request id, on either side, since the first cycle after its
// pause ended.
func (c *simCommands) checkCrossedNothing(id string) {
	was, ok := c.paused[id]
	if !ok || was == nil {
		return
	}
	if now := c.writes(id); now != *was {
		c.a.e.t.Errorf("paused request %s crossed: the bridge's writes went from %s to %s", id, was, now)
	}
}

// resumeAll resumes every paused request, as the run's end needs.
func (c *simCommands) resumeAll() {
	for _, id := range c.pausedIDs() {
		c.apply(tbsync.CommandResume, id)
	}
}

func (c *simCommands) String() string {
	return fmt.Sprintf("operators: %d pauses, %d resumes, %d resyncs", c.counts[tbsync.CommandPause], c.counts[tbsync.CommandResume], c.counts[tbsync.CommandResync])
}
