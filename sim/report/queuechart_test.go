package report

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/phasegang/phasegang/sim"
)

// TestQueueChart: the chart is well-formed SVG with one held area and one
// entitlement line per queue; a run without queues has no chart.
// testdata/queues.yaml is the simulator's queue scenario (sim's
// queue_test.go) with team B reclaiming after a 5m grace period.
func TestQueueChart(t *testing.T) {
	s := loadScenario(t, "testdata/queues.yaml")
	r := run(t, s, sim.PolicyPhasegang)
	var b strings.Builder
	if err := WriteQueueChart(&b, r); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(b.String()))
	count := map[string]int{}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			count[se.Name.Local]++
		}
	}
	if count["polygon"] != 2 || count["polyline"] != 2 {
		t.Errorf("%d areas and %d lines, want 2 of each (one per queue)", count["polygon"], count["polyline"])
	}
	for _, want := range []string{"team-a", "team-b", "Jain"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("chart does not name %s", want)
		}
	}
	r.Fairness = nil
	if err := WriteQueueChart(&b, r); err == nil {
		t.Error("a run without queues drew a chart")
	}
}
