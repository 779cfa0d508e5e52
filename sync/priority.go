package sync

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// Priority by rule (TICKETBRIDGE_PRIORITY): the helpdesk priority is
// derived from what the request carries, its department and its due date,
// and kept current as the platform's other fields are (see fields.go):
// carryFields sets Fields.Priority from the rule, and the engine compares
// it with the priority last carried, never with the helpdesk's, so a
// priority an agent set by hand stays until the derived one changes.
//
// A due date approaching changes the derived priority with no change on
// the platform, which no list shows. Detecting it costs nothing extra:
// after each read, a ticket whose derived priority will change (a due
// rule's threshold still ahead) is made due at that instant (DuePriority),
// unless its schedule reads it sooner; its read then carries the new
// priority. Quiet cycles in between read and write nothing for it. A
// closed request keeps the priority last carried: a deadline approaching
// means nothing once the work is done.

// DuePriority is the due reason of a ticket read because its derived
// priority changes then (a due rule's threshold passes).
const DuePriority = "priority"

// PriorityRule is TICKETBRIDGE_PRIORITY, parsed once when read by
// [ParsePriorityRule]. The zero PriorityRule is off: the helpdesk's
// priority is left alone.
type PriorityRule struct {
	def   adapters.Priority // "": off
	depts []deptPriority    // in the order written
	dues  []duePriority     // widest first
}

// deptPriority is a dept:CODE=PRIORITY item.
type deptPriority struct {
	dept string
	p    adapters.Priority
}

// duePriority is a due<DURATION=PRIORITY item.
type duePriority struct {
	within time.Duration
	p      adapters.Priority
}

// priorityRank orders the priorities, lowest first; 0 for none.
func priorityRank(p adapters.Priority) int {
	switch p {
	case adapters.PriorityLow:
		return 1
	case adapters.PriorityNormal:
		return 2
	case adapters.PriorityHigh:
		return 3
	case adapters.PriorityUrgent:
		return 4
	}
	return 0
}

// EnvDecode parses s with [ParsePriorityRule]; its errors name the
// variable (go-envconfig does not for a struct).
func (r *PriorityRule) EnvDecode(s string) error {
	v, err := ParsePriorityRule(s)
	if err != nil {
		return fmt.Errorf("TICKETBRIDGE_PRIORITY=%q: %w", s, err)
	}
	*r = v
	return nil
}

// priorityForms says what an item of TICKETBRIDGE_PRIORITY may be.
const priorityForms = "want default=PRIORITY, dept:CODE=PRIORITY or due<DURATION=PRIORITY (such as default=normal,due<2h=high,due<30m=urgent,dept:maintenance=high), or off"

// ParsePriorityRule parses a comma-separated list of items, or off (or
// nothing) for no rule:
//
//   - default=PRIORITY: the priority of every request, unless another item
//     says otherwise. Required when the rule is on.
//   - dept:CODE=PRIORITY: the priority of the requests of department CODE
//     (as the hotel's console names it), in place of the default.
//   - due<DURATION=PRIORITY: a request whose due date is less than
//     DURATION away (a Go duration: 30m, 2h, 1h30m), or past, has at least
//     PRIORITY.
//
// A request's priority is the highest of its department's (or the
// default) and of every due item that applies. PRIORITY is low, normal,
// high or urgent. Case and white space around an item's words are
// ignored, and so are empty items; department codes are compared exactly.
func ParsePriorityRule(s string) (PriorityRule, error) {
	var r PriorityRule
	off, n := false, 0
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		n++
		if strings.EqualFold(item, "off") {
			off = true
			continue
		}
		key, val, ok := strings.Cut(item, "=")
		if !ok {
			return PriorityRule{}, fmt.Errorf("item %q has no '=': %s", item, priorityForms)
		}
		key = strings.TrimSpace(key)
		p := adapters.Priority(strings.ToLower(strings.TrimSpace(val)))
		if priorityRank(p) == 0 {
			return PriorityRule{}, fmt.Errorf("item %q: unknown priority %q: want low, normal, high or urgent", item, strings.TrimSpace(val))
		}
		lower := strings.ToLower(key)
		switch {
		case lower == "default":
			if r.def != "" {
				return PriorityRule{}, fmt.Errorf("names default twice")
			}
			r.def = p
		case strings.HasPrefix(lower, "dept:"):
			dept := strings.TrimSpace(key[len("dept:"):])
			if dept == "" || strings.ContainsAny(dept, " \t\r\n") {
				return PriorityRule{}, fmt.Errorf("item %q: want one department code after dept:, such as dept:maintenance=high", item)
			}
			if slices.ContainsFunc(r.depts, func(d deptPriority) bool { return d.dept == dept }) {
				return PriorityRule{}, fmt.Errorf("names department %q twice", dept)
			}
			r.depts = append(r.depts, deptPriority{dept: dept, p: p})
		case strings.HasPrefix(lower, "due<"):
			text := strings.TrimSpace(key[len("due<"):])
			d, err := time.ParseDuration(text)
			if err != nil || d <= 0 {
				return PriorityRule{}, fmt.Errorf("item %q: %q is not a positive duration: want one such as 30m, 2h or 1h30m", item, text)
			}
			if slices.ContainsFunc(r.dues, func(x duePriority) bool { return x.within == d }) {
				return PriorityRule{}, fmt.Errorf("names due<%s twice", shortDuration(d))
			}
			r.dues = append(r.dues, duePriority{within: d, p: p})
		default:
			return PriorityRule{}, fmt.Errorf("unknown item %q: %s", item, priorityForms)
		}
	}
	switch {
	case off && n > 1:
		return PriorityRule{}, fmt.Errorf("names off with other items: want off alone, or the items without it")
	case n > 0 && !off && r.def == "":
		return PriorityRule{}, fmt.Errorf("names no default: add one, such as default=normal (the priority of the requests no other item sets)")
	}
	slices.SortFunc(r.dues, func(a, b duePriority) int { return cmp.Compare(b.within, a.within) })
	return r, nil
}

// MustPriorityRule parses s with [ParsePriorityRule] and panics on an
// error: for tests and fixed rules.
func MustPriorityRule(s string) PriorityRule {
	r, err := ParsePriorityRule(s)
	if err != nil {
		panic(err)
	}
	return r
}

// On reports whether the rule derives a priority.
func (r PriorityRule) On() bool { return r.def != "" }

// String is the rule as TICKETBRIDGE_PRIORITY would say it, its items in
// a stable order: default, departments as written, due items widest
// first; "off" when off.
func (r PriorityRule) String() string {
	if !r.On() {
		return "off"
	}
	items := []string{"default=" + string(r.def)}
	for _, d := range r.depts {
		items = append(items, "dept:"+d.dept+"="+string(d.p))
	}
	for _, d := range r.dues {
		items = append(items, "due<"+shortDuration(d.within)+"="+string(d.p))
	}
	return strings.Join(items, ",")
}

// shortDuration writes d as a duration is written in the variable: 2h,
// 30m, 1h30m (time.Duration's 2h0m0s without its zero units).
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// of returns the priority of a request of department dept with due date
// due (zero: none) at now; "" when the rule is off.
func (r PriorityRule) of(dept string, due, now time.Time) adapters.Priority {
	if !r.On() {
		return ""
	}
	p := r.def
	for _, d := range r.depts {
		if d.dept == dept {
			p = d.p
			break
		}
	}
	if due.IsZero() {
		return p
	}
	left := due.Sub(now)
	for _, d := range r.dues {
		if left < d.within && priorityRank(d.p) > priorityRank(p) {
			p = d.p
		}
	}
	return p
}

// next returns the first instant after now at which the priority of a
// request of department dept and due date due differs from its priority at
// now; zero when it never will. It is the first whole second after a due
// item's threshold (due minus its duration), so that a store that keeps
// times to the second or the microsecond does not move it before the
// threshold, where the read would find nothing new.
func (r PriorityRule) next(dept string, due, now time.Time) time.Time {
	if !r.On() || due.IsZero() || len(r.dues) == 0 {
		return time.Time{}
	}
	cur := r.of(dept, due, now)
	// Widest first: the thresholds come in order of time.
	for _, d := range r.dues {
		at := due.Add(-d.within).Truncate(time.Second).Add(time.Second)
		if at.After(now) && r.of(dept, due, at) != cur {
			return at
		}
	}
	return time.Time{}
}

// listedPriorityDiffers reports whether the priority the rule derives now
// for listed ticket lt differs from the one carried: planFields then
// wakes the ticket, as for a listed field that differs. A closed request
// keeps the priority carried, and a rule that is off derives none.
func (r PriorityRule) listedPriorityDiffers(lt guestapi.Ticket, carried string, now time.Time) bool {
	if !r.On() || lt.Status.Closed() {
		return false
	}
	return string(r.of(lt.Department, listedDue(lt), now)) != carried
}

// afterPriority makes an open ticket whose derived priority changes before
// its next read (a due item's threshold passes) due at that instant, after
// its read: the read then carries the new priority. The carried
// department and due date are the platform's as this read found them.
func (c *cycle) afterPriority(r *refreshResult) {
	if c.e.up == nil || !r.t.Carried.Known() || guestapi.Status(r.t.UpstreamStatus).Closed() {
		return
	}
	at := c.e.cfg.Priority.next(r.t.Carried.Department, r.t.Carried.Due, c.now)
	if !at.IsZero() && (at.Before(r.t.NextDue) || r.t.NextDue.IsZero()) {
		r.t.NextDue, r.t.DueReason = at, DuePriority
	}
}
