package driver

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/phasegang/phasegang/internal/wrappers"
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
		"cut with hash":       {long, 63, strings.Repeat("a", 54) + "-" + DNSLabel(long, 63)[55:]},
		"trailing dashes cut": {strings.Repeat("a", 50) + "----" + strings.Repeat("z", 20), 63, strings.Repeat("a", 50) + "-" + DNSLabel(strings.Repeat("a", 50)+"----"+strings.Repeat("z", 20), 63)[51:]},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := DNSLabel(tc.name, tc.max)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("DNSLabel (-want +got):\n%s", d)
			}
			if len(got) > tc.max {
				t.Errorf("len %d > %d", len(got), tc.max)
			}
			if got != DNSLabel(tc.name, tc.max) {
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
				got := DNSLabel(name, max)
				if len(got) > max {
					t.Fatalf("DNSLabel(%q, %d) = %q: too long", name, max, got)
				}
				if len(name) <= max && got != name {
					t.Fatalf("DNSLabel(%q, %d) = %q: changed a short name", name, max, got)
				}
				if len(name) > max {
					h := got[len(got)-9:]
					if h[0] != '-' || len(strings.Trim(h[1:], "0123456789abcdef")) != 0 {
						t.Fatalf("DNSLabel(%q, %d) = %q: no -hash suffix", name, max, got)
					}
					if strings.HasSuffix(got[:len(got)-9], "-") {
						t.Fatalf("DNSLabel(%q, %d) = %q: dash before the hash separator", name, max, got)
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
	pt := wrappers.MakePT("job").Obj()
	long := wrappers.MakePT(strings.Repeat("p", 70)).Obj()
	tests := map[string]struct {
		got, want string
	}{
		"service":                   {ServiceName(pt), "job"},
		"pod":                       {PodName(pt, "train", 0, 0, 0), "job-train-0"},
		"pod both":                  {PodName(pt, "train", 2, 3, 17), "job-train-i2-a3-17"},
		"Hostname":                  {Hostname("train", 0, 0, 4), "train-4"},
		"Hostname iteration":        {Hostname("train", 2, 0, 4), "train-i2-4"},
		"Hostname attempt":          {Hostname("train", 0, 3, 4), "train-a3-4"},
		"Hostname both":             {Hostname("train", 2, 3, 4), "train-i2-a3-4"},
		"long service is cut":       {ServiceName(long), DNSLabel(strings.Repeat("p", 70), 63)},
		"long pod name is kept":     {PodName(long, "train", 0, 0, 1), strings.Repeat("p", 70) + "-train-1"},
		"long service stays unique": {boolStr(ServiceName(long) != ServiceName(wrappers.MakePT(strings.Repeat("p", 71)).Obj())), "true"},
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
	if k := GangKey(pt, ptrTo(wrappers.Attempt(wrappers.Running("train"), 2, 3))); k.Pipeline != "ns/job" || k.Phase != "train" || k.Iteration != 2 || k.Attempt != 3 {
		t.Errorf("GangKey = %+v", k)
	}
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// DNSLabel trims trailing '-' from the cut but not '.', so a cut ending in
// '.' gives "<...>.-<hash>", whose last DNS label starts with '-'.
func TestPodNameValidWhenCutAtADot(t *testing.T) {
	// 250 chars, '.' at index 243: "<name>-train-0" (258) is cut to 244 = 253-9.
	name := strings.Repeat(strings.Repeat("a", 60)+".", 4) + "bbbbbb"
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		t.Fatalf("fixture is not a valid object name: %v", errs)
	}
	pt := wrappers.MakePT(name).Obj()
	got := PodName(pt, "train", 0, 0, 0)
	if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
		t.Errorf("pod name %q: %v", got, errs)
	}
}

func ptrTo[T any](v T) *T { return &v }
