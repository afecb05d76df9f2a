package planner

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestPatchRerunsTheSeed runs doc.go's commands, with a temporary
// directory for /tmp/planner, and checks the figure the docs quote.
func TestPatchRerunsTheSeed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the simulator at the patch's commit and plans the seed (about a minute)")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("git", "-C", root, "cat-file", "-e", "47fd934^{commit}").Run(); err != nil {
		t.Skip("commit 47fd934 is not in this checkout (a shallow clone?)")
	}
	dir := filepath.Join(t.TempDir(), "planner")
	t.Cleanup(func() { _ = exec.Command("git", "-C", root, "worktree", "remove", "--force", dir).Run() })
	script := strings.Join([]string{
		"set -e",
		"git worktree add " + dir + " 47fd934",
		`git -C ` + dir + ` apply "$PWD/hack/planner/planner.patch"`,
		"cd " + dir + "/sim && X_SUITE=seed X_E=0.9 X_STEP=1m X_BASEGUARD=0.8 X_ROBUST=1 X_BASEVIEW=forecast X_LEARN=fit X_GATE=0.1 X_MINN=1 go test -run '^TestScratchEnginePlanner$' -v -timeout 3h .",
	}, "\n")
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = root
	// The go that runs this test builds the patched tree, on PATH or not.
	gobin := filepath.Join(runtime.GOROOT(), "bin")
	cmd.Env = append(os.Environ(), "PWD="+root, "PATH="+gobin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		"verdict planner: [] ",
		"planner: makespan 3h37m34s (1.0948 LB)",
		"fit 1h5m0s 0.9",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
