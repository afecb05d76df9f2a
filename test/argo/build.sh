#!/usr/bin/env bash
# Builds Argo Workflows' workflow-controller and argoexec
# (github.com/argoproj/argo-workflows/v3 cmd/workflow-controller and
# cmd/argoexec, pinned in test/argo/go.mod as `tool`s) into a cache directory
# outside the repository, keyed by a hash of test/argo/go.mod + go.sum (+ Go
# version/platform and this script's build recipe). Skips the build when the
# binaries exist. Also copies Argo's CRDs (manifests/base/crds/minimal, what
# Argo's own install applies) from the module cache next to it
# (<bin>/../crds) for the test. Safe to run concurrently (flock). The LAST line
# of stdout is the bin dir (holding workflow-controller and argoexec).
#
# A cold build takes ~10 min on 2 cores (measured 10m13s sharing the cores with another build) and ~2.2 GiB of memory.
#
# Env:
#   PHASEGANG_ARGO_CACHE  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/phasegang)
#   PHASEGANG_BUILD_LOG   build log path (default <cache>/argo-<hash>/build.log)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cachelock.sh"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Bump when the build recipe below changes (flags, package list).
RECIPE=2
PKGS=(
  github.com/argoproj/argo-workflows/v3/cmd/workflow-controller
  github.com/argoproj/argo-workflows/v3/cmd/argoexec
)
BINARIES=(workflow-controller argoexec)

command -v go >/dev/null || { echo "build.sh: 'go' not found in PATH" >&2; exit 1; }
need_flock build.sh

export GOWORK=off
hash=$( { cat "$here/go.mod" "$here/go.sum"
          go env GOVERSION GOOS GOARCH CGO_ENABLED
          echo "recipe=$RECIPE"; } | sha256sum | cut -c1-16)
cache_root=${PHASEGANG_ARGO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/phasegang}
base="$cache_root/argo-$hash"
bin="$base/bin"
mkdir -p "$base"

crds="$base/crds"

have_bins() {
  local b
  for b in "${BINARIES[@]}"; do [[ -x "$bin/$b" ]] || return 1; done
}
have_crds() { [[ -s "$crds/argoproj.io_workflows.yaml" ]]; }
have_all() { have_bins && have_crds; }

copy_crds() {
  local dir
  dir=$(cd "$here" && go list -mod=readonly -m -f '{{.Dir}}' github.com/argoproj/argo-workflows/v3) || true
  if [[ -z "$dir" || ! -d "$dir" ]]; then
    (cd "$here" && go mod download github.com/argoproj/argo-workflows/v3) >&2
    dir=$(cd "$here" && go list -mod=readonly -m -f '{{.Dir}}' github.com/argoproj/argo-workflows/v3)
  fi
  rm -rf "$crds.tmp"; mkdir -p "$crds.tmp"
  cp "$dir"/manifests/base/crds/minimal/argoproj.io_*.yaml "$crds.tmp/"
  chmod 644 "$crds.tmp"/*.yaml
  rm -rf "$crds"; mv "$crds.tmp" "$crds"
}

if ! have_all; then
  lock_cache "$base" 9 build.sh
  if ! have_bins; then
    # Upstream, workflow/executor/osspecific/signal_linux.go is a symlink to
    # signal_darwin.go; module zips leave symlinks out, so argoexec does not
    # build from the module proxy ("undefined: Setpgid"), and Go refuses
    # overlays of files in GOMODCACHE. So build from a copy of the module
    # with the symlink's target put back under its Linux name (as a git
    # checkout has it), through a -modfile that replaces the module with it.
    # `go list -m` names no directory for a module not downloaded yet
    # (a fresh module cache), so download it first.
    (cd "$here" && go mod download github.com/argoproj/argo-workflows/v3) >&2
    mod=$(cd "$here" && go list -mod=readonly -m -f '{{.Dir}}' github.com/argoproj/argo-workflows/v3)
    [[ -n "$mod" && -d "$mod" ]] || { echo "build.sh: argo-workflows module not found in the module cache" >&2; exit 1; }
    src="$base/argo-workflows"
    rm -rf "$src"; mkdir -p "$src"
    (cd "$mod" && tar --exclude=./sdks --exclude=./docs --exclude=./ui -cf - .) | (cd "$src" && tar -xf -)
    chmod -R u+w "$src"
    osdir="$src/workflow/executor/osspecific"
    [[ -e "$osdir/signal_linux.go" ]] || cp "$osdir/signal_darwin.go" "$osdir/signal_linux.go"
    cp "$here/go.mod" "$base/build.mod"; cp "$here/go.sum" "$base/build.sum"
    (cd "$here" && go mod edit -modfile="$base/build.mod" -replace "github.com/argoproj/argo-workflows/v3=$src")
    build() { cd "$here" && go build -mod=readonly -modfile="$base/build.mod" -trimpath -o "$1/" "${PKGS[@]}"; }
    build_bins build.sh "$bin" "${BINARIES[*]} (argo-workflows $(awk '$1=="github.com/argoproj/argo-workflows/v3"{print $2; exit}' "$here/go.mod"))" \
      "with an empty Go build cache this takes ~10 min on 2 cores (~2.2 GiB)" build "${BINARIES[@]}"
  fi
  have_crds || copy_crds
  flock -u 9
fi
echo "$bin"
