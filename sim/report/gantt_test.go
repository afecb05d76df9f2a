package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/phasegang/phasegang/sim"
)

func ganttFixture() (*sim.Result, []string, map[string]int) {
	m := time.Minute
	iv := func(node, pipe, phase string, worker int32, gpus float64, start, end time.Duration) sim.Interval {
		return sim.Interval{Node: node, Pipeline: pipe, Phase: phase, Iteration: 1, Attempt: 0, Worker: worker, GPUs: gpus, Start: start, End: end}
	}
	r := &sim.Result{Scenario: "tiny <&> mix", Policy: sim.PolicyPhasegang, GPUs: 12, Intervals: []sim.Interval{
		// n0: full at 10m-50m, with a 2-GPU worker; then reused.
		iv("n0", "alpha", "train", 0, 1, 0, 60*m),
		iv("n0", "alpha", "train", 1, 1, 0, 60*m),
		iv("n0", "beta", "train", 0, 2, 10*m, 50*m),
		iv("n0", "gamma", "validate", 0, 1, 60*m, 90*m),
		iv("n0", "alpha", "test", 0, 2, 60*m, 70*m),
		// n1: lanes 0 and 2 free at 30m: the 2-GPU worker takes both.
		iv("n1", "delta", "train", 0, 1, 0, 30*m),
		iv("n1", "delta", "train", 1, 1, m, 60*m),
		iv("n1", "delta", "train", 2, 1, 2*m, 30*m),
		iv("n1", "delta", "train", 3, 1, 3*m, 60*m),
		iv("n1", "eps", "finetune", 0, 2, 30*m, 50*m),
		// n2: a custom phase and a worker without GPUs (not drawn).
		iv("n2", "zeta", "preprocess", 0, 1, 0, 5*m),
		iv("n2", "zeta", "evaluate", 0, 1, 5*m, 20*m),
		iv("n2", "eta", "train", 0, 2, 0, 120*m),
		iv("n2", "zeta", "cpu", 0, 0, 0, 10*m),
	}}
	return r, []string{"n0", "n1", "n2"}, map[string]int{"n0": 4, "n1": 4, "n2": 4}
}

type box struct{ x0, y0, x1, y1 float64 }

// workerShapes parses WriteGantt's output with encoding/xml and returns, per
// worker element (rect or path in the workers group), its boxes and title.
func workerShapes(t *testing.T, svg []byte) ([][]box, []string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var shapes [][]box
	var titles []string
	depth, inWorkers := 0, -1
	inTitle := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("invalid XML: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			depth++
			attr := map[string]string{}
			for _, a := range e.Attr {
				attr[a.Name.Local] = a.Value
			}
			if e.Name.Local == "g" && attr["class"] == "workers" {
				inWorkers = depth
			}
			if inWorkers < 0 || depth <= inWorkers {
				break
			}
			switch e.Name.Local {
			case "rect":
				x, y, w, h := num(t, attr["x"]), num(t, attr["y"]), num(t, attr["width"]), num(t, attr["height"])
				shapes = append(shapes, []box{{x, y, x + w, y + h}})
			case "path":
				shapes = append(shapes, pathBoxes(t, attr["d"]))
			case "title":
				inTitle = true
				titles = append(titles, "")
			}
		case xml.CharData:
			if inTitle {
				titles[len(titles)-1] += string(e)
			}
		case xml.EndElement:
			if e.Name.Local == "title" {
				inTitle = false
			}
			if depth == inWorkers {
				inWorkers = -1
			}
			depth--
		}
	}
	if depth != 0 {
		t.Fatalf("unbalanced XML, depth %d", depth)
	}
	return shapes, titles
}

// pathBoxes parses "M x y h w v h h -w z" sequences.
func pathBoxes(t *testing.T, d string) []box {
	t.Helper()
	var out []box
	for _, sub := range strings.Split(d, "z") {
		if sub == "" {
			continue
		}
		var x, y, w, h, w2 float64
		if _, err := fmt.Sscanf(sub, "M%g %gh%gv%gh%g", &x, &y, &w, &h, &w2); err != nil {
			t.Fatalf("path %q: %v", sub, err)
		}
		out = append(out, box{x, y, x + w, y + h})
	}
	return out
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("bad number %q", s)
	}
	return v
}

func TestGanttSVG(t *testing.T) {
	r, nodes, gpus := ganttFixture()
	var buf bytes.Buffer
	if err := WriteGantt(&buf, r, nodes, gpus); err != nil {
		t.Fatal(err)
	}
	shapes, titles := workerShapes(t, buf.Bytes())
	drawn := 0
	for _, iv := range r.Intervals {
		if iv.GPUs > 0 {
			drawn++
		}
	}
	if len(shapes) != drawn || len(titles) != drawn {
		t.Fatalf("%d worker shapes, %d titles, want %d", len(shapes), len(titles), drawn)
	}
	// No two workers overlap on the chart (bands are disjoint, so this is
	// per node and lane). Rounding to 0.1px may make neighbours touch.
	const eps = 0.15
	for i := range shapes {
		for j := i + 1; j < len(shapes); j++ {
			for _, a := range shapes[i] {
				for _, b := range shapes[j] {
					if a.x0 < b.x1-eps && b.x0 < a.x1-eps && a.y0 < b.y1 && b.y0 < a.y1 {
						t.Errorf("workers %q and %q overlap: %v %v", titles[i], titles[j], a, b)
					}
				}
			}
		}
	}
	s := buf.String()
	for _, want := range []string{
		"alpha train#1.0 worker 1 0:00:00–1:00:00",
		"eps finetune#1.0 worker 0 0:30:00–0:50:00 on n1, 2 GPUs",
		"scenario tiny &lt;&amp;&gt; mix, policy phasegang",
		"1 workers without GPUs not shown",
		">n2</text>", ">30m</text>", ">1h</text>", ">1h30m</text>",
		">preprocess</text>", ">evaluate</text>",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if strings.Contains(s, "more</text>") {
		t.Error("legend elided pipelines with only 7 of them")
	}
	// The non-adjacent 2-GPU worker is a path of two boxes.
	if !strings.Contains(s, "<path") {
		t.Error("expected the fragmented 2-GPU worker as a path")
	}

	var again bytes.Buffer
	if err := WriteGantt(&again, r, nodes, gpus); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("two renderings differ")
	}
	// Input order does not matter.
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(r.Intervals), func(i, j int) {
		r.Intervals[i], r.Intervals[j] = r.Intervals[j], r.Intervals[i]
	})
	again.Reset()
	if err := WriteGantt(&again, r, nodes, gpus); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("rendering depends on the intervals' order")
	}
}

func TestGanttLanes(t *testing.T) {
	r, _, _ := ganttFixture()
	byNode := map[string][]sim.Interval{}
	for _, iv := range r.Intervals {
		if iv.GPUs > 0 {
			byNode[iv.Node] = append(byNode[iv.Node], iv)
		}
	}
	for node, ivs := range byNode {
		lanes, used := assignLanes(ivs, 4)
		if used > 4 {
			t.Errorf("%s: %d lanes used, want <= 4", node, used)
		}
		checkLanes(t, ivs, lanes)
	}
	// n1's 2-GPU worker gets the two free lanes, not adjacent.
	lanes, _ := assignLanes(byNode["n1"], 4)
	if got := fmt.Sprint(lanes[4]); got != "[0 2]" {
		t.Errorf("fragmented 2-GPU worker: lanes %s, want [0 2]", got)
	}

	// Over-commitment grows past capacity.
	over := []sim.Interval{
		{Pipeline: "a", GPUs: 1, Start: 0, End: time.Hour},
		{Pipeline: "b", GPUs: 2, Start: time.Minute, End: time.Hour},
	}
	lanes, used := assignLanes(over, 1)
	if used != 3 {
		t.Errorf("over-committed: %d lanes used, want 3 (%v)", used, lanes)
	}
	checkLanes(t, over, lanes)

	// Random load: never overlapping, each worker gets its GPUs.
	rng := rand.New(rand.NewPCG(3, 4))
	var ivs []sim.Interval
	for i := range 500 {
		s := time.Duration(rng.IntN(1000)) * time.Second
		ivs = append(ivs, sim.Interval{Pipeline: "p", Worker: int32(i), GPUs: float64(1 + rng.IntN(3)), Start: s, End: s + time.Duration(1+rng.IntN(100))*time.Second})
	}
	lanes, _ = assignLanes(ivs, 8)
	checkLanes(t, ivs, lanes)
}

func checkLanes(t *testing.T, ivs []sim.Interval, lanes [][]int) {
	t.Helper()
	for i, a := range ivs {
		if len(lanes[i]) != int(a.GPUs) {
			t.Errorf("worker %d: lanes %v for %v GPUs", i, lanes[i], a.GPUs)
		}
		for j := i + 1; j < len(ivs); j++ {
			b := ivs[j]
			if a.Start >= b.End || b.Start >= a.End {
				continue
			}
			for _, la := range lanes[i] {
				for _, lb := range lanes[j] {
					if la == lb {
						t.Errorf("overlapping workers %d %v and %d %v share lane %d", i, a, j, b, la)
					}
				}
			}
		}
	}
}

func TestGanttPNG(t *testing.T) {
	r, nodes, gpus := ganttFixture()
	var buf bytes.Buffer
	if err := WritePNG(&buf, r, nodes, gpus); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	// 12 lanes of 14px plus 2px between the 3 bands.
	if b := img.Bounds(); b.Dx() != 1200 || b.Dy() != 12*14+2*2 {
		t.Errorf("PNG is %dx%d, want 1200x172", b.Dx(), b.Dy())
	}
	var again bytes.Buffer
	if err := WritePNG(&again, r, nodes, gpus); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	_ = WritePNG(&buf, r, nodes, gpus)
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("two PNG renderings differ")
	}
}

// A 64-node x 8-GPU cluster stays within a readable height, with a label
// per node and the pipeline legend cut at 20.
func TestGanttBigCluster(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var nodes []string
	gpus := map[string]int{}
	for i := range 64 {
		n := fmt.Sprintf("gpu-node-%02d", i)
		nodes = append(nodes, n)
		gpus[n] = 8
	}
	r := &sim.Result{Scenario: "big", Policy: sim.PolicyRigid}
	for _, n := range nodes {
		var free [8]time.Duration
		for range 40 {
			l := rng.IntN(8)
			s := free[l] + time.Duration(rng.IntN(600))*time.Second
			e := s + time.Duration(60+rng.IntN(3600))*time.Second
			free[l] = e
			r.Intervals = append(r.Intervals, sim.Interval{Node: n, Pipeline: fmt.Sprintf("job-%03d", rng.IntN(50)),
				Phase: []string{"train", "validate", "test"}[rng.IntN(3)], GPUs: 1, Start: s, End: e})
		}
	}
	var buf bytes.Buffer
	if err := WriteGantt(&buf, r, nodes, gpus); err != nil {
		t.Fatal(err)
	}
	shapes, _ := workerShapes(t, buf.Bytes())
	if len(shapes) != len(r.Intervals) {
		t.Errorf("%d shapes, want %d", len(shapes), len(r.Intervals))
	}
	var svg struct {
		Height int `xml:"height,attr"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &svg); err != nil {
		t.Fatal(err)
	}
	if svg.Height > 1800 {
		t.Errorf("SVG is %dpx tall", svg.Height)
	}
	s := buf.String()
	for _, n := range nodes {
		if !strings.Contains(s, ">"+n+"</text>") {
			t.Errorf("no label for %s", n)
		}
	}
	if !strings.Contains(s, "… and 30 more") {
		t.Error("legend does not elide pipelines past 20")
	}
	t.Logf("%d intervals: %d bytes, %dpx tall", len(r.Intervals), buf.Len(), svg.Height)
}

func TestGanttTicks(t *testing.T) {
	for _, c := range []struct {
		tmax time.Duration
		want string
	}{
		{90 * time.Second, "[0 10s 20s 30s 40s 50s 1m 1m10s 1m20s 1m30s]"},
		{100 * time.Minute, "[0 10m 20m 30m 40m 50m 1h 1h10m 1h20m 1h30m 1h40m]"},
		{7 * time.Hour, "[0 1h 2h 3h 4h 5h 6h 7h]"},
	} {
		ticks, step := ganttTicks(c.tmax)
		var labels []string
		for _, tk := range ticks {
			labels = append(labels, ganttTick(tk, step))
		}
		if got := fmt.Sprint(labels); got != c.want {
			t.Errorf("ticks(%v) = %s, want %s", c.tmax, got, c.want)
		}
	}
}

// workerStyles returns, per worker shape of WriteGantt's output (in
// workerShapes' order), the fill of its group, and the ids of the patterns
// the chart defines.
func workerStyles(t *testing.T, svg []byte) (fills []string, patterns map[string]bool) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	patterns = map[string]bool{}
	var groups []string // fill of each open group, "" if none
	inWorkers := -1
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return fills, patterns
		}
		if err != nil {
			t.Fatalf("invalid XML: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range e.Attr {
				attr[a.Name.Local] = a.Value
			}
			switch {
			case e.Name.Local == "pattern":
				patterns[attr["id"]] = true
			case e.Name.Local == "g":
				if attr["class"] == "workers" {
					inWorkers = len(groups)
				}
				groups = append(groups, attr["fill"])
			case inWorkers >= 0 && (e.Name.Local == "rect" || e.Name.Local == "path"):
				fills = append(fills, groups[len(groups)-1])
			}
		case xml.EndElement:
			if e.Name.Local == "g" {
				groups = groups[:len(groups)-1]
				if len(groups) == inWorkers {
					inWorkers = -1
				}
			}
		}
	}
}

// Idle workers (a pod holding its GPU while the rest of its gang is not
// placed, or until the end of the run when it is deadlocked) are hatched in
// their pipeline's colour, have a legend entry, and show even when they end
// with the chart or last no time at all.
func TestGanttIdle(t *testing.T) {
	m := time.Minute
	r := &sim.Result{Scenario: "idle", Policy: sim.PolicyPerPod, Intervals: []sim.Interval{
		{Node: "n0", Pipeline: "a", Phase: "train", GPUs: 1, Start: 0, End: 30 * m},
		{Node: "n0", Pipeline: "b", Phase: "train", Worker: 1, GPUs: 1, Start: m, End: 10 * m, Idle: true}, // waited, then ran
		{Node: "n0", Pipeline: "b", Phase: "train", Worker: 1, GPUs: 1, Start: 10 * m, End: 30 * m},
		{Node: "n1", Pipeline: "c", Phase: "train", GPUs: 1, Start: 5 * m, End: 30 * m, Idle: true},             // deadlocked until the end
		{Node: "n1", Pipeline: "c", Phase: "train", Worker: 1, GPUs: 1, Start: 30 * m, End: 30 * m, Idle: true}, // placed at the very end
	}}
	nodes, gpus := []string{"n0", "n1"}, map[string]int{"n0": 2, "n1": 2}
	var buf bytes.Buffer
	if err := WriteGantt(&buf, r, nodes, gpus); err != nil {
		t.Fatal(err)
	}
	shapes, titles := workerShapes(t, buf.Bytes())
	fills, patterns := workerStyles(t, buf.Bytes())
	if len(shapes) != len(r.Intervals) || len(fills) != len(shapes) {
		t.Fatalf("%d shapes, %d fills, want %d", len(shapes), len(fills), len(r.Intervals))
	}
	plotEnd := float64(ganttLeft + ganttPlotW)
	idle := 0
	for i, fill := range fills {
		b := shapes[i][0]
		isIdle := strings.Contains(titles[i], "(idle")
		if !isIdle {
			if !strings.HasPrefix(fill, "#") {
				t.Errorf("%s: running worker filled with %q, want a colour", titles[i], fill)
			}
			continue
		}
		idle++
		id, ok := strings.CutPrefix(fill, "url(#")
		if !ok || !patterns[strings.TrimSuffix(id, ")")] {
			t.Errorf("%s: idle worker filled with %q, want a hatching defined in the chart", titles[i], fill)
		}
		if b.x1-b.x0 < ganttMinIdleW {
			t.Errorf("%s: %.1fpx wide, want at least %dpx", titles[i], b.x1-b.x0, ganttMinIdleW)
		}
		if b.x0 > plotEnd || b.x1 > plotEnd+ganttRight {
			t.Errorf("%s: drawn at x %.1f–%.1f, past the chart (%.0f) and its margin", titles[i], b.x0, b.x1, plotEnd)
		}
	}
	if idle != 3 {
		t.Errorf("%d idle workers drawn, want 3", idle)
	}
	if !strings.Contains(buf.String(), ">held, idle</text>") {
		t.Error(`legend lacks "held, idle"`)
	}

	// The PNG hatches them too, the one at the chart's end in its last column.
	buf.Reset()
	if err := WritePNG(&buf, r, nodes, gpus); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	l := layoutGantt(r, nodes, gpus)
	for _, it := range l.items {
		if !it.iv.Idle {
			continue
		}
		stripe, tint := l.idleColors(it.iv.Pipeline)
		y := l.bands[it.band].y + it.lanes[0]*l.laneH + l.laneH/2
		x0 := min(int(l.x(it.iv.Start)), ganttPlotW-1)
		x1 := max(int(l.x(it.iv.End)), x0+1)
		seen := map[color.NRGBA]bool{}
		for x := x0; x < min(x1, ganttPlotW); x++ {
			seen[color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)] = true
		}
		if !seen[stripe] && !seen[tint] {
			t.Errorf("%s: PNG row %d, x %d–%d, has %v: not its hatching", ganttTooltip(it.iv), y, x0, x1, seen)
		}
		if x1-x0 > 2*ganttHatch && (!seen[stripe] || !seen[tint]) {
			t.Errorf("%s: PNG row %d is not hatched: %v", ganttTooltip(it.iv), y, seen)
		}
	}
}

// Pipelines next to each other in arrival order, and pipelines whose bars
// touch in a node's band, get clearly different colours (a hash of the
// name gave neighbours nearly the same hue as often as not).
func TestGanttColorsTellNeighboursApart(t *testing.T) {
	// One pipeline a minute, 4 GPUs for 10 minutes, alternating between two
	// 8-GPU nodes: each shares its node with the next two of that node.
	m := time.Minute
	stream := &sim.Result{}
	for i := range 40 {
		name := fmt.Sprintf("job-%d", i)
		stream.Pipelines = append(stream.Pipelines, sim.PipelineResult{Name: name, Arrival: time.Duration(i) * m})
		start := time.Duration(i/2) * 5 * m
		for w := range 4 {
			stream.Intervals = append(stream.Intervals, sim.Interval{Node: fmt.Sprintf("n%d", i%2), Pipeline: name, Phase: "train",
				Worker: int32(w), GPUs: 1, Start: start, End: start + 10*m})
		}
	}
	seed := loadScenario(t, "../../examples/simulate/seed-deadlock.yaml")
	cases := map[string]*sim.Result{"stream": stream}
	for _, p := range sim.Policies {
		cases["seed/"+string(p)] = run(t, seed, p)
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			nodes, gpus := []string{}, map[string]int{}
			for _, iv := range r.Intervals {
				if _, ok := gpus[iv.Node]; !ok {
					nodes, gpus[iv.Node] = append(nodes, iv.Node), 8
				}
			}
			slices.Sort(nodes)
			l := layoutGantt(r, nodes, gpus)
			drawn := map[string]bool{}
			for _, iv := range r.Intervals {
				drawn[iv.Pipeline] = true
			}
			arrivals := slices.DeleteFunc(slices.Clone(r.Pipelines), func(p sim.PipelineResult) bool { return !drawn[p.Name] })
			slices.SortStableFunc(arrivals, func(a, b sim.PipelineResult) int { return int(a.Arrival - b.Arrival) })
			pairs := map[[2]string]string{}
			for i := 1; i < len(arrivals); i++ {
				pairs[[2]string{arrivals[i-1].Name, arrivals[i].Name}] = "adjacent in arrival order"
			}
			for _, a := range r.Intervals {
				for _, b := range r.Intervals {
					if a.Node == b.Node && a.Pipeline < b.Pipeline && a.Start <= b.End && b.Start <= a.End {
						pairs[[2]string{a.Pipeline, b.Pipeline}] = "touching on " + a.Node
					}
				}
			}
			for pr, why := range pairs {
				for _, phase := range []string{"train", "validate", "test"} {
					a, b := l.color(pr[0], phase), l.color(pr[1], phase)
					if d := rgbDistance(a, b); d < 70 {
						t.Errorf("%s and %s (%s): %s colours %s and %s are %.0f apart, want >= 70",
							pr[0], pr[1], why, phase, ganttHex(a), ganttHex(b), d)
					}
				}
			}
		})
	}
}

// rgbDistance is the "redmean" approximation of perceived colour
// difference: 0 for equal colours, about 765 for black and white.
func rgbDistance(a, b color.NRGBA) float64 {
	r := (float64(a.R) + float64(b.R)) / 2
	dr, dg, db := float64(a.R)-float64(b.R), float64(a.G)-float64(b.G), float64(a.B)-float64(b.B)
	return math.Sqrt((2+r/256)*dr*dr + 4*dg*dg + (2+(255-r)/256)*db*db)
}
