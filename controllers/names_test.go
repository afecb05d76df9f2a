package controllers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestDNSLabel(t *testing.T) {
	long := strings.Repeat("a", 70)
	tests := map[string]struct {
		name string
		max  int
		want string
	}{
		"short kept":          {"train", 63, "train"},
		"exactly max kept":    {strings.Repeat("b", 63), 63, strings.Repeat("b", 63)},
		"cut with hash":       {long, 63, strings.Repeat("a", 54) + "-" + dnsLabel(long, 63)[55:]},
		"trailing dashes cut": {strings.Repeat("a", 50) + "----" + strings.Repeat("z", 20), 63, strings.Repeat("a", 50) + "-" + dnsLabel(strings.Repeat("a", 50)+"----"+strings.Repeat("z", 20), 63)[51:]},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := dnsLabel(tc.name, tc.max)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("dnsLabel (-want +got):\n%s", d)
			}
			if len(got) > tc.max {
				t.Errorf("len %d > %d", len(got), tc.max)
			}
			if got != dnsLabel(tc.name, tc.max) {
				t.Errorf("not deterministic")
			}
		})
	}
}

func TestDNSLabelProperties(t *testing.T) {
	seen := map[string]string{}
	for n := 1; n <= 120; n++ {
		for _, fill := range []string{"a", "-", "ab-"} {
			name := "x" + strings.Repeat(fill, n)
			for _, max := range []int{20, 63, 253} {
				got := dnsLabel(name, max)
				if len(got) > max {
					t.Fatalf("dnsLabel(%q, %d) = %q: too long", name, max, got)
				}
				if len(name) <= max && got != name {
					t.Fatalf("dnsLabel(%q, %d) = %q: changed a short name", name, max, got)
				}
				if len(name) > max {
					h := got[len(got)-9:]
					if h[0] != '-' || len(strings.Trim(h[1:], "0123456789abcdef")) != 0 {
						t.Fatalf("dnsLabel(%q, %d) = %q: no -hash suffix", name, max, got)
					}
					if strings.HasSuffix(got[:len(got)-9], "-") {
						t.Fatalf("dnsLabel(%q, %d) = %q: dash before the hash separator", name, max, got)
					}
				}
				key := got + "/" + string(rune(max))
				if prev, dup := seen[key]; dup && prev != name {
					t.Fatalf("%q and %q both map to %q", prev, name, got)
				}
				seen[key] = name
			}
		}
	}
}

func TestNames(t *testing.T) {
	pt := makePT("job").obj()
	long := makePT(strings.Repeat("p", 70)).obj()
	tests := map[string]struct {
		got, want string
	}{
		"service":                   {serviceName(pt), "job"},
		"pod":                       {podName(pt, "train", 0, 0, 0), "job-train-0"},
		"pod both":                  {podName(pt, "train", 2, 3, 17), "job-train-i2-a3-17"},
		"hostname":                  {hostname("train", 0, 0, 4), "train-4"},
		"hostname iteration":        {hostname("train", 2, 0, 4), "train-i2-4"},
		"hostname attempt":          {hostname("train", 0, 3, 4), "train-a3-4"},
		"hostname both":             {hostname("train", 2, 3, 4), "train-i2-a3-4"},
		"long service is cut":       {serviceName(long), dnsLabel(strings.Repeat("p", 70), 63)},
		"long pod name is kept":     {podName(long, "train", 0, 0, 1), strings.Repeat("p", 70) + "-train-1"},
		"long service stays unique": {boolStr(serviceName(long) != serviceName(makePT(strings.Repeat("p", 71)).obj())), "true"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
			if len(tc.got) > 63 && !strings.HasPrefix(name, "long pod") {
				t.Errorf("%q longer than 63", tc.got)
			}
		})
	}
	if k := gangKey(pt, ptrTo(withAttempt(running("train"), 2, 3))); k.Pipeline != "ns/job" || k.Phase != "train" || k.Iteration != 2 || k.Attempt != 3 {
		t.Errorf("gangKey = %+v", k)
	}
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// A PhasedTraining's name is any DNS-1123 subdomain (the CRD adds no rule):
// it may contain dots and start with a digit. serviceName promises a
// DNS-1035 label, and the pod's subdomain must be a DNS-1123
// label.
func TestServiceNameValidForEveryPipelineName(t *testing.T) {
	for _, name := range []string{"bert.v2", "2024-run", "a.b.c"} {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Fatalf("fixture %q is not a valid object name: %v", name, errs)
		}
		pt := makePT(name).phase("train", 1).obj()
		ps := running("train", "n1")
		if errs := validation.IsDNS1035Label(serviceName(pt)); len(errs) > 0 {
			t.Errorf("pipeline %q: service name %q: %v", name, serviceName(pt), errs)
		}
		pod := buildWorkerPod(pt, &pt.Spec.Phases[0], &ps, 0, "n1", 1)
		if errs := validation.IsDNS1123Label(pod.Spec.Subdomain); len(errs) > 0 {
			t.Errorf("pipeline %q: pod subdomain %q: %v", name, pod.Spec.Subdomain, errs)
		}
	}
}

// dnsLabel trims trailing '-' from the cut but not '.', so a cut ending in
// '.' gives "<...>.-<hash>", whose last DNS label starts with '-'.
func TestPodNameValidWhenCutAtADot(t *testing.T) {
	// 250 chars, '.' at index 243: "<name>-train-0" (258) is cut to 244 = 253-9.
	name := strings.Repeat(strings.Repeat("a", 60)+".", 4) + "bbbbbb"
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		t.Fatalf("fixture is not a valid object name: %v", errs)
	}
	pt := makePT(name).obj()
	got := podName(pt, "train", 0, 0, 0)
	if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
		t.Errorf("pod name %q: %v", got, errs)
	}
}

func ptrTo[T any](v T) *T { return &v }
