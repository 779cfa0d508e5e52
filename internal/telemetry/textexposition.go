package telemetry

import (
	"bufio"
	"math"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// textWriter writes the families of the hotels' series in the text format
// (0.0.4), which is what Prometheus asks a daemon for, straight from their
// samples, with the hotel's label (hotel) or without.
// expfmt.MetricFamilyToText writes the same bytes from the families
// hotelFamily.gather builds (TestFleetExpositionUnchanged holds the two to
// each other); building them was nearly all of a scrape's
// allocations: 95 MB a scrape of 2,000 hotels, to be collected.
type textWriter struct {
	w       *bufio.Writer
	hotel   bool        // the series carry their hotel's label
	num     []byte      // a number being formatted
	entries []textEntry // the series of the family being written
}

// textEntry is a series of a family: a hotel's sample.
type textEntry struct {
	hotel int
	s     sample
}

// series returns every hotel's series of family hf, appended to buf[:0],
// in the order a registry gives them: by their label values, label by
// label in the order of lay.
func (hf hotelFamily) series(hotels []hotelSeries, lay *layout, buf []textEntry) []textEntry {
	out, hotel := buf[:0], 0
	add := func(s sample) { out = append(out, textEntry{hotel, s}) }
	for i := range hotels {
		hotel = i
		hf.each(&hotels[i], add)
	}
	slices.SortFunc(out, func(a, b textEntry) int {
		for k := range lay.from {
			if c := strings.Compare(lay.label(&a, k, hotels), lay.label(&b, k, hotels)); c != 0 {
				return c
			}
		}
		return 0
	})
	return out
}

// label returns the value of the k-th label of lay of a series.
func (lay *layout) label(e *textEntry, k int, hotels []hotelSeries) string {
	if j := lay.from[k]; j >= 0 {
		return e.s.labels[j]
	}
	return hotels[e.hotel].name
}

// family writes the family of every hotel's series, as
// expfmt.MetricFamilyToText writes hf.gather's, or nothing when no hotel
// has a series of it. It returns the writer's error.
func (tw *textWriter) family(hf hotelFamily, hotels []hotelSeries) error {
	f := hf.f
	lay := f.layout(tw.hotel)
	tw.entries = hf.series(hotels, lay, tw.entries)
	if len(tw.entries) == 0 {
		return nil
	}
	w := tw.w
	w.WriteString("# HELP ")
	w.WriteString(f.name)
	w.WriteByte(' ')
	helpEscaper.WriteString(w, f.help)
	w.WriteString("\n# TYPE ")
	w.WriteString(f.name)
	switch f.kind {
	case dto.MetricType_COUNTER:
		w.WriteString(" counter\n")
	case dto.MetricType_GAUGE:
		w.WriteString(" gauge\n")
	default:
		w.WriteString(" histogram\n")
	}
	for i := range tw.entries {
		e := &tw.entries[i]
		series := func(suffix string, le float64, withLE bool, v float64) {
			w.WriteString(f.name)
			w.WriteString(suffix)
			sep := byte('{')
			for k, name := range lay.names {
				w.WriteByte(sep)
				sep = ','
				w.WriteString(name)
				w.WriteString(`="`)
				if v := lay.label(e, k, hotels); strings.ContainsAny(v, "\\\n\"") {
					valueEscaper.WriteString(w, v)
				} else {
					w.WriteString(v)
				}
				w.WriteByte('"')
			}
			if withLE {
				w.WriteByte(sep)
				sep = ','
				w.WriteString(`le="`)
				tw.float(le)
				w.WriteByte('"')
			}
			if sep == '{' {
				w.WriteByte(' ') // no label
			} else {
				w.WriteString("} ")
			}
			tw.float(v)
			w.WriteByte('\n')
		}
		if f.kind != dto.MetricType_HISTOGRAM {
			series("", 0, false, e.s.value)
			continue
		}
		for b, le := range f.buckets {
			series("_bucket", le, true, float64(e.s.cum[b]))
		}
		series("_bucket", math.Inf(+1), true, float64(e.s.count))
		series("_sum", 0, false, e.s.sum)
		series("_count", 0, false, float64(e.s.count))
	}
	_, err := w.Write(nil) // the first error of the writes above, if any
	return err
}

// float writes v as the text format has it (expfmt's writeFloat).
func (tw *textWriter) float(v float64) {
	switch {
	case v == 1:
		tw.w.WriteByte('1')
	case v == 0:
		tw.w.WriteByte('0')
	case v == -1:
		tw.w.WriteString("-1")
	case math.IsNaN(v):
		tw.w.WriteString("NaN")
	case math.IsInf(v, +1):
		tw.w.WriteString("+Inf")
	case math.IsInf(v, -1):
		tw.w.WriteString("-Inf")
	default:
		tw.num = strconv.AppendFloat(tw.num[:0], v, 'g', -1, 64)
		tw.w.Write(tw.num)
	}
}

// The text format's escapes: of a HELP text, and of a label's value.
var (
	helpEscaper  = strings.NewReplacer("\\", `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer("\\", `\\`, "\n", `\n`, "\"", `\"`)
)
