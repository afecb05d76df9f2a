package v1alpha1_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/phases"
)

// FuzzDecodeAndValidate feeds arbitrary bytes through what `phasegang
// validate` and the controller do with user input: decode, default, then
// validate (which parses and type-checks every expression). None of it may
// panic, whatever the input. The corpus starts from the examples, valid and
// invalid, so the fuzzer mutates realistic specs.
func FuzzDecodeAndValidate(f *testing.F) {
	root := filepath.Join("..", "..", "examples")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f.Add(data)
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pts, _ := v1alpha1.Decode(data)
		for i := range pts {
			_ = phases.Validate(&pts[i])
			v1alpha1.SetDefaults(&pts[i])
			_ = phases.Validate(&pts[i])
		}
	})
}
