package engine_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// benchCluster is nodes × 8 GPUs (plus cpu/memory), in four pools.
func benchCluster(nodes int) []engine.Node {
	out := make([]engine.Node, nodes)
	for i := range out {
		out[i] = engine.Node{
			Name:   fmt.Sprintf("node-%05d", i),
			Labels: map[string]string{"pool": fmt.Sprintf("pool-%d", i%4), "gpu-type": "h100"},
			Allocatable: engine.ResourceList{
				wrappers.GPU: engine.Milli(8), wrappers.CPU: engine.Milli(128), wrappers.Memory: 1024 * wrappers.Gi,
			},
			Used: engine.ResourceList{wrappers.CPU: engine.Milli(2), wrappers.Memory: 8 * wrappers.Gi},
		}
	}
	return out
}

// benchQueue is n gangs of 1,2,4,8,16,32 workers × 1 GPU, a quarter of them
// elastic (min = half the size), a tenth with a nodeSelector, three
// priorities, distinct creation times.
func benchQueue(n int) []engine.Request {
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int32{1, 2, 4, 8, 16, 32}
	out := make([]engine.Request, n)
	for i := range out {
		size := sizes[rng.IntN(len(sizes))]
		r := engine.Request{
			Gang:     engine.GangKey{Pipeline: fmt.Sprintf("ns/pipe-%05d", i), Phase: "train"},
			Priority: int32(rng.IntN(3)),
			Created:  Epoch.Add(time.Duration(i) * time.Second),
			Queued:   Epoch.Add(time.Duration(i) * time.Second),
			Min:      size,
			Desired:  size,
			Footprint: engine.ResourceList{
				wrappers.GPU: engine.Milli(1), wrappers.CPU: engine.Milli(8), wrappers.Memory: 64 * wrappers.Gi,
			},
		}
		if size > 1 && rng.IntN(4) == 0 {
			r.Min = size / 2
		}
		if rng.IntN(10) == 0 {
			r.Constraints.NodeSelector = map[string]string{"pool": fmt.Sprintf("pool-%d", rng.IntN(4))}
		}
		out[i] = r
	}
	return out
}

func placed(p engine.Plan) int {
	n := 0
	for _, r := range p.Reserves {
		n += len(r.Workers)
	}
	for _, g := range p.Grows {
		n += len(g.Workers)
	}
	return n
}

const benchNodes, benchGangs = 5000, 10000

// One scheduling cycle of a fresh State: 5,000 nodes × 8 GPUs, 10,000
// queued gangs. Building the State and submitting is outside the timer.
func BenchmarkCycle5000Nodes10000Gangs(b *testing.B) {
	benchFreshCycle(b, benchCluster(benchNodes), benchQueue(benchGangs))
}

// benchFreshCycle times one cycle of a fresh State holding nodes and
// queue (building it and submitting are outside the timer) and reports
// placements/s and placements/op.
func benchFreshCycle(b *testing.B, nodes []engine.Node, queue []engine.Request) {
	b.Helper()
	now := Epoch.Add(benchGangs * time.Second)
	cfg := engine.DefaultConfig()
	b.ReportAllocs()
	total := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := engine.NewState(cfg, nodes, nil)
		for _, r := range queue {
			s.Submit(r)
		}
		b.StartTimer()
		total += placed(s.Cycle(now))
	}
	b.StopTimer()
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "placements/s")
	b.ReportMetric(float64(total)/float64(b.N), "placements/op")
}

// The same cycle through the pure Schedule (building the State included).
func BenchmarkSchedulePure(b *testing.B) {
	snap := engine.Snapshot{
		Now:   Epoch.Add(benchGangs * time.Second),
		Nodes: benchCluster(benchNodes),
		Queue: benchQueue(benchGangs),
	}
	cfg := engine.DefaultConfig()
	b.ReportAllocs()
	total := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		total += placed(engine.Schedule(cfg, snap))
	}
	b.StopTimer()
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "placements/s")
	b.ReportMetric(float64(total)/float64(b.N), "placements/op")
}

// A steady-state cycle: the cluster is full after a first cycle, 2% of the
// grants end, and the next cycle refills the room from the remaining queue.
func BenchmarkCycleSteadyState(b *testing.B) {
	nodes := benchCluster(benchNodes)
	queue := benchQueue(benchGangs)
	now := Epoch.Add(benchGangs * time.Second)
	cfg := engine.DefaultConfig()
	b.ReportAllocs()
	total := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := engine.NewState(cfg, nodes, nil)
		for _, r := range queue {
			s.Submit(r)
		}
		p := s.Cycle(now)
		for j, r := range p.Reserves {
			if j%50 == 0 {
				s.Release(r.Gang)
			}
		}
		b.StartTimer()
		total += placed(s.Cycle(now.Add(time.Minute)))
	}
	b.StopTimer()
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "placements/s")
	b.ReportMetric(float64(total)/float64(b.N), "placements/op")
}

// benchTopoCluster is benchCluster with a 3-level topology: 10 blocks ×
// 25 racks × 20 nodes (block, rack, host).
func benchTopoCluster(nodes int) []engine.Node {
	out := benchCluster(nodes)
	for i := range out {
		rack := i / 20
		out[i].Domain = []string{fmt.Sprintf("block-%d", rack/25), fmt.Sprintf("rack-%03d", rack), out[i].Name}
	}
	return out
}

// benchTopoQueue is benchQueue with a topology on every gang: half
// preferred rack, a quarter required rack, a quarter preferred block in
// slices of 4 per rack (where the size allows).
func benchTopoQueue(n int) []engine.Request {
	out := benchQueue(n)
	names := []string{"example.com/block", "example.com/rack", "kubernetes.io/hostname"}
	for i := range out {
		t := &engine.Topology{Level: 1, LevelName: names[1]}
		switch {
		case i%4 == 1:
			t.Required = true
		case i%4 == 3 && out[i].Min%4 == 0:
			t.Level, t.LevelName = 0, names[0]
			t.SliceSize, t.SliceLevel, t.SliceLevelName = 4, 1, names[1]
		}
		out[i].Topology = t
	}
	return out
}

// One cycle of a fresh State with topology: 5,000 nodes in 10 blocks ×
// 25 racks, 10,000 queued gangs, each placed by rack or block.
func BenchmarkCycleTopology5000Nodes(b *testing.B) {
	benchFreshCycle(b, benchTopoCluster(benchNodes), benchTopoQueue(benchGangs))
}
