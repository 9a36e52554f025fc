package policysim

import (
	"fmt"
	"io"
	"time"
)

// Colours of the charts.
const (
	colourOriginals = "#4c78a8"
	colourRetries   = "#f58518"
	colourOutage    = "#e45756"
)

// maxBars bounds the bars of a population chart: longer simulations draw
// one bar per several seconds, at their mean per second.
const maxBars = 300

// bin is a span of simulated seconds and its mean attempts per second.
type bin struct {
	from, seconds      int
	originals, retries float64
}

// bins groups per-second counts into at most limit spans of equal length.
func bins(perSecond []Second, limit int) (size int, out []bin) {
	size = max(1, (len(perSecond)+limit-1)/limit)
	for from := 0; from < len(perSecond); from += size {
		b := bin{from: from, seconds: size}
		for _, s := range perSecond[from:min(from+size, len(perSecond))] {
			b.originals += float64(s.Originals)
			b.retries += float64(s.Retries)
		}
		b.originals /= float64(size)
		b.retries /= float64(size)
		out = append(out, b)
	}
	return size, out
}

// WriteSVG draws attempts per second over time as stacked bars, originals
// below and retries above, with the outage window shaded.
func (s *Summary) WriteSVG(w io.Writer) error {
	const width, height = 960, 460
	c := newCanvas(width, height)
	size, bars := bins(s.PerSecond, maxBars)
	p := plot{left: 80, top: 80, width: width - 80 - 30, height: height - 80 - 70}
	p.xMax = float64(max(len(bars)*size, 1))
	peak := 0.0
	for _, b := range bars {
		peak = max(peak, b.originals+b.retries)
	}
	p.yMax = niceCeil(peak*1.05, 6) // headroom above the highest bar

	title := "Attempts per second"
	if d := s.File.Description; d != "" && len(d) <= 90 {
		title = d
	}
	c.title(width, title, fmt.Sprintf("%d operations, %d attempts (%.4f per operation), %d succeeded, %d stopped by the budget; seed %d",
		s.Operations, s.Attempts, s.Amplification(), s.Succeeded, s.RetriesPreventedByBudget, s.Seed))

	legend := []legendItem{
		{"originals", `fill="` + colourOriginals + `"`},
		{"retries", `fill="` + colourRetries + `"`},
	}
	if o := s.File.Population.Outage; o != nil && float64(o.From)/float64(time.Second) < p.xMax {
		from := float64(o.From) / float64(time.Second)
		to := min(float64(o.To)/float64(time.Second), p.xMax)
		c.rect(p.x(from), p.top, p.x(to)-p.x(from), p.height, `fill="`+colourOutage+`" fill-opacity="0.15"`)
		c.text(p.x(from)+4, p.top+14, "start", fmt.Sprintf("outage: every answer %d", o.Status), `fill="#b22222"`)
		legend = append(legend, legendItem{fmt.Sprintf("outage (%d)", o.Status), `fill="` + colourOutage + `" fill-opacity="0.15" stroke="` + colourOutage + `"`})
	}
	yLabel := "attempts per second"
	xLabel := "time since the first arrival (s)"
	if size > 1 {
		yLabel = fmt.Sprintf("attempts per second (mean over %d s)", size)
	}
	p.axes(c, xLabel, yLabel)

	barWidth := p.x(float64(size)) - p.x(0)
	gap := 0.0
	if barWidth > 4 {
		gap = 1
	}
	for _, b := range bars {
		x := p.x(float64(b.from))
		if b.originals > 0 {
			c.rect(x+gap/2, p.y(b.originals), barWidth-gap, p.y(0)-p.y(b.originals), `fill="`+colourOriginals+`"`)
		}
		if b.retries > 0 {
			top := b.originals + b.retries
			c.rect(x+gap/2, p.y(top), barWidth-gap, p.y(b.originals)-p.y(top), `fill="`+colourRetries+`"`)
		}
	}
	c.legend(width-30, 62, legend)
	return c.writeTo(w)
}
