package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/simulator.md quotes the tool's output under the command that made
// it: each `$ go run ./hack/ageorder …` block must be what that command
// prints today.
func TestDocsOutputIsCurrent(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "simulator.md"))
	if err != nil {
		t.Fatal(err)
	}
	const prompt = "$ go run ./hack/ageorder"
	blocks := 0
	for _, block := range strings.Split(string(doc), "```") {
		block = strings.TrimPrefix(block, "\n")
		if !strings.HasPrefix(block, prompt) {
			continue
		}
		blocks++
		cmd, want, _ := strings.Cut(block, "\n")
		o, err := parseArgs(strings.Fields(strings.TrimPrefix(cmd, prompt)))
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		var got bytes.Buffer
		if err := run(o, &got); err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		if got.String() != want {
			t.Errorf("%s prints\n%s\ndocs/simulator.md quotes\n%s", cmd, got.String(), want)
		}
	}
	if blocks == 0 {
		t.Fatalf("no %q block in docs/simulator.md", prompt)
	}
}
