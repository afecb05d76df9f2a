//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// A real PyTorch pipeline (make e2e-torch): train is torch.distributed DDP
// with the gloo backend over the RANK, WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT phasegang sets, 2 workers; validate loads train's model from
// the pipeline's directory and reports its accuracy; test runs only if the
// accuracy passes the `when`. The image is Debian's python3-torch 1.13
// (test/cluster/build-torch.sh); the script is test/realnode/torch/ddp.py,
// mounted from a ConfigMap.
func TestRealPyTorch(t *testing.T) {
	realNode(t)
	if os.Getenv("PHASEGANG_TORCH_IMAGE") == "" {
		t.Skip("no PyTorch image on the real node: run `make e2e-torch`")
	}
	ns := namespace(t)
	script, err := os.ReadFile(filepath.Join(repoRoot, "test", "realnode", "torch", "ddp.py"))
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ddp"}, Data: map[string]string{"ddp.py": string(script)}}
	if err := k8s.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	dir := realDir(t, ns, "torch")
	torch := func(phase string) corev1.PodTemplateSpec {
		tmpl := trainer(1, dir, nil)
		c := &tmpl.Spec.Containers[0]
		c.Image, c.Command, c.Args = "phasegang.test/torch:dev", []string{"python3", "/script/ddp.py"}, []string{phase}
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "script", MountPath: "/script"})
		tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, corev1.Volume{Name: "script", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "ddp"}}}})
		return tmpl
	}
	pt := create(t, wrappers.NewPT(ns, "ddp").
		Phase("train", 2).PodTemplate(torch("train")).With(func(p *v1alpha1.Phase) { p.Outputs = []string{"loss", "in_sync", "world"} }).
		Phase("validate", 1).PodTemplate(torch("validate")).DependsOn("train").With(func(p *v1alpha1.Phase) { p.Outputs = []string{"accuracy"} }).
		Phase("test", 1).PodTemplate(torch("test")).DependsOn("validate").With(func(p *v1alpha1.Phase) {
		p.When = "float(phases.validate.outputs.accuracy) >= 0.9"
		p.Outputs = []string{"accuracy"}
	}).Obj())
	start := time.Now()
	done := waitState(t, pt, v1alpha1.PipelineSucceeded, 5*time.Minute)
	t.Logf("ddp Succeeded %.1f s after apply", time.Since(start).Seconds())
	out := map[string]map[string]string{}
	for _, ps := range done.Status.Phases {
		out[ps.Name] = ps.Outputs
		t.Logf("%s: %s, outputs %v, ran %s", ps.Name, ps.State, ps.Outputs, ps.EndTime.Sub(ps.StartTime.Time))
	}
	if out["train"]["in_sync"] != "true" || out["train"]["world"] != "2" {
		t.Errorf("train's outputs %v: want 2 ranks with their replicas in sync", out["train"])
	}
	if loss, err := strconv.ParseFloat(out["train"]["loss"], 64); err != nil || loss > 0.01 {
		t.Errorf("train's loss %q: want a trained model (< 0.01)", out["train"]["loss"])
	}
	if acc, _ := strconv.ParseFloat(out["validate"]["accuracy"], 64); acc < 0.9 || out["test"]["accuracy"] == "" {
		t.Errorf("validate %v, test %v: want accuracy ≥ 0.9 and test run", out["validate"], out["test"])
	}
	for name, log := range gangLogs(t, ns, ptLabels("ddp", "train")) {
		if !strings.Contains(log, "process group up") || !strings.Contains(log, "replicas in sync: True") {
			t.Errorf("%s:\n%s", name, log)
		}
		t.Logf("%s:\n%s", name, log)
	}
}
