package statuspage

import (
	"fmt"
	"html"
	"html/template"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/sync"
)

// Charts are inline SVG drawn here: no script, no external image. Colours
// come from the stylesheet through class names.

const (
	chartW   = 720
	chartH   = 140
	chartPad = 28
	// minChartSpan is the least time a cycle chart spans.
	minChartSpan = time.Minute
)

// cycleChart draws the cycles that started in [to-span, to]: a bar per
// cycle for its duration (left scale) and a line of its API requests
// (right scale).
func cycleChart(cycles []sync.Report, to time.Time, span time.Duration) template.HTML {
	from := to.Add(-span)
	// A daemon younger than the span draws from a little before its first
	// cycle (at least minChartSpan back), not with every bar squeezed
	// against the right edge.
	var first time.Time
	for _, c := range cycles {
		if !c.Start.Before(from) && !c.Start.After(to) && (first.IsZero() || c.Start.Before(first)) {
			first = c.Start
		}
	}
	if !first.IsZero() {
		if start := first.Add(-to.Sub(first) / 10); start.After(from) {
			from = start
			if least := to.Add(-minChartSpan); least.Before(from) {
				from = least
			}
			span = to.Sub(from)
		}
	}
	var maxDur time.Duration
	maxReq := 1
	var in []sync.Report
	for _, c := range cycles {
		if c.Start.Before(from) || c.Start.After(to) {
			continue
		}
		in = append(in, c)
		maxDur = max(maxDur, c.Duration)
		maxReq = max(maxReq, c.APIRequests)
	}
	maxDur = max(maxDur, time.Millisecond)
	plotW, plotH := float64(chartW-2*chartPad), float64(chartH-2*chartPad)
	x := func(t time.Time) float64 { return chartPad + plotW*float64(t.Sub(from))/float64(span) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="Cycles of the last hour: duration and API requests">`, chartW, chartH)
	fmt.Fprintf(&b, `<rect class="plot" x="%d" y="%d" width="%.0f" height="%.0f"/>`, chartPad, chartPad, plotW, plotH)
	barW := max(2.0, plotW/float64(max(len(in), 60))*0.6)
	var line []string
	for _, c := range in {
		h := plotH * float64(c.Duration) / float64(maxDur)
		cls := "bar"
		if c.Outcome != sync.OutcomeOK {
			cls = "bar " + c.Outcome
		}
		fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s</title></rect>`,
			cls, x(c.Start)-barW/2, chartPad+plotH-h, barW, max(h, 0.5),
			html.EscapeString(fmt.Sprintf("%s: %s in %s, %d API requests", c.Start.Format(time.TimeOnly), c.Outcome, roundDur(c.Duration), c.APIRequests)))
		line = append(line, fmt.Sprintf("%.1f,%.1f", x(c.Start), chartPad+plotH-plotH*float64(c.APIRequests)/float64(maxReq)))
	}
	if len(line) > 1 {
		fmt.Fprintf(&b, `<polyline class="requests" points="%s"/>`, strings.Join(line, " "))
	}
	for _, c := range in {
		fmt.Fprintf(&b, `<circle class="requests" cx="%.1f" cy="%.1f" r="2"/>`, x(c.Start), chartPad+plotH-plotH*float64(c.APIRequests)/float64(maxReq))
	}
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d">%s</text>`, 2, chartPad-8, html.EscapeString("duration, up to "+roundDur(maxDur)))
	fmt.Fprintf(&b, `<text class="axis req" x="%d" y="%d" text-anchor="end">%s</text>`, chartW-2, chartPad-8, html.EscapeString(fmt.Sprintf("API requests, up to %d", maxReq)))
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d">%s</text>`, chartPad, chartH-8, html.EscapeString(from.Format("15:04")))
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d" text-anchor="end">%s</text>`, chartW-chartPad, chartH-8, html.EscapeString(to.Format("15:04")))
	if len(in) == 0 {
		fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d" text-anchor="middle">no cycle in the last hour</text>`, chartW/2, chartH/2)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built from numbers and escaped text only
}

// histChart draws a propagation histogram: a bar per bucket.
func histChart(h sync.Histogram, label string) template.HTML {
	const w, hgt, pad = 360, 110, 18
	n := len(sync.PropagationBuckets) + 1
	var top uint64 = 1
	for _, c := range h.Counts {
		top = max(top, c)
	}
	slot := float64(w) / float64(n)
	plotH := float64(hgt - 2*pad)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="hist" viewBox="0 0 %d %d" role="img" aria-label="%s">`, w, hgt, html.EscapeString(label))
	for i := range n {
		var c uint64
		if i < len(h.Counts) {
			c = h.Counts[i]
		}
		bh := plotH * float64(c) / float64(top)
		fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s: %d</title></rect>`,
			float64(i)*slot+2, pad+plotH-bh, slot-4, max(bh, 0.5), html.EscapeString(bucketLabel(i)), c)
		if i%2 == 0 {
			fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%d" text-anchor="middle">%s</text>`, float64(i)*slot+slot/2, hgt-4, html.EscapeString(bucketLabel(i)))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built from numbers and escaped text only
}

func bucketLabel(i int) string {
	bs := sync.PropagationBuckets
	if i >= len(bs) {
		return ">" + shortDur(bs[len(bs)-1])
	}
	return "≤" + shortDur(bs[i])
}

func shortDur(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

func roundDur(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}
