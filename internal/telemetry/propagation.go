package telemetry

import (
	gosync "sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketbridge/ticketbridge/sync"
)

// propagationMetrics exports the engine's propagation measurements (see
// sync.Propagation) as the Prometheus histogram
// ticketbridge_propagation_seconds, by direction. The engine counts in
// fixed buckets; this keeps their running totals.
type propagationMetrics struct {
	mu         gosync.Mutex
	toHelpdesk sync.Histogram
	toAPI      sync.Histogram
}

var propagationFamily = histogramFamily(prometheus.HistogramOpts{Name: "ticketbridge_propagation_seconds",
	Help:    "How long messages took to cross, measured by the engine, by direction: to_helpdesk from a guest or staff message's created_at to the helpdesk's confirmation; to_api from the helpdesk event's time to the API's confirmation. A ticket's first read is not measured.",
	Buckets: propagationBuckets()}, "direction")

// propagationBuckets returns the engine's buckets in seconds.
func propagationBuckets() []float64 {
	out := make([]float64, len(sync.PropagationBuckets))
	for i, b := range sync.PropagationBuckets {
		out[i] = b.Seconds()
	}
	return out
}

func newPropagationMetrics() *propagationMetrics { return &propagationMetrics{} }

// add adds one cycle's measurements.
func (p *propagationMetrics) add(m sync.Propagation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.toHelpdesk.Merge(m.ToHelpdesk)
	p.toAPI.Merge(m.ToGuest)
}

// each calls fn with both directions' histograms as they are now.
func (p *propagationMetrics) each(fn func(sample)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range []struct {
		labels []string
		h      *sync.Histogram
	}{{dirLabels[0], &p.toHelpdesk}, {dirLabels[1], &p.toAPI}} {
		fn(histogramSample(d.labels, len(sync.PropagationBuckets), d.h.Counts, d.h.Sum.Seconds()))
	}
}

// dirLabels are the label values of the two directions.
var dirLabels = [2][]string{{dirToHelpdesk}, {dirToAPI}}
