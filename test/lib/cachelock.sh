# Shared by the build scripts that cache binaries outside the clone
# (test/argo, test/cluster, test/jaeger, test/peers): source it, then
#
#   need_flock WHO        exit with a message if flock is missing
#   lock_cache DIR FD WHO hold DIR/.lock on file descriptor FD until the
#                         script exits or runs `flock -u FD`; when another
#                         build holds it, say so on stderr and wait.
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
