package realnode

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The PyTorch pipeline (make e2e-torch) is not in CI: its image takes
// minutes to build. It must run again whenever the worker pod builder
// changes, since that is what sets RANK, WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT for torch.distributed. hack/e2e-real.sh records the builder's
// hash in torch/last-run.txt when TestRealPyTorch passes; this test fails
// when the builder no longer matches it.
func TestPyTorchRanOnTheCurrentWorkerPodBuilder(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("torch", "last-run.txt"))
	if err != nil {
		t.Fatalf("no record of a make e2e-torch run: %v", err)
	}
	var recorded string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "driver/workers_pod.go sha256 "); ok {
			recorded = strings.TrimSpace(v)
		}
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "driver", "workers_pod.go"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	if got := hex.EncodeToString(sum[:]); got != recorded {
		t.Fatalf("driver/workers_pod.go (sha256 %s) changed since make e2e-torch last passed (%s): run it as root and commit test/realnode/torch/last-run.txt", got, recorded)
	}
}
