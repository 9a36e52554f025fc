package policysim

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/paygate/paygate/retry"
)

// classColours colour each attempt by its class.
var classColours = map[retry.Class]string{
	retry.ClassSuccess:        "#54a24b",
	retry.ClassDecline:        "#b279a2",
	retry.ClassNotSent:        "#9d9d9d",
	retry.ClassRetry:          "#f58518",
	retry.ClassRetryAfter:     "#eeca3b",
	retry.ClassBusy:           "#9d755d",
	retry.ClassOutcomeUnknown: "#e45756",
	retry.ClassUnknownFinal:   "#ff9da6",
	retry.ClassStoredResult:   "#d67195",
	retry.ClassTerminal:       "#5a5a5a",
}

// WriteSVG draws the operation's attempts on its timeline, one row each: the
// attempt's timeout window outlined, the attempt itself filled in its
// class's colour, the wait before the next attempt dashed, and the deadline
// and the stop marked.
func (t *Timeline) WriteSVG(w io.Writer) error {
	rep := t.Report
	n := len(rep.Attempts)
	rowHeight := 34.0
	if n > 10 {
		rowHeight = max(12, 340/float64(n))
	}
	const width = 960
	top := 112.0
	plotHeight := rowHeight * float64(max(n, 1))
	height := int(top + plotHeight + 80)
	c := newCanvas(width, height)

	end := max(rep.End.Sub(rep.Start), rep.Deadline.Sub(rep.Start))
	for _, rec := range rep.Attempts {
		end = max(end, rec.StartedAt.Add(rec.Timeout).Sub(rep.Start))
	}
	p := plot{left: 60, top: top, width: width - 60 - 230, height: plotHeight, yMax: 1}
	p.xMax = niceCeil(float64(end.Milliseconds()), 10)

	title := "One operation's attempts"
	if d := t.File.Description; d != "" && len(d) <= 90 {
		title = d
	}
	c.title(width, title, fmt.Sprintf("result %s, stopped: %s after %d attempt%s; seed %d",
		t.Result(), rep.Stop, n, plural(n), t.Seed))
	p.axes(c, "time since the operation's start (ms)", "")

	at := func(tm time.Time) float64 { return p.x(float64(tm.Sub(rep.Start)) / float64(time.Millisecond)) }
	seen := map[retry.Class]bool{}
	var legend []legendItem
	for i, rec := range rep.Attempts {
		y := top + rowHeight*float64(i)
		barTop, barHeight := y+rowHeight*0.2, rowHeight*0.6
		start := at(rec.StartedAt)
		c.rect(start, barTop, at(rec.StartedAt.Add(rec.Timeout))-start, barHeight,
			`fill="none" stroke="#999999" stroke-dasharray="3 2"`)
		colour := classColours[rec.Class]
		if colour == "" {
			colour = "#000000"
		}
		c.rect(start, barTop, max(at(rec.StartedAt.Add(rec.Duration))-start, 2), barHeight, `fill="`+colour+`"`)
		if !seen[rec.Class] {
			seen[rec.Class] = true
			legend = append(legend, legendItem{string(rec.Class), `fill="` + colour + `"`})
		}
		label := "#" + strconv.Itoa(rec.N) + " "
		if rec.HTTPStatus != 0 {
			label += strconv.Itoa(rec.HTTPStatus) + " "
		}
		label += string(rec.Class)
		if rec.ProcessorCode != "" {
			label += " (" + rec.ProcessorCode + ")"
		}
		if i+1 < n {
			// The wait before the next attempt.
			ended := rec.StartedAt.Add(rec.Duration)
			mid := barTop + barHeight/2
			c.line(at(ended), mid, at(rep.Attempts[i+1].StartedAt), mid, `stroke="#333333" stroke-dasharray="4 3"`)
			label += fmt.Sprintf(", wait %d ms", rec.Delay.Milliseconds())
		}
		c.text(p.left+p.width+10, barTop+barHeight/2+4, "start", label, `font-size="11"`)
	}

	deadline := at(rep.Deadline)
	c.line(deadline, top-8, deadline, top+plotHeight, `stroke="#b22222" stroke-width="2" stroke-dasharray="6 4"`)
	c.text(deadline, top-12, "middle", "deadline", `fill="#b22222"`)
	stop := at(rep.End)
	c.line(stop, top-24, stop, top+plotHeight, `stroke="#333333" stroke-width="1.5"`)
	c.text(stop, top-28, "middle", fmt.Sprintf("stop: %s at %d ms", rep.Stop, rep.End.Sub(rep.Start).Milliseconds()), `font-size="11"`)

	legend = append(legend,
		legendItem{"timeout window", `fill="none" stroke="#999999" stroke-dasharray="3 2"`},
		legendItem{"wait", `fill="none" stroke="#333333" stroke-dasharray="4 3"`})
	c.legend(width-20, 64, legend)
	return c.writeTo(w)
}
