package crd_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// yamlBlock is a ```yaml fenced block of a Markdown page.
var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// TestQueueDocsYAML: every object in docs/queues.md's YAML blocks, as a
// user would paste it, is admitted by the API server (the TenantQueues
// by their CRD, the PhasedTraining by its own), so the guide's example
// works verbatim.
func TestQueueDocsYAML(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "queues.md"))
	if err != nil {
		t.Fatal(err)
	}
	servers := map[string]*apiServer{"TenantQueue": newAPIServerFor(t, queueCRDPath), "PhasedTraining": newAPIServer(t)}
	kinds := map[string]int{}
	for _, m := range yamlBlock.FindAllSubmatch(data, -1) {
		for _, doc := range strings.Split(string(m[1]), "\n---\n") {
			js, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				t.Fatalf("docs/queues.md: %v\n%s", err, doc)
			}
			var obj map[string]any
			if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &obj); err != nil {
				t.Fatal(err)
			}
			kind, _ := obj["kind"].(string)
			s := servers[kind]
			if s == nil {
				t.Fatalf("docs/queues.md: an object of kind %q", kind)
			}
			kinds[kind]++
			if errs := s.create(obj); len(errs) > 0 {
				t.Errorf("docs/queues.md: the API server rejects this %s:\n%v\n%s", kind, errs.ToAggregate(), doc)
			}
			if kind == "TenantQueue" {
				if got := localQueue(t, obj); len(got) > 0 {
					t.Errorf("docs/queues.md: phasegang validate rejects this TenantQueue: %v\n%s", got, doc)
				}
			}
		}
	}
	if kinds["TenantQueue"] == 0 || kinds["PhasedTraining"] == 0 {
		t.Errorf("docs/queues.md has %v; want TenantQueues and a PhasedTraining", kinds)
	}
}
