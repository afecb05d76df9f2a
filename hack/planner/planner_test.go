package planner

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestPatchRerunsTheSeed runs doc.go's commands as written there, with a
// temporary directory for /tmp/planner, and checks the figure the docs
// quote.
func TestPatchRerunsTheSeed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the simulator at the patch's commit and plans the seed (about a minute)")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "planner")
	cmds := docCommands(t, dir)
	t.Cleanup(func() { _ = exec.Command("git", "-C", root, "worktree", "remove", "--force", dir).Run() })
	cmd := exec.Command("bash", "-c", "set -e\n"+strings.Join(cmds, "\n"))
	cmd.Dir = root
	// The go that runs this test builds the patched tree, on PATH or not.
	gobin := filepath.Join(runtime.GOROOT(), "bin")
	cmd.Env = append(os.Environ(), "PWD="+root, "PATH="+gobin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "invalid reference") {
			t.Skipf("the patch's commit is not in this checkout (a shallow clone?):\n%s", out)
		}
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

// docCommands are the commands doc.go lists after "From the repository's
// root:", with dir for /tmp/planner.
func docCommands(t *testing.T, dir string) []string {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, after, found := strings.Cut(string(doc), "From the repository's root:\n//\n")
	if !found {
		t.Fatal(`doc.go has no "From the repository's root:" block`)
	}
	var cmds []string
	for _, line := range strings.Split(after, "\n") {
		c, isCmd := strings.CutPrefix(line, "//\t")
		if !isCmd {
			break
		}
		cmds = append(cmds, strings.ReplaceAll(c, "/tmp/planner", dir))
	}
	if len(cmds) != 3 {
		t.Fatalf("doc.go lists %d commands, want 3 (worktree, apply, test): %q", len(cmds), cmds)
	}
	return cmds
}
