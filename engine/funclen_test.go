package engine

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function may be, from its func keyword to
// its closing brace. A function longer than a screen no longer reads as a
// list of named steps: the next engineer has to hold its closures and
// local state in their head to change one rule (issue 30, "the house").
const maxFuncLines = 80

// funcLenRoots are the folders, relative to this one, whose non-test,
// non-generated code is held to maxFuncLines.
var funcLenRoots = []string{".", "../driver", "../controllers", "../sim", "../phases", "../cmd"}

// longFuncAllowlist names functions ("file:name", file relative to the
// module root) still over the limit. Each entry is a TODO: split it into
// named steps and remove it here.
var longFuncAllowlist = map[string]bool{}

// TestNoLongFunctions fails naming every function in the deciding and
// adapting packages longer than maxFuncLines, so that long functions are
// split into steps when written rather than in a clean-up later.
func TestNoLongFunctions(t *testing.T) {
	fset := token.NewFileSet()
	seen := map[string]bool{}
	for _, root := range funcLenRoots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			if ast.IsGenerated(f) {
				return nil
			}
			rel := filepath.ToSlash(filepath.Join("engine", path))
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				start := fset.Position(fn.Pos()).Line // the func keyword, not the doc comment
				lines := fset.Position(fn.End()).Line - start + 1
				if lines <= maxFuncLines {
					continue
				}
				key := rel + ":" + fn.Name.Name
				seen[key] = true
				if !longFuncAllowlist[key] {
					t.Errorf("%s:%d: %s is %d lines, over %d: split it into named steps", rel, start, funcName(fn), lines, maxFuncLines)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for key := range longFuncAllowlist {
		if !seen[key] {
			t.Errorf("%s is allowlisted but no longer over %d lines: remove it from longFuncAllowlist", key, maxFuncLines)
		}
	}
}

// funcName spells a function as Go does in a stack trace: (*T).m, T.m or f.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	recv := fn.Recv.List[0].Type
	ptr := ""
	if st, ok := recv.(*ast.StarExpr); ok {
		ptr, recv = "*", st.X
	}
	switch ix := recv.(type) { // generic receivers T[P] and T[P, Q]
	case *ast.IndexExpr:
		recv = ix.X
	case *ast.IndexListExpr:
		recv = ix.X
	}
	name := fmt.Sprint(recv)
	if id, ok := recv.(*ast.Ident); ok {
		name = id.Name
	}
	if ptr != "" {
		return "(*" + name + ")." + fn.Name.Name
	}
	return name + "." + fn.Name.Name
}
