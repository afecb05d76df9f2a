package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

const repoRoot = "../.."

// TestImage builds the image as `make image` does, reads it back both as
// an OCI layout and as `docker save` output, checks its config, and runs
// the binary from its layer.
func TestImage(t *testing.T) {
	tmp := t.TempDir()
	out := filepath.Join(tmp, "phasegang-image.tar")
	o := Options{Src: repoRoot, Ref: DefaultRepository + ":v0.0.0-test", Version: "v0.0.0-test",
		Revision: "0123abc", Source: DefaultSource, Arch: runtime.GOARCH}
	digest, err := Build(o, out)
	if err != nil {
		t.Fatal(err)
	}

	// As an OCI layout (skopeo oci-archive:, podman load, ctr import).
	dir := filepath.Join(tmp, "oci")
	untar(t, out, dir)
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest != digest {
		t.Fatalf("index.json: %+v, want one manifest %s", im.Manifests, digest)
	}
	if got := im.Manifests[0].Annotations["io.containerd.image.name"]; got != o.Ref {
		t.Errorf("io.containerd.image.name = %q, want %q", got, o.Ref)
	}
	img, err := idx.Image(digest)
	if err != nil {
		t.Fatal(err)
	}
	mt, _ := img.MediaType()
	if mt != "application/vnd.oci.image.manifest.v1+json" {
		t.Errorf("manifest media type %s, want OCI", mt)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	checkConfig(t, cf, o)

	// As `docker save` output (docker load, kind load image-archive, crane push).
	tag, _ := name.NewTag(o.Ref)
	dimg, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cfgName, _ := img.ConfigName()
	if dn, err := dimg.ConfigName(); err != nil || dn != cfgName {
		t.Errorf("manifest.json's config %v (%v), want %v", dn, err, cfgName)
	}

	// The binary, from the layer, runs.
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d (%v), want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	bin := filepath.Join(tmp, "from-layer")
	files := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
		if "/"+h.Name == BinaryPath {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(bin, data, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	h := files[strings.TrimPrefix(BinaryPath, "/")]
	if h == nil {
		t.Fatalf("no %s in the layer: %v", BinaryPath, files)
	}
	if h.Mode != 0o755 || h.Uid != 0 {
		t.Errorf("%s: mode %o uid %d, want 755, root-owned (not writable by the running user)", BinaryPath, h.Mode, h.Uid)
	}
	for _, f := range []string{"etc/passwd", "etc/group", "tmp/"} {
		if files[f] == nil {
			t.Errorf("no %s in the layer", f)
		}
	}
	if runtime.GOOS != "linux" {
		t.Skip("the image's binary is linux/" + runtime.GOARCH)
	}
	outb, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v: %s", BinaryPath, err, outb)
	}
	if !strings.HasPrefix(string(outb), "phasegang v0.0.0-test ") {
		t.Errorf("phasegang version printed %q, want the stamped version", outb)
	}
	// Static: no ELF interpreter (distroless static has no libc).
	if data, err := os.ReadFile(bin); err != nil || strings.Contains(string(data[:min(len(data), 4096)]), "ld-linux") {
		t.Errorf("the binary is dynamically linked (%v)", err)
	}
}

func checkConfig(t *testing.T, cf *v1.ConfigFile, o Options) {
	t.Helper()
	if !slices.Equal(cf.Config.Entrypoint, []string{"/phasegang", "controller"}) {
		t.Errorf("entrypoint %q", cf.Config.Entrypoint)
	}
	if len(cf.Config.Cmd) != 0 {
		t.Errorf("cmd %q, want none", cf.Config.Cmd)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", cf.Config.User)
	}
	if cf.OS != "linux" || cf.Architecture != o.Arch {
		t.Errorf("platform %s/%s", cf.OS, cf.Architecture)
	}
	want := map[string]string{
		"org.opencontainers.image.source":   DefaultSource,
		"org.opencontainers.image.version":  "v0.0.0-test",
		"org.opencontainers.image.title":    "phasegang",
		"org.opencontainers.image.revision": "0123abc",
	}
	for k, v := range want {
		if cf.Config.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, cf.Config.Labels[k], v)
		}
	}
	if cf.Created.Unix() != 0 {
		t.Errorf("created %v, want the epoch (reproducible)", cf.Created)
	}
}

func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestImageNamedAlike: `make image`, config/manager's Deployment, the
// chart and the Dockerfile name and build the image the same way.
func TestImageNamedAlike(t *testing.T) {
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(repoRoot, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	mustMatch := func(file, text, re string) {
		t.Helper()
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("%s does not match %s", file, re)
		}
	}
	q := regexp.QuoteMeta
	mustMatch("Makefile", read("Makefile"), `(?m)^IMAGE\s*\?=\s*`+q(DefaultRepository)+`\s*$`)
	mustMatch("config/manager/manager.yaml", read("config/manager/manager.yaml"), `(?m)^\s+image: `+q(DefaultRepository)+`:`)
	mustMatch("config/manager/kustomization.yaml", read("config/manager/kustomization.yaml"), `(?m)^- name: `+q(DefaultRepository)+`\s*$`)
	mustMatch("charts/phasegang/values.yaml", read("charts/phasegang/values.yaml"), `(?m)^  repository: `+q(DefaultRepository)+`\s*$`)
	df := read("Dockerfile")
	mustMatch("Dockerfile", df, `(?m)^ENTRYPOINT \["/phasegang", "controller"\]\s*$`)
	mustMatch("Dockerfile", df, `(?m)^USER 65532:65532\s*$`)
	mustMatch("Dockerfile", df, `(?m)^COPY --from=build /out/phasegang /phasegang\s*$`)
	mustMatch("Dockerfile", df, `CGO_ENABLED=0`)
	mustMatch("Dockerfile", df, q(`-trimpath -ldflags "-s -w -X main.version=${VERSION}"`))
	for _, l := range []string{"source", "version", "title", "revision"} {
		mustMatch("Dockerfile", df, q("org.opencontainers.image."+l+"="))
	}
}
