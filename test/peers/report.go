package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// printTable prints one workload's figures, one column per system, as a
// Markdown table (what docs/benchmarks.md carries), then where each
// system's CPU and writes went.
func printTable(w workload, fs []figures) {
	fmt.Printf("\n### %s: %s\n\n", w.name, w.about)
	fmt.Printf("| |")
	for _, f := range fs {
		fmt.Printf(" %s |", f.system)
	}
	fmt.Printf("\n|---|%s\n", strings.Repeat("---|", len(fs)))
	row := func(name string, v func(f figures) string) {
		fmt.Printf("| %s |", name)
		for _, f := range fs {
			fmt.Printf(" %s |", v(f))
		}
		fmt.Println()
	}
	sec := func(x float64) string { return fmt.Sprintf("%.1f", x) }
	row("makespan (s)", func(f figures) string { return sec(f.makespan) })
	row("JCT average (s)", func(f figures) string { return sec(f.jctAvg) })
	row("JCT p99 (s)", func(f figures) string { return sec(f.jctP99) })
	row("time queued per pipeline (s)", func(f figures) string { return sec(f.queued) })
	row("partial-gang seconds", func(f figures) string { return sec(f.partialSecs) })
	row("gangs seen partial (> 1 s)", func(f figures) string { return fmt.Sprint(f.splitGangs) })
	row("GPU-s held waiting for peers", func(f figures) string { return sec(f.waitGPUSecs) })
	row("cluster CPU-s per pod", func(f figures) string { return fmt.Sprintf("%.4f", total(f.cpu).Seconds()/float64(f.pods)) })
	row("API writes per pod", func(f figures) string { return fmt.Sprintf("%.2f", sumW(f.writes)/float64(f.pods)) })
	header := func(first string) {
		fmt.Printf("| %s |", first)
		for _, f := range fs {
			fmt.Printf(" %s |", f.system)
		}
		fmt.Printf("\n|---|%s\n", strings.Repeat("---|", len(fs)))
	}
	fmt.Printf("\n%d pods per run. Where the CPU went:\n\n", w.pods())
	header("CPU-s during the run")
	comps := map[string]bool{}
	for _, f := range fs {
		for k := range f.cpu {
			comps[k] = true
		}
	}
	for _, k := range sortedKeys(comps) {
		row(k, func(f figures) string {
			d, ok := f.cpu[k]
			if !ok {
				return "–"
			}
			return sec(d.Seconds())
		})
	}
	fmt.Printf("\nWhere the writes went (resources with ≥ 0.05 writes per pod in some run):\n\n")
	header("API writes per pod")
	res := map[string]bool{}
	for _, f := range fs {
		for k, v := range f.writes {
			if v/float64(f.pods) >= 0.05 {
				res[k] = true
			}
		}
	}
	for _, k := range sortedKeys(res) {
		row(k, func(f figures) string { return fmt.Sprintf("%.2f", f.writes[k]/float64(f.pods)) })
	}
	fmt.Println()
}

func total(m map[string]time.Duration) time.Duration {
	var t time.Duration
	for _, v := range m {
		t += v
	}
	return t
}

func sumW(m map[string]float64) float64 {
	t := 0.0
	for _, v := range m {
		t += v
	}
	return t
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
