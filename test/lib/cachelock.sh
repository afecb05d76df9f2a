# Shared by the build scripts that cache binaries outside the clone
# (test/argo, test/cluster, test/jaeger, test/peers): source it, then
#
#   need_flock WHO        exit with a message if flock is missing
#   lock_cache DIR FD WHO hold DIR/.lock on file descriptor FD until the
#                         script exits or runs `flock -u FD`; when another
#                         build holds it, say so on stderr and wait.
#   build_bins WHO BIN WHAT COLD BUILD [EXPECT...]
#                         build into BIN: see below.
#
# The lock makes concurrent builds of one cache directory safe: the
# second waits, then finds the first one's result (each script checks
# again after taking the lock).

need_flock() {
  command -v flock >/dev/null || { echo "$1: 'flock' (util-linux) not found in PATH" >&2; exit 1; }
}

lock_cache() {
  local dir=$1 fd=$2 who=$3
  eval "exec $fd>\"\$dir/.lock\""
  if ! flock -n "$fd"; then
    echo "$who: another build of $dir is running; waiting for it (lock $dir/.lock)" >&2
    flock "$fd"
  fi
}

# build_bins WHO BIN WHAT COLD BUILD [EXPECT...] runs the shell function
# BUILD in a subshell with one argument, an empty directory beside BIN
# (BIN.tmp.PID), and its output in the build log ($PHASEGANG_BUILD_LOG,
# else build.log beside BIN). It says on stderr what it builds (WHAT),
# how long a cold build takes (COLD) and where the log is. If BUILD
# fails, it prints the log's last lines and exits 1; else each EXPECT
# must be an executable in the directory, which then replaces BIN, and
# it says how long the build took. The directory is removed if the
# script exits before that.
#
# BUILD runs where `set -e` does not apply (its status is tested): chain
# its commands with && so that the first failure is its status.
build_bins() {
  local who=$1 bin=$2 what=$3 cold=$4 build=$5
  shift 5
  local log=${PHASEGANG_BUILD_LOG:-$(dirname "$bin")/build.log}
  _build_bins_tmp="$bin.tmp.$$"
  rm -rf "$_build_bins_tmp"; mkdir -p "$_build_bins_tmp"
  trap 'rm -rf "$_build_bins_tmp"' EXIT
  echo "$who: building $what into $bin" >&2
  echo "$who: $cold; log: $log" >&2
  local start b
  start=$(date +%s)
  if ! ("$build" "$_build_bins_tmp") >"$log" 2>&1; then
    echo "$who: go build failed; last lines of $log:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
  for b in "$@"; do
    [[ -x "$_build_bins_tmp/$b" ]] || { echo "$who: $b missing after build (see $log)" >&2; exit 1; }
  done
  rm -rf "${bin:?}"
  mv "$_build_bins_tmp" "$bin"
  trap - EXIT
  echo "$who: built in $(( $(date +%s) - start ))s" >&2
}
