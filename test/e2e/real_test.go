//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// The seed, for real: M = 3 jobs × N = 4 one-GPU workers on a node with 4
// GPUs. As plain pods submitted together (a worker of each job in turn, as
// jobs submitted at once reach kube-scheduler's queue), kube-scheduler
// binds the first four: workers of several jobs, none of which can
// complete its rendezvous, so nothing finishes (the deadlock, seen in the
// processes' own logs). As PhasedTrainings the same three jobs all finish,
// one whole gang at a time, and no worker ever waits for a peer that was
// not scheduled.
func TestRealSeedDeadlock(t *testing.T) {
	node, gpus := realNode(t)
	if gpus != 4 {
		t.Fatalf("the seed needs a node of 4 GPUs, %s has %d", node, gpus)
	}
	ns := namespace(t)
	jobs := []string{"a", "b", "c"}

	// Plain pods: a headless Service per job gives rank 0 a name. Not
	// "job-<j>": that is the name of the PhasedTraining's own Service
	// below, which phasegang would take over from this one (dropping its
	// selector) while the plain pods' endpoints are being removed.
	for _, j := range jobs {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain-" + j}, Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true, Selector: map[string]string{"job": j}}}
		if err := k8s.Create(context.Background(), svc); err != nil {
			t.Fatal(err)
		}
	}
	dir := realDir(t, ns, "plain")
	for rank := range 4 {
		for _, j := range jobs {
			tmpl := trainer(1, dir, map[string]string{
				"RANK": strconv.Itoa(rank), "WORLD_SIZE": "4", "MASTER_PORT": "29500",
				"MASTER_ADDR": fmt.Sprintf("%s-0.plain-%s.%s.svc", j, j, ns),
			})
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", j, rank),
				Labels: map[string]string{"job": j, "plain": "true"}}, Spec: tmpl.Spec}
			pod.Spec.Hostname, pod.Spec.Subdomain = pod.Name, "plain-"+j
			if err := k8s.Create(context.Background(), pod); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Every bound worker runs, and waits: give them 30 s, ten times what a
	// whole gang takes to rendezvous here.
	eventually(t, 60*time.Second, "4 plain workers Running", func() (bool, error) {
		running := 0
		for _, p := range pods(t, ns, map[string]string{"plain": "true"}) {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 4, fmt.Errorf("%d running", running)
	})
	time.Sleep(30 * time.Second)
	perJob := map[string]int{}
	pending := 0
	for _, p := range pods(t, ns, map[string]string{"plain": "true"}) {
		switch p.Status.Phase {
		case corev1.PodPending:
			pending++
			continue
		case corev1.PodRunning:
		default:
			t.Fatalf("plain worker %s is %s: the deadlock should hold every bound worker", p.Name, p.Status.Phase)
		}
		perJob[p.Labels["job"]]++
		log := podLog(t, ns, p.Name)
		if strings.Contains(log, "rendezvous: complete") {
			t.Errorf("plain worker %s completed its rendezvous:\n%s", p.Name, log)
		}
		t.Logf("plain %s (%s) after 30 s: %s", p.Name, p.Spec.NodeName, lastLine(log))
	}
	if pending != 8 || len(perJob) < 2 {
		t.Fatalf("want 4 workers of several jobs bound and 8 Pending, got %v bound, %d Pending", perJob, pending)
	}
	t.Logf("plain pods: deadlocked with bound workers per job %v, %d Pending, 0 of 3 jobs done after 30 s", perJob, pending)
	// Not a forced delete (grace 0): the pods must leave the API only once
	// the kubelet has stopped them and given their GPUs back, or the first
	// gang below waits on the kubelet's device admission, not on phasegang.
	if err := k8s.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(ns),
		client.MatchingLabels{"plain": "true"}, client.GracePeriodSeconds(1)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the plain pods gone", func() (bool, error) {
		n := len(pods(t, ns, map[string]string{"plain": "true"}))
		return n == 0, fmt.Errorf("%d left", n)
	})

	// The same jobs as PhasedTrainings, created at once.
	start := time.Now()
	var pts []*v1alpha1.PhasedTraining
	for _, j := range jobs {
		pts = append(pts, create(t, wrappers.NewPT(ns, "job-"+j).Phase("train", 4).PodTemplate(trainer(1, realDir(t, ns, "job-"+j), map[string]string{"TRAINER_ROUNDS": "5"})).Obj()))
	}
	type span struct {
		name     string
		from, to time.Time
	}
	var spans []span
	for _, pt := range pts {
		done := waitState(t, pt, v1alpha1.PipelineSucceeded, 3*time.Minute)
		var s span
		s.name = pt.Name
		// Every worker's peers were scheduled with it: each rendezvous
		// completes within seconds of its process starting.
		var slowest time.Duration
		for name, log := range gangLogs(t, ns, ptLabels(pt.Name, "train")) {
			m := regexp.MustCompile(`rendezvous: complete after (\S+)`).FindStringSubmatch(log)
			if m == nil || !strings.Contains(log, "allreduce round 5/5: sum=10") {
				t.Errorf("%s: no complete rendezvous and 5 all-reduce rounds of 4 ranks:\n%s", name, log)
				continue
			}
			d, _ := time.ParseDuration(m[1])
			slowest = max(slowest, d)
		}
		if slowest > 10*time.Second {
			t.Errorf("%s: a worker waited %v for its peers", pt.Name, slowest)
		}
		for _, p := range pods(t, ns, ptLabels(pt.Name, "train")) {
			from, to, ok := runningInterval(p)
			if !ok {
				t.Fatalf("%s: not terminated: %+v", p.Name, p.Status)
			}
			if s.from.IsZero() || from.Before(s.from) {
				s.from = from
			}
			if to.After(s.to) {
				s.to = to
			}
		}
		spans = append(spans, s)
		t.Logf("PhasedTraining %s Succeeded: its gang ran %s..%s (%.0f s after submission), slowest rendezvous %v", pt.Name,
			s.from.Format("15:04:05"), s.to.Format("15:04:05"), done.Status.Phases[0].EndTime.Sub(start).Seconds(), slowest)
	}
	// One gang at a time: no two gangs' running intervals overlap.
	for i := range spans {
		for j := i + 1; j < len(spans); j++ {
			if spans[i].from.Before(spans[j].to) && spans[j].from.Before(spans[i].to) {
				t.Errorf("gangs %s and %s ran at the same time on 4 GPUs: %v", spans[i].name, spans[j].name, spans)
			}
		}
	}
	t.Logf("PhasedTrainings: all 3 Succeeded within %.0f s of submission", time.Since(start).Seconds())
}

// train → validate → test on real processes: train's rank 0 writes a
// checkpoint to the pipeline's directory; validate reads it and reports its
// accuracy in its termination message; test runs only when the accuracy
// passes the `when`.
func TestRealTrainValidateTest(t *testing.T) {
	realNode(t)
	ns := namespace(t)
	build := func(name, accuracy string) *v1alpha1.PhasedTraining {
		dir := realDir(t, ns, name)
		return create(t, wrappers.NewPT(ns, name).
			Phase("train", 2).PodTemplate(trainer(1, dir, map[string]string{"TRAINER_ACCURACY": accuracy})).
			Phase("validate", 1).PodTemplate(trainer(1, dir, map[string]string{"TRAINER_MODE": "validate"})).DependsOn("train").
			With(func(p *v1alpha1.Phase) { p.Outputs = []string{"accuracy", "loss"} }).
			Phase("test", 1).PodTemplate(trainer(1, dir, map[string]string{"TRAINER_MODE": "validate"})).DependsOn("validate").
			With(func(p *v1alpha1.Phase) { p.When = "float(phases.validate.outputs.accuracy) >= 0.8" }).Obj())
	}
	good, poor := build("good", "0.91"), build("poor", "0.42")
	for _, c := range []struct {
		pt       *v1alpha1.PhasedTraining
		accuracy string
		test     v1alpha1.PhaseState
	}{{good, "0.91", v1alpha1.PhaseSucceeded}, {poor, "0.42", v1alpha1.PhaseSkipped}} {
		done := waitState(t, c.pt, v1alpha1.PipelineSucceeded, 2*time.Minute)
		states := map[string]*v1alpha1.PhaseStatus{}
		for i := range done.Status.Phases {
			states[done.Status.Phases[i].Name] = &done.Status.Phases[i]
		}
		if v := states["validate"]; v == nil || v.Outputs["accuracy"] != c.accuracy {
			t.Errorf("%s: validate's outputs %v, want accuracy %s (read from train's checkpoint)", c.pt.Name, v, c.accuracy)
		}
		if s := states["test"]; s == nil || s.State != c.test {
			t.Errorf("%s: test is %v, want %s", c.pt.Name, s, c.test)
		}
		for name, log := range gangLogs(t, ns, ptLabels(c.pt.Name, "validate")) {
			if !strings.Contains(log, `validate: checkpoint {"accuracy":"`+c.accuracy) {
				t.Errorf("%s did not read train's checkpoint:\n%s", name, log)
			}
		}
		t.Logf("%s: validate outputs %v, test %s", c.pt.Name, states["validate"].Outputs, states["test"].State)
	}
}

// A worker that exits non-zero fails its gang's attempt: phasegang stops the
// other workers (they get SIGTERM and write their marker; left alone they
// would wait for the dead peer forever, as collectives do), and the retry
// runs whole.
func TestRealWorkerCrashFailsTheGang(t *testing.T) {
	realNode(t)
	ns := namespace(t)
	dir := realDir(t, ns, "crash")
	pt := create(t, wrappers.NewPT(ns, "crash").Phase("train", 3).PodTemplate(trainer(1, dir, map[string]string{
		"TRAINER_FAIL_RANK": "1", "TRAINER_FAIL_ROUND": "2", "TRAINER_ROUNDS": "4",
	})).With(func(p *v1alpha1.Phase) { p.MaxRetries = 1 }).Obj())
	done := waitState(t, pt, v1alpha1.PipelineSucceeded, 2*time.Minute)
	ps := done.Status.Phases[len(done.Status.Phases)-1]
	if ps.Attempt != 1 {
		t.Errorf("want the retry (attempt 1) to succeed, got %s", describe(done))
	}
	// Ranks 0 and 2 of attempt 0 were stopped by SIGTERM, not left waiting.
	if got := markers(t, dir); strings.Join(got, ",") != "sigterm-train-0,sigterm-train-2" {
		t.Errorf("SIGTERM markers %v, want ranks 0 and 2 of the failed attempt", got)
	}
	for name, log := range gangLogs(t, ns, map[string]string{"phasegang.dev/pipeline": "crash", "phasegang.dev/attempt": "1"}) {
		if !strings.Contains(log, "rendezvous: complete") || !strings.Contains(log, "allreduce round 4/4") {
			t.Errorf("retry worker %s did not run whole:\n%s", name, log)
		}
	}
	if first := done.Status.Phases[0]; first.Attempt != 0 || first.State != v1alpha1.PhaseFailed || !strings.Contains(first.Message, "1 of 3 workers failed") {
		t.Errorf("want attempt 0 Failed with 1 of 3 workers failed: %s", describe(done))
	}
	t.Logf("crash: %s; markers %v", describe(done), markers(t, dir))
}

// A gang whose image cannot start (imagePullPolicy Never, image absent) is
// Starting with the kubelet's reason, never Running, and its attempt ends
// after its bounded start retries with that reason.
func TestRealImageNeverPullIsStarting(t *testing.T) {
	realNode(t)
	ns := namespace(t)
	tmpl := trainer(1, realDir(t, ns, "noimage"), nil)
	tmpl.Spec.Containers[0].Image = "phasegang.test/no-such-image:dev"
	pt := create(t, wrappers.NewPT(ns, "noimage").Phase("train", 2).PodTemplate(tmpl).With(func(p *v1alpha1.Phase) {
		p.StartTimeout = &metav1.Duration{Duration: 5 * time.Second}
		p.StartBackoffLimit = new(int32(1))
	}).Obj())
	var msg string
	eventually(t, 60*time.Second, "Starting with the kubelet's ErrImageNeverPull", func() (bool, error) {
		cur := get(t, pt)
		if cur.Status.State == v1alpha1.PipelineRunning {
			t.Fatalf("Running while its image cannot start: %s", describe(cur))
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, string(v1alpha1.ConditionStarting))
		if cur.Status.State != v1alpha1.PipelineStarting || c == nil {
			return false, fmt.Errorf("state %s: %s", cur.Status.State, describe(cur))
		}
		msg = c.Message
		return strings.Contains(msg, "ErrImageNeverPull"), fmt.Errorf("Starting says %q", msg)
	})
	t.Logf("Starting: %s", msg)
	failed := failsNeverRunning(t, pt, 90*time.Second, "its image cannot start")
	if m := failed.Status.Phases[0].Message; !strings.Contains(m, "ErrImageNeverPull") {
		t.Errorf("failed phase says %q, want the kubelet's reason ErrImageNeverPull", m)
	}
	t.Logf("Failed: %s", failed.Status.Phases[0].Message)
}

// Preemption across tenant queues on real processes: team A's gang borrows
// team B's GPUs; B submits; A's gang is preempted whole, its workers get
// SIGTERM and write their checkpoint marker within the grace period, and the
// requeued attempt finds the markers when it runs again.
func TestRealPreemptionSIGTERM(t *testing.T) {
	realNode(t)
	ns := namespace(t)
	sfx := ns[strings.LastIndex(ns, "-")+1:]
	qa, qb, cohort := "real-a-"+sfx, "real-b-"+sfx, "real-"+sfx
	createQueue(t, wrappers.MakeQueue(qa).Cohort(cohort).Nominal("nvidia.com/gpu", "2").Obj())
	createQueue(t, wrappers.MakeQueue(qb).Cohort(cohort).Nominal("nvidia.com/gpu", "2").
		Reclaim(v1alpha1.PreemptAny).ReclaimGrace(2*time.Second).Obj())
	dirA := realDir(t, ns, "team-a")
	a := create(t, wrappers.NewPT(ns, "team-a").Queue(qa).Phase("train", 4).PodTemplate(trainer(1, dirA, map[string]string{
		"TRAINER_ROUNDS": "30", "TRAINER_ROUND_SECONDS": "0.5"})).Obj())
	eventually(t, 60*time.Second, "team A's gang training", func() (bool, error) {
		logs := startedLogs(t, ns, ptLabels("team-a", "train"))
		n := 0
		for _, l := range logs {
			if strings.Contains(l, "allreduce round 2/") {
				n++
			}
		}
		return n == 4, fmt.Errorf("%d of 4 ranks past round 2", n)
	})
	b := create(t, wrappers.NewPT(ns, "team-b").Queue(qb).Phase("train", 2).PodTemplate(trainer(1, realDir(t, ns, "team-b"), nil)).Obj())
	waitState(t, b, v1alpha1.PipelineSucceeded, 2*time.Minute)
	got := markers(t, dirA)
	if strings.Join(got, ",") != "sigterm-train-0,sigterm-train-1,sigterm-train-2,sigterm-train-3" {
		t.Fatalf("team A's SIGTERM markers %v, want all 4 ranks (each wrote it within its 10 s grace period)", got)
	}
	done := waitState(t, a, v1alpha1.PipelineSucceeded, 3*time.Minute)
	var preempted bool
	for _, h := range done.Status.Phases[0].History {
		preempted = preempted || h.Type == v1alpha1.PhaseEventPreempted
	}
	if !preempted || done.Status.Phases[0].Attempt != 0 {
		t.Errorf("want A's train preempted and run again as attempt 0: %s", describe(done))
	}
	resumed := 0
	for name, log := range gangLogs(t, ns, ptLabels("team-a", "train")) {
		if regexp.MustCompile(`resumed: checkpoint marker from round [0-9]+ found`).MatchString(log) {
			resumed++
		} else {
			t.Errorf("%s did not find its marker:\n%s", name, log)
		}
	}
	for _, m := range got {
		b, _ := os.ReadFile(filepath.Join(dirA, m))
		t.Logf("%s: preempted at round %s", m, b)
	}
	t.Logf("team A: preempted whole, %d of 4 ranks resumed from their markers; %s", resumed, describe(done))
}

// Peers by DNS: every worker resolves every peer's name (the gang's
// EndpointSlice, served by CoreDNS) and the test reports how long after the
// worker's start the names resolved.
func TestRealPeersResolveByDNS(t *testing.T) {
	realNode(t)
	ns := namespace(t)
	pt := create(t, wrappers.NewPT(ns, "dns").Phase("train", 4).PodTemplate(trainer(1, realDir(t, ns, "dns"),
		map[string]string{"TRAINER_RESOLVE_PEERS": "1"})).Obj())
	waitState(t, pt, v1alpha1.PipelineSucceeded, 2*time.Minute)
	re := regexp.MustCompile(`resolved (\S+) to (\S+) after ([0-9]+)ms \(([0-9]+) tries\)`)
	var worst, worstTries int
	for name, log := range gangLogs(t, ns, ptLabels("dns", "train")) {
		found := re.FindAllStringSubmatch(log, -1)
		if len(found) != 4 {
			t.Errorf("%s resolved %d of 4 peers:\n%s", name, len(found), log)
		}
		for _, m := range found {
			if !strings.HasSuffix(m[1], "."+ns+".svc") || !strings.HasPrefix(m[2], "10.244.0.") {
				t.Errorf("%s: %s resolved to %s, want a pod IP of the node", name, m[1], m[2])
			}
			ms, _ := strconv.Atoi(m[3])
			tries, _ := strconv.Atoi(m[4])
			worst, worstTries = max(worst, ms), max(worstTries, tries)
		}
	}
	t.Logf("every peer name resolved; slowest %d ms after its worker started (%d tries at 50 ms)", worst, worstTries)
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndex(s, "\n")+1:]
}

// GPUs are the kubelet's to hand out: the fake device plugin advertises the
// node's 4 and the kubelet gives each container its own (as
// NVIDIA_VISIBLE_DEVICES). Two gangs running side by side, one worker of 2
// GPUs and two of 1, get 4 distinct devices.
func TestRealGPUsAreDistinct(t *testing.T) {
	realNode(t)
	ns := namespace(t)
	long := map[string]string{"TRAINER_ROUNDS": "10", "TRAINER_ROUND_SECONDS": "0.5"}
	two := create(t, wrappers.NewPT(ns, "two").Phase("train", 1).PodTemplate(trainer(2, realDir(t, ns, "two"), long)).Obj())
	ones := create(t, wrappers.NewPT(ns, "ones").Phase("train", 2).PodTemplate(trainer(1, realDir(t, ns, "ones"), long)).Obj())
	waitState(t, two, v1alpha1.PipelineSucceeded, 2*time.Minute)
	waitState(t, ones, v1alpha1.PipelineSucceeded, 2*time.Minute)

	re := regexp.MustCompile(`gpus (\S*)`)
	owner := map[string]string{}
	var from, to []time.Time
	for _, name := range []string{"two", "ones"} {
		for _, p := range pods(t, ns, ptLabels(name, "train")) {
			m := re.FindStringSubmatch(podLog(t, ns, p.Name))
			if m == nil || m[1] == "" {
				t.Fatalf("%s was given no GPU", p.Name)
			}
			ids := strings.Split(m[1], ",")
			if want := int(p.Spec.Containers[0].Resources.Limits.Name("nvidia.com/gpu", "").Value()); len(ids) != want {
				t.Errorf("%s got GPUs %v, want %d", p.Name, ids, want)
			}
			for _, id := range ids {
				if o, ok := owner[id]; ok {
					t.Errorf("GPU %s given to both %s and %s", id, o, p.Name)
				}
				owner[id] = p.Name
			}
			f, e, _ := runningInterval(p)
			from, to = append(from, f), append(to, e)
		}
	}
	// They did run at the same time (else reuse would be right).
	if latestStart, earliestEnd := maxTime(from), minTime(to); !latestStart.Before(earliestEnd) {
		t.Fatalf("the workers did not overlap (last start %v, first end %v)", latestStart, earliestEnd)
	}
	t.Logf("GPUs by worker: %v", owner)
}

func maxTime(ts []time.Time) time.Time {
	m := ts[0]
	for _, t := range ts {
		if t.After(m) {
			m = t
		}
	}
	return m
}

func minTime(ts []time.Time) time.Time {
	m := ts[0]
	for _, t := range ts {
		if t.Before(m) {
			m = t
		}
	}
	return m
}
