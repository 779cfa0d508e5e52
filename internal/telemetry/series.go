package telemetry

import (
	"math"
	"slices"
	gosync "sync"
	"sync/atomic"
)

// The series of a hotel are kept as plain numbers and turned into
// Prometheus metrics only when scraped (see exposition). A daemon of
// thousands of hotels has every hotel's: client_golang's own counters,
// gauges and histograms, with their descriptions and label pairs, took
// about 27 KB a hotel, a quarter of a quiet hotel's heap; these take a
// few hundred bytes.

// value is a counter or a gauge: a float64 updated atomically.
type value struct{ bits atomic.Uint64 }

// Add adds v.
func (c *value) Add(v float64) {
	for {
		old := c.bits.Load()
		if c.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Inc adds one.
func (c *value) Inc() { c.Add(1) }

// Set sets the value to v.
func (c *value) Set(v float64) { c.bits.Store(math.Float64bits(v)) }

func (c *value) get() float64 { return math.Float64frombits(c.bits.Load()) }

// histogram counts observations in fixed buckets.
type histogram struct {
	bounds []float64 // upper bounds, shared by every histogram of its family

	mu     gosync.Mutex
	counts []uint64 // counts[i]: observations in bucket i, not cumulative; the last is +Inf
	sum    float64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

// Observe counts v.
func (h *histogram) Observe(v float64) {
	i, _ := slices.BinarySearch(h.bounds, v) // the first bound >= v: buckets are upper-inclusive
	h.mu.Lock()
	h.counts[i]++
	h.sum += v
	h.mu.Unlock()
}

// sample returns h as it is now, with the label values labels.
func (h *histogram) sample(labels []string) sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	return histogramSample(labels, len(h.bounds), h.counts, h.sum)
}

// histogramSample returns the sample of a histogram of n bounds whose
// buckets counted counts (not cumulative; those past the last bound, and
// any missing, count too or as none) and whose observations sum to sum.
func histogramSample(labels []string, n int, counts []uint64, sum float64) sample {
	s := sample{labels: labels, cum: make([]uint64, n), sum: sum}
	for i, c := range counts {
		s.count += c
		if i < n {
			s.cum[i] = s.count
		}
	}
	for i := len(counts); i < n; i++ {
		s.cum[i] = s.count
	}
	return s
}

// vec is a family's series by their label values, made on first use.
type vec[T any] struct {
	newCell func() *T

	mu     gosync.Mutex
	labels [][]string
	cells  []*T
}

func newVec[T any](newCell func() *T) *vec[T] { return &vec[T]{newCell: newCell} }

// WithLabelValues returns the series of the label values vals, making it
// when there is none yet.
func (v *vec[T]) WithLabelValues(vals ...string) *T {
	v.mu.Lock()
	defer v.mu.Unlock()
	for i, l := range v.labels {
		if slices.Equal(l, vals) {
			return v.cells[i]
		}
	}
	c := v.newCell()
	v.labels = append(v.labels, slices.Clone(vals))
	v.cells = append(v.cells, c)
	return c
}

// Reset drops every series.
func (v *vec[T]) Reset() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.labels, v.cells = nil, nil
}

// each calls fn with each series and its label values, in the order made.
func (v *vec[T]) each(fn func(labels []string, c *T)) {
	v.mu.Lock()
	labels, cells := slices.Clone(v.labels), slices.Clone(v.cells)
	v.mu.Unlock()
	for i, c := range cells {
		fn(labels[i], c)
	}
}

func newValue() *value { return new(value) }
