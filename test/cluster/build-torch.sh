#!/usr/bin/env bash
# Builds the PyTorch image of the real node's TestRealPyTorch
# (phasegang.test/torch:dev) without Docker: a Debian bookworm rootfs with
# python3-torch (1.13, CPU) made by mmdebstrap from the same Debian sources
# this machine's apt uses, packed as one layer by hack/image -test. Prints
# the image tarball's path as its LAST line.
#
# Cached outside the clone (like build.sh) under
#   <cache>/torch-<hash>/torch.tar
# where <hash> covers the resolved version of python3-torch (apt-cache
# policy: Debian's sources are live, so a point release gives a new image),
# the recipe below and hack/image. Cold: 12 min measured on 2 cores while
# other builds ran (real-node.md saw 4-5 min on a quieter machine), ~3.5 GB
# of disk while building; the tarball is 452 MB. Needs root (mmdebstrap).
#
# Env: PHASEGANG_K8S_CACHE   cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/phasegang)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cachelock.sh"
need_flock build-torch.sh

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
RECIPE=1
PACKAGES=python3-torch
cache_root=${PHASEGANG_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/phasegang}

command -v mmdebstrap >/dev/null || {
  echo "build-torch.sh: installing mmdebstrap (apt-get)" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >&2
}
version=$(apt-cache policy $PACKAGES | awk '/Candidate:/ {print $2; exit}')
[[ -n "$version" && "$version" != "(none)" ]] || { echo "build-torch.sh: apt knows no $PACKAGES (apt-get update?)" >&2; exit 1; }
hash=$( { echo "$PACKAGES=$version recipe=$RECIPE"; cat "$repo"/hack/image/*.go "$repo/hack/image/go.sum"; } | sha256sum | cut -c1-16)
base=$cache_root/torch-$hash
out=$base/torch.tar
if [[ ! -s "$out" ]]; then
  mkdir -p "$base"
  lock_cache "$base" 9 build-torch.sh
  if [[ ! -s "$out" ]]; then
    start=$(date +%s)
    echo "build-torch.sh: mmdebstrap bookworm + $PACKAGES $version (log $base/build.log)" >&2
    # The sources of this machine's apt (deb822 or one-line).
    mirror=$(awk '/^URIs:/ && $2 ~ /debian$/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
    security=$(awk '/^URIs:/ && $2 ~ /debian-security$/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
    mirror=${mirror:-http://deb.debian.org/debian}; security=${security:-http://deb.debian.org/debian-security}
    rm -f "$base/rootfs.tar"
    mmdebstrap --variant=essential --include="$PACKAGES" \
      --aptopt='APT::Install-Recommends "false"' \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
      --dpkgopt='path-exclude=/usr/share/locale/*' \
      --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
      bookworm "$base/rootfs.tar" \
      "deb $mirror bookworm main" "deb $mirror bookworm-updates main" "deb $security bookworm-security main" \
      >"$base/build.log" 2>&1 || { tail -n 20 "$base/build.log" >&2; exit 1; }
    go -C "$repo/hack/image" run . -test -rootfs "$base/rootfs.tar" -cmd python3 \
      -env LANG=C.UTF-8,PYTHONUNBUFFERED=1 -ref phasegang.test/torch:dev -o "$out.tmp" >>"$base/build.log" 2>&1 \
      || { tail -n 20 "$base/build.log" >&2; exit 1; }
    mv "$out.tmp" "$out"
    rm -f "$base/rootfs.tar"
    echo "build-torch.sh: built in $(( $(date +%s) - start ))s: $(du -h "$out" | cut -f1)" >&2
  fi
  flock -u 9
fi
echo "$out"
