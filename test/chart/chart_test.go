package chart

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

var repoRoot = filepath.Join(Dir(), "..", "..")

const ns = "ml-platform"

// object is one rendered document.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	raw []byte
}

// docs splits a YAML stream into its non-empty documents.
func docs(t *testing.T, stream string) []object {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(stream)))
	var out []object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var o object
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("a document does not parse: %v\n%s", err, doc)
		}
		if o.Kind == "" {
			continue // only comments
		}
		if o.APIVersion == "" || o.Metadata.Name == "" {
			t.Fatalf("a document without apiVersion or metadata.name:\n%s", doc)
		}
		o.raw = doc
		out = append(out, o)
	}
}

func render(t *testing.T, values map[string]any) (*Rendered, map[string]object) {
	t.Helper()
	r, err := Render(Dir(), Release{Name: "phasegang", Namespace: ns}, values)
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string]object{}
	for _, o := range docs(t, r.Manifests(false)) {
		key := o.Kind + "/" + o.Metadata.Name
		if _, dup := byKind[key]; dup {
			t.Fatalf("%s rendered twice", key)
		}
		if o.Kind != "ClusterRole" && o.Kind != "ClusterRoleBinding" && o.Metadata.Namespace != ns {
			t.Errorf("%s is in namespace %q, want the release's %q", key, o.Metadata.Namespace, ns)
		}
		byKind[key] = o
	}
	return r, byKind
}

// strict decodes a rendered document into a typed object, failing on any
// field the type does not have (a typo in a template).
func strict(t *testing.T, o object, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(o.raw, into); err != nil {
		t.Fatalf("%s/%s: %v", o.Kind, o.Metadata.Name, err)
	}
}

func keys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}

// TestLint runs `helm lint`'s rules (Chart.yaml, values, templates).
func TestLint(t *testing.T) {
	for _, values := range []map[string]any{nil, {"serviceMonitor": map[string]any{"enabled": true}}} {
		l := lint.RunAll(Dir(), values, ns)
		for _, m := range l.Messages {
			if m.Severity > support.InfoSev {
				t.Errorf("helm lint (values %v): %v", values, m)
			}
		}
	}
}

func TestRenderDefaults(t *testing.T) {
	r, objs := render(t, nil)
	want := []string{
		"ClusterRole/phasegang-manager", "ClusterRoleBinding/phasegang-manager",
		"Deployment/phasegang-controller", "Role/phasegang-leader-election",
		"RoleBinding/phasegang-leader-election", "Service/phasegang-controller-metrics",
		"ServiceAccount/phasegang",
	}
	if got := keys(objs); !slices.Equal(got, want) {
		t.Fatalf("rendered %v, want %v", got, want)
	}
	if crds := r.CRDs(); len(crds) != 2 || !strings.Contains(string(crds[0].File.Data), "name: phasedtrainings.phasegang.dev") ||
		!strings.Contains(string(crds[1].File.Data), "name: tenantqueues.phasegang.dev") {
		t.Errorf("crds/: %d files, want the PhasedTraining and TenantQueue CRDs", len(crds))
	}
	if !strings.Contains(r.Notes, "helm uninstall` does not delete them") {
		t.Errorf("NOTES.txt does not warn about the CRD:\n%s", r.Notes)
	}

	var d appsv1.Deployment
	strict(t, objs["Deployment/phasegang-controller"], &d)
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image != "ghcr.io/phasegang/phasegang:dev" {
		t.Errorf("image %q, want ghcr.io/phasegang/phasegang:<appVersion>", c.Image)
	}
	for _, a := range []string{"controller", "--leader-elect", "--leader-election-namespace=" + ns, "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081"} {
		if !slices.Contains(c.Args, a) {
			t.Errorf("args %q lack %q", c.Args, a)
		}
	}
	if p := c.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "probes" {
		t.Errorf("liveness probe %+v", p)
	}
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || p.HTTPGet.Port.String() != "probes" {
		t.Errorf("readiness probe %+v", p)
	}
	if port(c, "probes") != 8081 || port(c, "metrics") != 8080 {
		t.Errorf("ports %+v", c.Ports)
	}
	if c.Resources.Requests.Cpu().String() != "100m" || c.Resources.Limits.Memory().String() != "512Mi" {
		t.Errorf("resources %+v", c.Resources)
	}
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 || sc.RunAsGroup == nil || *sc.RunAsGroup != 65532 {
		t.Errorf("pod security context %+v, want runAsNonRoot with runAsUser/runAsGroup 65532", sc)
	}
	if pod.ServiceAccountName != "phasegang" {
		t.Errorf("service account %q", pod.ServiceAccountName)
	}

	var svc corev1.Service
	strict(t, objs["Service/phasegang-controller-metrics"], &svc)
	if !reflect.DeepEqual(svc.Spec.Selector, d.Spec.Selector.MatchLabels) {
		t.Errorf("the metrics Service selects %v, the Deployment's pods are %v", svc.Spec.Selector, d.Spec.Selector.MatchLabels)
	}
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("pod template lacks the selected label %s=%s", k, v)
		}
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Errorf("metrics Service ports %+v", svc.Spec.Ports)
	}

	var crb rbacv1.ClusterRoleBinding
	strict(t, objs["ClusterRoleBinding/phasegang-manager"], &crb)
	if crb.RoleRef.Name != "phasegang-manager" || len(crb.Subjects) != 1 || crb.Subjects[0].Name != "phasegang" || crb.Subjects[0].Namespace != ns {
		t.Errorf("ClusterRoleBinding %+v", crb)
	}
	var rb rbacv1.RoleBinding
	strict(t, objs["RoleBinding/phasegang-leader-election"], &rb)
	if rb.RoleRef.Name != "phasegang-leader-election" || rb.Subjects[0].Name != "phasegang" {
		t.Errorf("RoleBinding %+v", rb)
	}
}

func port(c corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

func TestServiceMonitor(t *testing.T) {
	_, objs := render(t, map[string]any{"serviceMonitor": map[string]any{
		"enabled": true, "labels": map[string]any{"release": "prometheus"}, "interval": "15s",
	}})
	o, ok := objs["ServiceMonitor/phasegang-controller"]
	if !ok {
		t.Fatalf("no ServiceMonitor in %v", keys(objs))
	}
	var sm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string            `json:"name"`
			Namespace string            `json:"namespace"`
			Labels    map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			NamespaceSelector struct {
				MatchNames []string `json:"matchNames"`
			} `json:"namespaceSelector"`
			Endpoints []struct {
				Port, Path, Scheme, Interval string
			} `json:"endpoints"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(o.raw, &sm); err != nil {
		t.Fatal(err)
	}
	if sm.APIVersion != "monitoring.coreos.com/v1" || sm.Metadata.Labels["release"] != "prometheus" {
		t.Errorf("ServiceMonitor %s labels %v", sm.APIVersion, sm.Metadata.Labels)
	}
	var svc corev1.Service
	strict(t, objs["Service/phasegang-controller-metrics"], &svc)
	for k, v := range sm.Spec.Selector.MatchLabels {
		if svc.Labels[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s, the metrics Service has %v", k, v, svc.Labels)
		}
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Path != "/metrics" || sm.Spec.Endpoints[0].Interval != "15s" {
		t.Errorf("endpoints %+v", sm.Spec.Endpoints)
	}
	if !slices.Equal(sm.Spec.NamespaceSelector.MatchNames, []string{ns}) {
		t.Errorf("namespaceSelector %v", sm.Spec.NamespaceSelector.MatchNames)
	}
}

func TestValues(t *testing.T) {
	t.Run("no RBAC, existing service account", func(t *testing.T) {
		_, objs := render(t, map[string]any{
			"rbac":           map[string]any{"create": false},
			"serviceAccount": map[string]any{"create": false, "name": "mine"},
		})
		if got := keys(objs); !slices.Equal(got, []string{"Deployment/phasegang-controller", "Service/phasegang-controller-metrics"}) {
			t.Errorf("rendered %v", got)
		}
		var d appsv1.Deployment
		strict(t, objs["Deployment/phasegang-controller"], &d)
		if d.Spec.Template.Spec.ServiceAccountName != "mine" {
			t.Errorf("service account %q", d.Spec.Template.Spec.ServiceAccountName)
		}
	})
	t.Run("metrics off", func(t *testing.T) {
		_, objs := render(t, map[string]any{"metrics": map[string]any{"port": 0}})
		if _, ok := objs["Service/phasegang-controller-metrics"]; ok {
			t.Error("a metrics Service with metrics off")
		}
		var d appsv1.Deployment
		strict(t, objs["Deployment/phasegang-controller"], &d)
		if c := d.Spec.Template.Spec.Containers[0]; !slices.Contains(c.Args, "--metrics-bind-address=0") || port(c, "metrics") != 0 {
			t.Errorf("args %q ports %+v", c.Args, c.Ports)
		}
	})
	t.Run("image digest, extra args, env", func(t *testing.T) {
		_, objs := render(t, map[string]any{
			"image":      map[string]any{"repository": "registry.example/pg", "tag": "v1.2.3", "digest": "sha256:" + strings.Repeat("a", 64)},
			"controller": map[string]any{"extraArgs": []any{"--pprof-bind-address=:6060"}, "env": []any{map[string]any{"name": "OTEL_SDK_DISABLED", "value": "true"}}},
		})
		var d appsv1.Deployment
		strict(t, objs["Deployment/phasegang-controller"], &d)
		c := d.Spec.Template.Spec.Containers[0]
		if c.Image != "registry.example/pg@sha256:"+strings.Repeat("a", 64) {
			t.Errorf("image %q", c.Image)
		}
		if !slices.Contains(c.Args, "--pprof-bind-address=:6060") || len(c.Env) != 1 {
			t.Errorf("args %q env %v", c.Args, c.Env)
		}
	})
	t.Run("two replicas need leader election", func(t *testing.T) {
		_, err := Render(Dir(), Release{Name: "pg", Namespace: ns}, map[string]any{"replicaCount": 2, "leaderElection": map[string]any{"enabled": false}})
		if err == nil || !strings.Contains(err.Error(), "leaderElection.enabled") {
			t.Errorf("err = %v, want the chart to refuse", err)
		}
	})
	t.Run("release name containing phasegang", func(t *testing.T) {
		r, err := Render(Dir(), Release{Name: "phasegang-prod", Namespace: ns}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Manifests(false), "name: phasegang-prod-controller\n") {
			t.Error("no Deployment phasegang-prod-controller")
		}
	})
}

func readYAML(t *testing.T, rel string) []object {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	return docs(t, string(b))
}

func find(t *testing.T, objs []object, kind string) object {
	t.Helper()
	for _, o := range objs {
		if o.Kind == kind {
			return o
		}
	}
	t.Fatalf("no %s", kind)
	return object{}
}

// TestSameSourceAsConfig: the chart and config/ install the same CRD and
// RBAC (make manifests copies them; .ci/run checks that it was run), and
// the same controller container.
func TestSameSourceAsConfig(t *testing.T) {
	r, objs := render(t, nil)

	bases, err := filepath.Glob(filepath.Join(repoRoot, "config/crd/bases/*.yaml"))
	if err != nil || len(bases) == 0 {
		t.Fatalf("config/crd/bases: %v %v", bases, err)
	}
	crds := r.CRDs()
	if len(crds) != len(bases) {
		t.Fatalf("chart crds/ has %d files, config/crd/bases %d: run make manifests", len(crds), len(bases))
	}
	for i, b := range bases {
		want, _ := os.ReadFile(b)
		if filepath.Base(crds[i].Filename) != filepath.Base(b) || !bytes.Equal(crds[i].File.Data, want) {
			t.Errorf("charts/phasegang/%s differs from config/crd/bases/%s: run make manifests", crds[i].Filename, filepath.Base(b))
		}
	}

	var want, got rbacv1.ClusterRole
	strict(t, find(t, readYAML(t, "config/rbac/role.yaml"), "ClusterRole"), &want)
	strict(t, objs["ClusterRole/phasegang-manager"], &got)
	if !reflect.DeepEqual(got.Rules, want.Rules) {
		t.Errorf("the chart's ClusterRole rules differ from config/rbac/role.yaml: run make manifests\nchart:  %+v\nconfig: %+v", got.Rules, want.Rules)
	}
	var wantLE, gotLE rbacv1.Role
	strict(t, find(t, readYAML(t, "config/rbac/leader_election.yaml"), "Role"), &wantLE)
	strict(t, objs["Role/phasegang-leader-election"], &gotLE)
	if !reflect.DeepEqual(gotLE.Rules, wantLE.Rules) {
		t.Errorf("leader-election Role rules differ:\nchart:  %+v\nconfig: %+v", gotLE.Rules, wantLE.Rules)
	}

	var wd, gd appsv1.Deployment
	strict(t, find(t, readYAML(t, "config/manager/manager.yaml"), "Deployment"), &wd)
	strict(t, objs["Deployment/phasegang-controller"], &gd)
	wc, gc := wd.Spec.Template.Spec.Containers[0], gd.Spec.Template.Spec.Containers[0]
	for _, f := range []struct {
		what      string
		got, want any
	}{
		{"image", gc.Image, wc.Image},
		{"ports", gc.Ports, withTCP(wc.Ports)},
		{"resources", gc.Resources, wc.Resources},
		{"container securityContext", gc.SecurityContext, wc.SecurityContext},
		{"pod securityContext", gd.Spec.Template.Spec.SecurityContext, wd.Spec.Template.Spec.SecurityContext},
		{"liveness", gc.LivenessProbe, wc.LivenessProbe},
		{"readiness", gc.ReadinessProbe, wc.ReadinessProbe},
	} {
		if !reflect.DeepEqual(f.got, f.want) {
			t.Errorf("the chart's Deployment %s differs from config/manager's:\nchart:  %+v\nconfig: %+v", f.what, f.got, f.want)
		}
	}
	for _, a := range wc.Args {
		if strings.HasPrefix(a, "--leader-election-namespace=") {
			a = "--leader-election-namespace=" + ns
		}
		if !slices.Contains(gc.Args, a) {
			t.Errorf("the chart's args %q lack config/manager's %q", gc.Args, a)
		}
	}
}

func withTCP(ports []corev1.ContainerPort) []corev1.ContainerPort {
	out := slices.Clone(ports)
	for i := range out {
		if out[i].Protocol == "" {
			out[i].Protocol = corev1.ProtocolTCP
		}
	}
	return out
}

// TestManifestsStream: what cmd/render prints (and the e2e suite applies):
// the CRDs first, then the templates.
func TestManifestsStream(t *testing.T) {
	r, _ := render(t, nil)
	all := docs(t, r.Manifests(true))
	if all[0].Kind != "CustomResourceDefinition" || all[1].Kind != "CustomResourceDefinition" {
		t.Errorf("the stream starts with %s, %s, want the CRDs first", all[0].Kind, all[1].Kind)
	}
	if n := len(all); n != 9 {
		t.Errorf("%d documents, want 2 CRDs + 7 templates", n)
	}
}
