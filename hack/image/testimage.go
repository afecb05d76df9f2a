package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestImageOptions describes one of the real node's test images
// (test/cluster/build-node.sh): the worker ("trainer") and the sandbox
// ("pause") images, each a static binary, or the PyTorch image, a Debian
// rootfs. They run as root: the kubelet's termination-log file and the
// pipelines' hostPath volumes are root's.
type TestImageOptions struct {
	Ref    string
	Arch   string
	Binary string   // a static binary, placed at /<base name> and made the entrypoint
	Rootfs string   // or a rootfs tarball (mmdebstrap's output), one layer as it is
	Cmd    []string // the image's Cmd (with Rootfs)
	Env    []string // added to PATH
}

// BuildTestImage writes a test image's tarball to out (the same archive
// format as Build's, so `ctr -n k8s.io images import` loads it).
func BuildTestImage(o TestImageOptions, out string) (v1.Hash, error) {
	ref, err := name.NewTag(o.Ref, name.WeakValidation)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("image name %q: %w", o.Ref, err)
	}
	layer, cfg, err := testLayer(o)
	if err != nil {
		return v1.Hash{}, err
	}
	img, err := withConfig(layer, cfg, o.Arch, "phasegang hack/image -test")
	if err != nil {
		return v1.Hash{}, err
	}
	if err := WriteArchive(out, ref, img); err != nil {
		return v1.Hash{}, err
	}
	return img.Digest()
}

// testLayer is the image's one layer and its process config.
func testLayer(o TestImageOptions) (v1.Layer, v1.Config, error) {
	cfg := v1.Config{
		WorkingDir: "/",
		Env:        append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, o.Env...),
	}
	switch {
	case o.Binary != "" && o.Rootfs == "":
		data, err := os.ReadFile(o.Binary)
		if err != nil {
			return nil, cfg, err
		}
		entry := "/" + path.Base(o.Binary)
		body, err := binaryLayerTar(entry[1:], data)
		if err != nil {
			return nil, cfg, err
		}
		cfg.Entrypoint = []string{entry}
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(body)), nil
		}, tarball.WithMediaType(types.OCILayer))
		return layer, cfg, err
	case o.Rootfs != "" && o.Binary == "":
		// BestSpeed: the layer is ~1.3 GB of shared libraries; gzip's
		// default level triples the pack time for a few percent.
		layer, err := tarball.LayerFromFile(o.Rootfs, tarball.WithMediaType(types.OCILayer),
			tarball.WithCompressionLevel(gzip.BestSpeed), tarball.WithCompressedCaching)
		cfg.Cmd = o.Cmd
		return layer, cfg, err
	default:
		return nil, cfg, fmt.Errorf("a test image needs exactly one of a binary and a rootfs")
	}
}

// withConfig is an OCI image of one layer on an empty base, for linux/arch,
// running c, created at created() (reproducible), its history saying
// createdBy.
func withConfig(layer v1.Layer, c v1.Config, arch, createdBy string) (v1.Image, error) {
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	when := created()
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		History:   v1.History{Created: v1.Time{Time: when}, CreatedBy: createdBy},
		MediaType: types.OCILayer,
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: when}
	cf.Config = c
	return mutate.ConfigFile(img, cf)
}

// binaryLayerTar holds the binary at /name and an empty, world-writable /tmp.
func binaryLayerTar(name string, binary []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	when := created()
	for _, h := range []*tar.Header{
		{Name: "tmp/", Mode: 0o1777, Typeflag: tar.TypeDir},
		{Name: name, Mode: 0o755, Typeflag: tar.TypeReg, Size: int64(len(binary))},
	} {
		h.ModTime, h.Format, h.Uname, h.Gname = when, tar.FormatPAX, "root", "root"
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(binary); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
