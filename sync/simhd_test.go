package sync_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
)

// The helpdesk side of the simulator: the memory adapter on the run's
// backend, behind a wrapper that decides each call's fate from its
// identity.
var simHDFaults = []simKind{
	{"error", 0.06},         // fails before the work
	{"timeout", 0.02},       // no answer in time, nothing done
	{"rate_limit", 0.02},    // 429 with a short wait, nothing done
	{"put_off", 0.005},      // 429 asking for longer than a cycle may wait
	{"error_after", 0.05},   // the work done, then an error
	{"timeout_after", 0.03}, // the work done, then no answer in time
}

// simLateRate is the share of reads of the helpdesk's changes in which one
// event is not visible yet, as a transaction RT numbered before another
// commits after it: the events after it are read now, the late one in a
// later read (the cursor stays before it, as an adapter that re-reads an
// overlap keeps it).
const simLateRate = 0.2

// simHelpdesk wraps one adapter instance; a crash discards it with the
// engine.
type simHelpdesk struct {
	adapters.Helpdesk
	s *sim
}

// call runs work unless the call's fate says otherwise, and reports
// whether its answer is lost (the caller then returns nothing but err).
func (h simHelpdesk) call(identity string, work func() error) (lost bool, err error) {
	d, crash, dead := h.s.enter(identity)
	if dead {
		h.s.tr.log("%s: dead", d.id)
		return true, errSimCrashed
	}
	kind := ""
	switch {
	case crash != "":
		kind = "crash_" + crash
	case h.s.faulty():
		kind = d.pick(simHDFaults)
	}
	op, _, _ := strings.Cut(strings.TrimPrefix(identity, "hd "), " ")
	switch kind {
	case "crash_before":
		h.s.tr.log("%s: %s", d.id, kind)
		return true, errSimCrashed
	case "error":
		h.s.tr.log("%s: %s", d.id, kind)
		return true, fmt.Errorf("helpdesk %s: simulated error (temporary)", op)
	case "timeout":
		h.s.tr.log("%s: %s", d.id, kind)
		return true, fmt.Errorf("helpdesk %s: %w", op, injectedTimeout{})
	case "rate_limit", "put_off":
		wait := time.Duration(1+d.rnd.IntN(20)) * time.Second
		he := &adapters.HTTPError{Method: http.MethodGet, URL: "https://helpdesk.example/api", StatusCode: http.StatusTooManyRequests,
			RetryAfter: wait, Class: httpretry.Retryable}
		if kind == "put_off" {
			wait = time.Duration(60+d.rnd.IntN(120)) * time.Second
			he.RetryAfter = wait
			he.PutOff = &httpretry.WaitError{Wait: wait, Until: h.s.e.clock.Now().Add(wait), Max: 30 * time.Second}
		}
		h.s.tr.log("%s: %s %s", d.id, kind, wait)
		return true, fmt.Errorf("helpdesk %s: %w", op, he)
	}
	err = work()
	h.s.tr.log("%s: %s -> %s", d.id, kind, errWord(err))
	switch kind {
	case "crash_after":
		return true, errSimCrashed
	case "error_after":
		return true, fmt.Errorf("helpdesk %s: simulated error after the work (temporary)", op)
	case "timeout_after":
		return true, fmt.Errorf("helpdesk %s: %w", op, injectedTimeout{})
	}
	return false, err
}

// errWord is what the trace says of an error: its absence, or that there
// was one (error texts may hold addresses that change from run to run).
func errWord(err error) string {
	if err == nil {
		return "ok"
	}
	return "err"
}

func (h simHelpdesk) EnsureTicket(ctx context.Context, t adapters.Ticket) (ref adapters.Ref, err error) {
	lost, err := h.call("hd EnsureTicket "+t.UpstreamID, func() (err error) {
		ref, err = h.Helpdesk.EnsureTicket(ctx, t)
		h.s.tr.log("  %s is %s", t.UpstreamID, ref)
		return
	})
	if lost {
		return "", err
	}
	return ref, err
}

func (h simHelpdesk) Append(ctx context.Context, ref adapters.Ref, msgs []adapters.Message) (out []adapters.Appended, err error) {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.UpstreamID
	}
	lost, err := h.call("hd Append "+string(ref)+" "+strings.Join(ids, ","), func() (err error) { out, err = h.Helpdesk.Append(ctx, ref, msgs); return })
	if lost {
		return nil, err
	}
	return out, err
}

func (h simHelpdesk) SetStatus(ctx context.Context, ref adapters.Ref, s guestapi.Status) error {
	_, err := h.call("hd SetStatus "+string(ref)+" "+string(s), func() error { return h.Helpdesk.SetStatus(ctx, ref, s) })
	return err
}

// Update forwards to the adapter's Update, under the call's fate.
func (h simHelpdesk) Update(ctx context.Context, ref adapters.Ref, u adapters.FieldUpdate) error {
	_, err := h.call("hd Update "+string(ref)+" "+u.Changed.String(), func() error {
		return h.Helpdesk.(adapters.Updater).Update(ctx, ref, u)
	})
	return err
}

func (h simHelpdesk) Lookup(ctx context.Context, id string) (f adapters.Found, ok bool, err error) {
	lost, err := h.call("hd Lookup "+id, func() (err error) { f, ok, err = h.Helpdesk.Lookup(ctx, id); return })
	if lost {
		return adapters.Found{}, false, err
	}
	return f, ok, err
}

func (h simHelpdesk) MarkSent(ctx context.Context, ref adapters.Ref, eventID, msgID string) error {
	_, err := h.call("hd MarkSent "+string(ref)+" "+eventID+" "+msgID, func() error { return h.Helpdesk.MarkSent(ctx, ref, eventID, msgID) })
	return err
}

// Changes reads the helpdesk's changes. Like the adapters that re-read an
// overlap behind their cursor, it leaves out the events the engine has
// marked sent; in a share of the reads one of the events is not visible
// yet (see simLateRate).
func (h simHelpdesk) Changes(ctx context.Context, cur adapters.Cursor) (evs []adapters.Event, next adapters.Cursor, err error) {
	identity := "hd Changes " + string(cur)
	lost, err := h.call(identity, func() (err error) { evs, next, err = h.Helpdesk.Changes(ctx, cur); return })
	if lost {
		return nil, cur, err
	}
	if err != nil || len(evs) == 0 {
		return evs, next, err
	}
	unsent := evs[:0:0]
	for _, ev := range evs {
		if snap, ok := h.s.e.backend.Ticket(ev.Ref); ok {
			if _, sent := snap.Sent[ev.ID]; sent {
				continue
			}
		}
		unsent = append(unsent, ev)
	}
	evs = unsent
	if len(evs) == 0 || !h.s.faulty() {
		return evs, next, nil
	}
	d := h.s.tr.draw(identity + " late")
	if !d.chance(simLateRate) {
		return evs, next, nil
	}
	i := d.rnd.IntN(len(evs))
	seq, convErr := strconv.Atoi(evs[i].ID)
	if convErr != nil {
		return evs, next, nil
	}
	// The late event and every event after it are read again by the next
	// read, which starts before it.
	h.s.tr.log("%s: event %s late", d.id, evs[i].ID)
	return append(evs[:i:i], evs[i+1:]...), adapters.Cursor(strconv.Itoa(seq - 1)), nil
}
