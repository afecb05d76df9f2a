//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// blockAfter is the ```sh block that follows the line `marker` in file.
func blockAfter(t *testing.T, file, marker string) docBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, file))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != marker {
			continue
		}
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		if j == len(lines) || lines[j] != "```sh" {
			t.Fatalf("%s:%d: %s is not followed by a ```sh block", file, i+1, marker)
		}
		end := j + 1
		for end < len(lines) && lines[end] != "```" {
			end++
		}
		return docBlock{file: file, line: j + 2, kind: marker, script: strings.Join(lines[j+1:end], "\n") + "\n"}
	}
	t.Fatalf("%s: no %s block", file, marker)
	return docBlock{}
}

// TestExamples runs the README's examples block verbatim on the local
// cluster (up.sh's two 8-GPU kwok nodes) and checks that every
// PhasedTraining of examples/*.yaml ran to Succeeded, every phase that
// its conditions allow with it.
func TestExamples(t *testing.T) {
	ctx := context.Background()
	var want []*v1alpha1.PhasedTraining
	examples := wrappers.Examples(t, filepath.Join(repoRoot, "examples"))
	for _, file := range slices.Sorted(maps.Keys(examples)) {
		pts := examples[file]
		for i := range pts {
			want = append(want, &pts[i])
		}
	}
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ml"}})
		_ = k8s.Delete(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "research"}})
	})
	b := blockAfter(t, "README.md", "<!-- examples -->")
	out := runScript(t, b, b.script)
	for _, pt := range want {
		got := get(t, pt)
		if got.Status.State != v1alpha1.PipelineSucceeded {
			t.Errorf("%s/%s: %s: %s", pt.Namespace, pt.Name, got.Status.State, describe(got))
		}
		for _, ps := range got.Status.Phases {
			if ps.State != v1alpha1.PhaseSucceeded {
				t.Errorf("%s/%s: phase %s ended %s (%s)", pt.Namespace, pt.Name, driver.PhaseLabel(&ps), ps.State, ps.Message)
			}
		}
		if !strings.Contains(out, pt.Name) {
			t.Errorf("the block's `kubectl get pt` does not list %s:\n%s", pt.Name, out)
		}
	}
	// Each spec phase ran (test only when accuracy allowed it: it does).
	for _, pt := range want {
		got := get(t, pt)
		for _, p := range pt.Spec.Phases {
			if got.Status.Phase(p.Name, 0) == nil {
				t.Errorf("%s: phase %s never ran", pt.Name, p.Name)
			}
		}
	}
}

// TestMissingPriorityClass: a pipeline naming a PriorityClass that does
// not exist runs nothing and says which class it waits for (Queued
// condition and an Event), as a pod is refused; once the class exists it
// runs at the class's value.
func TestMissingPriorityClass(t *testing.T) {
	ns := namespace(t)
	pool := "noclass"
	nodes(t, pool, 1, 2)
	class := fmt.Sprintf("e2e-missing-%d", time.Now().UnixNano()%100000)
	pt := create(t, wrappers.NewPT(ns, "noclass").PriorityClass(class).Phase("train", 1).PodTemplate(worker(pool, 1, 1, "")).Obj())
	wantMsg := driver.WaitingForClass(class)
	eventually(t, 30*time.Second, "a Queued condition naming the class", func() (bool, error) {
		got := get(t, pt)
		for _, c := range got.Status.Conditions {
			if c.Type == string(v1alpha1.ConditionQueued) && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, wantMsg) {
				if c.Reason != v1alpha1.ReasonWaitingForPriorityClass {
					return false, fmt.Errorf("Queued reason %s, want %s", c.Reason, v1alpha1.ReasonWaitingForPriorityClass)
				}
				return true, nil
			}
		}
		return false, fmt.Errorf("%s", describe(got))
	})
	eventuallyEvent(t, ns, driver.ReasonPriorityClassNotFound, class)
	// kubectl get pt shows the waiting gang's workers (granted/desired)
	// and the iteration.
	out, err := exec.Command("kubectl", "get", "pt", "-n", ns, "noclass").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get pt: %v\n%s", err, out)
	}
	t.Logf("kubectl get pt -n %s noclass:\n%s", ns, out)
	// -o wide's Reason says what it waits for.
	if wide, err := exec.Command("kubectl", "get", "pt", "-n", ns, "noclass", "-o", "wide").CombinedOutput(); err != nil || !strings.Contains(string(wide), v1alpha1.ReasonWaitingForPriorityClass) {
		t.Errorf("kubectl get pt -o wide: want Reason %s, got (err %v):\n%s", v1alpha1.ReasonWaitingForPriorityClass, err, wide)
	}
	// (ITERATION is blank at 0: status.iteration is omitted then.)
	if f := strings.Fields(string(out)); len(f) != 11 || strings.Join(f[:6], " ") != "NAME STATE PHASE WORKERS ITERATION AGE" ||
		strings.Join(f[6:10], " ") != "noclass Queued train 0/1" {
		t.Errorf("kubectl get pt: want columns NAME STATE PHASE WORKERS ITERATION AGE and noclass Queued train 0/1, got:\n%s", out)
	}
	// Nothing of it ran meanwhile.
	time.Sleep(2 * time.Second)
	if got := get(t, pt); len(pods(t, ns, nil)) != 0 || got.Status.Phases[0].Workers.Granted != 0 {
		t.Fatalf("a pipeline without its PriorityClass got workers: %s", describe(got))
	}
	priorityClass(t, class, 10)
	waitState(t, pt, v1alpha1.PipelineSucceeded, 30*time.Second)
}
