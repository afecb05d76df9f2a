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
    log=${PHASEGANG_BUILD_LOG:-$base/build.log}
    tmp="$base/bin.tmp.$$"
    rm -rf "$tmp"; mkdir -p "$tmp"
    trap 'rm -rf "$tmp"' EXIT
    echo "build-kueue.sh: go install $PKG@$VERSION into $bin" >&2
    echo "build-kueue.sh: with an empty Go build cache this takes ~12+ min on 2 cores (~2 GiB); log: $log" >&2
    start=$(date +%s)
    if ! (cd "$base" && GOBIN="$tmp" go install "$PKG@$VERSION") >"$log" 2>&1; then
      echo "build-kueue.sh: go install failed; last lines of $log:" >&2
      tail -n 30 "$log" >&2
      exit 1
    fi
    [[ -x "$tmp/kueue" ]] || { echo "build-kueue.sh: kueue missing after build (see $log)" >&2; exit 1; }
    rm -rf "$bin"
    mv "$tmp" "$bin"
    trap - EXIT
    echo "build-kueue.sh: built in $(( $(date +%s) - start ))s" >&2
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
