package engine

import (
	"fmt"
	"strconv"
	"strings"
)

func itoa[T ~int32 | ~int | ~int64](v T) string { return strconv.FormatInt(int64(v), 10) }

// byteResources are counted in bytes and read best in binary units.
var byteResources = map[ResourceName]bool{"memory": true, "ephemeral-storage": true}

// FormatAmount renders a milli-unit amount the way a Kubernetes user writes
// it: "8" GPUs, "500m" CPU, "16Gi" memory.
func FormatAmount(name ResourceName, milli int64) string {
	if milli%1000 != 0 {
		return strconv.FormatInt(milli, 10) + "m"
	}
	v := milli / 1000
	if byteResources[name] || strings.HasPrefix(string(name), "hugepages-") {
		for _, u := range []struct {
			suffix string
			size   int64
		}{{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
			if v != 0 && v%u.size == 0 {
				return strconv.FormatInt(v/u.size, 10) + u.suffix
			}
		}
	}
	return strconv.FormatInt(v, 10)
}

// FormatResources renders a resource list as "{cpu: 4, memory: 16Gi, nvidia.com/gpu: 1}"
// in name order.
func FormatResources(rl ResourceList) string {
	var b strings.Builder
	b.WriteString("{")
	for i, name := range sortedNames(rl) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %s", name, FormatAmount(name, rl[name]))
	}
	b.WriteString("}")
	return b.String()
}

// Message is the Wait as a sentence with numbers, for status.waitingFor.
func (w Wait) Message() string {
	switch w.Reason {
	case WaitBackoff:
		return fmt.Sprintf("backing off after a start timeout until %s", w.NotBefore.UTC().Format("15:04:05"))
	case WaitPipelineCannotFinish:
		return "held: another phase of its pipeline can never fit, so it could not finish"
	case WaitQuota:
		if w.Quota != nil {
			return w.Quota.message()
		}
	case WaitQueue:
		if w.Queue != nil {
			return w.Queue.message()
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "needs %d × %s at once on %d matching nodes; %d fit now", w.Min, FormatResources(w.Footprint), w.MatchingNodes, w.FitNow)
	if w.NodesWithRoom > 0 {
		fmt.Fprintf(&b, " across %d nodes, largest block %d", w.NodesWithRoom, w.LargestBlock)
	}
	if w.Topology != "" {
		b.WriteString("; " + w.Topology)
	}
	fmt.Fprintf(&b, "; %d %s ahead", w.Ahead, plural(w.Ahead, "gang", "gangs"))
	if w.AheadIn != "" {
		fmt.Fprintf(&b, " in queue %s", w.AheadIn)
	}
	switch {
	case w.Starving:
		b.WriteString("; past its starvation bound: nodes are draining for it")
	case w.Reason == WaitBehindHead:
		b.WriteString("; it would fit, but the free nodes are draining for the queue's starving head")
	default:
		// Backfill: the count is a place in the order, not a promise.
		b.WriteString(" (younger gangs that fit may start first until the head waits past the starvation bound)")
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
