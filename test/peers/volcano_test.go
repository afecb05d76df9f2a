package main

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestVCJob: a phase's vcjob is one task of gang-size replicas, all
// required, with the harness's pod template and what Volcano's webhook
// would default (the harness runs without it).
func TestVCJob(t *testing.T) {
	p := seedWorkload().pipelines[3]
	u, err := vcJob(3, p, 1) // validate: 2 workers
	if err != nil {
		t.Fatal(err)
	}
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	// The fields of batch.volcano.sh/v1alpha1 Job the harness sets.
	var j struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name, Namespace string
			Labels          map[string]string
		}
		Spec struct {
			SchedulerName string `json:"schedulerName"`
			Queue         string `json:"queue"`
			MinAvailable  int32  `json:"minAvailable"`
			MaxRetry      int32  `json:"maxRetry"`
			Tasks         []struct {
				Name         string                 `json:"name"`
				Replicas     int32                  `json:"replicas"`
				MinAvailable *int32                 `json:"minAvailable"`
				MaxRetry     int32                  `json:"maxRetry"`
				Template     corev1.PodTemplateSpec `json:"template"`
			} `json:"tasks"`
		}
	}
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	if j.APIVersion != "batch.volcano.sh/v1alpha1" || j.Kind != "Job" {
		t.Errorf("apiVersion %q kind %q", j.APIVersion, j.Kind)
	}
	if j.Metadata.Name != "job-3-validate" || j.Metadata.Namespace != runNamespace {
		t.Errorf("name %s/%s", j.Metadata.Namespace, j.Metadata.Name)
	}
	if j.Spec.SchedulerName != "volcano" || j.Spec.Queue != "default" || j.Spec.MinAvailable != 2 || j.Spec.MaxRetry != 3 {
		t.Errorf("spec %+v", j.Spec)
	}
	if len(j.Spec.Tasks) != 1 {
		t.Fatalf("%d tasks, want 1", len(j.Spec.Tasks))
	}
	task := j.Spec.Tasks[0]
	if task.Replicas != 2 || task.MinAvailable == nil || *task.MinAvailable != 2 || task.MaxRetry != 3 || task.Name == "" {
		t.Errorf("task %+v", task)
	}
	tmpl := task.Template
	if tmpl.Labels[labelPipeline] != "3" || tmpl.Labels[labelPhase] != "1" {
		t.Errorf("template labels %v", tmpl.Labels)
	}
	if tmpl.Annotations["phasegang.dev/sim-run-seconds"] != "5" {
		t.Errorf("template annotations %v", tmpl.Annotations)
	}
	if len(tmpl.Spec.Containers) != 1 || tmpl.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Fatalf("template spec %+v", tmpl.Spec)
	}
	if q := tmpl.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"]; q.Value() != 1 {
		t.Errorf("GPU request %v, want 1", q.String())
	}
}
