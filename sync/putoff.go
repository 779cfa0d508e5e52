package sync

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
)

// The two sides a cycle calls, as [PutOff.Side] names them.
const (
	SideAPI      = "api"      // the Guest Requests API
	SideHelpdesk = "helpdesk" // the helpdesk, through the adapter
)

// PutOff is a side the engine makes no call to until Until: it asked for
// a wait (a Retry-After, or a 429's wait longer than the schedule's
// interval) longer than a call may sit out, which is the shorter of the
// schedule's interval and httpretry.DefaultMaxWait. The cycle that met
// it stopped calling that side, and the cycles that start before Until
// skip the phases that call it.
type PutOff struct {
	Side  string    `json:"side"`
	Until time.Time `json:"until"`
	// Reason is the answer that asked for the wait.
	Reason string `json:"reason,omitempty"`
}

func (p PutOff) String() string {
	return fmt.Sprintf("%s put off until %s", p.Side, p.Until.Local().Format(time.DateTime))
}

// phaseSides names the sides each phase calls: discover lists the API,
// collect reads the helpdesk, refresh reads the API and writes the
// helpdesk, send writes the API and marks the helpdesk's events sent.
var phaseSides = map[string][]string{
	"discover": {SideAPI},
	"collect":  {SideHelpdesk},
	"refresh":  {SideAPI, SideHelpdesk},
	"send":     {SideAPI, SideHelpdesk},
}

// errPutOff is the cause of a cycle's context ended by a put-off.
var errPutOff = errors.New("a side asked for a wait longer than the cycle may sit out")

// putOffWait returns the wait of err when a call was put off (see
// httpretry.WaitError): for the helpdesk only when the adapter's
// HTTPError carries it, so that an API error met in a phase that calls
// both sides is not taken for the helpdesk's.
func putOffWait(side string, err error) (*httpretry.WaitError, bool) {
	var we *httpretry.WaitError
	if side == SideHelpdesk {
		var he *adapters.HTTPError
		if !errors.As(err, &he) || he.PutOff == nil {
			return nil, false
		}
		return he.PutOff, true
	}
	if errors.As(err, &we) {
		return we, true
	}
	return nil, false
}

// putOffBy puts side off when err says it asked for too long a wait; it
// reports whether it did.
func (c *cycle) putOffBy(side string, err error) bool {
	we, ok := putOffWait(side, err)
	if !ok {
		return false
	}
	c.putOff(side, we.Until, err)
	return true
}

// putOff records that side is put off until until, and ends the cycle:
// it makes no further call (to either side: the next cycle calls the
// other one), and is no failure.
func (c *cycle) putOff(side string, until time.Time, err error) {
	c.mu.Lock()
	i := slices.IndexFunc(c.rep.PutOff, func(p PutOff) bool { return p.Side == side })
	switch {
	case i < 0:
		c.rep.PutOff = append(c.rep.PutOff, PutOff{Side: side, Until: until, Reason: err.Error()})
	case until.After(c.rep.PutOff[i].Until):
		c.rep.PutOff[i].Until, c.rep.PutOff[i].Reason = until, err.Error()
	}
	c.mu.Unlock()
	c.cancel(errPutOff)
}

// skips reports whether the phase calls a side put off at the cycle's
// start.
func (c *cycle) skips(phase string) bool {
	for _, side := range phaseSides[phase] {
		if c.e.putOff[side].Until.After(c.now) {
			return true
		}
	}
	return false
}
