//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// apiOutage is how long TestAPIServerRestart keeps kube-apiserver down
// (E2E_APISERVER_OUTAGE, a Go duration, overrides it to measure longer
// outages): long enough for client-go's default reflector backoff to grow
// past several seconds, short enough for kube-scheduler and kwok (which
// keep that backoff) to come back soon.
func apiOutage(t *testing.T) time.Duration {
	if v := os.Getenv("E2E_APISERVER_OUTAGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("E2E_APISERVER_OUTAGE: %v", err)
		}
		return d
	}
	return 10 * time.Second
}

// The API server restarted: the controller's /readyz fails while it is
// down, and a pipeline created right after it is back gets its pods
// within seconds (the informers resume at once, see controllers/health.go).
func TestAPIServerRestart(t *testing.T) {
	dir := os.Getenv("PHASEGANG_CLUSTER_DIR")
	if dir == "" {
		t.Skip("PHASEGANG_CLUSTER_DIR not set (run through make e2e)")
	}
	ns := namespace(t)
	nodes(t, "pool-restart", 1, 8)
	before := create(t, wrappers.NewPT(ns, "before").Phase("work", 1).PodTemplate(worker("pool-restart", 1, 1, "")).Obj())
	start := time.Now()
	waitState(t, before, v1alpha1.PipelineSucceeded, 30*time.Second)
	t.Logf("before the outage: a pipeline ran in %s", time.Since(start).Round(100*time.Millisecond))
	if err := readyz(); err != nil {
		t.Fatalf("/readyz before the outage: %v", err)
	}

	outage := apiOutage(t)
	apiserver(t, dir, "stop")
	restarted := false
	t.Cleanup(func() {
		if !restarted { // the following tests need it
			apiserver(t, dir, "start")
		}
	})
	time.Sleep(outage / 2)
	if err := readyz(); err == nil {
		t.Errorf("/readyz passes while the API server is down")
	} else {
		t.Logf("/readyz during the outage: %v", err)
	}
	time.Sleep(outage / 2)
	apiserver(t, dir, "start")
	restarted = true
	back := time.Now()

	after := create(t, wrappers.NewPT(ns, "after").Phase("work", 1).PodTemplate(worker("pool-restart", 1, 1, "")).Obj())
	eventually(t, 60*time.Second, "the new pipeline's pod", func() (bool, error) {
		return len(pods(t, ns, map[string]string{"phasegang.dev/pipeline": after.Name})) > 0, nil
	})
	resumed := time.Since(back)
	t.Logf("API server down %s; first pod of a pipeline created after it came back: %s later", outage, resumed.Round(100*time.Millisecond))
	if resumed > 8*time.Second {
		t.Errorf("the controller took %s to resume after the API server came back, want a few seconds", resumed.Round(100*time.Millisecond))
	}
	eventually(t, 10*time.Second, "/readyz to pass again", func() (bool, error) {
		err := readyz()
		return err == nil, err
	})
	// kube-scheduler and kwok keep client-go's default backoff: wait for
	// them too, so the following tests start on a working cluster.
	waitState(t, after, v1alpha1.PipelineSucceeded, 90*time.Second)
	t.Logf("after the outage: the new pipeline succeeded %s after the API server came back", time.Since(back).Round(100*time.Millisecond))
}

// apiserver runs test/cluster/apiserver.sh stop|start on the cluster in dir.
func apiserver(t *testing.T, dir, action string) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(repoRoot, "test/cluster/apiserver.sh"), action, "--dir", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("apiserver.sh %s: %v: %s", action, err, out)
	}
}

// readyz asks the controller's readiness probe.
func readyz() error {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + controller.probes + "/readyz?verbose")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b strings.Builder
		buf := make([]byte, 512)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(b.String()))
	}
	return nil
}
