// Command render prints charts/phasegang rendered with Helm's Go packages,
// as `helm template NAME charts/phasegang -n NAMESPACE --include-crds
// --set ...` would, for machines without the helm binary: the e2e suite
// pipes it into `kubectl apply --server-side --dry-run=server -f -`.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"helm.sh/helm/v4/pkg/strvals"

	"github.com/phasegang/phasegang/test/chart"
)

type sets []string

func (s *sets) String() string     { return strings.Join(*s, ",") }
func (s *sets) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	var set sets
	name := flag.String("name", "phasegang", "the release name")
	ns := flag.String("namespace", "phasegang-system", "the release namespace")
	dir := flag.String("chart", chart.Dir(), "the chart's directory")
	crds := flag.Bool("include-crds", true, "print crds/ too")
	flag.Var(&set, "set", "a value, as helm's --set key=value (repeatable)")
	flag.Parse()
	values := map[string]any{}
	for _, s := range set {
		if err := strvals.ParseInto(s, values); err != nil {
			fmt.Fprintln(os.Stderr, "render: --set", s+":", err)
			os.Exit(2)
		}
	}
	r, err := chart.Render(*dir, chart.Release{Name: *name, Namespace: *ns}, values)
	if err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
	fmt.Print(r.Manifests(*crds))
}
