package telemetry

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// A hotel's series are visited family by family (metricsFamilies,
// propagationMetrics.each) and exported two ways:
//
//   - a daemon of one hotel registers them with client_golang as a
//     Collector of const metrics (collectTo);
//   - a daemon of many sends them itself, family by family
//     (fleetExposition): in the text format straight from the samples
//     (textWriter), in the others as client_model's types with the
//     hotel's label (hotelFamily.gather). Through a registry per hotel,
//     wrapped with its hotel label and merged by prometheus.Gatherers, a
//     scrape of 2,000 hotels took 1.8 s of CPU and allocated 300 MB: each
//     series was made, wrapped, relabelled, checked and hashed twice. The
//     series sent are the same, label for label, and in the text format
//     byte for byte (TestFleetExpositionUnchanged).

// family is one metric family a hotel exports.
type family struct {
	name, help string
	kind       dto.MetricType
	labels     []string  // the label names, in the order of a sample's values
	buckets    []float64 // a histogram's upper bounds
	// desc is the family as client_golang describes it, for a hotel's
	// Collector.
	desc *prometheus.Desc
	// withHotel are the label names with "hotel" among them, sorted as
	// an exposition has them, and from, for each, the index of its value
	// in a sample's labels (-1 for the hotel's).
	withHotel []string
	from      []int
}

func newFamily(name, help string, kind dto.MetricType, buckets []float64, labels []string) *family {
	f := &family{name: name, help: help, kind: kind, labels: labels, buckets: buckets,
		desc: prometheus.NewDesc(name, help, labels, nil)}
	f.withHotel = slices.Sorted(slices.Values(append(slices.Clone(labels), hotelLabel)))
	for _, n := range f.withHotel {
		f.from = append(f.from, slices.Index(labels, n)) // -1: the hotel's
	}
	return f
}

// hotelLabel is the label that names a hotel's series in a daemon of many.
const hotelLabel = "hotel"

func counterFamily(o prometheus.CounterOpts, labels ...string) *family {
	return newFamily(o.Name, o.Help, dto.MetricType_COUNTER, nil, labels)
}

func gaugeFamily(o prometheus.GaugeOpts, labels ...string) *family {
	return newFamily(o.Name, o.Help, dto.MetricType_GAUGE, nil, labels)
}

func histogramFamily(o prometheus.HistogramOpts, labels ...string) *family {
	return newFamily(o.Name, o.Help, dto.MetricType_HISTOGRAM, o.Buckets, labels)
}

// sample is one series of a family as it is now: its label values (in the
// family's order) and a counter's or gauge's value, or a histogram's
// cumulative bucket counts, count and sum.
type sample struct {
	labels []string
	value  float64
	cum    []uint64
	count  uint64
	sum    float64
}

// collectTo returns a visitor that sends each sample of f to ch as a
// const metric of client_golang.
func collectTo(ch chan<- prometheus.Metric, f *family) func(sample) {
	return func(s sample) {
		switch f.kind {
		case dto.MetricType_HISTOGRAM:
			buckets := make(map[float64]uint64, len(f.buckets))
			for i, b := range f.buckets {
				buckets[b] = s.cum[i]
			}
			ch <- prometheus.MustNewConstHistogram(f.desc, s.count, s.sum, buckets, s.labels...)
		case dto.MetricType_COUNTER:
			ch <- prometheus.MustNewConstMetric(f.desc, prometheus.CounterValue, s.value, s.labels...)
		default:
			ch <- prometheus.MustNewConstMetric(f.desc, prometheus.GaugeValue, s.value, s.labels...)
		}
	}
}

// hotelSeries is a hotel's series, as a scrape of many hotels reads them.
type hotelSeries struct {
	name string
	m    metrics
	prop *propagationMetrics
}

// hotelFamily is a family of a hotel's series, with how to visit a
// hotel's series of it.
type hotelFamily struct {
	f    *family
	each func(h *hotelSeries, fn func(sample))
}

// hotelFamilies are every family of a hotel's series, in name order.
var hotelFamilies = func() []hotelFamily {
	out := []hotelFamily{{propagationFamily, func(h *hotelSeries, fn func(sample)) { h.prop.each(fn) }}}
	for _, mf := range metricsFamilies {
		each := mf.each
		out = append(out, hotelFamily{mf.f, func(h *hotelSeries, fn func(sample)) { each(h.m, fn) }})
	}
	slices.SortFunc(out, func(a, b hotelFamily) int { return strings.Compare(a.f.name, b.f.name) })
	return out
}()

// gather returns the family of every hotel's series, each series
// labelled with its hotel (hotel[i] the label of hotels[i]), in the
// order of series; nil when no hotel has a series of it.
func (hf hotelFamily) gather(hotels []hotelSeries, hotel []dto.LabelPair) *dto.MetricFamily {
	f := hf.f
	entries := hf.series(hotels, nil)
	if len(entries) == 0 {
		return nil
	}
	mf := &dto.MetricFamily{Name: &f.name, Help: &f.help, Type: f.kind.Enum(), Metric: make([]*dto.Metric, len(entries))}
	for i, e := range entries {
		mf.Metric[i] = newDTOMetric(f, e.s, &hotel[e.hotel])
	}
	return mf
}

// hotelLabels returns the hotel label of each of hotels.
func hotelLabels(hotels []hotelSeries) []dto.LabelPair {
	name := hotelLabel
	out := make([]dto.LabelPair, len(hotels))
	for i := range hotels {
		out[i] = dto.LabelPair{Name: &name, Value: &hotels[i].name}
	}
	return out
}

// dtoMetric holds a series and everything it points to in one allocation.
type dtoMetric struct {
	m      dto.Metric
	pairs  [4]dto.LabelPair
	labels [5]*dto.LabelPair
	value  float64
	c      dto.Counter
	g      dto.Gauge
}

// newDTOMetric returns s as a series of f labelled with hotel.
func newDTOMetric(f *family, s sample, hotel *dto.LabelPair) *dto.Metric {
	d := &dtoMetric{value: s.value}
	if len(f.from) > len(d.labels) {
		panic("telemetry: family " + f.name + " has more labels than a series holds")
	}
	for i, j := range f.from {
		if j < 0 {
			d.labels[i] = hotel
			continue
		}
		d.pairs[i] = dto.LabelPair{Name: &f.withHotel[i], Value: &s.labels[j]}
		d.labels[i] = &d.pairs[i]
	}
	d.m.Label = d.labels[:len(f.from)]
	switch f.kind {
	case dto.MetricType_COUNTER:
		d.c.Value = &d.value
		d.m.Counter = &d.c
	case dto.MetricType_GAUGE:
		d.g.Value = &d.value
		d.m.Gauge = &d.g
	case dto.MetricType_HISTOGRAM:
		h := &dto.Histogram{SampleCount: &s.count, SampleSum: &s.sum, Bucket: make([]*dto.Bucket, len(f.buckets))}
		buckets := make([]dto.Bucket, len(f.buckets))
		for i := range f.buckets {
			buckets[i] = dto.Bucket{CumulativeCount: &s.cum[i], UpperBound: &f.buckets[i]}
			h.Bucket[i] = &buckets[i]
		}
		d.m.Histogram = h
	}
	return &d.m
}
