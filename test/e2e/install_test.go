//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/internal/wrappers"
)

// installCRD is the documented CRD install command. TestMain runs it to
// install the suite's CRD; TestInstallDocs checks that every install block
// of the docs starts with it.
const installCRD = "kubectl apply --server-side -k config/crd"

// installDocs are the files whose marked shell blocks TestInstallDocs runs.
var installDocs = []string{"README.md", "docs/controller.md", "test/cluster/README.md", "charts/phasegang/README.md"}

// A docBlock is a shell code block right after a marker comment
// `<!-- install -->`, `<!-- upgrade -->`, `<!-- uninstall -->` or
// `<!-- uninstall-crd -->`.
type docBlock struct {
	file   string
	line   int
	kind   string
	script string
}

var marker = regexp.MustCompile(`^<!-- (install|upgrade|uninstall|uninstall-crd) -->\s*$`)

func markedBlocks(t *testing.T, file string) []docBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, file))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []docBlock
	for i := 0; i < len(lines); i++ {
		m := marker.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		if j == len(lines) || (lines[j] != "```sh" && lines[j] != "```bash") {
			t.Fatalf("%s:%d: %s is not followed by a ```sh block", file, i+1, lines[i])
		}
		start := j + 1
		end := start
		for end < len(lines) && lines[end] != "```" {
			end++
		}
		if end == len(lines) {
			t.Fatalf("%s:%d: unterminated code block", file, j+1)
		}
		out = append(out, docBlock{file: file, line: start + 1, kind: m[1], script: strings.Join(lines[start:end], "\n") + "\n"})
		i = end
	}
	return out
}

// commands are a script's command lines without comments.
func commands(script string) []string {
	var out []string
	for _, l := range strings.Split(script, "\n") {
		if i := strings.Index(l, "#"); i >= 0 {
			l = l[:i]
		}
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// runScript runs a documented block literally: bash -c, from the
// repository root, with the suite's environment (KUBECONFIG and kubectl
// from test/cluster's env file). -e and pipefail make any failing line
// fail the block.
func runScript(t *testing.T, b docBlock, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	t.Logf("%s:%d (%s):\n%s%s", b.file, b.line, b.kind, indent(script), indent(string(out)))
	if err != nil {
		t.Fatalf("%s:%d: the documented %s block failed: %v\n%s", b.file, b.line, b.kind, err, out)
	}
	return string(out)
}

func indent(s string) string {
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		b.WriteString("    " + sc.Text() + "\n")
	}
	return b.String()
}

// TestInstallDocs runs the install, upgrade and uninstall commands of the
// README, docs/controller.md, test/cluster/README.md and the chart's README
// exactly as written, against the local control plane, and checks what
// they leave: the CRD, the controller's Deployment and metrics Service
// after an install; the CRD and a PhasedTraining after an uninstall.
func TestInstallDocs(t *testing.T) {
	var all []docBlock
	for _, f := range installDocs {
		blocks := markedBlocks(t, f)
		installs := 0
		for _, b := range blocks {
			cmds := commands(b.script)
			if len(cmds) == 0 {
				t.Fatalf("%s:%d: an empty %s block", b.file, b.line, b.kind)
			}
			for _, c := range cmds {
				if strings.HasPrefix(c, "kubectl apply") && !strings.Contains(c, "--server-side") {
					t.Errorf("%s:%d: %q: the CRD needs server-side apply", b.file, b.line, c)
				}
			}
			if b.kind == "install" {
				installs++
				if cmds[0] != installCRD {
					t.Errorf("%s:%d: an install block starts with %q, want the suite's %q (the CRD first)", b.file, b.line, cmds[0], installCRD)
				}
			}
		}
		if installs == 0 && f != "charts/phasegang/README.md" {
			t.Errorf("%s has no <!-- install --> block", f)
		}
		all = append(all, blocks...)
	}
	checkNoClientSideApply(t)
	if t.Failed() {
		return
	}
	t.Cleanup(func() {
		// Leave the cluster as the suite expects it: the CRD, no deployed
		// controller (the suite runs its own process).
		cmd := exec.Command("bash", "-c", "kubectl delete -k config/default --ignore-not-found && "+installCRD)
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("cleanup: %v\n%s", err, out)
		}
	})

	// A PhasedTraining that an uninstall must not delete. Its pool has no
	// nodes, so it only waits.
	ns := namespace(t)
	canary := create(t, wrappers.NewPT(ns, "canary").Phase("train", 1).PodTemplate(worker("install-no-such-pool", 1, 60, "")).Obj())

	for _, b := range all {
		switch b.kind {
		case "install", "upgrade":
			runScript(t, b, b.script)
			checkCRD(t)
			if strings.Contains(b.script, "config/default") {
				checkController(t)
			}
		case "uninstall":
			runScript(t, b, b.script)
			checkCRD(t)
			if _, err := getPT(canary); err != nil {
				t.Fatalf("%s:%d: after the uninstall, the PhasedTraining is gone: %v", b.file, b.line, err)
			}
			if strings.Contains(b.script, "config/default") {
				err := k8s.Get(context.Background(), client.ObjectKey{Namespace: "phasegang-system", Name: "phasegang-controller"}, &appsv1.Deployment{})
				if !apierrors.IsNotFound(err) {
					t.Errorf("%s:%d: the controller's Deployment is still there after the uninstall (%v)", b.file, b.line, err)
				}
			}
		case "uninstall-crd":
			// Deleting the CRD would delete every PhasedTraining of the
			// suite's other tests: ask the API server whether it would
			// succeed, without doing it.
			out := runScript(t, b, serverDryRun(b.script))
			if !strings.Contains(out, "phasedtrainings.phasegang.dev") || !strings.Contains(out, "server dry run") {
				t.Errorf("%s:%d: the dry run does not name the CRD: %s", b.file, b.line, out)
			}
			checkCRD(t)
		}
	}
}

// serverDryRun adds --dry-run=server to every kubectl delete line, before
// any trailing comment.
func serverDryRun(script string) string {
	var lines []string
	for _, l := range strings.Split(script, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "kubectl delete") {
			cmd, comment, _ := strings.Cut(l, "#")
			l = strings.TrimRight(cmd, " ") + " --dry-run=server"
			if comment != "" {
				l += "  #" + comment
			}
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

var inlineCode = regexp.MustCompile("`([^`]+)`")
var kubectlApply = regexp.MustCompile(`kubectl apply(\s+[^\s&;|#]+)*`)

// checkNoClientSideApply: no doc in the repository tells anyone to apply
// config/ or the chart's CRDs client-side (which fails on the CRD's size),
// in a code block or in inline code.
func checkNoClientSideApply(t *testing.T) {
	t.Helper()
	check := func(file string, line int, text string) {
		for _, m := range kubectlApply.FindAllString(text, -1) {
			if (strings.Contains(m, "config/") || strings.Contains(m, "/crds")) && !strings.Contains(m, "--server-side") {
				t.Errorf("%s:%d: %q applies the CRD client-side: it needs --server-side", file, line, m)
			}
		}
	}
	err := filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".md") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		fenced, para, paraLine := false, "", 0
		flush := func() {
			for _, m := range inlineCode.FindAllStringSubmatch(para, -1) {
				check(rel, paraLine, m[1])
			}
			para = ""
		}
		for i, l := range strings.Split(string(data), "\n") {
			switch {
			case strings.HasPrefix(l, "```"):
				flush()
				fenced = !fenced
			case fenced:
				check(rel, i+1, l)
			case strings.TrimSpace(l) == "":
				flush()
			default:
				if para == "" {
					paraLine = i + 1
				}
				para += " " + strings.TrimSpace(l)
			}
		}
		flush()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// checkCRD: the PhasedTraining CRD exists and is Established.
func checkCRD(t *testing.T) {
	t.Helper()
	eventually(t, 60*time.Second, "the PhasedTraining CRD Established", func() (bool, error) {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(crdGVK)
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: "phasedtrainings.phasegang.dev"}, crd); err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %v", conds)
	})
}

// checkController: config/default's Deployment, metrics Service and RBAC
// exist; the Deployment's pod becomes available (kwok "runs" it).
func checkController(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "phasegang-system", Name: "phasegang-controller"}
	var d appsv1.Deployment
	eventually(t, 90*time.Second, "the controller Deployment available", func() (bool, error) {
		if err := k8s.Get(ctx, key, &d); err != nil {
			return false, err
		}
		return d.Status.AvailableReplicas >= 1, fmt.Errorf("status %+v", d.Status)
	})
	sc := d.Spec.Template.Spec.SecurityContext
	if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 65532 || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("the Deployment's pod security context %+v, want runAsNonRoot with runAsUser 65532", sc)
	}
	if args := d.Spec.Template.Spec.Containers[0].Args; !strings.Contains(strings.Join(args, " "), "--leader-elect") {
		t.Errorf("args %q lack --leader-elect", args)
	}
	var svc corev1.Service
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: "phasegang-system", Name: "phasegang-controller-metrics"}, &svc); err != nil {
		t.Fatalf("the metrics Service: %v", err)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].Port != 8080 {
		t.Errorf("metrics Service ports %+v", svc.Spec.Ports)
	}
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("the metrics Service selects %s=%s, which the controller's pods lack", k, v)
		}
	}
	// The Service's endpoints: it selects the (fake) running pod.
	eventually(t, 60*time.Second, "the metrics Service's endpoints", func() (bool, error) {
		var eps corev1.Endpoints
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(&svc), &eps); err != nil {
			return false, err
		}
		for _, s := range eps.Subsets {
			if len(s.Addresses) > 0 {
				return true, nil
			}
		}
		return false, fmt.Errorf("subsets %+v", eps.Subsets)
	})
	if err := k8s.Get(ctx, client.ObjectKey{Name: "phasegang-manager"}, &rbacv1.ClusterRole{}); err != nil {
		t.Errorf("the ClusterRole: %v", err)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: "phasegang-system", Name: "phasegang-leader-election"}, &rbacv1.Role{}); err != nil {
		t.Errorf("the leader-election Role: %v", err)
	}
}

func getPT(pt *v1alpha1.PhasedTraining) (*v1alpha1.PhasedTraining, error) {
	out := &v1alpha1.PhasedTraining{}
	return out, k8s.Get(context.Background(), client.ObjectKeyFromObject(pt), out)
}

// TestInstallChart renders charts/phasegang with Helm's Go packages
// (test/chart's cmd/render: `helm template --include-crds`) and applies it
// to the local control plane with a server-side dry run: the API server
// admits every object as rendered.
func TestInstallChart(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	render := exec.CommandContext(ctx, "go", "-C", "test/chart", "run", "./cmd/render", "-name", "phasegang", "-namespace", ns)
	render.Dir = repoRoot
	var stderr bytes.Buffer
	render.Stderr = &stderr
	manifests, err := render.Output()
	if err != nil {
		t.Fatalf("rendering the chart: %v\n%s", err, stderr.String())
	}
	apply := exec.CommandContext(ctx, "kubectl", "apply", "--server-side", "--dry-run=server", "-f", "-")
	apply.Stdin = bytes.NewReader(manifests)
	out, err := apply.CombinedOutput()
	t.Logf("kubectl apply --server-side --dry-run=server:\n%s", out)
	if err != nil {
		t.Fatalf("the API server refused the rendered chart: %v\n%s", err, out)
	}
	for _, want := range []string{
		"customresourcedefinition.apiextensions.k8s.io/phasedtrainings.phasegang.dev",
		"serviceaccount/phasegang", "clusterrole.rbac.authorization.k8s.io/phasegang-manager",
		"clusterrolebinding.rbac.authorization.k8s.io/phasegang-manager",
		"role.rbac.authorization.k8s.io/phasegang-leader-election", "rolebinding.rbac.authorization.k8s.io/phasegang-leader-election",
		"service/phasegang-controller-metrics", "deployment.apps/phasegang-controller",
	} {
		if !strings.Contains(string(out), want+" serverside-applied (server dry run)") {
			t.Errorf("kubectl did not dry-run %s", want)
		}
	}
	// A dry run persists nothing.
	err = k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "phasegang-controller"}, &appsv1.Deployment{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the dry run created the Deployment (%v)", err)
	}
}
