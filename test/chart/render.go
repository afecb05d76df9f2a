// Package chart renders charts/phasegang with Helm's own Go packages (what
// `helm template` does, without the helm binary), for the chart's tests and
// for cmd/render, which the e2e suite applies to the local cluster with a
// server-side dry run.
//
// It is a separate Go module: Helm's dependencies stay out of the main
// module, so they slow neither the phasegang binary nor `go test ./...`
// of the main module. `make test` runs this module's tests too.
package chart

import (
	"fmt"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
)

// Dir is charts/phasegang in this checkout.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "charts", "phasegang")
}

// Release names a release, as `helm install NAME -n NAMESPACE`.
type Release struct {
	Name, Namespace string
}

// Rendered is a chart rendered for one release.
type Rendered struct {
	Chart *chartv2.Chart
	// Templates maps a template's path (phasegang/templates/x.yaml) to
	// its output, without NOTES.txt, partials and empty outputs.
	Templates map[string]string
	Notes     string
}

// Load loads the chart from dir.
func Load(dir string) (*chartv2.Chart, error) {
	return loader.Load(dir)
}

// Render renders the chart in dir with values over values.yaml, as
// `helm template` (IsInstall, revision 1, Helm's default capabilities).
func Render(dir string, rel Release, values map[string]any) (*Rendered, error) {
	ch, err := Load(dir)
	if err != nil {
		return nil, err
	}
	if values == nil {
		values = map[string]any{}
	}
	caps := common.DefaultCapabilities.Copy()
	top, err := util.ToRenderValues(ch, values, common.ReleaseOptions{
		Name: rel.Name, Namespace: rel.Namespace, Revision: 1, IsInstall: true,
	}, caps)
	if err != nil {
		return nil, err
	}
	out, err := engine.Render(ch, top)
	if err != nil {
		return nil, err
	}
	r := &Rendered{Chart: ch, Templates: map[string]string{}}
	for name, text := range out {
		switch {
		case strings.HasSuffix(name, "NOTES.txt"):
			r.Notes = text
		case strings.HasPrefix(path.Base(name), "_"), strings.TrimSpace(text) == "":
		default:
			r.Templates[name] = text
		}
	}
	return r, nil
}

// CRDs are the chart's crds/ files, by name, as Helm installs them.
func (r *Rendered) CRDs() []chartv2.CRD {
	crds := r.Chart.CRDObjects()
	sort.Slice(crds, func(i, j int) bool { return crds[i].Filename < crds[j].Filename })
	return crds
}

// Manifests is what `helm template --include-crds` prints: the CRDs, then
// every template in name order, as one YAML stream.
func (r *Rendered) Manifests(includeCRDs bool) string {
	var b strings.Builder
	if includeCRDs {
		for _, c := range r.CRDs() {
			data := strings.TrimPrefix(strings.TrimSpace(string(c.File.Data)), "---\n")
			fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", c.Filename, data)
		}
	}
	names := make([]string, 0, len(r.Templates))
	for n := range r.Templates {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", n, strings.TrimSpace(r.Templates[n]))
	}
	return b.String()
}
