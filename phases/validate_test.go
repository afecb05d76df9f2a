package phases

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

const gpu corev1.ResourceName = "nvidia.com/gpu"

func q(s string) resource.Quantity { return resource.MustParse(s) }

// manyPhases is a spec of n independent phases p00, p01, ... and their names.
func manyPhases(n int) (*wrappers.PT, []string) {
	b := wrappers.MakePT("p")
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("p%02d", i))
		b.Phase(names[i], 1)
	}
	return b, names
}

func errStrings(b *wrappers.PT) []string {
	var out []string
	for _, e := range Validate(b.Obj()) {
		out = append(out, e.Error())
	}
	return out
}

type validateCase struct {
	pt   *wrappers.PT
	want []string
}

// validateCases has at least one case per class of ErrorClasses, named
// after the class ("gang-min" or "gang-min too big"), asserting the exact
// messages users see.
func validateCases() map[string]validateCase {
	ok := func() *wrappers.PT { return linear() }
	return map[string]validateCase{
		"valid":      {pt: ok()},
		"valid loop": {pt: loopPT(3)},
		"phases-empty": {pt: wrappers.MakePT("p"), want: []string{
			"spec.phases: Required value: must have at least one phase"}},
		"phases-too-many": {pt: func() *wrappers.PT {
			b := wrappers.MakePT("p")
			for i := 0; i < 33; i++ {
				b.Phase("p"+string(rune('a'+i%26))+string(rune('a'+i/26)), 1)
			}
			return b
		}(), want: []string{"spec.phases: Too many: 33: must have at most 32 items"}},
		"name-required": {pt: wrappers.MakePT("p").Phase("", 1), want: []string{
			"spec.phases[0].name: Required value: every phase needs a name"}},
		"name-syntax": {pt: wrappers.MakePT("p").Phase("Train_1", 1), want: []string{
			`spec.phases[0].name: Invalid value: "Train_1": must be lowercase letters, digits and '-', start with a letter and end with a letter or digit (e.g. 'train', 'eval-2')`}},
		"name-too-long": {pt: wrappers.MakePT("p").Phase("a234567890123456789012345678901234", 1), want: []string{
			`spec.phases[0].name: Invalid value: "a234567890123456789012345678901234": must be at most 32 characters`}},
		"name-duplicate": {pt: wrappers.MakePT("p").Phase("train", 1).Phase("train", 1), want: []string{
			`spec.phases[1].name: Duplicate value: "train"`}},
		"valid topology": {pt: wrappers.MakePT("p").Phase("train", 8).Desired(16).Topology(v1alpha1.PhaseTopology{Preferred: "example.com/rack", SliceSize: ptr.To[int32](4), SliceLevel: "kubernetes.io/hostname"}).
			Phase("validate", 4).DependsOn("train").Topology(v1alpha1.PhaseTopology{Required: "example.com/rack", SameDomainAs: "train"})},
		"topology-mode neither": {pt: wrappers.MakePT("p").Phase("train", 8).Topology(v1alpha1.PhaseTopology{}), want: []string{
			`spec.phases[0].topology: Invalid value: "": set exactly one of topology.required and topology.preferred`}},
		"topology-mode both": {pt: wrappers.MakePT("p").Phase("train", 8).Topology(v1alpha1.PhaseTopology{Required: "rack", Preferred: "block"}), want: []string{
			`spec.phases[0].topology: Invalid value: "": set exactly one of topology.required and topology.preferred`}},
		"topology-level": {pt: wrappers.MakePT("p").Phase("train", 8).Topology(v1alpha1.PhaseTopology{Required: "example.com/rack/x"}), want: []string{
			`spec.phases[0].topology.required: Invalid value: "example.com/rack/x": must be a node label key (a topology level): a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`}},
		"topology-slice": {pt: wrappers.MakePT("p").Phase("train", 8).Desired(12).Topology(v1alpha1.PhaseTopology{Preferred: "rack", SliceSize: ptr.To[int32](8)}), want: []string{
			`spec.phases[0].topology.sliceSize: Invalid value: 8: must divide gang.min (8) and gang.desired (12): the workers are placed in whole slices`}},
		"topology-slice level without size": {pt: wrappers.MakePT("p").Phase("train", 8).Topology(v1alpha1.PhaseTopology{Preferred: "rack", SliceLevel: "host"}), want: []string{
			`spec.phases[0].topology.sliceLevel: Invalid value: "host": sliceLevel needs sliceSize`}},
		"topology-same-domain": {pt: wrappers.MakePT("p").Phase("train", 8).Phase("validate", 2).Topology(v1alpha1.PhaseTopology{Preferred: "rack", SameDomainAs: "train"}), want: []string{
			`spec.phases[1].topology.sameDomainAs: Invalid value: "train": must name a phase this phase dependsOn []: its workers must have run before this phase queues`}},
		"gang-min": {pt: wrappers.MakePT("p").Phase("train", 0), want: []string{
			"spec.phases[0].gang.min: Invalid value: 0: must be at least 1"}},
		// SetDefaults made desired = min: the one mistake is reported once.
		"gang-min with desired defaulted": {pt: wrappers.MakePT("p").Phase("train", 10001).Desired(10001), want: []string{
			"spec.phases[0].gang.min: Invalid value: 10001: must be at most 10000"}},
		"gang-min too big": {pt: wrappers.MakePT("p").Phase("train", 10001), want: []string{
			"spec.phases[0].gang.min: Invalid value: 10001: must be at most 10000"}},
		"gang-desired": {pt: wrappers.MakePT("p").Phase("train", 8).Desired(4), want: []string{
			"spec.phases[0].gang.desired: Invalid value: 4: must be greater than or equal to gang.min (8)"}},
		"gang-desired too big": {pt: wrappers.MakePT("p").Phase("train", 8).Desired(10001), want: []string{
			"spec.phases[0].gang.desired: Invalid value: 10001: must be at most 10000"}},
		"gang-desired zero": {pt: wrappers.MakePT("p").Phase("train", 1).Desired(0), want: []string{
			"spec.phases[0].gang.desired: Invalid value: 0: must be at least 1"}},
		"template-containers": {pt: wrappers.MakePT("p").Phase("train", 1).NoContainers(), want: []string{
			"spec.phases[0].template.spec.containers: Required value: must have at least one container"}},
		"valid extended resource limit only": {pt: wrappers.MakePT("p").Phase("train", 1).Resources(
			corev1.ResourceList{"cpu": q("1")}, corev1.ResourceList{gpu: q("2")})},
		"valid extended resource request equals limit": {pt: wrappers.MakePT("p").Phase("train", 1).Resources(
			corev1.ResourceList{gpu: q("2"), "cpu": q("1")}, corev1.ResourceList{gpu: q("2000m")})},
		"template-pod extended resource without limit": {pt: wrappers.MakePT("p").Phase("train", 1).Resources(
			corev1.ResourceList{gpu: q("1"), "cpu": q("4")}, corev1.ResourceList{"cpu": q("8")}), want: []string{
			`spec.phases[0].template.spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "1": nvidia.com/gpu has a request but no limit: it cannot be overcommitted, so the API server rejects the worker pods; set limits[nvidia.com/gpu] to 1 too, or set only the limit (the request defaults to it)`}},
		"template-pod extended resource request below limit": {pt: wrappers.MakePT("p").Phase("train", 1).Resources(
			corev1.ResourceList{gpu: q("1")}, corev1.ResourceList{gpu: q("2")}), want: []string{
			`spec.phases[0].template.spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "1": must equal limits[nvidia.com/gpu] (2): nvidia.com/gpu cannot be overcommitted, so the API server rejects the worker pods`}},
		"template-pod sidecar and huge pages": {pt: wrappers.MakePT("p").Phase("train", 1).PodSpec(func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: "proxy", Image: "proxy:1", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"hugepages-2Mi": q("1Gi"), "example.com/nic": q("1")}}}}
		}), want: []string{
			`spec.phases[0].template.spec.initContainers[0].resources.requests[example.com/nic]: Invalid value: "1": example.com/nic has a request but no limit: it cannot be overcommitted, so the API server rejects the worker pods; set limits[example.com/nic] to 1 too, or set only the limit (the request defaults to it)`,
			`spec.phases[0].template.spec.initContainers[0].resources.requests[hugepages-2Mi]: Invalid value: "1Gi": hugepages-2Mi has a request but no limit: it cannot be overcommitted, so the API server rejects the worker pods; set limits[hugepages-2Mi] to 1Gi too, or set only the limit (the request defaults to it)`}},
		"template-pinning nodeName": {pt: wrappers.MakePT("p").Phase("train", 1).PodSpec(func(s *corev1.PodSpec) { s.NodeName = "node-a" }), want: []string{
			"spec.phases[0].template.spec.nodeName: Forbidden: phasegang pins workers to their granted nodes; a template must not bind its pods itself: remove nodeName and use nodeSelector or node affinity to choose nodes"}},
		"template-pinning schedulerName": {pt: wrappers.MakePT("p").Phase("train", 1).PodSpec(func(s *corev1.PodSpec) { s.SchedulerName = "volcano" }), want: []string{
			`spec.phases[0].template.spec.schedulerName: Unsupported value: "volcano": supported values: "default-scheduler"`}},
		"template-pinning default schedulerName": {pt: wrappers.MakePT("p").Phase("train", 1).PodSpec(func(s *corev1.PodSpec) { s.SchedulerName = "default-scheduler" })},
		"template-pinning hostPort is allowed": {pt: wrappers.MakePT("p").Phase("train", 1).PodSpec(func(s *corev1.PodSpec) {
			s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 29500}, {ContainerPort: 8080, HostPort: 8080}}
		})}, // the engine keeps workers with conflicting host ports on distinct nodes
		"template-pinning required anti-affinity": {pt: wrappers.MakePT("p").Phase("train", 1).PodSpec(func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}}}}
		}), want: []string{
			"spec.phases[0].template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]: Forbidden: phasegang honours required pod anti-affinity only to keep a gang's own workers one per node (topologyKey kubernetes.io/hostname, a labelSelector that selects the template's labels, no namespaces): labelSelector app=x does not select the template's labels (none)"}},
		"template-pinning required anti-affinity between the gang's own workers": {pt: wrappers.MakePT("p").Phase("train", 1).Template(func(t *corev1.PodTemplateSpec) { t.Labels = map[string]string{"app": "x"} }).PodSpec(func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}}}}
		})},
		"template-pinning required anti-affinity across zones": {pt: wrappers.MakePT("p").Phase("train", 1).Template(func(t *corev1.PodTemplateSpec) { t.Labels = map[string]string{"app": "x"} }).PodSpec(func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				{TopologyKey: "topology.kubernetes.io/zone", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}}}}
		}), want: []string{
			`spec.phases[0].template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]: Forbidden: phasegang honours required pod anti-affinity only to keep a gang's own workers one per node (topologyKey kubernetes.io/hostname, a labelSelector that selects the template's labels, no namespaces): topologyKey "topology.kubernetes.io/zone" is not kubernetes.io/hostname`}},
		"template-pod fractional extended resource": {pt: wrappers.MakePT("p").Phase("train", 1).Resources(
			nil, corev1.ResourceList{gpu: q("500m"), "cpu": q("500m")}), want: []string{
			`spec.phases[0].template.spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "500m": must be a whole number: the API server rejects fractions of an extended resource`}},
		"template-pod ephemeral containers": {pt: wrappers.MakePT("p").Phase("train", 1).PodSpec(func(s *corev1.PodSpec) {
			s.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
		}), want: []string{
			"spec.phases[0].template.spec.ephemeralContainers: Forbidden: cannot be set on create: the API server rejects every worker pod that has them"}},
		"template-schema duplicate keys": {pt: wrappers.MakePT("p").Phase("train", 1).PodSpec(func(s *corev1.PodSpec) {
			c := &s.Containers[0]
			c.Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B"}, {Name: "A", Value: "2"}}
			c.Ports = []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 80, Protocol: corev1.ProtocolUDP}, {ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
			s.Containers = append(s.Containers, corev1.Container{Name: "worker", Image: "trainer:2"})
			s.Volumes = []corev1.Volume{{Name: "data"}, {Name: "data"}}
		}), want: []string{
			`spec.phases[0].template.spec.containers[1].name: Duplicate value: "worker"`,
			`spec.phases[0].template.spec.containers[0].env[2].name: Duplicate value: "A"`,
			`spec.phases[0].template.spec.containers[0].ports[2]: Duplicate value: "80/TCP"`,
			`spec.phases[0].template.spec.volumes[1].name: Duplicate value: "data"`}},
		"template-schema required and bounds": {pt: wrappers.MakePT("p").Phase("train", 1).PodSpec(func(s *corev1.PodSpec) {
			s.Containers[0].RestartPolicyRules = []corev1.ContainerRestartRule{{ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Values: []int32{1, 1}}}}
			s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
			s.EvictionResponders = []corev1.EvictionResponder{{Name: "acme.io/drain"}, {Priority: ptr.To[int32](100001)}}
		}), want: []string{
			"spec.phases[0].template.spec.containers[0].restartPolicyRules[0].action: Required value",
			"spec.phases[0].template.spec.containers[0].restartPolicyRules[0].exitCodes.operator: Required value",
			`spec.phases[0].template.spec.containers[0].restartPolicyRules[0].exitCodes.values[1]: Duplicate value: "1"`,
			"spec.phases[0].template.spec.evictionResponders[0].priority: Required value",
			"spec.phases[0].template.spec.evictionResponders[1].name: Required value",
			"spec.phases[0].template.spec.evictionResponders[1].priority: Invalid value: 100001: must be between 0 and 100000",
			"spec.phases[0].template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value"}},
		"max-retries": {pt: wrappers.MakePT("p").Phase("train", 1).Retries(-1), want: []string{
			"spec.phases[0].maxRetries: Invalid value: -1: must be at least 0"}},
		"max-retries too many": {pt: wrappers.MakePT("p").Phase("train", 1).Retries(101), want: []string{
			"spec.phases[0].maxRetries: Invalid value: 101: must be at most 100"}},
		"start-backoff-limit": {pt: wrappers.MakePT("p").Phase("train", 1).StartBackoffLimit(-1), want: []string{
			"spec.phases[0].startBackoffLimit: Invalid value: -1: must be at least 0"}},
		"timeout": {pt: wrappers.MakePT("p").Phase("train", 1).Timeout(-1e9).StartTimeout(0), want: []string{
			`spec.phases[0].timeout: Invalid value: "-1s": must be greater than 0 when set`,
			`spec.phases[0].startTimeout: Invalid value: "0s": must be greater than 0 when set`}},
		"ref-syntax": {pt: ok().Iterate(2, "", "Train").DependsOn("Validate", "x-"), want: []string{
			`spec.phases[2].dependsOn[1]: Invalid value: "Validate": not a phase name: must be lowercase letters, digits and '-', start with a letter and end with a letter or digit (e.g. 'train', 'eval-2') (did you mean "validate"?)`,
			`spec.phases[2].dependsOn[2]: Invalid value: "x-": not a phase name: must be lowercase letters, digits and '-', start with a letter and end with a letter or digit (e.g. 'train', 'eval-2')`,
			`spec.iterate.phases[0]: Invalid value: "Train": not a phase name: must be lowercase letters, digits and '-', start with a letter and end with a letter or digit (e.g. 'train', 'eval-2') (did you mean "train"?)`}},
		"ref-syntax too long": {pt: ok().DependsOn(strings.Repeat("a", 33)), want: []string{
			`spec.phases[2].dependsOn[1]: Invalid value: "` + strings.Repeat("a", 33) + `": not a phase name: must be at most 32 characters`}},
		"depends-too-many": {pt: func() *wrappers.PT {
			b, names := manyPhases(32)
			return b.Phase("last", 1).DependsOn(append(names, "p00")...)
		}(), want: []string{
			"spec.phases: Too many: 33: must have at most 32 items",
			"spec.phases[32].dependsOn: Too many: 33: must have at most 32 items",
			`spec.phases[32].dependsOn[32]: Duplicate value: "p00"`}},
		"depends-unknown": {pt: wrappers.MakePT("p").Phase("train", 1).Phase("validate", 1).DependsOn("trian").Phase("test", 1).DependsOn("zzz"), want: []string{
			`spec.phases[1].dependsOn[0]: Invalid value: "trian": unknown phase (did you mean "train"?)`,
			`spec.phases[2].dependsOn[0]: Invalid value: "zzz": unknown phase`}},
		"depends-self": {pt: wrappers.MakePT("p").Phase("train", 1).DependsOn("train"), want: []string{
			`spec.phases[0].dependsOn[0]: Invalid value: "train": a phase cannot depend on itself`}},
		"depends-duplicate": {pt: wrappers.MakePT("p").Phase("prep", 1).Phase("train", 1).DependsOn("prep", "prep"), want: []string{
			`spec.phases[1].dependsOn[1]: Duplicate value: "prep"`}},
		"depends-cycle": {pt: wrappers.MakePT("p").Phase("prep", 1).Phase("train", 1).DependsOn("prep", "validate").Phase("validate", 1).DependsOn("train"), want: []string{
			`spec.phases[2].dependsOn[0]: Invalid value: "train": dependency cycle train → validate → train`}},
		"depends-cycle-3": {pt: wrappers.MakePT("p").Phase("a", 1).DependsOn("c").Phase("b", 1).DependsOn("a").Phase("c", 1).DependsOn("b"), want: []string{
			`spec.phases[1].dependsOn[0]: Invalid value: "a": dependency cycle a → b → c → a`}},
		"outputs-too-many": {pt: func() *wrappers.PT {
			b := wrappers.MakePT("p").Phase("train", 1)
			for i := range 33 {
				b.Outputs(fmt.Sprintf("o%d", i))
			}
			return b
		}(), want: []string{"spec.phases[0].outputs: Too many: 33: must have at most 32 items"}},
		"output-identifier": {pt: wrappers.MakePT("p").Phase("train", 1).Outputs("val-loss"), want: []string{
			`spec.phases[0].outputs[0]: Invalid value: "val-loss": must be an identifier: a letter or '_' followed by letters, digits or '_'`}},
		"output-duplicate": {pt: wrappers.MakePT("p").Phase("train", 1).Outputs("loss", "loss"), want: []string{
			`spec.phases[0].outputs[1]: Duplicate value: "loss"`}},
		"output-too-long": {pt: wrappers.MakePT("p").Phase("train", 1).Outputs(strings.Repeat("x", 64)), want: []string{
			`spec.phases[0].outputs[0]: Invalid value: "` + strings.Repeat("x", 64) + `": must be at most 63 characters`}},
		"expr-too-long when": {pt: ok().When(strings.Repeat("a", 1025)), want: []string{
			"spec.phases[2].when: Too long: may not be more than 1024 characters"}},
		"expr-too-long successPolicy": {pt: ok().SuccessPolicy(strings.Repeat("a", 1025)), want: []string{
			"spec.phases[2].successPolicy: Too long: may not be more than 1024 characters"}},
		"expr-too-long until": {pt: loopPT(2).Iterate(2, strings.Repeat("a", 1025), "train"), want: []string{
			"spec.iterate.until: Too long: may not be more than 1024 characters"}},
		// The API server counts characters, not bytes: 1,007 characters
		// in 2,007 bytes are fine.
		"valid long expression": {pt: ok().When("'" + strings.Repeat("é", 1000) + "' != ''")},
		"when-expr unknown phase": {pt: ok().When("phases.trian.state == 'Succeeded'"), want: []string{
			`spec.phases[2].when: Invalid value: "phases.trian.state == 'Succeeded'": unknown name trian: phases has only test, train, validate (1:8)`}},
		"when-expr undeclared output": {pt: ok().When("float(phases.validate.outputs.acc) > 0.9"), want: []string{
			`spec.phases[2].when: Invalid value: "float(phases.validate.outputs.acc) > 0.9": unknown name acc: declares only the outputs accuracy (1:31)`}},
		"when-expr no outputs": {pt: ok().When("phases.train.outputs.loss == ''"), want: []string{
			`spec.phases[2].when: Invalid value: "phases.train.outputs.loss == ''": unknown name loss: declares no outputs (add the key to spec.phases[].outputs) (1:22)`}},
		"when-expr unknown variable": {pt: ok().When("trian == 1"), want: []string{
			`spec.phases[2].when: Invalid value: "trian == 1": unknown name trian (1:1)`}},
		"when-expr not boolean": {pt: ok().When("iteration + 1"), want: []string{
			`spec.phases[2].when: Invalid value: "iteration + 1": expected bool, but got int`}},
		"when-expr syntax": {pt: ok().When("phases.train.state =="), want: []string{
			`spec.phases[2].when: Invalid value: "phases.train.state ==": unexpected token EOF (1:21)`}},
		"policy-expr": {pt: wrappers.MakePT("p").Phase("train", 4).SuccessPolicy("succeeded >= worker / 2"), want: []string{
			`spec.phases[0].successPolicy: Invalid value: "succeeded >= worker / 2": unknown name worker (1:14)`}},
		"policy-expr miscased": {pt: wrappers.MakePT("p").Phase("train", 4).SuccessPolicy("chief"), want: []string{
			`spec.phases[0].successPolicy: Invalid value: "chief": must be AllWorkers, Chief or a boolean expression (did you mean Chief?)`}},
		"priority-both": {pt: ok().Priority(5).PriorityClass("high"), want: []string{
			"spec.priorityClassName: Forbidden: may not be set together with spec.priority: set one of them"}},
		"priority-class-too-long": {pt: ok().PriorityClass(strings.Repeat("a", 254)), want: []string{
			"spec.priorityClassName: Too long: may not be more than 253 characters"}},
		"queue-name": {pt: ok().Queue("Team_A"), want: []string{
			`spec.queueName: Invalid value: "Team_A": must be a TenantQueue's name: lowercase letters, digits, '-' and '.'`}},
		"queue-name too long": {pt: ok().Queue(strings.Repeat("a", 254)), want: []string{
			"spec.queueName: Too long: may not be more than 253 characters"}},
		"iterate-empty": {pt: ok().Iterate(2, ""), want: []string{
			"spec.iterate.phases: Required value: must name at least one phase to repeat"}},
		"iterate-unknown": {pt: ok().Iterate(2, "", "trian"), want: []string{
			`spec.iterate.phases[0]: Invalid value: "trian": unknown phase (did you mean "train"?)`}},
		"iterate-duplicate": {pt: ok().Iterate(2, "", "train", "train"), want: []string{
			`spec.iterate.phases[1]: Duplicate value: "train"`}},
		"iterate-max": {pt: ok().Iterate(0, "", "train"), want: []string{
			"spec.iterate.maxIterations: Invalid value: 0: must be at least 1"}},
		"iterate-max too many": {pt: ok().Iterate(1001, "", "train"), want: []string{
			"spec.iterate.maxIterations: Invalid value: 1001: must be at most 1000"}},
		"iterate-too-many": {pt: func() *wrappers.PT {
			b, names := manyPhases(32)
			return b.Iterate(2, "", append(names, "p00")...)
		}(), want: []string{
			"spec.iterate.phases: Too many: 33: must have at most 32 items",
			`spec.iterate.phases[32]: Duplicate value: "p00"`}},
		"iterate-open": {pt: ok().Iterate(2, "", "train", "test"), want: []string{
			`spec.iterate.phases: Invalid value: ["train","test"]: phase validate runs after loop phase train and before loop phase test, so it would have to run inside the loop: add it to iterate.phases or remove one of those dependencies`}},
		"until-expr": {pt: ok().Iterate(2, "phases.validate.outputs.accuracy > 0.9", "train", "validate"), want: []string{
			`spec.iterate.until: Invalid value: "phases.validate.outputs.accuracy > 0.9": invalid operation: > (mismatched types string and float64) (1:34)`}},
		"several errors at once": {pt: wrappers.MakePT("p").Phase("train", 0).Phase("x", 1).DependsOn("nope").When("nope"), want: []string{
			"spec.phases[0].gang.min: Invalid value: 0: must be at least 1",
			`spec.phases[1].dependsOn[0]: Invalid value: "nope": unknown phase`,
			`spec.phases[1].when: Invalid value: "nope": unknown name nope (1:1)`}},
	}
}

func TestValidate(t *testing.T) {
	for name, tt := range validateCases() {
		t.Run(name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, errStrings(tt.pt)); d != "" {
				t.Errorf("Validate (-want +got):\n%s", d)
			}
		})
	}
}

// TestErrorClassesCovered keeps ErrorClasses and the table above in sync: a
// new class without a case named after it fails here.
func TestErrorClassesCovered(t *testing.T) {
	cases := validateCases()
	for _, c := range ErrorClasses {
		found := false
		for name := range cases {
			if name == c || strings.HasPrefix(name, c+" ") {
				found = true
			}
		}
		if !found {
			t.Errorf("error class %s has no TestValidate case", c)
		}
	}
}
