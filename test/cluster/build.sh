#!/usr/bin/env bash
# Builds the local control-plane binaries (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl, kwok) from the wrapper
# module in test/tools into a cache directory outside the repository, keyed by
# a hash of test/tools/go.mod + go.sum (+ the etcd main, Go version/platform
# and this script's build recipe). Skips the build when the binaries exist.
# Also copies kwok's upstream Stage YAMLs (node-initialize, node-heartbeat,
# pod-ready, pod-delete) from the module cache next to it (<bin>/../kwok-stages)
# for up.sh. Safe to run concurrently (flock). The LAST line of stdout is the
# bin dir.
#
# Env:
#   PHASEGANG_K8S_CACHE   cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/phasegang)
#   PHASEGANG_BUILD_LOG   build log path (default <cache>/k8s-<hash>/build.log)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cachelock.sh"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tools=$(cd "$here/../tools" && pwd)
BINARIES=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok)
# Bump when the build recipe below changes (flags, package list).
RECIPE=1

command -v go >/dev/null || { echo "build.sh: 'go' not found in PATH" >&2; exit 1; }
need_flock build.sh

export GOWORK=off
kube_version=$(awk '$1=="k8s.io/kubernetes"{print $2; exit}' "$tools/go.mod")
[[ "$kube_version" =~ ^v1\.([0-9]+)\.[0-9]+$ ]] || { echo "build.sh: cannot read k8s.io/kubernetes version from $tools/go.mod" >&2; exit 1; }
kube_minor=${BASH_REMATCH[1]}

hash=$( { cat "$tools/go.mod" "$tools/go.sum" "$tools/cmd/etcd/main.go"
          go env GOVERSION GOOS GOARCH CGO_ENABLED
          echo "recipe=$RECIPE"; } | sha256sum | cut -c1-16)
cache_root=${PHASEGANG_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/phasegang}
base="$cache_root/k8s-$hash"
bin="$base/bin"
mkdir -p "$base"

stages="$base/kwok-stages"
# Upstream kwok stages used by up.sh (path inside the kwok module => file name).
KWOK_STAGES=(
  kustomize/stage/node/fast/node-initialize.yaml
  kustomize/stage/node/heartbeat/node-heartbeat.yaml
  kustomize/stage/pod/fast/pod-ready.yaml
  kustomize/stage/pod/fast/pod-delete.yaml
)

have_all() {
  local b
  for b in "${BINARIES[@]}"; do [[ -x "$bin/$b" ]] || return 1; done
  for b in "${KWOK_STAGES[@]}"; do [[ -s "$stages/$(basename "$b")" ]] || return 1; done
}

copy_stages() {
  local dir f
  dir=$(cd "$tools" && go list -mod=readonly -m -f '{{.Dir}}' sigs.k8s.io/kwok) || true
  if [[ -z "$dir" || ! -d "$dir" ]]; then
    (cd "$tools" && go mod download sigs.k8s.io/kwok) >&2
    dir=$(cd "$tools" && go list -mod=readonly -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  fi
  rm -rf "$stages.tmp.$$"; mkdir -p "$stages.tmp.$$"
  for f in "${KWOK_STAGES[@]}"; do
    [[ -s "$dir/$f" ]] || { echo "build.sh: $dir/$f not found in the kwok module" >&2; exit 1; }
    cp "$dir/$f" "$stages.tmp.$$/"
  done
  rm -rf "$stages"; mv "$stages.tmp.$$" "$stages"
}

bins_ok() {
  local b
  for b in "${BINARIES[@]}"; do [[ -x "$bin/$b" ]] || return 1; done
}

if ! have_all; then
  lock_cache "$base" 9 build.sh
  if ! bins_ok; then
    X=""
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      X+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$kube_minor -X $pkg.gitTreeState=clean"
    done
    # No -trimpath and the default CGO setting on purpose: the compiled
    # client-go/apimachinery packages then land in the Go build cache under
    # the same action IDs the product's own `go test` uses.
    build() {
      cd "$tools" && go build -mod=readonly -ldflags "${X# }" -o "$1/" \
        ./cmd/etcd \
        k8s.io/kubernetes/cmd/kube-apiserver \
        k8s.io/kubernetes/cmd/kube-controller-manager \
        k8s.io/kubernetes/cmd/kube-scheduler \
        k8s.io/kubernetes/cmd/kubectl \
        sigs.k8s.io/kwok/cmd/kwok
    }
    build_bins build.sh "$bin" "${BINARIES[*]} ($kube_version)" \
      "with an empty Go build cache this takes ~12-20 min on 2 cores (~2 min when only linking)" build "${BINARIES[@]}"
  fi
  have_all || copy_stages
  flock -u 9
fi
echo "$bin"
