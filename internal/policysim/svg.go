package policysim

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// canvas writes an SVG document by hand: rectangles, lines and text, with
// coordinates rounded to 1/10 pixel so the same picture is the same bytes.
type canvas struct {
	b strings.Builder
}

func newCanvas(width, height int) *canvas {
	c := &canvas{}
	fmt.Fprintf(&c.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&c.b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	return c
}

// num formats a coordinate.
func num(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		f = 0
	}
	s := strconv.FormatFloat(f, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	if s == "-0" {
		s = "0"
	}
	return s
}

func (c *canvas) rect(x, y, w, h float64, attrs string) {
	fmt.Fprintf(&c.b, `<rect x="%s" y="%s" width="%s" height="%s" %s/>`+"\n", num(x), num(y), num(max(w, 0)), num(max(h, 0)), attrs)
}

func (c *canvas) line(x1, y1, x2, y2 float64, attrs string) {
	fmt.Fprintf(&c.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" %s/>`+"\n", num(x1), num(y1), num(x2), num(y2), attrs)
}

// text writes s at (x, y); anchor is start, middle or end.
func (c *canvas) text(x, y float64, anchor, s, attrs string) {
	fmt.Fprintf(&c.b, `<text x="%s" y="%s" text-anchor="%s" %s>%s</text>`+"\n", num(x), num(y), anchor, attrs, html.EscapeString(s))
}

// title gives the picture a title and a subtitle.
func (c *canvas) title(width float64, title, subtitle string) {
	c.text(width/2, 22, "middle", title, `font-size="15" font-weight="bold"`)
	if subtitle != "" {
		c.text(width/2, 40, "middle", subtitle, `font-size="11" fill="#444444"`)
	}
}

// legendItem is one swatch of a legend.
type legendItem struct {
	label string
	attrs string // the swatch's fill and stroke
}

// legend writes the items in a row ending at x, at height y.
func (c *canvas) legend(x, y float64, items []legendItem) {
	// Estimate each label's width: about 7 pixels a character at 12 px.
	total := 0.0
	for _, it := range items {
		total += 22 + 7*float64(len([]rune(it.label))) + 14
	}
	at := x - total
	for _, it := range items {
		c.rect(at, y-10, 14, 12, it.attrs)
		c.text(at+20, y, "start", it.label, "")
		at += 22 + 7*float64(len([]rune(it.label))) + 14
	}
}

func (c *canvas) writeTo(w io.Writer) error {
	c.b.WriteString("</svg>\n")
	_, err := io.WriteString(w, c.b.String())
	return err
}

// plot maps data coordinates onto a rectangle of the canvas.
type plot struct {
	left, top, width, height float64 // the plotting area, in pixels
	xMax, yMax               float64 // the data ranges: [0, xMax] and [0, yMax]
}

func (p plot) x(v float64) float64 { return p.left + v/p.xMax*p.width }
func (p plot) y(v float64) float64 { return p.top + p.height - v/p.yMax*p.height }

// axes draws both axes with ticks, grid lines and labels; the y axis only
// when yLabel is not empty.
func (p plot) axes(c *canvas, xLabel, yLabel string) {
	grid := `stroke="#e0e0e0" stroke-width="1"`
	axis := `stroke="#333333" stroke-width="1"`
	xStep := niceStep(p.xMax, 10)
	for i := 0; float64(i)*xStep <= p.xMax*(1+1e-9); i++ {
		v := float64(i) * xStep
		x := p.x(v)
		c.line(x, p.top, x, p.top+p.height, grid)
		c.line(x, p.top+p.height, x, p.top+p.height+5, axis)
		c.text(x, p.top+p.height+18, "middle", fmtTick(v, xStep), "")
	}
	c.line(p.left, p.top+p.height, p.left+p.width, p.top+p.height, axis)
	c.text(p.left+p.width/2, p.top+p.height+40, "middle", xLabel, `font-size="13"`)
	if yLabel == "" {
		return
	}
	yStep := niceStep(p.yMax, 6)
	for i := 0; float64(i)*yStep <= p.yMax*(1+1e-9); i++ {
		v := float64(i) * yStep
		y := p.y(v)
		c.line(p.left, y, p.left+p.width, y, grid)
		c.line(p.left-5, y, p.left, y, axis)
		c.text(p.left-8, y+4, "end", fmtTick(v, yStep), "")
	}
	c.line(p.left, p.top, p.left, p.top+p.height, axis)
	cx, cy := p.left-50, p.top+p.height/2
	c.text(cx, cy, "middle", yLabel, fmt.Sprintf(`font-size="13" transform="rotate(-90 %s %s)"`, num(cx), num(cy)))
}

// niceStep returns a tick step of 1, 2 or 5 times a power of ten that
// divides [0, span] into at most about ticks intervals.
func niceStep(span float64, ticks int) float64 {
	if !(span > 0) || math.IsInf(span, 0) {
		return 1
	}
	raw := span / float64(ticks)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// niceCeil returns the smallest multiple of a nice step not below v.
func niceCeil(v float64, ticks int) float64 {
	if !(v > 0) {
		return 1
	}
	step := niceStep(v, ticks)
	return math.Ceil(v/step-1e-9) * step
}

// fmtTick formats a tick's value with as many decimals as its step needs.
func fmtTick(v, step float64) string {
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	return strconv.FormatFloat(v, 'f', decimals, 64)
}
