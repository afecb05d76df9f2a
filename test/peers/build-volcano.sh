#!/usr/bin/env bash
# Builds Volcano's scheduler and controller-manager (vc-scheduler,
# vc-controller-manager) from a Volcano source tree into a cache directory
# outside the repository, and copies its CRDs
# (installer/helm/chart/volcano/crd/bases/*.yaml, config/crd/jobflow/bases/*.yaml)
# and the chart's default scheduler.conf next to them. Skips the build when
# the binaries exist. Safe to run concurrently (flock). The LAST line of
# stdout is the bin dir; the rest is in <bin>/../crd, <bin>/../crd-jobflow and
# <bin>/../volcano-scheduler.conf.
#
# Usage: test/peers/build-volcano.sh SRC_DIR
#
# The Go module proxy refuses volcano.sh/volcano, so the source comes from
# its GitHub repository (volcano-sh/volcano, tag v1.15.1), e.g.
#   git --git-dir=VOLCANO.git archive v1.15.1 | tar x -C SRC_DIR
# Every dependency of v1.15.1 is served by the module proxy. CI has no copy
# of the source: Volcano is an optional system of test/peers.
#
# A cold build takes ~11+ min on 2 cores (about 650 CPU-s) and ~1.7 GiB.
#
# Env:
#   VOLCANO_VERSION          names the cache dir (default v1.15.1; say which
#                            tag or commit SRC_DIR holds)
#   PHASEGANG_VOLCANO_CACHE  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/phasegang)
#   PHASEGANG_BUILD_LOG      build log path (default <cache>/volcano-<version>/build.log)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cachelock.sh"

src=${1:-}
[[ -n "$src" ]] || { echo "usage: build-volcano.sh SRC_DIR (a volcano-sh/volcano source tree, tag v1.15.1)" >&2; exit 2; }
VERSION=${VOLCANO_VERSION:-v1.15.1}

command -v go >/dev/null || { echo "build-volcano.sh: 'go' not found in PATH" >&2; exit 1; }
need_flock build-volcano.sh

cache_root=${PHASEGANG_VOLCANO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/phasegang}
base="$cache_root/volcano-$VERSION"
bin="$base/bin"

have_all() {
  [[ -x "$bin/vc-scheduler" && -x "$bin/vc-controller-manager" && -s "$base/volcano-scheduler.conf" ]] &&
    compgen -G "$base/crd/*.yaml" >/dev/null && compgen -G "$base/crd-jobflow/*.yaml" >/dev/null
}

if have_all; then
  echo "$bin"
  exit 0
fi

if [[ ! -d "$src" ]] || ! grep -q '^module volcano.sh/volcano$' "$src/go.mod" 2>/dev/null; then
  echo "build-volcano.sh: $src is not a Volcano source tree (no go.mod of module volcano.sh/volcano)" >&2
  exit 1
fi
src=$(cd "$src" && pwd)
mkdir -p "$base"
lock_cache "$base" 9 build-volcano.sh
if [[ ! -x "$bin/vc-scheduler" || ! -x "$bin/vc-controller-manager" ]]; then
  build() {
    local ldflags="-X volcano.sh/volcano/pkg/version.Version=$VERSION"
    cd "$src" && export GOWORK=off CGO_ENABLED=0 &&
      go build -ldflags "$ldflags" -o "$1/vc-scheduler" ./cmd/scheduler &&
      go build -ldflags "$ldflags" -o "$1/vc-controller-manager" ./cmd/controller-manager
  }
  build_bins build-volcano.sh "$bin" "./cmd/scheduler and ./cmd/controller-manager of $src" \
    "with an empty Go build cache this takes ~11+ min on 2 cores (~1.7 GiB)" build vc-scheduler vc-controller-manager
fi
if ! have_all; then
  rm -rf "$base/crd" "$base/crd-jobflow"; mkdir -p "$base/crd" "$base/crd-jobflow"
  cp "$src"/installer/helm/chart/volcano/crd/bases/*.yaml "$base/crd/"
  cp "$src"/config/crd/jobflow/bases/*.yaml "$base/crd-jobflow/"
  cp "$src/installer/helm/chart/volcano/config/volcano-scheduler.conf" "$base/"
fi
flock -u 9
echo "$bin"
