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
	const (
		left, right, top, bottom = 60, 180, 40, 40
		width, height            = 900, 320
	)
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
	x := func(d time.Duration) float64 { return left + float64(width)*float64(d)/float64(end) }
	y := func(g float64) float64 { return top + float64(height)*(1-g/gpus) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", left+width+right, top+height+bottom)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14">%s, %s: GPUs held per tenant queue (areas) and entitled (dashed)</text>`+"\n", left, html.EscapeString(r.Scenario), r.Policy)
	// Axes and ticks.
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", left, top, width, height)
	ticks, step := ganttTicks(end)
	for _, tk := range ticks {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n",
			x(tk), top, x(tk), top+height, x(tk), top+height+16, ganttTick(tk, step))
	}
	for _, g := range []float64{0, gpus / 2, gpus} {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%g</text>`+"\n", left-6, y(g)+4, g)
	}
	colors := []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7"}
	n := len(f.Queues)
	for q := n - 1; q >= 0; q-- {
		// The area between the stack below q and the stack up to q.
		var upper, lower []string
		for i, s := range samples {
			to := end
			if i+1 < len(samples) {
				to = samples[i+1].At
			}
			below, upto := stacked(s.Held, q)
			upper = append(upper, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x(s.At), y(upto), x(to), y(upto)))
			lower = append([]string{fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x(to), y(below), x(s.At), y(below))}, lower...)
		}
		c := colors[q%len(colors)]
		fmt.Fprintf(&b, `<polygon points="%s %s" fill="%s" fill-opacity="0.75"><title>%s held</title></polygon>`+"\n",
			strings.Join(upper, " "), strings.Join(lower, " "), c, html.EscapeString(f.Queues[q].Queue))
	}
	for q := range n {
		var line []string
		for i, s := range samples {
			to := end
			if i+1 < len(samples) {
				to = samples[i+1].At
			}
			_, upto := stacked(s.Entitled, q)
			line = append(line, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x(s.At), y(upto), x(to), y(upto)))
		}
		c := colors[q%len(colors)]
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5" stroke-dasharray="5,3"><title>%s entitled</title></polyline>`+"\n",
			strings.Join(line, " "), darker(c), html.EscapeString(f.Queues[q].Queue))
	}
	// Legend.
	for q, m := range f.Queues {
		ly := top + 10 + 36*q
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="14" fill="%s" fill-opacity="0.75"/><text x="%d" y="%d">%s</text>`+"\n",
			left+width+12, ly, colors[q%len(colors)], left+width+32, ly+12, html.EscapeString(m.Queue))
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">share %s, Jain %.3f</text>`+"\n",
			left+width+32, ly+26, percent(m.Share), f.Jain)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
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
