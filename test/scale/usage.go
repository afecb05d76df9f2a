package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/phasegang/phasegang/test/apirequests"
)

// usage is what the cluster spent during a run: each control-plane
// process's CPU time and the API server's writes by resource. Every
// component shares the machine's cores, so a run that makes one of them
// busier slows the others; these figures say which one.
type usage struct {
	cpu    map[string]time.Duration // by process name
	writes map[string]float64       // by resource, mutating verbs only
	verbs  map[string]float64       // writes by "resource VERB"
	reads  map[string]float64       // by resource: GET, LIST and WATCH
}

// components are the processes whose CPU time a run reports (by their
// /proc comm, at most 15 characters): the local control plane
// (test/cluster), this benchmark, and the controller (run sets its name
// from the binary's).
var components = []string{"kube-apiserver", "etcd", "kube-controller", "kube-scheduler", "kwok", "scale", "phasegang"}

func snapshot(ctx context.Context, cfg *rest.Config) usage {
	u := usage{cpu: componentCPU(), writes: map[string]float64{}, verbs: map[string]float64{}, reads: map[string]float64{}}
	samples, _ := apirequests.Read(cfg)
	for _, r := range samples {
		res := r.Resource
		if r.Subresource != "" {
			res += "/" + r.Subresource
		}
		if r.DryRun {
			// Checked by admission and validation, stored nowhere
			// (phasegang dry-runs one pod per phase: podcheck.go).
			res += " (dry run)"
		}
		if r.Write() {
			u.writes[res] += r.Value
			u.verbs[res+" "+strings.ToUpper(r.Verb)] += r.Value
		} else {
			u.reads[res] += r.Value
		}
	}
	return u
}

// componentCPU is the CPU time (user + system, from /proc) of every
// running process named in components, summed by name.
func componentCPU() map[string]time.Duration {
	cpu := map[string]time.Duration{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || end < open {
			continue
		}
		name := string(b[open+1 : end])
		if !slices.Contains(components, name) {
			continue
		}
		fields := strings.Fields(string(b[end+2:]))
		ut, _ := strconv.ParseInt(fields[11], 10, 64)
		st, _ := strconv.ParseInt(fields[12], 10, 64)
		cpu[name] += time.Duration(ut+st) * time.Second / 100 // USER_HZ
	}
	return cpu
}

// since is what was spent between an earlier snapshot and u.
func (u usage) since(before usage) usage {
	d := usage{cpu: map[string]time.Duration{}, writes: map[string]float64{}, verbs: map[string]float64{}, reads: map[string]float64{}}
	for k, v := range u.cpu {
		d.cpu[k] = v - before.cpu[k]
	}
	for k, v := range u.writes {
		if w := v - before.writes[k]; w > 0 {
			d.writes[k] = w
		}
	}
	for k, v := range u.verbs {
		if w := v - before.verbs[k]; w > 0 {
			d.verbs[k] = w
		}
	}
	for k, v := range u.reads {
		if w := v - before.reads[k]; w > 0 {
			d.reads[k] = w
		}
	}
	return d
}

// printUsage prints the runs' usage side by side: CPU seconds per
// component, then API writes per resource (the resources any run wrote
// at least 100 times).
func printUsage(names []string, runs []usage) {
	fmt.Printf("\n%-34s", "CPU seconds during the run")
	for _, n := range names {
		fmt.Printf(" %12s", n)
	}
	fmt.Println()
	for _, c := range components {
		fmt.Printf("%-34s", "  "+c)
		for _, r := range runs {
			fmt.Printf(" %12.1f", r.cpu[c].Seconds())
		}
		fmt.Println()
	}
	printRequests("API writes during the run", runs, func(u usage) map[string]float64 { return u.writes })
	printRequests("API reads (GET, LIST, WATCH)", runs, func(u usage) map[string]float64 { return u.reads })
}

// printRequests prints one kind of request per resource (the resources
// some run sent at least 100 of) and in all.
func printRequests(title string, runs []usage, of func(usage) map[string]float64) {
	resources := map[string]bool{}
	for _, r := range runs {
		for k, v := range of(r) {
			if v >= 100 {
				resources[k] = true
			}
		}
	}
	keys := make([]string, 0, len(resources))
	for k := range resources {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	fmt.Println(title)
	for _, k := range keys {
		fmt.Printf("%-34s", "  "+k)
		for _, r := range runs {
			fmt.Printf(" %12.0f", of(r)[k])
		}
		fmt.Println()
	}
	fmt.Printf("%-34s", "  all")
	for _, r := range runs {
		total := 0.0
		for _, v := range of(r) {
			total += v
		}
		fmt.Printf(" %12.0f", total)
	}
	fmt.Println()
}

// apiserverProfile saves a 60 s CPU profile of kube-apiserver (served
// only when the cluster was started with up.sh --profiling).
func apiserverProfile(file string) error {
	hc, err := rest.HTTPClientFor(restCfg)
	if err != nil {
		return err
	}
	hc.Timeout = *profileWindow + 30*time.Second
	return fetch(hc, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(restCfg.Host, "/"), int(profileWindow.Seconds())), file)
}
