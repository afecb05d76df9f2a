package report

import (
	"bufio"
	"cmp"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/phasegang/phasegang/sim"
)

// Gantt chart geometry.
const (
	ganttPlotW     = 1200 // pixels of virtual time
	ganttMaxPlotH  = 1600 // lane height shrinks so the plot fits this
	ganttMaxLaneH  = 14
	ganttLeft      = 130 // node labels
	ganttRight     = 24
	ganttTop       = 50 // title and subtitle
	ganttMaxLegend = 20 // pipelines listed in the legend
	ganttMinIdleW  = 2  // pixels: an idle worker is never thinner
	ganttHatch     = 3  // pixels: width of an idle worker's stripes
	idleLegendID   = "idle-legend"
)

func idlePatternID(i int) string { return "idle-" + strconv.Itoa(i) }

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// ganttBand is one node's horizontal band.
type ganttBand struct {
	name  string
	cap   int // GPUs of the node
	lanes int // max(cap, lanes used): more than cap means over capacity
	y     int // top, relative to the plot
}

// ganttItem is one drawn worker interval.
type ganttItem struct {
	iv    *sim.Interval
	band  int
	lanes []int // ascending
}

type ganttLayout struct {
	bands   []ganttBand
	items   []ganttItem
	laneH   int
	gap     int // pixels between bands
	plotH   int
	tmax    time.Duration
	skipped int // workers without GPUs: not drawn
	light   map[string]float64
	phases  []string // legend order
	pipes   []string // arrival order
	colors  map[string]pipeColor
	idle    []string // pipelines with idle intervals, in pipes order
}

// pipeColor is a pipeline's hue (degrees) and shade: 0 saturated, 1 paler
// and lighter. Phases vary the lightness on top.
type pipeColor struct {
	hue   float64
	shade int
}

// WriteGantt renders r's worker intervals (recorded with Options.Record) as
// an SVG Gantt chart of GPU occupancy: one band per node, as tall as its GPU
// count (gpusPerNode), one lane per GPU, virtual time left to right. Every
// worker holding GPUs is one rectangle (a path when its GPUs' lanes are not
// adjacent) spanning as many lanes as it has GPUs, coloured by pipeline (hue)
// and phase (lightness), with a tooltip. Lanes are assigned greedily by start
// time; a lane past a node's GPU count (shaded red) means the node was
// over-committed. Workers without GPUs are not drawn. Bands follow nodes;
// nodes not listed there but present in r come after, sorted. The output
// is deterministic.
func WriteGantt(w io.Writer, r *sim.Result, nodes []string, gpusPerNode map[string]int) error {
	b := bufio.NewWriterSize(w, 1<<16)
	g := newGanttSVG(&svgWriter{w: b}, layoutGantt(r, nodes, gpusPerNode))
	g.header(r)
	g.bands()
	g.axis()
	g.workers()
	g.legend()
	g.svg.s("</svg>\n")
	if g.svg.err != nil {
		return g.svg.err
	}
	return b.Flush()
}

// ganttSVG is WriteGantt's drawing: the layout and the chart's frame,
// computed once, shared by the parts drawn one after the other.
type ganttSVG struct {
	svg *svgWriter
	l   *ganttLayout

	ticks         []time.Duration
	step          time.Duration // between ticks
	plotY, axisY  int           // top and bottom of the plot
	legendY       int
	legendRows    []legendRow
	width, height int
}

func newGanttSVG(svg *svgWriter, l *ganttLayout) *ganttSVG {
	g := &ganttSVG{svg: svg, l: l, plotY: ganttTop, legendRows: l.legendRows()}
	g.ticks, g.step = ganttTicks(l.tmax)
	g.axisY = g.plotY + l.plotH
	g.legendY = g.axisY + 44
	g.width = ganttLeft + ganttPlotW + ganttRight
	g.height = g.legendY + 18*len(g.legendRows) + 10
	return g
}

// header opens the SVG and writes the title and the subtitle.
func (g *ganttSVG) header(r *sim.Result) {
	svg, l := g.svg, g.l
	svg.f(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", g.width, g.height, g.width, g.height)
	svg.f(`<rect width="%d" height="%d" fill="#fff"/>`+"\n", g.width, g.height)
	policy := string(r.Policy)
	if policy == "" {
		policy = "?"
	}
	svg.f(`<text x="%d" y="20" font-size="15" font-weight="bold">GPU occupancy — scenario %s, policy %s</text>`+"\n",
		ganttLeft, esc(r.Scenario), esc(policy))
	gpus := 0
	for _, bd := range l.bands {
		gpus += bd.cap
	}
	sub := fmt.Sprintf("%d nodes, %d GPUs, %d worker intervals, %s of virtual time", len(l.bands), gpus, len(l.items), ganttClock(l.tmax))
	if l.skipped > 0 {
		sub += fmt.Sprintf(" (%d workers without GPUs not shown)", l.skipped)
	}
	svg.f(`<text x="%d" y="38" fill="#555">%s</text>`+"\n", ganttLeft, esc(sub))
}

// bands draws the node bands: alternate shading, over-capacity lanes red,
// labels at left (every few bands when they are too thin for each).
func (g *ganttSVG) bands() {
	svg, l := g.svg, g.l
	labelFS := min(11, max(7, l.laneH*4))
	every := 1
	if pitch := l.bandPitch(); pitch < labelFS {
		every = (labelFS + pitch - 1) / pitch
	}
	svg.s(`<g class="bands">` + "\n")
	for i, bd := range l.bands {
		y := g.plotY + bd.y
		h := bd.lanes * l.laneH
		fill := "#f3f3f3"
		if i%2 == 1 {
			fill = "#e6e6e6"
		}
		svg.f(`<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", ganttLeft, y, ganttPlotW, h, fill)
		if bd.lanes > bd.cap {
			oy := y + bd.cap*l.laneH
			svg.f(`<rect x="%d" y="%d" width="%d" height="%d" fill="#f7c9c9"/>`+"\n", ganttLeft, oy, ganttPlotW, (bd.lanes-bd.cap)*l.laneH)
		}
	}
	svg.s("</g>\n")
	svg.f(`<g class="nodes" font-size="%d" text-anchor="end">`+"\n", labelFS)
	for i, bd := range l.bands {
		if i%every != 0 {
			continue
		}
		cy := float64(g.plotY+bd.y) + float64(bd.lanes*l.laneH)/2 + float64(labelFS)*0.35
		svg.f(`<text x="%d" y="%s">%s</text>`+"\n", ganttLeft-6, f1(cy), esc(ganttShort(bd.name, 20)))
	}
	svg.s("</g>\n")
}

// axis draws the time grid and the time axis.
func (g *ganttSVG) axis() {
	svg, l := g.svg, g.l
	svg.s(`<g class="axis" stroke="#bbb" stroke-width="0.5">` + "\n")
	for _, t := range g.ticks {
		x := f1(l.x(t) + ganttLeft)
		svg.f(`<line x1="%s" y1="%d" x2="%s" y2="%d"/>`+"\n", x, g.plotY, x, g.axisY+4)
	}
	svg.f(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333" stroke-width="1"/>`+"\n", ganttLeft, g.axisY, ganttLeft+ganttPlotW, g.axisY)
	svg.s("</g>\n")
	svg.s(`<g class="ticks" text-anchor="middle" fill="#333">` + "\n")
	for _, t := range g.ticks {
		svg.f(`<text x="%s" y="%d">%s</text>`+"\n", f1(l.x(t)+ganttLeft), g.axisY+16, ganttTick(t, g.step))
	}
	svg.s("</g>\n")
	svg.f(`<text x="%d" y="%d" text-anchor="middle" fill="#555">virtual time since the run's start</text>`+"\n", ganttLeft+ganttPlotW/2, g.axisY+32)
}

// workers draws every worker, grouped by colour (one <g> per style, so
// that the file stays small); idle ones hatched.
func (g *ganttSVG) workers() {
	svg, l := g.svg, g.l
	idleID := g.idlePatterns()
	inset := 0
	if l.laneH >= 4 {
		inset = 1 // a hairline between lanes
	}
	svg.s(`<g class="workers">` + "\n")
	var open string
	for _, i := range l.drawOrder() {
		it := l.items[i]
		style := l.svgStyle(it.iv, idleID)
		if style != open {
			if open != "" {
				svg.s("</g>\n")
			}
			svg.f("<g %s>\n", style)
			open = style
		}
		g.worker(it, inset)
	}
	if open != "" {
		svg.s("</g>\n")
	}
	svg.s("</g>\n")
}

// idlePatterns defines the hatch patterns of idle workers, one per
// pipeline with idle workers, and returns their ids by pipeline.
func (g *ganttSVG) idlePatterns() map[string]string {
	svg, l := g.svg, g.l
	if len(l.idle) > 0 {
		svg.s("<defs>\n")
		svg.hatch(idleLegendID, color.NRGBA{0x77, 0x77, 0x77, 0xff}, color.NRGBA{0xee, 0xee, 0xee, 0xff})
		for i, p := range l.idle {
			stripe, tint := l.idleColors(p)
			svg.hatch(idlePatternID(i), stripe, tint)
		}
		svg.s("</defs>\n")
	}
	idleID := map[string]string{}
	for i, p := range l.idle {
		idleID[p] = idlePatternID(i)
	}
	return idleID
}

// drawOrder is the order the items are drawn in: by pipeline, phase and
// idleness (so that each colour is one group), then by place and time.
func (l *ganttLayout) drawOrder() []int {
	order := make([]int, len(l.items))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		x, y := l.items[a], l.items[b]
		return cmp.Or(
			strings.Compare(x.iv.Pipeline, y.iv.Pipeline),
			strings.Compare(x.iv.Phase, y.iv.Phase),
			compareBool(x.iv.Idle, y.iv.Idle),
			cmp.Compare(x.band, y.band),
			cmp.Compare(x.iv.Start, y.iv.Start),
			cmp.Compare(x.lanes[0], y.lanes[0]),
		)
	})
	return order
}

// worker draws one worker: a rectangle, or a path when its GPUs' lanes
// are not adjacent, with its tooltip.
func (g *ganttSVG) worker(it ganttItem, inset int) {
	svg, l := g.svg, g.l
	x0, x1 := l.x(it.iv.Start)+ganttLeft, l.x(it.iv.End)+ganttLeft
	// A bar too short to see still shows; an idle one (a deadlocked
	// pod may be placed at the very end of the run) is widened the
	// most, into the right margin if it ends with the chart.
	wd := max(x1-x0, 0.2)
	if it.iv.Idle {
		wd = max(wd, ganttMinIdleW)
	}
	top := g.plotY + l.bands[it.band].y
	runs := laneRuns(it.lanes)
	if len(runs) == 1 {
		svg.f(`<rect x="%s" y="%d" width="%s" height="%d">`, f1(x0), top+runs[0][0]*l.laneH, f1(wd), runs[0][1]*l.laneH-inset)
		svg.f("<title>%s</title></rect>\n", esc(ganttTooltip(it.iv)))
		return
	}
	var d strings.Builder
	for _, run := range runs {
		fmt.Fprintf(&d, "M%s %dh%sv%dh-%sz", f1(x0), top+run[0]*l.laneH, f1(wd), run[1]*l.laneH-inset, f1(wd))
	}
	svg.f(`<path d="%s"><title>%s</title></path>`+"\n", d.String(), esc(ganttTooltip(it.iv)))
}

// legend draws the legend rows below the axis.
func (g *ganttSVG) legend() {
	svg := g.svg
	svg.s(`<g class="legend">` + "\n")
	for i, row := range g.legendRows {
		y := g.legendY + 18*i
		x := ganttLeft
		svg.f(`<text x="%d" y="%d" text-anchor="end" fill="#555">%s</text>`+"\n", x-6, y+10, row.label)
		for _, e := range row.entries {
			if e.fill != "" {
				svg.f(`<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`+"\n", x, y, e.fill)
				x += 16
			}
			svg.f(`<text x="%d" y="%d">%s</text>`+"\n", x, y+10, esc(e.text))
			x += ganttTextW(e.text) + 14
		}
	}
	svg.s("</g>\n")
}

// WritePNG renders the occupancy raster of WriteGantt (the plot area only:
// no text) as a PNG, ganttPlotW pixels wide and as tall as the SVG's plot.
func WritePNG(w io.Writer, r *sim.Result, nodes []string, gpusPerNode map[string]int) error {
	l := layoutGantt(r, nodes, gpusPerNode)
	img := image.NewNRGBA(image.Rect(0, 0, ganttPlotW, max(l.plotH, 1)))
	fill := func(x0, y0, x1, y1 int, c color.NRGBA) {
		px := [4]byte{c.R, c.G, c.B, c.A}
		for y := max(y0, 0); y < min(y1, img.Rect.Max.Y); y++ {
			row := img.Pix[y*img.Stride:]
			for x := max(x0, 0); x < min(x1, ganttPlotW); x++ {
				copy(row[4*x:], px[:])
			}
		}
	}
	// hatch paints diagonal stripes, ganttHatch pixels wide.
	hatch := func(x0, y0, x1, y1 int, stripe, tint color.NRGBA) {
		for y := max(y0, 0); y < min(y1, img.Rect.Max.Y); y++ {
			for x := max(x0, 0); x < min(x1, ganttPlotW); x++ {
				c := tint
				if (x+y)/ganttHatch%2 == 0 {
					c = stripe
				}
				img.SetNRGBA(x, y, c)
			}
		}
	}
	fill(0, 0, ganttPlotW, l.plotH, color.NRGBA{0x99, 0x99, 0x99, 0xff}) // separators
	for i, bd := range l.bands {
		c := color.NRGBA{0xf3, 0xf3, 0xf3, 0xff}
		if i%2 == 1 {
			c = color.NRGBA{0xe6, 0xe6, 0xe6, 0xff}
		}
		fill(0, bd.y, ganttPlotW, bd.y+bd.cap*l.laneH, c)
		fill(0, bd.y+bd.cap*l.laneH, ganttPlotW, bd.y+bd.lanes*l.laneH, color.NRGBA{0xf7, 0xc9, 0xc9, 0xff})
	}
	ticks, _ := ganttTicks(l.tmax)
	for _, t := range ticks {
		x := int(math.Round(l.x(t)))
		for _, bd := range l.bands {
			fill(x, bd.y, x+1, bd.y+bd.lanes*l.laneH, color.NRGBA{0xc8, 0xc8, 0xc8, 0xff})
		}
	}
	inset := 0
	if l.laneH >= 4 {
		inset = 1
	}
	for _, it := range l.items {
		// The PNG has no margin: a bar at the chart's end takes its last
		// column.
		x0 := min(int(math.Floor(l.x(it.iv.Start))), ganttPlotW-1)
		x1 := max(int(math.Round(l.x(it.iv.End))), x0+1)
		if it.iv.Idle {
			x1 = max(x1, min(x0+ganttMinIdleW, ganttPlotW))
		}
		top := l.bands[it.band].y
		for _, run := range laneRuns(it.lanes) {
			y0 := top + run[0]*l.laneH
			y1 := y0 + run[1]*l.laneH - inset
			if it.iv.Idle {
				stripe, tint := l.idleColors(it.iv.Pipeline)
				hatch(x0, y0, x1, y1, stripe, tint)
			} else {
				fill(x0, y0, x1, y1, l.color(it.iv.Pipeline, it.iv.Phase))
			}
		}
	}
	return png.Encode(w, img)
}

// layoutGantt places every GPU-holding worker interval in its node's lanes.
func layoutGantt(r *sim.Result, nodes []string, gpusPerNode map[string]int) *ganttLayout {
	l := &ganttLayout{light: map[string]float64{}}
	index, phaseSet, pipeSet := l.addBands(r, nodes, gpusPerNode)
	l.assignItems(r, index)
	l.stackBands()
	if l.tmax <= 0 {
		l.tmax = time.Second
	}
	l.shadePhases(phaseSet)
	l.pipes = arrivalOrder(r, pipeSet)
	l.colors = pipelineColors(l.pipes, l.neighbours())
	l.idle = l.idlePipelines()
	return l
}

// addBands adds a band for every node listed, then one for every other
// node holding GPUs in r, sorted; it returns the bands' indices by node
// and the phases and pipelines drawn, and counts the intervals skipped.
func (l *ganttLayout) addBands(r *sim.Result, nodes []string, gpusPerNode map[string]int) (index map[string]int, phaseSet, pipeSet map[string]bool) {
	index = map[string]int{}
	addBand := func(name string) {
		if _, ok := index[name]; ok {
			return
		}
		index[name] = len(l.bands)
		l.bands = append(l.bands, ganttBand{name: name, cap: max(gpusPerNode[name], 0)})
	}
	for _, n := range nodes {
		addBand(n)
	}
	var extra []string
	phaseSet, pipeSet = map[string]bool{}, map[string]bool{}
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		if ganttGPUs(iv.GPUs) == 0 {
			l.skipped++
			continue
		}
		if _, ok := index[iv.Node]; !ok && !slices.Contains(extra, iv.Node) {
			extra = append(extra, iv.Node)
		}
		phaseSet[iv.Phase], pipeSet[iv.Pipeline] = true, true
		l.tmax = max(l.tmax, iv.End, iv.Start)
	}
	slices.Sort(extra)
	for _, n := range extra {
		addBand(n)
	}
	return index, phaseSet, pipeSet
}

// assignItems assigns lanes to the GPU-holding intervals, node by node,
// and widens a band past its capacity when its lanes overflow it.
func (l *ganttLayout) assignItems(r *sim.Result, index map[string]int) {
	perNode := make([][]int, len(l.bands))
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		if ganttGPUs(iv.GPUs) > 0 {
			b := index[iv.Node]
			perNode[b] = append(perNode[b], i)
		}
	}
	for b := range l.bands {
		ivs := make([]sim.Interval, len(perNode[b]))
		for j, i := range perNode[b] {
			ivs[j] = r.Intervals[i]
		}
		lanes, used := assignLanes(ivs, l.bands[b].cap)
		l.bands[b].lanes = max(l.bands[b].cap, used)
		for j, i := range perNode[b] {
			l.items = append(l.items, ganttItem{iv: &r.Intervals[i], band: b, lanes: lanes[j]})
		}
	}
}

// stackBands sizes the lanes so that the plot fits ganttMaxPlotH and
// stacks the bands top to bottom with a gap between them.
func (l *ganttLayout) stackBands() {
	total := 0
	for _, bd := range l.bands {
		total += bd.lanes
	}
	l.laneH = max(1, min(ganttMaxLaneH, ganttMaxPlotH/max(total, 1)))
	l.gap = 1
	if l.laneH > 4 {
		l.gap = 2
	}
	y := 0
	for i := range l.bands {
		if i > 0 {
			y += l.gap
		}
		l.bands[i].y = y
		y += l.bands[i].lanes * l.laneH
	}
	l.plotH = y
}

// shadePhases gives each phase its lightness and the legend its order.
// Train dark, validate medium, test light; the others get distinct
// lightnesses in name order.
func (l *ganttLayout) shadePhases(phaseSet map[string]bool) {
	var others []string
	for ph := range phaseSet {
		if lt, ok := knownPhaseLight(ph); ok {
			l.light[ph] = lt
		} else {
			others = append(others, ph)
		}
	}
	slices.Sort(others)
	palette := []float64{0.40, 0.62, 0.22, 0.82, 0.35, 0.56, 0.67, 0.45, 0.78, 0.26, 0.88, 0.18}
	for i, ph := range others {
		l.light[ph] = palette[i%len(palette)]
	}
	for ph := range phaseSet {
		l.phases = append(l.phases, ph)
	}
	slices.SortFunc(l.phases, func(a, b string) int {
		return cmp.Or(cmp.Compare(l.light[a], l.light[b]), strings.Compare(a, b))
	})
}

// idlePipelines are the pipelines with idle intervals, in l.pipes order.
func (l *ganttLayout) idlePipelines() []string {
	idle := map[string]bool{}
	for _, it := range l.items {
		if it.iv.Idle {
			idle[it.iv.Pipeline] = true
		}
	}
	var out []string
	for _, p := range l.pipes {
		if idle[p] {
			out = append(out, p)
		}
	}
	return out
}

// arrivalOrder sorts the drawn pipelines by arrival (r.Pipelines, in its
// order for equal arrivals), then by first start and name for pipelines r
// does not list, so that colours and the legend follow the workload.
func arrivalOrder(r *sim.Result, pipeSet map[string]bool) []string {
	type key struct {
		arrival, start time.Duration
		index          int
	}
	keys := map[string]*key{}
	for p := range pipeSet {
		keys[p] = &key{arrival: math.MaxInt64, start: math.MaxInt64, index: len(r.Pipelines)}
	}
	for i, p := range r.Pipelines {
		if k := keys[p.Name]; k != nil && k.index == len(r.Pipelines) {
			k.arrival, k.index = p.Arrival, i
		}
	}
	for i := range r.Intervals {
		if k := keys[r.Intervals[i].Pipeline]; k != nil {
			k.start = min(k.start, r.Intervals[i].Start)
		}
	}
	out := make([]string, 0, len(keys))
	for p := range keys {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b string) int {
		x, y := keys[a], keys[b]
		return cmp.Or(cmp.Compare(x.arrival, y.arrival), cmp.Compare(x.index, y.index),
			cmp.Compare(x.start, y.start), strings.Compare(a, b))
	})
	return out
}

// neighbours links the pipelines that share a node band at about the same
// time: one's worker overlaps the other's, or starts within ganttNear of
// its end. Their bars touch on the chart, so their colours must differ.
func (l *ganttLayout) neighbours() map[string][]string {
	near := l.tmax / ganttNear
	byBand := make([][]*sim.Interval, len(l.bands))
	for _, it := range l.items {
		byBand[it.band] = append(byBand[it.band], it.iv)
	}
	seen := map[[2]string]bool{}
	out := map[string][]string{}
	link := func(a, b string) {
		if a == b || seen[[2]string{a, b}] {
			return
		}
		seen[[2]string{a, b}], seen[[2]string{b, a}] = true, true
		out[a], out[b] = append(out[a], b), append(out[b], a)
	}
	for _, ivs := range byBand {
		slices.SortFunc(ivs, func(a, b *sim.Interval) int {
			return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End), strings.Compare(a.Pipeline, b.Pipeline))
		})
		var active []*sim.Interval // may still touch what starts next
		for _, iv := range ivs {
			kept := active[:0]
			for _, a := range active {
				if a.End+near >= iv.Start {
					kept = append(kept, a)
					link(a.Pipeline, iv.Pipeline)
				}
			}
			active = append(kept, iv)
		}
	}
	return out
}

// pipelineColors colours pipelines in arrival order. The preferred colour
// steps the hue by the golden angle and alternates the shade, so that
// pipelines close in arrival order differ (a hash of the name gives
// neighbours similar hues as often as not). A pipeline whose preferred
// colour is too close to a neighbour's already coloured (the one before it
// in arrival order, and those it shares a node band with) takes the
// nearest candidate that is far enough from all of them, or, if none is,
// the one farthest from the closest.
func pipelineColors(order []string, neighbours map[string][]string) map[string]pipeColor {
	const golden = 137.50776405003785 // degrees: 360 × (1 − 1/φ)
	colors := make(map[string]pipeColor, len(order))
	for i, p := range order {
		pref := pipeColor{hue: math.Mod(float64(i)*golden, 360), shade: i % 2}
		near := neighbours[p]
		if i > 0 {
			near = append(slices.Clip(near), order[i-1])
		}
		best, bestScore := pref, -1.0
		for _, c := range colorCandidates(pref) {
			score := ganttColorGoal
			for _, n := range near {
				if nc, ok := colors[n]; ok {
					score = min(score, colorDistance(c, nc))
				}
			}
			if score > bestScore {
				best, bestScore = c, score
			}
			if score >= ganttColorGoal {
				break
			}
		}
		colors[p] = best
	}
	return colors
}

// ganttColorGoal is the colorDistance at which two colours read as clearly
// different: 90° of hue, or 30° and the other shade.
const ganttColorGoal = 90.0

// ganttNear is the fraction of the time axis (1/ganttNear of it) within
// which bars one after the other in a band count as touching.
const ganttNear = 100

// colorCandidates lists pref first, then hues 15°, 30°, … away on either
// side, each in pref's shade and then the other.
func colorCandidates(pref pipeColor) []pipeColor {
	out := make([]pipeColor, 0, 48)
	for k := 0; k <= 12; k++ {
		for _, sign := range []float64{1, -1} {
			if sign < 0 && (k == 0 || k == 12) {
				continue
			}
			h := math.Mod(pref.hue+sign*15*float64(k)+360, 360)
			out = append(out, pipeColor{h, pref.shade}, pipeColor{h, 1 - pref.shade})
		}
	}
	return out
}

// colorDistance is how different two pipeline colours look: the hue
// difference in degrees (at most 180), plus 60 if the shades differ.
func colorDistance(a, b pipeColor) float64 {
	d := math.Abs(a.hue - b.hue)
	d = min(d, 360-d)
	if a.shade != b.shade {
		d += 60
	}
	return d
}

// assignLanes gives each interval of one node ganttGPUs(GPUs) lanes, greedily
// in start order: the lowest adjacent free lanes if any below capacity, else
// the lowest free lanes, adding lanes past capacity (or past what is in use)
// only when fewer are free. A lane is free at t when its last occupant ended
// by t, so intervals overlapping in time never share a lane. It returns each
// interval's lanes (ascending) and the number of lanes used.
func assignLanes(ivs []sim.Interval, capacity int) ([][]int, int) {
	order := make([]int, len(ivs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		x, y := &ivs[a], &ivs[b]
		return cmp.Or(
			cmp.Compare(x.Start, y.Start),
			cmp.Compare(y.End, x.End), // longer first
			strings.Compare(x.Pipeline, y.Pipeline),
			strings.Compare(x.Phase, y.Phase),
			cmp.Compare(x.Iteration, y.Iteration),
			cmp.Compare(x.Attempt, y.Attempt),
			cmp.Compare(x.Worker, y.Worker),
		)
	})
	busy := make([]time.Duration, max(capacity, 0)) // end of each lane's last occupant
	out := make([][]int, len(ivs))
	used := 0
	for _, i := range order {
		iv := &ivs[i]
		k := max(1, ganttGPUs(iv.GPUs))
		free := func(l int) bool { return l >= len(busy) || busy[l] <= iv.Start }
		var lanes []int
		// Adjacent lanes within what exists.
		for l0 := 0; l0+k <= len(busy) && lanes == nil; l0++ {
			ok := true
			for l := l0; l < l0+k && ok; l++ {
				ok = free(l)
			}
			if ok {
				lanes = make([]int, k)
				for j := range lanes {
					lanes[j] = l0 + j
				}
			}
		}
		// Else the lowest free ones, growing if need be.
		for l := 0; lanes == nil || len(lanes) < k; l++ {
			if free(l) {
				lanes = append(lanes, l)
			}
		}
		end := max(iv.End, iv.Start)
		for _, l := range lanes {
			for l >= len(busy) {
				busy = append(busy, 0)
			}
			busy[l] = end
			used = max(used, l+1)
		}
		out[i] = lanes
	}
	return out, used
}

// laneRuns splits ascending lanes into runs of adjacent ones: [first, count].
func laneRuns(lanes []int) [][2]int {
	var runs [][2]int
	for _, l := range lanes {
		if n := len(runs); n > 0 && runs[n-1][0]+runs[n-1][1] == l {
			runs[n-1][1]++
			continue
		}
		runs = append(runs, [2]int{l, 1})
	}
	return runs
}

// ganttGPUs is the lanes a worker with g GPUs takes (0: none, not drawn).
func ganttGPUs(g float64) int {
	if g <= 0 || math.IsNaN(g) {
		return 0
	}
	return int(math.Ceil(g - 1e-9))
}

func knownPhaseLight(phase string) (float64, bool) {
	p := strings.ToLower(phase)
	switch {
	case strings.Contains(p, "test") || strings.HasPrefix(p, "eval"):
		return 0.72, true
	case strings.Contains(p, "val"):
		return 0.50, true
	case strings.Contains(p, "train"):
		return 0.30, true
	}
	return 0, false
}

func (l *ganttLayout) x(t time.Duration) float64 {
	return float64(t) / float64(l.tmax) * ganttPlotW
}

// svgStyle is the attributes of the group that draws iv: its colour, or
// for an idle worker its pipeline's hatching with an outline in the
// stripes' colour.
func (l *ganttLayout) svgStyle(iv *sim.Interval, idleID map[string]string) string {
	if iv.Idle {
		stripe, _ := l.idleColors(iv.Pipeline)
		return fmt.Sprintf(`class="idle" fill="url(#%s)" stroke="%s" stroke-width="0.75"`, idleID[iv.Pipeline], ganttHex(stripe))
	}
	return fmt.Sprintf(`fill="%s"`, ganttHex(l.color(iv.Pipeline, iv.Phase)))
}

func (l *ganttLayout) bandPitch() int {
	p := ganttMaxLaneH + 2
	for _, bd := range l.bands {
		p = min(p, bd.lanes*l.laneH+l.gap)
	}
	return max(p, 1)
}

// Shades: saturation and lightness offset.
var (
	shadeSat   = [2]float64{0.70, 0.45}
	shadeLight = [2]float64{0, 0.10}
)

// color is a running worker's colour: its pipeline's hue and shade, and
// its phase's lightness.
func (l *ganttLayout) color(pipeline, phase string) color.NRGBA {
	lt, ok := l.light[phase]
	if !ok {
		lt = 0.5
	}
	c := l.colors[pipeline]
	return hsl(c.hue, shadeSat[c.shade], min(lt+shadeLight[c.shade], 0.9))
}

// idleColors are the two colours of an idle worker's hatching (a worker
// that holds its GPU without running: per-pod's partial gangs): stripes in
// the pipeline's hue on a pale tint of it, so it reads as "held by that
// pipeline, doing nothing", unlike any running phase.
func (l *ganttLayout) idleColors(pipeline string) (stripe, tint color.NRGBA) {
	c := l.colors[pipeline]
	return hsl(c.hue, 0.60, 0.45), hsl(c.hue, 0.35, 0.93)
}

// legendColor is a pipeline's swatch: its colour at a medium lightness.
func (l *ganttLayout) legendColor(pipeline string) color.NRGBA {
	c := l.colors[pipeline]
	return hsl(c.hue, shadeSat[c.shade], 0.45+shadeLight[c.shade])
}

type legendEntry struct{ fill, text string }

type legendRow struct {
	label   string
	entries []legendEntry
}

func (l *ganttLayout) legendRows() []legendRow {
	maxW := ganttPlotW
	var rows []legendRow
	add := func(label string, es []legendEntry) {
		row := legendRow{label: label}
		w := 0
		for _, e := range es {
			ew := ganttTextW(e.text) + 14
			if e.fill != "" {
				ew += 16
			}
			if w+ew > maxW && len(row.entries) > 0 {
				rows = append(rows, row)
				row, w = legendRow{}, 0
			}
			row.entries = append(row.entries, e)
			w += ew
		}
		rows = append(rows, row)
	}
	var es []legendEntry
	for _, ph := range l.phases {
		es = append(es, legendEntry{ganttHex(hsl(0, 0, l.light[ph])), ganttShort(ph, 24)})
	}
	if len(l.idle) > 0 {
		es = append(es, legendEntry{"url(#" + idleLegendID + ")", "held, idle"})
	}
	for _, bd := range l.bands {
		if bd.lanes > bd.cap {
			es = append(es, legendEntry{"#f7c9c9", "over capacity"})
			break
		}
	}
	add("phase", es)
	es = nil
	for i, p := range l.pipes {
		if i == ganttMaxLegend {
			es = append(es, legendEntry{"", fmt.Sprintf("… and %d more", len(l.pipes)-i)})
			break
		}
		es = append(es, legendEntry{ganttHex(l.legendColor(p)), ganttShort(p, 24)})
	}
	add("pipeline", es)
	return rows
}

// ganttTicks picks round tick times (about 6 to 12 of them) up to tmax.
func ganttTicks(tmax time.Duration) ([]time.Duration, time.Duration) {
	steps := []time.Duration{
		time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
		48 * time.Hour, 96 * time.Hour, 168 * time.Hour, 336 * time.Hour, 672 * time.Hour,
	}
	step := steps[len(steps)-1]
	for _, s := range steps {
		if tmax/s <= 12 {
			step = s
			break
		}
	}
	for tmax/step > 12 {
		step *= 2
	}
	var ticks []time.Duration
	for t := time.Duration(0); t <= tmax; t += step {
		ticks = append(ticks, t)
	}
	return ticks, step
}

// ganttTick labels a tick: "0", "45s", "30m", "2h", "1h30m".
func ganttTick(t, step time.Duration) string {
	if t == 0 {
		return "0"
	}
	h, m, s := int64(t/time.Hour), int64(t%time.Hour/time.Minute), int64(t%time.Minute/time.Second)
	var b strings.Builder
	if h > 0 {
		fmt.Fprintf(&b, "%dh", h)
	}
	if m > 0 {
		fmt.Fprintf(&b, "%dm", m)
	}
	if s > 0 || (step < time.Minute && b.Len() == 0) {
		fmt.Fprintf(&b, "%ds", s)
	}
	return b.String()
}

// ganttClock formats a duration as h:mm:ss.
func ganttClock(d time.Duration) string {
	d = d.Round(time.Second)
	neg := ""
	if d < 0 {
		neg, d = "-", -d
	}
	return fmt.Sprintf("%s%d:%02d:%02d", neg, d/time.Hour, d%time.Hour/time.Minute, d%time.Minute/time.Second)
}

func ganttTooltip(iv *sim.Interval) string {
	s := fmt.Sprintf("%s %s#%d.%d worker %d %s–%s on %s", iv.Pipeline, iv.Phase, iv.Iteration, iv.Attempt, iv.Worker,
		ganttClock(iv.Start), ganttClock(iv.End), iv.Node)
	if iv.GPUs != 1 {
		s += fmt.Sprintf(", %s GPUs", strconv.FormatFloat(iv.GPUs, 'f', -1, 64))
	}
	if iv.Idle {
		s += " (idle: holding its GPU while waiting for the rest of its gang)"
	}
	return s
}

// ganttShort cuts s to n runes, keeping its end (node and pipeline names
// differ at the end).
func ganttShort(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n+1:])
}

// ganttTextW estimates the width of 11px sans-serif text.
func ganttTextW(s string) int { return int(math.Ceil(float64(len([]rune(s))) * 6.2)) }

func hsl(h, s, l float64) color.NRGBA {
	c := (1 - math.Abs(2*l-1)) * s
	hp := math.Mod(h, 360) / 60
	x := c * (1 - math.Abs(math.Mod(hp, 2)-1))
	var r, g, b float64
	switch {
	case hp < 1:
		r, g = c, x
	case hp < 2:
		r, g = x, c
	case hp < 3:
		g, b = c, x
	case hp < 4:
		g, b = x, c
	case hp < 5:
		r, b = x, c
	default:
		r, b = c, x
	}
	m := l - c/2
	to := func(v float64) uint8 { return uint8(math.Round(math.Max(0, math.Min(1, v+m)) * 255)) }
	return color.NRGBA{to(r), to(g), to(b), 0xff}
}

func ganttHex(c color.NRGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// f1 formats v with at most one decimal.
func f1(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

func esc(s string) string { return html.EscapeString(s) }

// svgWriter keeps the first write error.
type svgWriter struct {
	w   *bufio.Writer
	err error
}

func (s *svgWriter) f(format string, args ...any) {
	if s.err == nil {
		_, s.err = fmt.Fprintf(s.w, format, args...)
	}
}

// hatch defines a pattern of diagonal stripes on a tint.
func (s *svgWriter) hatch(id string, stripe, tint color.NRGBA) {
	s.f(`<pattern id="%s" width="%d" height="%d" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">`+
		`<rect width="%d" height="%d" fill="%s"/><rect width="%d" height="%d" fill="%s"/></pattern>`+"\n",
		id, 2*ganttHatch, 2*ganttHatch, 2*ganttHatch, 2*ganttHatch, ganttHex(tint), ganttHatch, 2*ganttHatch, ganttHex(stripe))
}

func (s *svgWriter) s(str string) {
	if s.err == nil {
		_, s.err = s.w.WriteString(str)
	}
}
