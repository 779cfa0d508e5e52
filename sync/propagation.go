package sync

import (
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/state"
)

// PropagationBuckets are the upper bounds of the propagation histograms;
// a last, unbounded bucket holds what is slower.
var PropagationBuckets = []time.Duration{
	time.Second, 5 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute,
	30 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour,
}

// Histogram counts durations in PropagationBuckets. The zero value is an
// empty histogram.
type Histogram struct {
	// Counts[i] counts the durations in bucket i (not cumulative);
	// Counts[len(PropagationBuckets)] those above the last bound. Empty
	// when nothing was observed.
	Counts []uint64 `json:"counts,omitempty"`
	// Sum is the total of the durations observed.
	Sum time.Duration `json:"sum,omitempty"`
}

// Observe adds d (a negative d, from clock skew, counts as zero).
func (h *Histogram) Observe(d time.Duration) {
	if len(h.Counts) != len(PropagationBuckets)+1 {
		h.Counts = make([]uint64, len(PropagationBuckets)+1)
	}
	d = max(d, 0)
	i := len(PropagationBuckets)
	for j, b := range PropagationBuckets {
		if d <= b {
			i = j
			break
		}
	}
	h.Counts[i]++
	h.Sum += d
}

// Merge adds the counts of o.
func (h *Histogram) Merge(o Histogram) {
	if len(o.Counts) == 0 {
		return
	}
	if len(h.Counts) != len(PropagationBuckets)+1 {
		h.Counts = make([]uint64, len(PropagationBuckets)+1)
	}
	for i := range min(len(o.Counts), len(h.Counts)) {
		h.Counts[i] += o.Counts[i]
	}
	h.Sum += o.Sum
}

// Count returns how many durations were observed.
func (h Histogram) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Quantile returns the upper bound of the bucket that holds the q-th
// quantile (0 < q <= 1), and false when the histogram is empty. For the
// last, unbounded bucket it returns the last bound and false for exact.
func (h Histogram) Quantile(q float64) (bound time.Duration, ok bool) {
	n := h.Count()
	if n == 0 {
		return 0, false
	}
	rank := uint64(q*float64(n) + 0.999999)
	rank = min(max(rank, 1), n)
	var seen uint64
	for i, c := range h.Counts {
		seen += c
		if seen >= rank {
			if i >= len(PropagationBuckets) {
				return PropagationBuckets[len(PropagationBuckets)-1], false
			}
			return PropagationBuckets[i], true
		}
	}
	return PropagationBuckets[len(PropagationBuckets)-1], false
}

// Propagation is how long messages took to cross in one cycle, measured
// by the engine: guest to helpdesk from the message's created_at to the
// helpdesk's confirmation of the append; agent to guest from the helpdesk
// event's time to the API's confirmation. Messages found on a ticket's
// first read are not measured: they may be a backfill of old ones.
type Propagation struct {
	ToHelpdesk Histogram `json:"to_helpdesk,omitzero"`
	ToGuest    Histogram `json:"to_guest,omitzero"`
}

// IsZero reports whether nothing was measured.
func (p Propagation) IsZero() bool {
	return len(p.ToHelpdesk.Counts) == 0 && len(p.ToGuest.Counts) == 0
}

// observeToHelpdesk records the messages of msgs that app says were newly
// appended to the helpdesk ticket of t, unless this is t's first read.
func (c *cycle) observeToHelpdesk(t state.Ticket, msgs []adapters.Message, app []adapters.Appended) {
	if t.UpstreamStatus == "" || len(app) == 0 {
		return
	}
	created := make(map[string]time.Time, len(msgs))
	for _, m := range msgs {
		created[m.UpstreamID] = m.CreatedAt
	}
	now := c.e.now()
	c.count(func(r *Report) {
		for _, a := range app {
			if at := created[a.UpstreamID]; !a.Existed && !at.IsZero() {
				r.Propagation.ToHelpdesk.Observe(now.Sub(at))
			}
		}
	})
}

// observeToGuest records the entries the API confirmed, out as stored by
// storeSent.
func (c *cycle) observeToGuest(out [][]sendOutcome) {
	now := c.e.now()
	c.count(func(r *Report) {
		for _, os := range out {
			for _, o := range os {
				if o.request && !o.en.CreatedAt.IsZero() {
					r.Propagation.ToGuest.Observe(now.Sub(o.en.CreatedAt))
				}
			}
		}
	})
}
