package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocsSimulateCommands runs every `phasegang simulate` command that
// README.md and docs/*.md show, as written, so that the docs cannot drift
// from the flags. A command is skipped only if it names a file the
// repository does not hold (a user's trace, $TRACES, ../shared/traces, a
// placeholder in capitals) or exports traces (--otlp); files it writes
// (--gantt, --queue-chart) go to a temporary directory. The policy suite exits
// 1 while a workload fails, so for --suite exit code 1 with the verdict
// line is a pass.
func TestDocsSimulateCommands(t *testing.T) {
	root := filepath.Join("..", "..", "..", "..")
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join(root, "README.md"))
	var cmds []string
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range simulateCommands(string(data)) {
			if !slices.Contains(cmds, c) {
				cmds = append(cmds, c)
			}
		}
	}
	ran := 0
	for _, c := range cmds {
		args, why := runnable(t, root, strings.Fields(c))
		if why != "" {
			t.Logf("skipped %q: %s", c, why)
			continue
		}
		ran++
		t.Run(c, func(t *testing.T) {
			code, stdout, stderr := run(t, "", args...)
			suiteVerdict := slices.Contains(args, "--suite") && code == 1 && slices.ContainsFunc(stderr, func(l string) bool {
				return strings.HasPrefix(l, "phasegang: policy suite: ")
			})
			if code != 0 && !suiteVerdict {
				t.Errorf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, strings.Join(stdout, "\n"), strings.Join(stderr, "\n"))
			}
		})
	}
	if ran < 10 {
		t.Errorf("ran %d of the docs' %d simulate commands; the extraction is broken", ran, len(cmds))
	}
}

var (
	inlineSimulate = regexp.MustCompile("`(?:go run \\./cmd/)?phasegang (simulate[^`]*)`")
	blockSimulate  = regexp.MustCompile(`^(?:\$ )?(?:go run \./cmd/)?phasegang (simulate\b.*)$`)
	placeholder    = regexp.MustCompile(`^[A-Z][A-Z_]*(\.[a-z]+)?$`) // NAME, ENDPOINT, FILE.svg
)

// simulateCommands are the doc's simulate commands (without the
// program's name): inline code, and lines of code blocks, joined across
// trailing backslashes, comments cut.
func simulateCommands(doc string) []string {
	var out []string
	for _, m := range inlineSimulate.FindAllStringSubmatch(doc, -1) {
		out = append(out, m[1])
	}
	lines := strings.Split(doc, "\n")
	inBlock := false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			continue
		}
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(lines[i])
		}
		line, _, _ = strings.Cut(line, " #")
		if m := blockSimulate.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			out = append(out, strings.TrimSpace(m[1]))
		}
	}
	return out
}

// runnable turns a command's words into the CLI's arguments, or says
// why it cannot run here.
func runnable(t *testing.T, root string, words []string) (args []string, why string) {
	dir := t.TempDir()
	for i, w := range words {
		switch {
		case strings.ContainsAny(w, "$<>|…"), placeholder.MatchString(w):
			return nil, "a placeholder: " + w
		case i > 0 && (words[i-1] == "--gantt" || words[i-1] == "--queue-chart"):
			w = filepath.Join(dir, filepath.Base(w)) // written, not read
		case w == "--otlp":
			return nil, "exports to an OTLP endpoint"
		case looksLikeFile(w) && strings.HasPrefix(w, ".."):
			return nil, "reads " + w + ", outside the repository"
		case looksLikeFile(w):
			if _, err := os.Stat(filepath.Join(root, w)); err != nil {
				return nil, "no file " + w + " in the repository"
			}
		}
		args = append(args, w)
	}
	return args, ""
}

func looksLikeFile(w string) bool {
	if strings.HasPrefix(w, "-") {
		return false
	}
	for _, ext := range []string{".yaml", ".yml", ".csv", ".json", ".svg", ".png"} {
		if strings.HasSuffix(w, ext) {
			return true
		}
	}
	return false
}
