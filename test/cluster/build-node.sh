#!/usr/bin/env bash
# Builds what the real node of realnode.sh runs, into a cache outside the
# repository (like build.sh), and prints two dirs as its LAST two lines:
#
#   <cache>/node-<hash>/bin/kubelet   k8s.io/kubernetes/cmd/kubelet from test/tools:
#                                     the control plane's go.mod, so the same
#                                     release and most packages already compiled
#   <cache>/node-<hash>/bin/coredns   CoreDNS from test/coredns (only the plugins
#                                     a host-only cluster needs)
#   <cache>/node-<hash>/bin/deviceplugin  the fake GPU device plugin (test/deviceplugin)
#   <cache>/images-<hash>/*.tar       the test images, built without Docker by
#                                     hack/image -test: pause (the sandbox),
#                                     trainer (test/realnode/trainer)
#
# The binaries' <hash> covers test/tools' and test/coredns' go.mod/go.sum,
# the Go version and the recipe below; the images' covers their sources and
# hack/image. Safe to run concurrently (flock).
#
# Env: PHASEGANG_K8S_CACHE   cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/phasegang)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cachelock.sh"
need_flock build-node.sh

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
tools=$repo/test/tools
coredns=$repo/test/coredns
deviceplugin=$repo/test/deviceplugin
# Bump when the recipes below change.
RECIPE=1

command -v go >/dev/null || { echo "build-node.sh: 'go' not found in PATH" >&2; exit 1; }
export GOWORK=off
cache_root=${PHASEGANG_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/phasegang}
goenv=$(go env GOVERSION GOOS GOARCH CGO_ENABLED)

# ---------------------------------------------------------------- binaries
kube_version=$(awk '$1=="k8s.io/kubernetes"{print $2; exit}' "$tools/go.mod")
[[ "$kube_version" =~ ^v1\.([0-9]+)\.[0-9]+$ ]] || { echo "build-node.sh: cannot read k8s.io/kubernetes version from $tools/go.mod" >&2; exit 1; }
kube_minor=${BASH_REMATCH[1]}
hash=$( { cat "$tools/go.mod" "$tools/go.sum" "$coredns/go.mod" "$coredns/go.sum" "$coredns/main.go" "$deviceplugin"/go.* "$deviceplugin"/*.go
          echo "$goenv"; echo "recipe=$RECIPE"; } | sha256sum | cut -c1-16)
base=$cache_root/node-$hash
mkdir -p "$base"
have_bins() { [[ -x "$base/bin/kubelet" && -x "$base/bin/coredns" && -x "$base/bin/deviceplugin" ]]; }
if ! have_bins; then
  lock_cache "$base" 9 build-node.sh
  if ! have_bins; then
    # The same version stamp as build.sh's binaries: the kubelet reports it
    # as the node's kubeletVersion, and the control plane checks the skew.
    X=""
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      X+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$kube_minor -X $pkg.gitTreeState=clean"
    done
    build() {
      (cd "$tools" && go build -mod=readonly -ldflags "${X# }" -o "$1/" k8s.io/kubernetes/cmd/kubelet) &&
        (cd "$coredns" && go build -mod=readonly -o "$1/coredns" .) &&
        (cd "$deviceplugin" && go build -mod=readonly -o "$1/deviceplugin" .)
    }
    PHASEGANG_BUILD_LOG=$base/build.log build_bins build-node.sh "$base/bin" "kubelet ($kube_version), coredns and deviceplugin" \
      "this takes ~4 min on 2 cores when build.sh has run" build kubelet coredns deviceplugin
  fi
  flock -u 9
fi

# ---------------------------------------------------------------- images
ihash=$( { cd "$repo"; cat test/realnode/*/*.go hack/image/*.go hack/image/go.mod hack/image/go.sum
           echo "$goenv"; echo "recipe=$RECIPE"; } | sha256sum | cut -c1-16)
images=$cache_root/images-$ihash
if [[ ! -s "$images/trainer.tar" || ! -s "$images/pause.tar" ]]; then
  mkdir -p "$images"
  lock_cache "$images" 8 build-node.sh
  if [[ ! -s "$images/trainer.tar" || ! -s "$images/pause.tar" ]]; then
    for prog in pause trainer; do
      (cd "$repo" && CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags '-s -w' -o "$images/$prog" "./test/realnode/$prog")
      # imagePullPolicy Never: the pods name exactly this tag.
      go -C "$repo/hack/image" run . -test -binary "$images/$prog" \
        -ref "phasegang.test/$prog:dev" -o "$images/$prog.tar.tmp" >/dev/null
      mv "$images/$prog.tar.tmp" "$images/$prog.tar"
      rm -f "$images/$prog"
    done
  fi
  flock -u 8
fi
echo "$base"
echo "$images"
