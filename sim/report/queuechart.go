package report

import (
	"fmt"
	"html"
	"io"
	"strings"
	"time"

	"github.com/phasegang/phasegang/sim"
)

// WriteQueueChart draws each tenant queue's GPUs over the run as an SVG:
// what the queue's gangs held, stacked in queue order as filled areas,
// and its entitlement (Fairness) as a dashed line at the same stacking,
// so a band under its dashed line is a queue that got less than its
// share. Needs a result with tenant queues.
func WriteQueueChart(w io.Writer, r *sim.Result) error {
	if r.Fairness == nil || len(r.Fairness.Samples) == 0 {
		return fmt.Errorf("no tenant queues in %s: nothing to chart", r.Scenario)
	}
	c := newQueueChart(r)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", qcLeft+qcWidth+qcRight, qcTop+qcHeight+qcBottom)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14">%s, %s: GPUs held per tenant queue (areas) and entitled (dashed)</text>`+"\n", qcLeft, html.EscapeString(r.Scenario), r.Policy)
	c.axes(&b)
	c.heldAreas(&b)
	c.entitledLines(&b)
	c.legend(&b)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// The queue chart's geometry, in pixels.
const (
	qcLeft, qcRight, qcTop, qcBottom = 60, 180, 40, 40
	qcWidth, qcHeight                = 900, 320
)

// queueColors are the queues' colours, in queue order.
var queueColors = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7"}

// queueChart is WriteQueueChart's scale: the run's end on the time axis
// and the most GPUs ever held (at least the cluster's) on the other.
type queueChart struct {
	f    *sim.Fairness
	end  time.Duration
	gpus float64
}

func newQueueChart(r *sim.Result) *queueChart {
	f := r.Fairness
	samples := f.Samples
	end := samples[len(samples)-1].At
	if m := r.Metrics.Makespan; m > 0 && m < 1e12 {
		end = max(end, time.Duration(m*float64(time.Second)))
	}
	end = max(end, time.Second)
	gpus := float64(r.GPUs)
	for _, s := range samples {
		sum := 0.0
		for _, h := range s.Held {
			sum += h
		}
		gpus = max(gpus, sum)
	}
	return &queueChart{f: f, end: end, gpus: gpus}
}

func (c *queueChart) x(d time.Duration) float64 {
	return qcLeft + float64(qcWidth)*float64(d)/float64(c.end)
}

func (c *queueChart) y(g float64) float64 { return qcTop + float64(qcHeight)*(1-g/c.gpus) }

// until is when sample i ends: when the next one starts, or the end.
func (c *queueChart) until(i int) time.Duration {
	if i+1 < len(c.f.Samples) {
		return c.f.Samples[i+1].At
	}
	return c.end
}

// axes draws the frame and the time and GPU ticks.
func (c *queueChart) axes(b *strings.Builder) {
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", qcLeft, qcTop, qcWidth, qcHeight)
	ticks, step := ganttTicks(c.end)
	for _, tk := range ticks {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n",
			c.x(tk), qcTop, c.x(tk), qcTop+qcHeight, c.x(tk), qcTop+qcHeight+16, ganttTick(tk, step))
	}
	for _, g := range []float64{0, c.gpus / 2, c.gpus} {
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%g</text>`+"\n", qcLeft-6, c.y(g)+4, g)
	}
}

// heldAreas draws what each queue held: the area between the stack below
// it and the stack up to it, the last queue first.
func (c *queueChart) heldAreas(b *strings.Builder) {
	for q := len(c.f.Queues) - 1; q >= 0; q-- {
		var upper, lower []string
		for i, s := range c.f.Samples {
			to := c.until(i)
			below, upto := stacked(s.Held, q)
			upper = append(upper, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", c.x(s.At), c.y(upto), c.x(to), c.y(upto)))
			lower = append([]string{fmt.Sprintf("%.1f,%.1f %.1f,%.1f", c.x(to), c.y(below), c.x(s.At), c.y(below))}, lower...)
		}
		fmt.Fprintf(b, `<polygon points="%s %s" fill="%s" fill-opacity="0.75"><title>%s held</title></polygon>`+"\n",
			strings.Join(upper, " "), strings.Join(lower, " "), queueColors[q%len(queueColors)], html.EscapeString(c.f.Queues[q].Queue))
	}
}

// entitledLines draws each queue's entitlement, dashed, at the same
// stacking as the held areas.
func (c *queueChart) entitledLines(b *strings.Builder) {
	for q := range len(c.f.Queues) {
		var line []string
		for i, s := range c.f.Samples {
			to := c.until(i)
			_, upto := stacked(s.Entitled, q)
			line = append(line, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", c.x(s.At), c.y(upto), c.x(to), c.y(upto)))
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5" stroke-dasharray="5,3"><title>%s entitled</title></polyline>`+"\n",
			strings.Join(line, " "), darker(queueColors[q%len(queueColors)]), html.EscapeString(c.f.Queues[q].Queue))
	}
}

// legend lists the queues at the right, each with its share of its
// entitlement and the run's Jain index.
func (c *queueChart) legend(b *strings.Builder) {
	for q, m := range c.f.Queues {
		ly := qcTop + 10 + 36*q
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="14" height="14" fill="%s" fill-opacity="0.75"/><text x="%d" y="%d">%s</text>`+"\n",
			qcLeft+qcWidth+12, ly, queueColors[q%len(queueColors)], qcLeft+qcWidth+32, ly+12, html.EscapeString(m.Queue))
		fmt.Fprintf(b, `<text x="%d" y="%d" fill="#555">share %s, Jain %.3f</text>`+"\n",
			qcLeft+qcWidth+32, ly+26, percent(m.Share), c.f.Jain)
	}
}

// stacked is the sum of v below index q and up to it.
func stacked(v []float64, q int) (below, upto float64) {
	for i := range q {
		below += v[i]
	}
	return below, below + v[q]
}

// darker halves a #rrggbb colour's channels (the entitlement line's).
func darker(hex string) string {
	var r, g, b int
	fmt.Sscanf(hex, "#%02x%02x%02x", &r, &g, &b)
	return fmt.Sprintf("#%02x%02x%02x", r/2, g/2, b/2)
}
