// Command image builds phasegang's container image without a Docker
// engine: `make image` runs it. It builds the static phasegang binary
// (CGO_ENABLED=0, -trimpath) from the main module, puts it in one layer at
// /phasegang on an empty base (plus distroless-style /etc/passwd, /etc/group
// and /tmp for user 65532), and writes one tarball that is both an OCI image
// layout (index.json, blobs/: `skopeo copy oci-archive:…`, `podman load`,
// containerd's `ctr images import`) and `docker save` output (manifest.json:
// `docker load`, `kind load image-archive`, `crane push`).
//
// It is a separate Go module so that the phasegang binary and the main
// module's `go test ./...` do not depend on go-containerregistry.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func main() {
	var o Options
	flag.StringVar(&o.Src, "src", "../..", "the main module's directory (the repository root)")
	flag.StringVar(&o.Binary, "binary", "", "use this prebuilt static linux binary instead of building one")
	flag.StringVar(&o.Ref, "ref", DefaultRepository+":dev", "the image's name and tag")
	flag.StringVar(&o.Version, "version", "dev", "stamped into the binary (main.version) and the label org.opencontainers.image.version")
	flag.StringVar(&o.Revision, "revision", "", "label org.opencontainers.image.revision (a commit)")
	flag.StringVar(&o.Source, "source", DefaultSource, "label org.opencontainers.image.source")
	flag.StringVar(&o.Arch, "arch", runtime.GOARCH, "GOARCH of the binary and the image")
	out := flag.String("o", "bin/phasegang-image.tar", "the tarball to write")
	var t TestImageOptions
	test := flag.Bool("test", false, "build a test image for the real node (test/cluster/build-node.sh) from -binary or -rootfs, named -ref, instead of phasegang's")
	flag.StringVar(&t.Rootfs, "rootfs", "", "with -test: a rootfs tarball, the image's one layer")
	cmd := flag.String("cmd", "", "with -test -rootfs: the image's command (one word)")
	env := flag.String("env", "", "with -test: extra environment, comma-separated K=V")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "image: no arguments expected; see -help")
		os.Exit(2)
	}
	build := func() (v1.Hash, error) { return Build(o, *out) }
	if *test {
		t.Ref, t.Arch, t.Binary = o.Ref, o.Arch, o.Binary
		if *cmd != "" {
			t.Cmd = []string{*cmd}
		}
		if *env != "" {
			t.Env = strings.Split(*env, ",")
		}
		build = func() (v1.Hash, error) { return BuildTestImage(t, *out) }
	}
	digest, err := build()
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("%s %s@%s\n", *out, o.Ref, digest)
}
