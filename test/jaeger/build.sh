#!/usr/bin/env bash
# Builds the Jaeger v2 all-in-one binary (github.com/jaegertracing/jaeger
# cmd/jaeger, pinned in test/jaeger/go.mod as a `tool`) into a cache directory
# outside the repository, keyed by a hash of test/jaeger/go.mod + go.sum (+ Go
# version/platform and this script's build recipe). Skips the build when the
# binary exists. Safe to run concurrently (flock). The LAST line of stdout is
# the binary's path.
#
# A cold build takes ~9 min on 2 cores and ~2.2 GiB of memory.
#
# Env:
#   PHASEGANG_JAEGER_CACHE  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/phasegang)
#   PHASEGANG_BUILD_LOG     build log path (default <cache>/jaeger-<hash>/build.log)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cachelock.sh"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Bump when the build recipe below changes (flags, package).
RECIPE=1
PKG=github.com/jaegertracing/jaeger/cmd/jaeger

command -v go >/dev/null || { echo "build.sh: 'go' not found in PATH" >&2; exit 1; }
need_flock build.sh

export GOWORK=off
hash=$( { cat "$here/go.mod" "$here/go.sum"
          go env GOVERSION GOOS GOARCH CGO_ENABLED
          echo "recipe=$RECIPE"; } | sha256sum | cut -c1-16)
cache_root=${PHASEGANG_JAEGER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/phasegang}
base="$cache_root/jaeger-$hash"
bin="$base/bin/jaeger"
mkdir -p "$base"

if [[ ! -x "$bin" ]]; then
  lock_cache "$base" 9 build.sh
  if [[ ! -x "$bin" ]]; then
    build() { cd "$here" && go build -mod=readonly -trimpath -o "$1/jaeger" "$PKG"; }
    build_bins build.sh "$base/bin" "$PKG" "with an empty Go build cache this takes ~9 min on 2 cores (~2.2 GiB)" build jaeger
  fi
  flock -u 9
fi
echo "$bin"
