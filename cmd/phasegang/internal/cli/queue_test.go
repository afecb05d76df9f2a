package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/engine"
)

// The printed view: queue use, waiting gangs with positions and waits,
// the preemption preview; QUEUE and --namespace narrow it.
func TestWriteQueueView(t *testing.T) {
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	gpus := func(n int64) engine.ResourceList { return engine.ResourceList{"nvidia.com/gpu": engine.Milli(n)} }
	key := func(p string) engine.GangKey { return engine.GangKey{Pipeline: p, Phase: "train"} }
	v := engine.QueueView{
		Queues: []engine.QueueUsage{
			{Name: "team-a", Nominal: gpus(4), Used: gpus(8), Borrowed: gpus(4), Admitted: 2},
			{Name: "team-b", Nominal: gpus(4), Used: engine.ResourceList{}, Borrowed: engine.ResourceList{}, Pending: 1},
		},
		Gangs: []engine.QueuedGang{
			{Queue: "team-b", Position: 1, Request: engine.Request{Gang: key("ml/eval"), Min: 4, Desired: 4, Queued: now.Add(-90 * time.Second)},
				Wait: &engine.Wait{Gang: key("ml/eval"), Reason: engine.WaitBackoff, NotBefore: now.Add(time.Minute)}},
			{Queue: "team-b", Position: 2, AdmitNow: true, Request: engine.Request{Gang: key("dev/small"), Min: 1, Desired: 2, Queued: now}},
		},
		PreemptedNext: []engine.Preemption{{Gang: key("ml/big"), Queue: "team-a", For: key("ml/eval"), Lender: "team-b"}},
	}
	d := &driver.Demand{Gangs: driver.Gangs{}}
	var out bytes.Buffer
	if err := writeQueueView(&out, v, d, queueSelection{}, now); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"team-a  nvidia.com/gpu: 8  nvidia.com/gpu: 4  nvidia.com/gpu: 4  2         0",
		"team-b  1    ml/eval    train  0         4        1m30s   backing off after a start timeout until 10:01:00",
		"team-b  2    dev/small  train  0         1-2      0s      fits now: the controller's next cycle grants it",
		"Preempted next, if every waiting lender's reclaim grace period ended now:\n  ml/big train (queue team-a) for ml/eval train (queue team-b)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Preempted by this cycle") {
		t.Errorf("a preemption-now section with nothing in it:\n%s", got)
	}

	out.Reset()
	if err := writeQueueView(&out, v, d, queueSelection{queue: "team-a"}, now); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); strings.Contains(got, "ml/eval  ") || !strings.Contains(got, "(no gang waits)") || !strings.Contains(got, "ml/big") {
		t.Errorf("team-a only: want its use, no waiting gang, and its gang preempted next:\n%s", got)
	}
	out.Reset()
	if err := writeQueueView(&out, v, d, queueSelection{namespace: "dev"}, now); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); strings.Contains(got, "ml/eval") || !strings.Contains(got, "dev/small") {
		t.Errorf("namespace dev only:\n%s", got)
	}
}
