package engine_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// TestPropHostPorts drives a State through random cycles of gangs that
// bind random host ports on nodes whose other pods bind some, and checks
// the ledger after every cycle: no node holds two granted workers with
// conflicting host ports, nor a worker whose port a pod no grant covers
// binds there.
func TestPropHostPorts(t *testing.T) {
	var portReserves int
	defer func() {
		if !t.Failed() && portReserves == 0 {
			t.Errorf("the random runs reserved no gang with host ports: the generator is broken")
		}
	}()
	ports := []engine.HostPort{{Port: 8080}, {Protocol: "UDP", Port: 8080}, {Port: 9000, HostIP: "10.0.0.1"}, {Port: 9000}}
	setChecks(t, raceChecks)
	rapid.Check(t, func(rt *rapid.T) {
		var nodes []engine.Node
		nodePorts := map[string][]engine.HostPort{}
		for i := range rapid.IntRange(1, 5).Draw(rt, "nodes") {
			n := wrappers.EngineNode(fmt.Sprintf("n%d", i), int64(rapid.IntRange(1, 8).Draw(rt, "gpus")))
			if rapid.IntRange(0, 3).Draw(rt, "taken") == 0 {
				n.HostPorts = []engine.HostPort{rapid.SampledFrom(ports).Draw(rt, "nodePort")}
			}
			nodePorts[n.Name] = n.HostPorts
			nodes = append(nodes, n)
		}
		s := engine.NewState(engine.DefaultConfig(), nodes, nil)
		reqs := map[engine.GangKey]engine.Request{}
		now := Epoch
		for step := range rapid.IntRange(1, 8).Draw(rt, "steps") {
			for range rapid.IntRange(0, 3).Draw(rt, "arrivals") {
				k := int32(rapid.IntRange(1, 4).Draw(rt, "min"))
				r := engine.Request{
					Gang:    engine.GangKey{Pipeline: fmt.Sprintf("ns/p%d", len(reqs)), Phase: "train"},
					Created: now, Queued: now, Min: k, Desired: k + int32(rapid.IntRange(0, 2).Draw(rt, "extra")),
					Footprint: engine.ResourceList{wrappers.GPU: engine.Milli(1)},
				}
				if rapid.Bool().Draw(rt, "hasPort") {
					r.HostPorts = []engine.HostPort{rapid.SampledFrom(ports).Draw(rt, "port")}
				}
				reqs[r.Gang] = r
				s.Submit(r)
			}
			for _, g := range s.Grants() {
				if rapid.IntRange(0, 3).Draw(rt, "end") == 0 {
					s.Release(g.Gang)
				}
			}
			plan := s.Cycle(now)
			for _, rv := range plan.Reserves {
				if len(reqs[rv.Gang].HostPorts) > 0 {
					portReserves++
				}
			}
			type holder struct {
				gang engine.GangKey
				port engine.HostPort
			}
			onNode := map[string][]holder{}
			for _, g := range s.Grants() {
				for _, node := range g.Workers {
					for _, p := range reqs[g.Gang].HostPorts {
						for _, h := range onNode[node] {
							if h.port.Conflicts(p) {
								rt.Fatalf("step %d: node %s holds workers of %s and %s with host ports %v and %v", step, node, h.gang, g.Gang, h.port, p)
							}
						}
						for _, np := range nodePorts[node] {
							if np.Conflicts(p) {
								rt.Fatalf("step %d: %s has a worker on %s, whose pod binds %v, with host port %v", step, g.Gang, node, np, p)
							}
						}
						onNode[node] = append(onNode[node], holder{g.Gang, p})
					}
				}
			}
			now = now.Add(time.Minute)
		}
	})
}
