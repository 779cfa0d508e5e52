package telemetry

import (
	gosync "sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketbridge/ticketbridge/sync"
)

// propagationMetrics exports the engine's propagation measurements (see
// sync.Propagation) as the Prometheus histogram
// ticketbridge_propagation_seconds, by direction. The engine counts in
// fixed buckets; this collector keeps their running totals.
type propagationMetrics struct {
	desc *prometheus.Desc

	mu         gosync.Mutex
	toHelpdesk sync.Histogram
	toAPI      sync.Histogram
}

func newPropagationMetrics() *propagationMetrics {
	return &propagationMetrics{desc: prometheus.NewDesc("ticketbridge_propagation_seconds",
		"How long messages took to cross, measured by the engine, by direction: to_helpdesk from a guest or staff message's created_at to the helpdesk's confirmation; to_api from the helpdesk event's time to the API's confirmation. A ticket's first read is not measured.",
		[]string{"direction"}, nil)}
}

// add adds one cycle's measurements.
func (p *propagationMetrics) add(m sync.Propagation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.toHelpdesk.Merge(m.ToHelpdesk)
	p.toAPI.Merge(m.ToGuest)
}

func (p *propagationMetrics) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }

func (p *propagationMetrics) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range []struct {
		label string
		h     sync.Histogram
	}{{dirToHelpdesk, p.toHelpdesk}, {dirToAPI, p.toAPI}} {
		buckets := make(map[float64]uint64, len(sync.PropagationBuckets))
		var cum uint64
		for i, b := range sync.PropagationBuckets {
			if i < len(d.h.Counts) {
				cum += d.h.Counts[i]
			}
			buckets[b.Seconds()] = cum
		}
		ch <- prometheus.MustNewConstHistogram(p.desc, d.h.Count(), d.h.Sum.Seconds(), buckets, d.label)
	}
}
