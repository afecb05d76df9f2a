#!/usr/bin/env bash
# Builds Kueue (sigs.k8s.io/kueue/cmd/kueue, pinned below) from the Go module
# proxy with `go install` (its go.mod has no replace directives) into a cache
# directory outside the repository, and copies the module's CRDs
# (config/components/crd/bases/*.yaml) and webhook manifests
# (config/components/webhook/manifests.yaml) next to it. Skips the build when
# the binary exists. Safe to run concurrently (flock). The LAST line of stdout
# is the bin dir; the manifests are in <bin>/../crd and <bin>/../webhook.
#
# A cold build takes ~12+ min on 2 cores (about 720 CPU-s) and ~2 GiB.
#
# Env:
#   PHASEGANG_KUEUE_CACHE  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/phasegang)
#   PHASEGANG_BUILD_LOG    build log path (default <cache>/kueue-<version>/build.log)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cachelock.sh"

VERSION=${KUEUE_VERSION:-v0.17.0}
MOD=sigs.k8s.io/kueue
PKG=$MOD/cmd/kueue

command -v go >/dev/null || { echo "build-kueue.sh: 'go' not found in PATH" >&2; exit 1; }
need_flock build-kueue.sh

export GOWORK=off GOFLAGS=-mod=mod
cache_root=${PHASEGANG_KUEUE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/phasegang}
base="$cache_root/kueue-$VERSION"
bin="$base/bin"
mkdir -p "$base"

have_all() {
  [[ -x "$bin/kueue" && -s "$base/webhook/manifests.yaml" ]] && compgen -G "$base/crd/*.yaml" >/dev/null
}

if ! have_all; then
  lock_cache "$base" 9 build-kueue.sh
  if [[ ! -x "$bin/kueue" ]]; then
    build() { cd "$base" && GOBIN="$1" go install "$PKG@$VERSION"; }
    build_bins build-kueue.sh "$bin" "$PKG@$VERSION (go install)" "with an empty Go build cache this takes ~12+ min on 2 cores (~2 GiB)" build kueue
  fi
  if ! have_all; then
    dir=$(cd "$base" && go mod download -json "$MOD@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [[ -n "$dir" && -d "$dir" ]] || { echo "build-kueue.sh: cannot locate $MOD@$VERSION in the module cache" >&2; exit 1; }
    rm -rf "$base/crd" "$base/webhook"; mkdir -p "$base/crd" "$base/webhook"
    cp "$dir"/config/components/crd/bases/*.yaml "$base/crd/"
    cp "$dir/config/components/webhook/manifests.yaml" "$base/webhook/"
    chmod -R u+w "$base/crd" "$base/webhook"
  fi
  flock -u 9
fi
echo "$bin"
