package wrappers

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// Examples decodes every dir/*.yaml (the shipped examples/), keyed by file
// name, and fails the test if there is none or one does not decode.
func Examples(t testing.TB, dir string) map[string][]v1alpha1.PhasedTraining {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples in %s: %v", dir, err)
	}
	out := make(map[string][]v1alpha1.PhasedTraining, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := v1alpha1.DecodeObjects(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var pts []v1alpha1.PhasedTraining
		for _, o := range objs {
			if pt, ok := o.(*v1alpha1.PhasedTraining); ok {
				pts = append(pts, *pt)
			}
		}
		out[filepath.Base(f)] = pts
	}
	return out
}
