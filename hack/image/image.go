package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's name: config/manager's Deployment and the chart's
// values.yaml name the same repository (a test checks it).
const (
	DefaultRepository = "ghcr.io/phasegang/phasegang"
	DefaultSource     = "https://github.com/phasegang/phasegang"
	// BinaryPath is where the binary lives in the image.
	BinaryPath = "/phasegang"
	// User is distroless's nonroot user and group, numeric so that the
	// kubelet can enforce runAsNonRoot.
	User = "65532:65532"
)

// Entrypoint is the image's entrypoint: the Deployment passes only flags.
var Entrypoint = []string{BinaryPath, "controller"}

// BuildFlags are the go build flags of the image's binary, also the
// Dockerfile's: static (no cgo), reproducible (-trimpath), stripped.
func BuildFlags(version string) []string {
	return []string{"build", "-trimpath", "-ldflags", "-s -w -X main.version=" + version}
}

// Options says what to build.
type Options struct {
	Src      string // the main module's directory
	Binary   string // a prebuilt binary; empty: build it from Src
	Ref      string // name:tag
	Version  string
	Revision string
	Source   string
	Arch     string
}

// Build writes the image tarball to out and returns the manifest's digest.
func Build(o Options, out string) (v1.Hash, error) {
	ref, err := name.NewTag(o.Ref, name.WeakValidation)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("image name %q: %w", o.Ref, err)
	}
	bin := o.Binary
	if bin == "" {
		tmp, err := os.MkdirTemp("", "phasegang-image-")
		if err != nil {
			return v1.Hash{}, err
		}
		defer os.RemoveAll(tmp)
		bin = filepath.Join(tmp, "phasegang")
		if err := BuildBinary(o.Src, o.Version, o.Arch, bin); err != nil {
			return v1.Hash{}, err
		}
	}
	img, err := Image(bin, o)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return v1.Hash{}, err
	}
	if err := WriteArchive(out, ref, img); err != nil {
		return v1.Hash{}, err
	}
	return img.Digest()
}

// BuildBinary builds the static phasegang binary for linux/arch into out.
func BuildBinary(src, version, arch, out string) error {
	args := append(BuildFlags(version), "-o", out, "./cmd/phasegang")
	cmd := exec.Command("go", args...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %v in %s: %w", args, src, err)
	}
	return nil
}

// created is the images' creation time: SOURCE_DATE_EPOCH if set, else
// the Unix epoch, so that the same binary gives the same image digest.
func created() time.Time {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Unix(0, 0).UTC()
}

// Image is the phasegang image: one layer holding the binary at BinaryPath,
// and distroless static:nonroot's /etc/passwd, /etc/group and /tmp.
func Image(binary string, o Options) (v1.Image, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	when := created()
	layerTar, err := layerTar(data, when)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	return withConfig(layer, v1.Config{
		Entrypoint:   Entrypoint,
		User:         User,
		WorkingDir:   "/",
		Env:          []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}, "8081/tcp": {}},
		Labels:       Labels(o),
	}, o.Arch, "phasegang hack/image: COPY phasegang "+BinaryPath)
}

// Labels are the OCI annotations of the image, as the Dockerfile's LABELs.
func Labels(o Options) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "phasegang",
		"org.opencontainers.image.description": "Gang scheduling controller for multi-phase ML pipelines (PhasedTraining)",
		"org.opencontainers.image.source":      o.Source,
		"org.opencontainers.image.version":     o.Version,
	}
	if o.Revision != "" {
		l["org.opencontainers.image.revision"] = o.Revision
	}
	return l
}

func layerTar(binary []byte, when time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	type entry struct {
		name string
		mode int64
		body []byte
		dir  bool
	}
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, body: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/passwd", mode: 0o644, body: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, dir: true},
		{name: BinaryPath[1:], mode: 0o755, body: binary},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: when, Format: tar.FormatPAX, Uname: "root", Gname: "root"}
		if e.name == "home/nonroot/" {
			h.Uid, h.Gid, h.Uname, h.Gname = 65532, 65532, "nonroot", "nonroot"
		}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// dockerManifest is one entry of `docker save`'s manifest.json.
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// WriteArchive writes img as an OCI image layout, tagged ref (annotations
// org.opencontainers.image.ref.name and io.containerd.image.name), plus a
// manifest.json that names the same blobs, into one tar: what `docker save`
// writes since Docker 25.
func WriteArchive(out string, ref name.Tag, img v1.Image) error {
	dir, err := os.MkdirTemp("", "phasegang-oci-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.TagStr(),
		"io.containerd.image.name":          ref.Name(),
	})); err != nil {
		return err
	}
	cfg, err := img.ConfigName()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	dm := dockerManifest{Config: blobPath(cfg), RepoTags: []string{ref.Name()}}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		dm.Layers = append(dm.Layers, blobPath(d))
	}
	mj, err := json.Marshal([]dockerManifest{dm})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), mj, 0o644); err != nil {
		return err
	}
	return tarDir(dir, out)
}

func blobPath(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }

// tarDir writes dir's files into the tar out, sorted, with fixed times
// and owners, so the tarball is reproducible.
func tarDir(dir, out string) error {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(files)
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	tw := tar.NewWriter(f)
	for _, path := range files {
		st, err := os.Stat(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if st.IsDir() {
			h.Name += "/"
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		} else {
			h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, st.Size()
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !st.IsDir() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if _, err := tw.Write(data); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}
